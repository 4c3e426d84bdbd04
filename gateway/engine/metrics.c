/*
 * GET /metrics' engine part, in Prometheus' text format (version 0.0.4):
 * tasks and workers per pool, processes by state, and how long commits and
 * cycles take. Written on the engine thread from its own state, so one
 * scrape is one consistent moment. Tasks done and failed are counted from
 * the jobs the store holds when the gateway starts, tasks submitted and
 * retried from that start, workers started and lost over every run: a
 * counter that starts again lower after a restart is a reset to
 * Prometheus.
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

#include <stddef.h>

/* Upper bounds of the time histograms' buckets, in seconds. */
static const double bounds[][HIST_BUCKETS] = {
        [HIST_ENGINE] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0},
        [HIST_TASKS] = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 600, 3600},
};

static void observe(histogram *h, hist_kind kind, double seconds, uint64_t n)
{
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		if (seconds <= bounds[kind][i]) {
			h->le[i] += n;
			break;
		}
	h->count += n;
	h->sum += seconds * (double)n;
}

void engine__observe(histogram *h, double seconds)
{
	observe(h, HIST_ENGINE, seconds, 1);
}

void engine__observe_tasks(histogram *h, double seconds, uint64_t n)
{
	observe(h, HIST_TASKS, seconds, n);
}

static void family(cm_buf *b, const char *name, const char *type, const char *help)
{
	cm_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* h's samples, labelled pool="POOL" when pool_id is given (its family's
 * header written before). */
static void histogram_samples(cm_buf *b, const char *name, const histogram *h, hist_kind kind, const char *pool_id)
{
	char label[48] = "", inner[48] = "";
	uint64_t cumulative = 0;

	if (pool_id) {
		snprintf(label, sizeof(label), "{pool=\"%s\"}", pool_id);
		snprintf(inner, sizeof(inner), "pool=\"%s\",", pool_id);
	}
	for (size_t i = 0; i < HIST_BUCKETS; i++) {
		cumulative += h->le[i];
		cm_buf_printf(b, "%s_bucket{%sle=\"%g\"} %llu\n", name, inner, bounds[kind][i],
		              (unsigned long long)cumulative);
	}
	cm_buf_printf(b, "%s_bucket{%sle=\"+Inf\"} %llu\n%s_sum%s %.9f\n%s_count%s %llu\n", name, inner,
	              (unsigned long long)h->count, name, label, h->sum, name, label, (unsigned long long)h->count);
}

static void histogram_write(cm_buf *b, const char *name, const char *help, const histogram *h)
{
	family(b, name, "histogram", help);
	histogram_samples(b, name, h, HIST_ENGINE, NULL);
}

/* The counts kept in a pool, one family each, one sample per pool. */
static const struct pool_count {
	const char *name, *type, *help;
	size_t field; /* an int64_t of pool */
} pool_counts[] = {
        {"strand_tasks_submitted_total", "counter", "Tasks whose arguments were stored.",
         offsetof(pool, tasks_submitted)},
        {"strand_tasks_done_total", "counter", "Tasks with a recorded result, failed ones included.",
         offsetof(pool, tasks_done)},
        {"strand_tasks_failed_total", "counter", "Tasks whose recorded result is an error.",
         offsetof(pool, tasks_failed)},
        {"strand_tasks_retried_total", "counter",
         "Tasks queued again: their worker was lost, or they failed and their job retries errors.",
         offsetof(pool, tasks_retried)},
        {"strand_tasks_queued", "gauge", "Tasks waiting for a worker.", offsetof(pool, queued)},
        {"strand_jobs_open", "gauge", "Jobs not ended yet.", offsetof(pool, open_jobs)},
        {"strand_workers_started_total", "counter", "Workers started, in every run of the gateway.",
         offsetof(pool, workers_started)},
        {"strand_workers_lost_total", "counter",
         "Workers that ended without being asked to, in every run of the gateway.", offsetof(pool, workers_lost)},
};

static void write_metrics(engine *e, cm_buf *b)
{
	static const char *const shown[] = {"starting", "connected", "stopping", "retiring"};

	family(b, "strand_pool_info", "gauge", "A pool or manager (value 1) with its state, backend and kind.");
	for (const pool *p = e->pools; p; p = p->next)
		cm_buf_printf(b, "strand_pool_info{pool=\"%s\",state=\"%s\",backend=\"%s\",kind=\"%s\"} 1\n", p->id,
		              pool_state_names[p->state], p->spec.backend, p->spec.manager[0] ? "manager" : "pool");
	for (size_t i = 0; i < sizeof(pool_counts) / sizeof(pool_counts[0]); i++) {
		const struct pool_count *c = &pool_counts[i];
		family(b, c->name, c->type, c->help);
		for (const pool *p = e->pools; p; p = p->next)
			cm_buf_printf(b, "%s{pool=\"%s\"} %lld\n", c->name, p->id,
			              (long long)*(const int64_t *)(const void *)((const char *)p + c->field));
	}
	family(b, "strand_tasks_pending", "gauge", "Tasks in workers' hands, without a result yet.");
	for (const pool *p = e->pools; p; p = p->next) {
		int64_t n = 0;
		for (const worker *w = p->workers; w; w = w->next)
			if (w->state != W_EXITED)
				n += w->pending;
		cm_buf_printf(b, "strand_tasks_pending{pool=\"%s\"} %lld\n", p->id, (long long)n);
	}
	family(b, "strand_workers", "gauge", "Workers of a pool that have not exited, by state.");
	for (const pool *p = e->pools; p; p = p->next) {
		int64_t n[4] = {0};
		for (const worker *w = p->workers; w; w = w->next)
			if (w->state != W_EXITED)
				n[w->retiring && w->state == W_CONNECTED ? 3 : (int)w->state]++;
		for (int s = 0; s < 4; s++)
			cm_buf_printf(b, "strand_workers{pool=\"%s\",state=\"%s\"} %lld\n", p->id, shown[s],
			              (long long)n[s]);
	}
	int64_t procs[3] = {0};
	for (const process *pr = e->processes; pr; pr = pr->next)
		procs[pr->state]++;
	family(b, "strand_processes", "gauge", "Processes (rings' members included) by state.");
	for (int s = 0; s < 3; s++)
		cm_buf_printf(b, "strand_processes{state=\"%s\"} %lld\n", proc_state_names[s], (long long)procs[s]);
	family(b, "strand_task_run_seconds", "histogram", "How long a pool's tasks ran, as their workers measured.");
	for (const pool *p = e->pools; p; p = p->next)
		histogram_samples(b, "strand_task_run_seconds", &p->run_time, HIST_TASKS, p->id);
	family(b, "strand_task_queue_wait_seconds", "histogram",
	       "How long a pool's tasks waited in its queue, from queued (again) to handed to a worker.");
	for (const pool *p = e->pools; p; p = p->next)
		histogram_samples(b, "strand_task_queue_wait_seconds", &p->queue_wait, HIST_TASKS, p->id);
	histogram_write(b, "strand_commit_seconds", "How long a cycle's COMMIT took.", &e->commit_time);
	histogram_write(b, "strand_cycle_seconds",
	                "How long a cycle took, from taking its requests to answering them (its wait left out).",
	                &e->cycle_time);
}

void engine__handle_metrics(engine *e, op *o)
{
	cm_buf b;

	cm_buf_init(&b);
	write_metrics(e, &b);
	o->out = b.data ? json_stringn(b.data, b.len) : NULL;
	if (!o->out)
		o->err = CM_ENOMEM;
	cm_buf_fini(&b);
}

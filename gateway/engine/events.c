/*
 * Events (events.h) from engine state. The pools a cycle ticks and their
 * workers are few and walked anyway, so their changes are found by
 * comparing each with what was last shown of it (its 'shown': that state
 * plus one, 0 for nothing yet, so a new one is said too): no state change
 * anywhere can forget to say so. Processes are never forgotten and jobs
 * can be millions, so theirs are said where they happen (a process
 * started, failed, ended; a job made, done, cancelled, removed), and no
 * cycle walks them all. A job's progress is said only while somebody
 * reads, at most every PROGRESS_MS per job. Everything goes into the
 * cycle's batch and is published only once the cycle committed.
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

#define PROGRESS_MS 250

/* What a worker shows: its state, or "retiring" (one past the states). */
static int worker_shown(const worker *w)
{
	return w->retiring && w->state == W_CONNECTED ? W_EXITED + 1 : (int)w->state;
}

static void pool_event(engine *e, const pool *p)
{
	int live = 0;

	for (const worker *w = p->workers; w; w = w->next)
		live += w->state != W_EXITED;
	json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:i}", "id", p->id, "state", pool_state_names[p->state],
	                      "processes", p->spec.processes, "backend", p->spec.backend, "live_workers", live);
	if (o && p->reason[0])
		json_object_set_new(o, "reason", json_string(p->reason));
	events_batch_add(&e->event_batch, p->spec.manager[0] ? "manager" : "pool", p->id, o);
}

static void worker_event(engine *e, const pool *p, const worker *w)
{
	int shown = worker_shown(w);

	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:i}", "id", w->id, "pool", p->id, "state",
	                      shown > W_EXITED ? "retiring" : worker_state_names[shown], "handle", w->handle,
	                      "exit_code", w->exit_code);

	if (o && w->last_words[0])
		json_object_set_new(o, "last_words", json_string(w->last_words));
	events_batch_add(&e->event_batch, "worker", p->id, o);
}

void engine__event_process(engine *e, const process *pr)
{
	json_t *o = json_pack("{s:s, s:s, s:i}", "id", pr->id, "state", proc_state_names[pr->state], "exit_code",
	                      pr->exit_code);

	if (o && pr->reason[0])
		json_object_set_new(o, "reason", json_string(pr->reason));
	events_batch_add(&e->event_batch, "process", "", o);
}

void engine__event_job(engine *e, const job *j)
{
	/* Written as text, not built by jansson and dumped: an apply has two
	 * (made, done) on the engine thread, between its request and its
	 * answer (bench/latency's p50 0.313 to 0.302 ms; 0.28 ms without
	 * them). */
	if (engine__job_text(j, &e->job_text) == CM_OK)
		engine__event_job_written(e, j);
}

void engine__event_job_written(engine *e, const job *j)
{
	events_batch_add_text(&e->event_batch, "job", j->pool->id, e->job_text.data, e->job_text.len);
}

void engine__event_job_removed(engine *e, const job *j)
{
	events_batch_add(&e->event_batch, "job", j->pool->id,
	                 json_pack("{s:s, s:s, s:s}", "id", j->id, "pool", j->pool->id, "state", "deleted"));
}

void engine__event_pool_removed(engine *e, const pool *p)
{
	events_batch_add(&e->event_batch, p->spec.manager[0] ? "manager" : "pool", p->id,
	                 json_pack("{s:s, s:s}", "id", p->id, "state", "deleted"));
}

void engine__job_unlist(job *j)
{
	if (!j->progress_pprev)
		return;
	*j->progress_pprev = j->progress_next;
	if (j->progress_next)
		j->progress_next->progress_pprev = j->progress_pprev;
	j->progress_next = NULL;
	j->progress_pprev = NULL;
}

void engine__job_progressed(engine *e, job *j)
{
	if (!e->events_watched || j->progress_pprev || j->total < 2)
		return; /* nobody reads; listed already; or its one result ends it, which is said */
	j->progress_next = e->progressed;
	if (e->progressed)
		e->progressed->progress_pprev = &j->progress_next;
	j->progress_pprev = &e->progressed;
	e->progressed = j;
}

static void progress_due(engine *e, int64_t now)
{
	for (job *j = e->progressed, *next; j; j = next) {
		next = j->progress_next;
		if (j->state != JOB_RUNNING) {
			engine__job_unlist(j); /* its end is said with its state */
		} else if (now >= j->progress_at) {
			job_counts c = engine__job_counts(j);
			events_batch_add(&e->event_batch, "progress", j->pool->id,
			                 json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "job", j->id, "pool", j->pool->id,
			                           "state", engine__job_state(j), "total", (json_int_t)c.total, "done",
			                           (json_int_t)c.done, "failed", (json_int_t)c.failed));
			j->progress_at = now + PROGRESS_MS;
			engine__job_unlist(j);
		}
	}
}

int engine__events_said(const pool *p)
{
	if (p->shown != (int)p->state + 1)
		return 0;
	for (const worker *w = p->workers; w; w = w->next)
		if (w->shown != worker_shown(w) + 1)
			return 0;
	return 1;
}

void engine__events_tick(engine *e, int64_t now)
{
	/* A pool is said before its first workers, and after the workers
	 * whose end ended it. A pool that is not ticked has nothing new: it
	 * leaves e->ticked only once all of it was said (pools.c). */
	for (pool *p = e->ticked; p; p = p->ticked_next) {
		int changed = p->shown != (int)p->state + 1, made = p->shown == 0;
		p->shown = (int)p->state + 1;
		if (changed && made)
			pool_event(e, p);
		for (worker *w = p->workers; w; w = w->next)
			if (w->shown != worker_shown(w) + 1) {
				w->shown = worker_shown(w) + 1;
				worker_event(e, p, w);
			}
		if (changed && !made)
			pool_event(e, p);
	}
	progress_due(e, now);
}

size_t engine__events_end_cycle(engine *e, int committed)
{
	size_t said = 0;

	if (committed)
		said = events_publish(e->events, &e->event_batch);
	else
		events_batch_clear(&e->event_batch); /* the reload shows everything again */
	e->events_watched = events_subscribed(e->events);
	return said;
}

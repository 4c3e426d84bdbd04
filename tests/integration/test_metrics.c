/*
 * GET /metrics, parsed as Prometheus parses its text format: every line a
 * comment (# HELP, # TYPE) or a sample of a family typed before it, label
 * values quoted, values numbers, a histogram's buckets cumulative up to
 * +Inf == _count. Then exact values after known work: tasks submitted,
 * done, failed and retried per pool, its tasks' runs timed and their waits, the queue and pending at rest,
 * workers by state, HTTP requests by route template and status (no id in
 * any label), the database's size; and the route's errors.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "tests/support/harness.h"

#define SAMPLES_MAX 512

typedef struct sample {
	char name[96];
	char labels[256]; /* as written between the braces, "" for none */
	double value;
} sample;

typedef struct metrics {
	sample s[SAMPLES_MAX];
	size_t n;
} metrics;

/* Whether labels is name="value"(,name="value")*, values without an
 * unescaped quote or newline. */
static int labels_valid(const char *l)
{
	while (*l) {
		const char *eq = strchr(l, '=');
		if (!eq || eq == l || eq[1] != '"')
			return 0;
		for (const char *c = l; c < eq; c++)
			if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9')))
				return 0;
		const char *v = eq + 2;
		while (*v && *v != '"') {
			if (*v == '\\')
				v++;
			if (*v == '\n' || !*v)
				return 0;
			v++;
		}
		if (*v != '"')
			return 0;
		l = v + 1;
		if (*l == ',')
			l++;
		else if (*l)
			return 0;
	}
	return 1;
}

/* Parses text strictly; fails the test on any line Prometheus would refuse. */
static void parse(const char *text, metrics *m)
{
	char types[64][96];
	size_t ntypes = 0;
	char *copy = strdup(text), *save = NULL;

	m->n = 0;
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#') {
			char kind[8], name[96], rest[512];
			assert_int_equal(sscanf(line, "# %7s %95s %511[^\n]", kind, name, rest), 3);
			if (strcmp(kind, "TYPE") == 0) {
				assert_true(strcmp(rest, "counter") == 0 || strcmp(rest, "gauge") == 0 ||
				            strcmp(rest, "histogram") == 0);
				for (size_t i = 0; i < ntypes; i++)
					assert_string_not_equal(types[i], name); /* a family is typed once */
				assert_true(ntypes < 64);
				snprintf(types[ntypes++], 96, "%s", name);
			} else {
				assert_string_equal(kind, "HELP");
			}
			continue;
		}
		sample *s = &m->s[m->n];
		char *brace = strchr(line, '{'), *space;
		assert_true(m->n < SAMPLES_MAX);
		if (brace) {
			char *close = strstr(brace, "} ");
			assert_non_null(close);
			snprintf(s->name, sizeof(s->name), "%.*s", (int)(brace - line), line);
			snprintf(s->labels, sizeof(s->labels), "%.*s", (int)(close - brace - 1), brace + 1);
			assert_true(labels_valid(s->labels));
			space = close + 1;
		} else {
			space = strchr(line, ' ');
			assert_non_null(space);
			snprintf(s->name, sizeof(s->name), "%.*s", (int)(space - line), line);
			s->labels[0] = '\0';
		}
		char *end;
		s->value = strtod(space + 1, &end);
		assert_true(end != space + 1 && *end == '\0');
		/* Its family was typed before it (a histogram's by its base name). */
		int typed = 0;
		for (size_t i = 0; i < ntypes; i++) {
			size_t len = strlen(types[i]);
			typed |= strcmp(s->name, types[i]) == 0 ||
			         (strncmp(s->name, types[i], len) == 0 &&
			          (strcmp(s->name + len, "_bucket") == 0 || strcmp(s->name + len, "_sum") == 0 ||
			           strcmp(s->name + len, "_count") == 0));
		}
		if (!typed)
			fail_msg("sample %s has no # TYPE before it", s->name);
		m->n++;
	}
	free(copy);
}

/* The sample name{labels}, or NULL. */
static const sample *find(const metrics *m, const char *name, const char *labels)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->s[i].name, name) == 0 && strcmp(m->s[i].labels, labels) == 0)
			return &m->s[i];
	return NULL;
}

/* The value of the sample name{labels}; fails the test if there is none. */
static double value(const metrics *m, const char *name, const char *labels)
{
	const sample *s = find(m, name, labels);

	if (!s)
		fail_msg("no sample %s{%s}", name, labels);
	return s->value;
}

/* A histogram's buckets (of the samples labelled of, "" or pool="P"):
 * cumulative, ending at +Inf with _count; its count. */
static double check_histogram(const metrics *m, const char *name, const char *of)
{
	char bucket[128], count[128], inf[320];
	size_t of_len = strlen(of);
	double last = 0;
	int buckets = 0;

	snprintf(bucket, sizeof(bucket), "%s_bucket", name);
	snprintf(count, sizeof(count), "%s_count", name);
	snprintf(inf, sizeof(inf), "%s%sle=\"+Inf\"", of, of_len ? "," : "");
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->s[i].name, bucket) == 0 && strncmp(m->s[i].labels, of, of_len) == 0 &&
		    strncmp(m->s[i].labels + of_len, of_len ? ",le=" : "le=", of_len ? 4 : 3) == 0) {
			assert_true(m->s[i].value >= last);
			last = m->s[i].value;
			buckets++;
		}
	assert_true(buckets > 2);
	assert_true(value(m, bucket, inf) == value(m, count, of));
	return value(m, count, of);
}

static void scrape(const gateway *g, metrics *m)
{
	response r = http(g, "GET", "/metrics", NULL, NULL);

	assert_int_equal(r.status, 200);
	assert_string_equal(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
	parse(r.body, m);
	response_free(&r);
}

static void metrics_count_what_happened(void **state)
{
	gateway g;
	static metrics m;
	char labels[256], path[128];

	(void)state;
	gateway_start(&g, NULL);
	char *pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	char *jobs[4];
	jobs[0] = job_submit(&g, pool, json_pack("{s:s, s:[i,i,i,i]}", "function", "echo", "args", 1, 2, 3, 4));
	jobs[1] = job_submit(&g, pool, json_pack("{s:s, s:[s,s,s]}", "function", "fail", "args", "a", "b", "c"));
	/* Errors retried once each: two tasks, four runs, two retries. */
	jobs[2] = job_submit(&g, pool,
	                     json_pack("{s:s, s:[s,s], s:b, s:i}", "function", "fail", "args", "x", "y", "retry_errors",
	                               1, "max_attempts", 2));
	jobs[3] = job_submit(&g, pool, json_pack("{s:s, s:[i,i]}", "function", "sleep", "args", 30, 30));
	for (int i = 0; i < 4; i++) {
		json_decref(job_results(&g, jobs[i], "input", 100));
		free(jobs[i]);
	}
	const char *no_token[] = {NULL};
	response r = http_as(&g, "GET", "/metrics", NULL, no_token);
	assert_int_equal(r.status, 401);
	response_free(&r);
	r = http(&g, "GET", "/v1/nothing-here", NULL, NULL);
	assert_int_equal(r.status, 404);
	response_free(&r);

	/* A request is counted once its answer has gone out, which may be just
	 * after the client read it: the scrape waits (10 s at most) for the
	 * last two made to be counted. */
	for (int tries = 0;; tries++) {
		scrape(&g, &m);
		if ((find(&m, "strand_http_requests_total", "route=\"other\",method=\"GET\",code=\"404\"") &&
		     find(&m, "strand_http_requests_total", "route=\"/metrics\",method=\"GET\",code=\"401\"")) ||
		    tries == 200)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 50 * 1000 * 1000}, NULL);
	}
	snprintf(labels, sizeof(labels), "pool=\"%s\"", pool);
	assert_true(value(&m, "strand_tasks_submitted_total", labels) == 11);
	assert_true(value(&m, "strand_tasks_done_total", labels) == 11);
	assert_true(value(&m, "strand_tasks_failed_total", labels) == 5);
	assert_true(value(&m, "strand_tasks_retried_total", labels) == 2);
	assert_true(value(&m, "strand_tasks_queued", labels) == 0);
	assert_true(value(&m, "strand_tasks_pending", labels) == 0);
	assert_true(value(&m, "strand_jobs_open", labels) == 0);
	assert_true(value(&m, "strand_workers_started_total", labels) == 2);
	assert_true(value(&m, "strand_workers_lost_total", labels) == 0);
	snprintf(labels, sizeof(labels), "pool=\"%s\",state=\"connected\"", pool);
	assert_true(value(&m, "strand_workers", labels) == 2);
	snprintf(labels, sizeof(labels), "pool=\"%s\",state=\"starting\"", pool);
	assert_true(value(&m, "strand_workers", labels) == 0);
	snprintf(labels, sizeof(labels), "pool=\"%s\",state=\"active\",backend=\"local\",kind=\"pool\"", pool);
	assert_true(value(&m, "strand_pool_info", labels) == 1);
	assert_true(value(&m, "strand_processes", "state=\"running\"") == 0);
	assert_true(check_histogram(&m, "strand_commit_seconds", "") > 0); /* the engine committed */
	assert_true(check_histogram(&m, "strand_cycle_seconds", "") > 0);
	/* Every run of a task (4 echoes, 3 failures, 2 failures run twice, 2
	 * sleeps of 30 ms): how long it ran, how long it waited to be handed
	 * out. The sleeps are never in the buckets up to 10 ms and together
	 * ran 60 ms at least; how fast the others ran is not bounded (under
	 * ASan, beside other tests, an echo took over 10 ms). */
	snprintf(labels, sizeof(labels), "pool=\"%s\"", pool);
	assert_true(check_histogram(&m, "strand_task_run_seconds", labels) == 13);
	assert_true(check_histogram(&m, "strand_task_queue_wait_seconds", labels) == 13);
	assert_true(value(&m, "strand_task_run_seconds_sum", labels) >= 0.06);
	snprintf(labels, sizeof(labels), "pool=\"%s\",le=\"0.01\"", pool);
	assert_true(value(&m, "strand_task_run_seconds_bucket", labels) <= 11);
	assert_true(value(&m, "strand_database_bytes", "") > 0);
	/* Requests by route template: never an id in a label. */
	assert_true(value(&m, "strand_http_requests_total",
	                  "route=\"/v1/pools/{id}/map\",method=\"POST\",code=\"202\"") == 4);
	assert_true(value(&m, "strand_http_requests_total", "route=\"/v1/pools\",method=\"POST\",code=\"201\"") == 1);
	assert_true(value(&m, "strand_http_requests_total", "route=\"/metrics\",method=\"GET\",code=\"401\"") == 1);
	assert_true(value(&m, "strand_http_requests_total", "route=\"other\",method=\"GET\",code=\"404\"") == 1);
	for (size_t i = 0; i < m.n; i++)
		if (strcmp(m.s[i].name, "strand_http_requests_total") == 0)
			assert_null(strstr(m.s[i].labels, "j-"));

	/* A resize shows at once as workers starting or connected. */
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	r = http(&g, "PATCH", path, "{\"processes\": 3}", NULL);
	assert_int_equal(r.status, 200);
	response_free(&r);
	pool_wait_connected(&g, pool, 3);
	scrape(&g, &m);
	snprintf(labels, sizeof(labels), "pool=\"%s\",state=\"connected\"", pool);
	assert_true(value(&m, "strand_workers", labels) == 3);
	snprintf(labels, sizeof(labels), "pool=\"%s\"", pool);
	assert_true(value(&m, "strand_workers_started_total", labels) == 3);

	free(pool);
	assert_int_equal(gateway_stop(&g), 0);
	gateway_cleanup(&g);
}

/* The gateway's own figures, as the process's /proc says them at the
 * scrape, and the build's version. */
/* The gateway's own figures, as the process's /proc says them around the
 * scrape (a thread of its start may end meanwhile), and the build's
 * version. */
static void metrics_describe_the_process(void **state)
{
	gateway g;
	static metrics m;
	char version[64];

	(void)state;
	gateway_start(&g, NULL);
	long threads_before = proc_status_number(g.pid, "Threads:");
	scrape(&g, &m);
	long threads_after = proc_status_number(g.pid, "Threads:"), rss_kib = proc_status_number(g.pid, "VmRSS:");
	snprintf(version, sizeof(version), "version=\"%s\"", STRAND_VERSION);
	assert_true(value(&m, "strand_build_info", version) == 1);
	double rss = value(&m, "process_resident_memory_bytes", "");
	assert_true(rss > 0.5 * (double)rss_kib * 1024 && rss < 2.0 * (double)rss_kib * 1024);
	assert_true(value(&m, "process_virtual_memory_bytes", "") >= rss);
	double threads = value(&m, "process_threads", "");
	assert_true(threads >= (double)(threads_before < threads_after ? threads_before : threads_after));
	assert_true(threads <= (double)(threads_before > threads_after ? threads_before : threads_after));
	double fds = value(&m, "process_open_fds", "");
	assert_true(fds > 3 && fds <= value(&m, "process_max_fds", ""));
	double cpu = value(&m, "process_cpu_seconds_total", "");
	assert_true(cpu >= 0 && cpu < 3600);
	double started = value(&m, "process_start_time_seconds", "");
	double now = (double)time(NULL);
	assert_true(started > now - 600 && started <= now + 1);
	gateway_cleanup(&g);
}

/* GET /v1/history: the dashboard's charts' samples, over all pools: one
 * taken at the start, one of the moment asked, in time order. */
static void history_samples_the_last_hour(void **state)
{
	gateway g;

	(void)state;
	gateway_start(&g, NULL);
	char *pool = pool_create(&g, 2);
	pool_wait_connected(&g, pool, 2);
	char *job = job_submit(&g, pool, json_pack("{s:s, s:[i,i,i,i,i]}", "function", "echo", "args", 1, 2, 3, 4, 5));
	json_decref(job_results(&g, job, "input", 10));
	json_t *h = http_get_ok(&g, "/v1/history");
	assert_int_equal(json_integer_value(json_object_get(h, "every_s")), 10);
	json_t *samples = json_object_get(h, "samples"), *last;
	assert_true(json_array_size(samples) >= 2);
	for (size_t i = 1; i < json_array_size(samples); i++)
		assert_true(strcmp(json_string_value(json_object_get(json_array_get(samples, i - 1), "at")),
		                   json_string_value(json_object_get(json_array_get(samples, i), "at"))) <= 0);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(samples, 0), "done")), 0);
	last = json_array_get(samples, json_array_size(samples) - 1);
	assert_int_equal(json_integer_value(json_object_get(last, "done")), 5);
	assert_int_equal(json_integer_value(json_object_get(last, "queued")), 0);
	assert_int_equal(json_integer_value(json_object_get(last, "pending")), 0);
	assert_int_equal(json_integer_value(json_object_get(last, "workers")), 2);
	json_decref(h);
	free(job);
	free(pool);
	gateway_cleanup(&g);
}

static void metrics_route_errors(void **state)
{
	gateway g;

	(void)state;
	gateway_start(&g, NULL);
	response r = http(&g, "POST", "/metrics", "{}", NULL);
	assert_int_equal(r.status, 405);
	assert_string_equal(r.content_type, "application/problem+json");
	assert_string_equal(json_string_value(json_object_get(r.json, "detail")), "use GET on /metrics");
	response_free(&r);
	const char *wrong[] = {"Authorization: Bearer not-the-token", NULL};
	r = http_as(&g, "GET", "/metrics", NULL, wrong);
	assert_int_equal(r.status, 401);
	response_free(&r);
	assert_int_equal(gateway_stop(&g), 0);
	gateway_cleanup(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(metrics_count_what_happened),
	        cmocka_unit_test(metrics_describe_the_process),
	        cmocka_unit_test(history_samples_the_last_hour),
	        cmocka_unit_test(metrics_route_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

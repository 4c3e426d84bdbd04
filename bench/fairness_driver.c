/*
 * The strand side of bench/fairness: how a pool serves small work while a
 * large map runs on it. On a pool of 2 local workers:
 *   idle    CONNS connections each doing apply?wait of echo, one after the
 *           other, for SECONDS: requests a second and their latency;
 *   loaded  the same while a map of MAP_TASKS no-ops runs on the pool,
 *           for SECONDS or until the map is done (looked at every 20 ms),
 *           so that no idle time counts as loaded;
 *   small   a 10-task map of echo submitted while the large map runs: ms
 *           from its submit until its last result is fetched.
 * Prints one line:
 *   idle_rps idle_p50_ms idle_p99_ms loaded_rps loaded_p50_ms loaded_p99_ms loaded_s small_ms
 *   strand-bench-fairness URL [CONNS [SECONDS [MAP_TASKS]]]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/tally.h"
#include "client/client.h"
#include "common/common.h"

#define LAT_MAX 200000 /* latencies kept per connection */

typedef struct conn {
	pthread_t thread;
	const char *url, *pool;
	double until;
	atomic_int *stop; /* the phase ended early: the large map is done */
	double *ms;
	int n, failed;
} conn;

static void *applies(void *arg)
{
	conn *k = arg;
	strand_client *c = strand_client_new(k->url);

	for (int i = 0; cm_now_s() < k->until && !atomic_load(k->stop); i++) {
		json_t *x = json_integer(i), *r = NULL;
		double t = cm_now_s();
		int ok = strand_apply(c, k->pool, "echo", x, 30, &r) == 0 && json_integer_value(r) == i;
		if (ok && k->n < LAT_MAX)
			k->ms[k->n++] = (cm_now_s() - t) * 1000.0;
		k->failed += !ok;
		json_decref(x);
		json_decref(r);
	}
	strand_client_free(c);
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Job's view, new, or NULL. */
static json_t *job_view(strand_client *c, const char *job)
{
	char path[64];
	json_t *view = NULL;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	if (strand_request(c, "GET", path, NULL, &view) == 200)
		return view;
	json_decref(view);
	return NULL;
}

/* Whether job is done (1, 0), or -1. */
static int job_done(strand_client *c, const char *job)
{
	json_t *view = job_view(c, job);
	int done = view ? strcmp(json_string_value(json_object_get(view, "state")) ?: "", "done") == 0 : -1;

	json_decref(view);
	return done;
}

/* How many of job's tasks are done, or -1. */
static double tasks_done(strand_client *c, const char *job)
{
	json_t *view = job_view(c, job);
	double done = view ? (double)json_integer_value(json_object_get(view, "done")) : -1;

	json_decref(view);
	return done;
}

/* CONNS connections for seconds, or until job (if not NULL) is done, which
 * c looks at every 20 ms: requests a second, p50 and p99 in ms, and the
 * phase's length in s. */
static int phase(const char *url, const char *pool, int conns, double seconds, strand_client *c, const char *job,
                 double out[4])
{
	conn *k = calloc((size_t)conns, sizeof(*k));
	double *all = NULL, t0 = cm_now_s();
	int n = 0, failed = 0;
	atomic_int stop = 0;

	for (int i = 0; i < conns; i++) {
		k[i] = (conn){.url = url,
		              .pool = pool,
		              .until = t0 + seconds,
		              .stop = &stop,
		              .ms = malloc(LAT_MAX * sizeof(double))};
		pthread_create(&k[i].thread, NULL, applies, &k[i]);
	}
	if (job) {
		while (cm_now_s() < t0 + seconds && job_done(c, job) == 0)
			usleep(20 * 1000);
		atomic_store(&stop, 1);
	}
	for (int i = 0; i < conns; i++) {
		pthread_join(k[i].thread, NULL);
		n += k[i].n;
		failed += k[i].failed;
	}
	double elapsed = cm_now_s() - t0;
	all = malloc(((size_t)n + 1) * sizeof(double));
	n = 0;
	for (int i = 0; i < conns; i++) {
		memcpy(all + n, k[i].ms, (size_t)k[i].n * sizeof(double));
		n += k[i].n;
		free(k[i].ms);
	}
	qsort(all, (size_t)n, sizeof(double), by_value);
	out[0] = n / elapsed;
	out[1] = n ? all[n / 2] : 0;
	out[2] = n ? all[n * 99 / 100] : 0;
	out[3] = elapsed;
	free(all);
	free(k);
	if (failed)
		fprintf(stderr, "fairness: %d applies failed\n", failed);
	return failed ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *url = argc > 1 ? argv[1] : NULL;
	int conns = argc > 2 ? atoi(argv[2]) : 64;
	double seconds = argc > 3 ? atof(argv[3]) : 2.0;
	int map_tasks = argc > 4 ? atoi(argv[4]) : 3000000;
	strand_client *c = strand_client_new(url);
	json_t *big = json_array(), *ten = json_array();
	char pool[32], job[32], small[32];
	double idle[4], loaded[4], t;
	count got = {0};

	if (strand_pool_create(c, 2, NULL, pool) != 0 || strand_pool_wait_ready(c, pool, 2, 60) != 0) {
		fprintf(stderr, "fairness: %s\n", strand_client_error(c));
		return 1;
	}
	for (int i = 0; i < map_tasks; i++)
		json_array_append_new(big, json_integer(i));
	for (int i = 0; i < 10; i++)
		json_array_append_new(ten, json_integer(i));
	if (phase(url, pool, conns, seconds, NULL, NULL, idle) != 0 || strand_map(c, pool, "noop", big, 1, job) != 0)
		return 1;
	t = cm_now_s();
	if (strand_map(c, pool, "echo", ten, 1, small) != 0 || strand_imap(c, small, 0, 100, tally, &got) != 0 ||
	    got.n != 10 || got.failed)
		return 1;
	double small_ms = (cm_now_s() - t) * 1000.0;
	double before = tasks_done(c, job);
	if (phase(url, pool, conns, seconds, c, job, loaded) != 0)
		return 1;
	/* The large map's pace during the applies, and alone for a second
	 * after them (when it was not done by then). */
	double during = tasks_done(c, job), t_alone = cm_now_s();
	usleep(1000 * 1000);
	double alone = (tasks_done(c, job) - during) / (cm_now_s() - t_alone);
	printf("%.0f %.3f %.3f %.0f %.3f %.3f %.2f %.1f %.0f %.0f\n", idle[0], idle[1], idle[2], loaded[0], loaded[1],
	       loaded[2], loaded[3], small_ms, (during - before) / loaded[3], during < map_tasks ? alone : -1.0);
	json_decref(big);
	json_decref(ten);
	strand_pool_terminate(c, pool);
	strand_client_free(c);
	return 0;
}

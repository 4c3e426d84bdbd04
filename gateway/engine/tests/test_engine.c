/*
 * The engine's cycle driven directly: a fake backend (fake_backend.h)
 * instead of processes, an in-memory store, and this test in the hub's
 * place (its engine_link), pulling as the workers would and reading the
 * batches the engine answers. Batching and fair share, a lost worker's tasks, leases, retries,
 * resync and timeouts, without starting anything.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "gateway/engine/engine.h"
#include "gateway/engine/tests/fake_backend.h"

/* ---- the hub's side: this test ------------------------------------------ */

/* A task as the engine handed it out, its argument copied. */
typedef struct test_task {
	uint64_t id;
	const uint8_t *arg;
	size_t arg_len;
	uint32_t attempt;
	int ahead;
} test_task;

/* A batch as the engine answered it, copied. */
typedef struct test_batch {
	engine_batch_status status;
	test_task *tasks;
	size_t ntasks;
	uint32_t parked_us;
	int queue_empty;
} test_batch;

struct hub_slot {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	test_batch *batch;
};

static void answered(hub_slot *s, test_batch *b)
{
	pthread_mutex_lock(&s->mu);
	s->batch = b;
	s->done = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void on_batch(void *ctx, hub_slot *s, const engine_batch *eb)
{
	test_batch *b = calloc(1, sizeof(*b));

	(void)ctx;
	b->status = eb->status;
	b->ntasks = eb->ntasks;
	b->parked_us = eb->parked_us;
	b->queue_empty = eb->queue_empty;
	b->tasks = calloc(eb->ntasks + 1, sizeof(*b->tasks));
	for (size_t r = 0, i = 0, at = 0; r < eb->nruns; r++) {
		for (size_t k = 0; k < eb->runs[r].count; k++, i++) {
			uint8_t *arg = malloc(eb->arg_lens[i] + 1);
			memcpy(arg, eb->args + at, eb->arg_lens[i]);
			at += eb->arg_lens[i];
			b->tasks[i] = (test_task){eb->ids[i], arg, eb->arg_lens[i], eb->attempts[i], eb->runs[r].ahead};
		}
	}
	answered(s, b);
}

static void on_queue_reply(void *ctx, hub_slot *s, const engine_queue_reply *r)
{
	(void)ctx;
	(void)r;
	answered(s, NULL);
}

static void on_drop(void *ctx, hub_slot *s)
{
	(void)ctx;
	answered(s, NULL);
}

static void batch_free(test_batch *b)
{
	for (size_t i = 0; i < b->ntasks; i++)
		free((void *)b->tasks[i].arg);
	free(b->tasks);
	free(b);
}

typedef struct fixture {
	char dir[64];
	char cwd[1024];
	gw_config cfg;
	credentials *creds;
	fake_backend *fake;
	engine *e;
	char pool[32];
	char job[32];
	char w[2][32]; /* the pool's workers, as the fake started them */
} fixture;

/* An engine on an in-memory store whose ended jobs are kept retain_ms,
 * starting local_starts workers at once. */
static int setup_engine(void **state, int64_t retain_ms, int local_starts)
{
	fixture *f = calloc(1, sizeof(*f));
	char *argv[] = {"test_engine", NULL};
	char detail[256] = "";

	assert_non_null(getcwd(f->cwd, sizeof(f->cwd)));
	snprintf(f->dir, sizeof(f->dir), "/tmp/strand-engine-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(chdir(f->dir), 0); /* the engine keeps process logs next to its database */
	assert_int_equal(gw_config_load(&f->cfg, 1, argv, detail, sizeof(detail)), CM_OK);
	snprintf(f->cfg.db, sizeof(f->cfg.db), ":memory:");
	f->cfg.lease_ms = 150;
	f->cfg.retain_ms = retain_ms;
	f->cfg.local_starts = local_starts;
	f->cfg.local_start_slot_ms = 60000; /* a start holds its place until it connects */
	assert_int_equal(credentials_new(&f->creds), CM_OK);
	f->fake = fake_backend_new("local");
	backend *backends[] = {fake_backend_base(f->fake)};
	assert_int_equal(engine_new(&f->cfg, f->creds, backends, 1, &f->e, detail, sizeof(detail)), CM_OK);
	engine_set_link(f->e, &(engine_link){.batch = on_batch, .queue_reply = on_queue_reply, .drop = on_drop});
	assert_int_equal(engine_start(f->e), CM_OK);
	*state = f;
	return 0;
}

/* Every worker starts at once, whatever this host's CPUs. */
static int setup(void **state)
{
	return setup_engine(state, 7 * 86400000LL, 64);
}

static int setup_retain_2s(void **state)
{
	return setup_engine(state, 2000, 64);
}

static int setup_two_starts(void **state)
{
	return setup_engine(state, 7 * 86400000LL, 2);
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];

	engine_quiesce(f->e);
	engine_free(f->e); /* frees the fake backend too */
	credentials_free(f->creds);
	assert_int_equal(chdir(f->cwd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* A pool of two workers (spec: more pool fields, JSON without braces). */
static void pool_of_two(fixture *f, const char *more)
{
	char body[256], detail[256] = "";
	pool_spec spec;
	json_t *out = NULL;

	snprintf(body, sizeof(body), "{\"processes\":2%s%s}", more[0] ? "," : "", more);
	assert_int_equal(spec_pool_parse(body, strlen(body), "local", "img", &spec, detail, sizeof(detail)), CM_OK);
	assert_int_equal(engine_pool_create(f->e, &spec, &out, detail, sizeof(detail)), CM_OK);
	snprintf(f->pool, sizeof(f->pool), "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	for (int i = 0; i < 2; i++)
		assert_string_not_equal(fake_backend_worker(f->fake, i, f->w[i]), "");
}

/* A local pool of n workers, its id in id. */
static void pool_of(fixture *f, int n, char id[32])
{
	char body[64], detail[256] = "";
	pool_spec spec;
	json_t *out = NULL;

	snprintf(body, sizeof(body), "{\"processes\":%d}", n);
	assert_int_equal(spec_pool_parse(body, strlen(body), "local", "img", &spec, detail, sizeof(detail)), CM_OK);
	assert_int_equal(engine_pool_create(f->e, &spec, &out, detail, sizeof(detail)), CM_OK);
	snprintf(id, 32, "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
}

/* Maps function over n arguments, argument i the JSON text arg(i) prints
 * into the body; f->job is the job. */
static void map_each(fixture *f, const char *function, int n, void (*arg)(cm_buf *body, int i, void *ctx), void *ctx)
{
	char detail[256] = "";
	cm_buf body;
	map_spec spec;
	json_t *out = NULL;

	cm_buf_init(&body);
	cm_buf_printf(&body, "{\"function\":\"%s\",\"args\":[", function);
	for (int i = 0; i < n; i++) {
		cm_buf_puts(&body, i ? "," : "");
		arg(&body, i, ctx);
	}
	cm_buf_printf(&body, "]}");
	assert_int_equal(spec_map_parse(body.data, body.len, 0, &spec, detail, sizeof(detail)), CM_OK);
	assert_int_equal(engine_map(f->e, f->pool, &spec, NULL, &out, detail, sizeof(detail)), CM_OK);
	snprintf(f->job, sizeof(f->job), "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	spec_map_fini(&spec);
	cm_buf_fini(&body);
}

static void index_arg(cm_buf *body, int i, void *ctx)
{
	(void)ctx;
	cm_buf_printf(body, "%d", i);
}

/* Maps the echo function over 0..n-1. */
static void map_echo(fixture *f, int n)
{
	map_each(f, "echo", n, index_arg, NULL);
}

/* Maps function over 0..n-1. */
static void map_function(fixture *f, const char *function, int n)
{
	map_each(f, function, n, index_arg, NULL);
}

static void string_arg(cm_buf *body, int i, void *ctx)
{
	(void)i;
	cm_buf_printf(body, "\"%s\"", (const char *)ctx);
}

/* Maps echo over n strings of len characters each ("x..."). */
static void map_echo_strings(fixture *f, int n, size_t len)
{
	char *s = malloc(len + 1);

	memset(s, 'x', len);
	s[len] = 0;
	map_each(f, "echo", n, string_arg, s);
	free(s);
}

typedef struct pull_args {
	uint32_t want, in_hand;
	const test_task *done; /* answered ok (or failed with fail) */
	size_t ndone;
	int fail;
	const uint64_t *held; /* resync: what the worker holds */
	size_t nheld;
	int resync;
	uint64_t running_task;
	uint32_t running_ms;
	uint32_t run_us; /* each done task's run time; 0: 100 us */
	uint32_t round_trip_us; /* the worker's exchanges' time */
	const char *printed; /* a line its tasks printed on stdout, or NULL ... */
	size_t nprinted; /* ... so many times (0: once) */
	uint64_t output_first; /* the worker's number for the first of them */
	int output_more; /* more lines wait in the worker */
} pull_args;

/* A pull handed to the engine, its answer not yet taken (pull_end). */
typedef struct pending_pull {
	hub_slot slot;
	engine_pull_msg m;
	engine_result *rs;
	uint32_t *printed_lens, *printed_streams;
	char *printed_text;
} pending_pull;

/* Worker w's pull, as the hub hands it over, answered now or later. */
static pending_pull *pull_begin(fixture *f, const char *w, pull_args a)
{
	pending_pull *pp = calloc(1, sizeof(*pp));
	engine_result *rs = calloc(a.ndone + 1, sizeof(*rs));

	pp->slot = (hub_slot){.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	pp->rs = rs;
	pp->m = (engine_pull_msg){.worker_id = w,
	                          .pool_id = f->pool,
	                          .want = a.want,
	                          .in_hand = a.in_hand,
	                          .round_trip_us = a.round_trip_us,
	                          .results = rs,
	                          .nresults = a.ndone,
	                          .resync = a.resync,
	                          .held = a.held,
	                          .nheld = a.nheld,
	                          .running_task = a.running_task,
	                          .running_ms = a.running_ms,
	                          .output_more = a.output_more};
	if (a.printed) {
		size_t n = a.nprinted ? a.nprinted : 1, len = strlen(a.printed);
		pp->printed_lens = calloc(n, sizeof(*pp->printed_lens));
		pp->printed_streams = calloc(n, sizeof(*pp->printed_streams));
		pp->printed_text = malloc(n * len + 1);
		for (size_t i = 0; i < n; i++) {
			pp->printed_lens[i] = (uint32_t)len;
			pp->printed_streams[i] = 1;
			memcpy(pp->printed_text + i * len, a.printed, len);
		}
		pp->m.output = (const uint8_t *)pp->printed_text;
		pp->m.output_lens = pp->printed_lens;
		pp->m.output_streams = pp->printed_streams;
		pp->m.noutput = n;
		pp->m.output_first = a.output_first;
	}
	for (size_t i = 0; i < a.ndone; i++)
		rs[i] = (engine_result){.task_id = a.done[i].id,
		                        .ok = !a.fail,
		                        .value = a.fail ? (const uint8_t *)"boom" : a.done[i].arg,
		                        .len = a.fail ? 4 : a.done[i].arg_len,
		                        .run_us = a.run_us ? a.run_us : 100,
		                        .attempt = a.done[i].attempt};
	assert_int_equal(engine_pull(f->e, &pp->slot, &pp->m), CM_OK);
	return pp;
}

/* Waits for a pull's answer: the batch (batch_free). */
static test_batch *pull_end(pending_pull *pp)
{
	test_batch *b;

	pthread_mutex_lock(&pp->slot.mu);
	while (!pp->slot.done)
		pthread_cond_wait(&pp->slot.cv, &pp->slot.mu);
	pthread_mutex_unlock(&pp->slot.mu);
	b = pp->slot.batch;
	free(pp->rs);
	free(pp->printed_lens);
	free(pp->printed_streams);
	free(pp->printed_text);
	free(pp);
	assert_non_null(b);
	return b;
}

/* One pull of worker w, as the hub hands it over; the batch the engine
 * answers (batch_free). */
static test_batch *pull(fixture *f, const char *w, pull_args a)
{
	return pull_end(pull_begin(f, w, a));
}

static json_t *job_get(fixture *f)
{
	json_t *out = NULL;

	assert_int_equal(engine_job_get(f->e, f->job, &out), CM_OK);
	return out;
}

/* A pool of two mapping echo over n strings: its first worker takes the
 * map's probe (*probe) and, reporting it done, its next batch of up to
 * want, returned. */
static test_batch *past_the_probe(fixture *f, int n, uint32_t want, test_batch **probe)
{
	pool_of_two(f, "");
	map_echo(f, n);
	*probe = pull(f, f->w[0], (pull_args){.want = want});
	return pull(f, f->w[0], (pull_args){.want = want, .done = (*probe)->tasks, .ndone = 1});
}

/* ---- the tests ---------------------------------------------------------- */

/* A new job's first task is a probe; once its time is known (100 us) a
 * worker gets about 20 ms of it, never more than its fair share of the
 * queue among the live workers. */
static void test_probe_then_batches_within_fair_share(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo(f, 1000);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1000});
	assert_int_equal(a->status, ENGINE_BATCH_OK);
	assert_int_equal(a->ntasks, 1); /* the probe */
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 1000, .done = a->tasks, .ndone = 1});
	/* room: 20 ms + one task = 201 tasks of 100 us; share: ceil(999 / 2) = 500 */
	assert_int_equal(a2->ntasks, 201);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000});
	assert_int_equal(b->ntasks, 201);
	test_batch *b2 = pull(f, f->w[1], (pull_args){.want = 1000, .in_hand = 201});
	/* holding 201 tasks: no room for more */
	assert_int_equal(b2->ntasks, 0);
	/* every task handed out once, in order */
	uint64_t next = a->tasks[0].id;
	assert_int_equal(a2->tasks[0].id, next + 1);
	assert_int_equal(b->tasks[0].id, next + 202);
	for (size_t i = 1; i < b->ntasks; i++)
		assert_int_equal(b->tasks[i].id, b->tasks[i - 1].id + 1);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
	batch_free(b2);
}

/* A far worker's batch covers two of its round trips as well as the
 * budget: the next batch lands a round trip after it asks, while this one
 * runs. One that says its round trip is an hour gets a second's worth. */
static void test_batches_cover_the_round_trip(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo(f, 100000);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 100000, .round_trip_us = 10000});
	assert_int_equal(a->ntasks, 1); /* the probe */
	test_batch *a2 =
	        pull(f, f->w[0], (pull_args){.want = 100000, .done = a->tasks, .ndone = 1, .round_trip_us = 10000});
	/* room: 20 ms + 2 x 10 ms + one task = 401 tasks of 100 us */
	assert_int_equal(a2->ntasks, 401);
	/* holding 201 (the budget's): room for two round trips' more */
	test_batch *a3 = pull(f, f->w[0], (pull_args){.want = 100000, .in_hand = 201, .round_trip_us = 10000});
	assert_int_equal(a3->ntasks, 200);
	/* 3,600 s claimed: 20 ms + 2 s + one task = 20,201 tasks */
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 100000, .round_trip_us = 3600u * 1000000u});
	assert_int_equal(b->ntasks, 20201);
	batch_free(a);
	batch_free(a2);
	batch_free(a3);
	batch_free(b);
}

/* A pull that waited at the gateway for work says for how long, so that
 * its worker leaves the wait out of its round trip: a worker that holds
 * one long task at a time exchanges only when it holds nothing. A pull
 * answered from the queue waited for nothing. */
/* An idle worker whose lines did not all fit its pull is answered at once,
 * so that its next pull brings the rest, not after a park of PARK_MS: a
 * result waits for the lines printed before it (worker/output.h). */
static void test_pull_with_more_lines_is_not_parked(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1, .printed = "one of many", .output_more = 1});
	assert_int_equal(a->ntasks, 0);
	assert_int_equal(a->parked_us, 0);
	batch_free(a);
}

/* The done count of f->job. */
static int64_t job_done(fixture *f)
{
	json_t *j = job_get(f);
	int64_t done = json_integer_value(json_object_get(j, "done"));

	json_decref(j);
	return done;
}

/* While the program that made a pool follows its output (reads that name
 * its lease), a pull whose lines would push out of the kept ones lines it
 * has not read is answered RETRY, and its result is not recorded either;
 * once the program read on, the same pull goes through. A reader that
 * names no lease, or another, holds nothing back; a reader is told when
 * lines after its own went before it read them. */
static void test_output_waits_for_the_program_following_it(void **state)
{
	fixture *f = *state;
	char detail[256] = "", more[64], lease[20];
	json_t *out = NULL;
	uint64_t first = 0;
	int missed = -1;

	assert_int_equal(engine_lease_create(f->e, 60000, &out, detail, sizeof(detail)), CM_OK);
	snprintf(lease, sizeof(lease), "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	snprintf(more, sizeof(more), "\"lease\":\"%s\"", lease);
	pool_of_two(f, more);
	assert_int_equal(engine_pool_output_read(f->e, "p-0000000000000000", 0, lease, &missed), CM_ENOENT);
	/* Read by others only: 12,288 lines go, past the 10,000 kept (a
	 * flood: more wait in the worker, so no pull is parked). */
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 0, "", &missed), CM_OK);
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 0, "l-0000000000000000", &missed), CM_OK);
	for (int i = 0; i < 12; i++, first += 1024) {
		test_batch *b =
		        pull(f, f->w[0],
		             (pull_args){.printed = "x", .nprinted = 1024, .output_first = first, .output_more = 1});
		assert_int_equal(b->status, ENGINE_BATCH_OK);
		batch_free(b);
	}
	/* The oldest went (the pool keeps 10,000, trimmed past 11,000): lines
	 * after 0 were missed, none after 2,288, the newest gone. */
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 0, "", &missed), CM_OK);
	assert_int_equal(missed, 1);
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 2287, "", &missed), CM_OK);
	assert_int_equal(missed, 1);
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 2288, "", &missed), CM_OK);
	assert_int_equal(missed, 0);
	map_echo(f, 1);
	test_batch *t = pull(f, f->w[0], (pull_args){.want = 1});
	assert_int_equal(t->ntasks, 1);
	/* The program has shown 3,000: 1,024 more would leave 11,312 it has
	 * not, past the 10,000 kept. */
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 3000, lease, &missed), CM_OK);
	pull_args with_result = {.done = t->tasks,
	                         .ndone = 1,
	                         .printed = "x",
	                         .nprinted = 1024,
	                         .output_first = first,
	                         .output_more = 1};
	test_batch *b = pull(f, f->w[0], with_result);
	assert_int_equal(b->status, ENGINE_BATCH_RETRY);
	assert_int_equal(job_done(f), 0);
	batch_free(b);
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 12288, "", &missed), CM_OK); /* another reader */
	b = pull(f, f->w[0], with_result);
	assert_int_equal(b->status, ENGINE_BATCH_RETRY);
	batch_free(b);
	/* It has shown 3,312: room for them. */
	assert_int_equal(engine_pool_output_read(f->e, f->pool, 3312, lease, &missed), CM_OK);
	b = pull(f, f->w[0], with_result);
	assert_int_equal(b->status, ENGINE_BATCH_OK);
	assert_int_equal(job_done(f), 1);
	batch_free(b);
	batch_free(t);
}

static void test_parked_pull_says_its_wait(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	/* Nothing queued: parked. The engine takes requests in arrival order,
	 * so the map below comes after the pull is parked; the sleep makes its
	 * wait more than a microsecond. */
	pending_pull *parked = pull_begin(f, f->w[0], (pull_args){.want = 1});
	usleep(20 * 1000);
	map_echo(f, 10);
	test_batch *a = pull_end(parked);
	assert_int_equal(a->ntasks, 1); /* the probe, handed to the parked pull */
	assert_true(a->parked_us > 0);
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 1, .done = a->tasks, .ndone = 1});
	assert_int_equal(a2->ntasks, 1);
	assert_int_equal(a2->parked_us, 0);
	/* The other worker's pull while tasks are queued: at once. */
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1});
	assert_int_equal(b->ntasks, 1);
	assert_int_equal(b->parked_us, 0);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
}

/* A batch says when it leaves the pool's queue empty: its worker then
 * sends its results at once (the job waits for them) and asks for no more
 * until something changes. A batch smaller than asked for (the fair share
 * of two workers) says nothing of the kind while tasks remain. */
static void test_batch_says_when_the_queue_is_empty(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo(f, 3);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 10});
	assert_int_equal(a->ntasks, 1); /* the probe: 2 left */
	assert_false(a->queue_empty);
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 10, .done = a->tasks, .ndone = 1});
	assert_int_equal(a2->ntasks, 1); /* its share of 2 among 2 workers */
	assert_false(a2->queue_empty);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 10});
	assert_int_equal(b->ntasks, 1); /* the last */
	assert_true(b->queue_empty);
	test_batch *b2 = pull(f, f->w[1], (pull_args){.want = 10, .in_hand = 1});
	assert_int_equal(b2->ntasks, 0);
	assert_true(b2->queue_empty);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
	batch_free(b2);
}

/* Bytes cap a batch too, so its frame fits what a worker accepts: of 300
 * arguments of 200,000 bytes, 100 µs each, a batch would be 150 tasks (a
 * worker's fair share, under the 201 its time allows), 30 MB, and the next
 * worker's 108 (216 left); 16 MiB hold 83 of them
 * (200,002 bytes of JSON, the function's name and 32 bytes of framing
 * each). The rest follow in order, none skipped. */
static void test_batch_bytes_are_capped(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo_strings(f, 300, 200000);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1000});
	assert_int_equal(a->ntasks, 1); /* the probe */
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 1000, .done = a->tasks, .ndone = 1});
	assert_int_equal(a2->ntasks, 83);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000});
	assert_int_equal(b->ntasks, 83);
	for (size_t i = 0; i < a2->ntasks; i++)
		assert_int_equal(a2->tasks[i].id, a->tasks[0].id + 1 + i);
	for (size_t i = 0; i < b->ntasks; i++)
		assert_int_equal(b->tasks[i].id, a->tasks[0].id + 84 + i);
	assert_int_equal(b->tasks[0].arg_len, 200002);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
}

/* A one-task job (an apply) of a function its pool has not measured is
 * its own probe: it goes alone. Once echo's time is known (100 us), the
 * one-task echo jobs take it as theirs, and a pull takes a worker's fair
 * share of them, in order. */
static void test_one_task_jobs_batched_at_their_function_cost(void **state)
{
	fixture *f = *state;
	uint64_t first = 0;

	pool_of_two(f, "");
	for (int i = 0; i < 3; i++)
		map_echo(f, 1);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1000});
	assert_int_equal(a->ntasks, 1); /* the probe */
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 1000, .done = a->tasks, .ndone = 1});
	assert_int_equal(a2->ntasks, 1); /* its share of the two left, now priced */
	assert_int_equal(a2->tasks[0].id, a->tasks[0].id + 1);
	for (int i = 0; i < 50; i++)
		map_echo(f, 1);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000});
	assert_int_equal(b->ntasks, 26); /* share: 51 / 2 */
	first = b->tasks[0].id;
	assert_int_equal(first, a2->tasks[0].id + 1);
	for (size_t i = 1; i < b->ntasks; i++)
		assert_int_equal(b->tasks[i].id, first + i);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
}

/* The pool keeps each function's cost, not only the last one measured:
 * applies of echo (10 us) submitted after a map of noop (100 us) ran go to
 * busy workers (100 tasks in hand), each its fair share of them. Priced as
 * a batch each, as a function the pool never measured is, none would go to
 * a worker with anything in hand. */
static void test_applies_priced_by_their_function_beside_another(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo(f, 1);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1000});
	assert_int_equal(a->ntasks, 1);
	map_function(f, "noop", 2);
	uint64_t noop_first = a->tasks[0].id + 1;
	test_batch *b = pull(f, f->w[0], (pull_args){.want = 1000, .done = a->tasks, .ndone = 1, .run_us = 10});
	assert_int_equal(b->ntasks, 1); /* noop's probe */
	assert_int_equal(b->tasks[0].id, noop_first);
	test_batch *c = pull(f, f->w[0], (pull_args){.want = 1000, .done = b->tasks, .ndone = 1, .run_us = 100});
	assert_int_equal(c->ntasks, 1); /* the map's last */
	assert_int_equal(c->tasks[0].id, noop_first + 1);
	for (int i = 0; i < 3; i++)
		map_echo(f, 1);
	uint64_t echo_first = noop_first + 2;
	test_batch *d = pull(f, f->w[1], (pull_args){.want = 1000, .in_hand = 100});
	assert_int_equal(d->ntasks, 2); /* its share: (3 + 1) / 2 */
	assert_int_equal(d->tasks[0].id, echo_first);
	assert_int_equal(d->tasks[1].id, echo_first + 1);
	test_batch *e = pull(f, f->w[0], (pull_args){.want = 1000, .in_hand = 100});
	assert_int_equal(e->ntasks, 1);
	assert_int_equal(e->tasks[0].id, echo_first + 2);
	/* a function never measured here is a probe: passed over by a worker
	 * holding more than a batch's work (1,000 tasks of about 28 us) */
	map_function(f, "pi", 1);
	test_batch *g = pull(f, f->w[1], (pull_args){.want = 1000, .in_hand = 1000});
	assert_int_equal(g->ntasks, 0);
	test_batch *h = pull(f, f->w[1], (pull_args){.want = 1000, .in_hand = 100, .done = d->tasks, .ndone = 2});
	assert_int_equal(h->ntasks, 1);
	assert_int_equal(h->tasks[0].id, echo_first + 3);
	batch_free(a);
	batch_free(b);
	batch_free(c);
	batch_free(d);
	batch_free(e);
	batch_free(g);
	batch_free(h);
}

/* A pool keeps the costs of the POOL_COSTS (8) functions measured last: a
 * ninth forgets the one used longest ago, whose apply is then a probe
 * again (first in a batch or not at all), while applies of the others go
 * together in one batch. */
static void test_function_costs_kept_for_the_last_eight(void **state)
{
	fixture *f = *state;
	char fn[32];
	test_batch *done = NULL;

	pool_of_two(f, "");
	for (int i = 1; i <= 9; i++) {
		snprintf(fn, sizeof(fn), "libcost.so:f%d", i);
		map_function(f, fn, 1);
		test_batch *b = pull(f, f->w[0],
		                     (pull_args){.want = 1000,
		                                 .done = done ? done->tasks : NULL,
		                                 .ndone = done ? done->ntasks : 0,
		                                 .run_us = 50});
		assert_int_equal(b->ntasks, 1);
		if (done)
			batch_free(done);
		done = b;
	}
	map_function(f, "noop", 1); /* the last result's pull takes it */
	test_batch *last = pull(f, f->w[0], (pull_args){.want = 1000, .done = done->tasks, .ndone = 1, .run_us = 50});
	assert_int_equal(last->ntasks, 1);
	uint64_t next = last->tasks[0].id + 1;
	map_function(f, "libcost.so:f2", 1);
	map_function(f, "libcost.so:f1", 1); /* forgotten */
	map_function(f, "libcost.so:f9", 1);
	map_function(f, "libcost.so:f3", 1);
	test_batch *g = pull(f, f->w[1], (pull_args){.want = 1000, .in_hand = 10});
	/* its share of the 4 queued and the 1 the other holds; f1 passed over */
	assert_int_equal(g->ntasks, 3);
	assert_int_equal(g->tasks[0].id, next);
	assert_int_equal(g->tasks[1].id, next + 2);
	assert_int_equal(g->tasks[2].id, next + 3);
	test_batch *h = pull(f, f->w[0], (pull_args){.want = 1000, .in_hand = 10});
	assert_int_equal(h->ntasks, 1); /* f1, a probe, alone */
	assert_int_equal(h->tasks[0].id, next + 1);
	batch_free(done);
	batch_free(last);
	batch_free(g);
	batch_free(h);
}

/* A pool of two whose first worker has the probe of a 1,000-task echo map
 * (*a) and then its 201 next (*a2: 20 ms of 100 us tasks, alone in the
 * pool); the map's first id. */
static uint64_t map_under_way(fixture *f, test_batch **a, test_batch **a2)
{
	*a2 = past_the_probe(f, 1000, 1000, a);
	assert_int_equal((*a2)->ntasks, 201);
	return (*a)->tasks[0].id;
}

/* A job's turn in a batch is its share among the pool's open jobs: with 9
 * applies beside a large map (10 open jobs), a pull that may take 505
 * (its share of the 808 queued and the 201 the other worker holds) takes
 * 50 of the map, the 9 applies, and the map's next turn of 50 (before,
 * the map's 201 filled the batch and the applies waited for the next
 * pull). The applies came 150 ms before: as long applies' would, they
 * leave the map its share. */
static void test_large_job_turn_shared_among_open_jobs(void **state)
{
	fixture *f = *state;

	test_batch *a, *a2;
	uint64_t base = map_under_way(f, &a, &a2);
	for (int i = 0; i < 9; i++)
		map_echo(f, 1);
	usleep(150 * 1000); /* no small job came for 100 ms: no small turns (below) */
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000});
	assert_int_equal(b->ntasks, 109);
	for (size_t i = 0; i < 50; i++)
		assert_int_equal(b->tasks[i].id, base + 202 + i);
	for (size_t i = 0; i < 9; i++)
		assert_int_equal(b->tasks[50 + i].id, base + 1000 + i);
	for (size_t i = 0; i < 50; i++)
		assert_int_equal(b->tasks[59 + i].id, base + 252 + i);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
}

/* While small jobs keep coming (one in the last 100 ms, and some open), a
 * large job's turn is 32 tasks: its results are recorded by the cycles the
 * applies wait for. Two large maps side by side, and a map beside small
 * jobs that came longer ago (long applies), keep their shares. */
static void test_large_jobs_go_small_turns_while_small_jobs_come(void **state)
{
	fixture *f = *state;

	test_batch *a, *a2;
	uint64_t base = map_under_way(f, &a, &a2);
	map_echo(f, 2);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000});
	assert_int_equal(b->ntasks, 66); /* 32 of the map, the 2 just come, 32 more */
	for (size_t i = 0; i < 32; i++) {
		assert_int_equal(b->tasks[i].id, base + 202 + i);
		assert_int_equal(b->tasks[34 + i].id, base + 234 + i);
	}
	assert_int_equal(b->tasks[32].id, base + 1000);
	assert_int_equal(b->tasks[33].id, base + 1001);
	/* the small job ended (its results in): the map alone again */
	test_batch *b2 = pull(f, f->w[1], (pull_args){.want = 1000, .done = b->tasks, .ndone = b->ntasks});
	assert_int_equal(b2->ntasks, 201);
	/* a small job that came 150 ms ago and has not ended: no small turns */
	map_echo(f, 1);
	usleep(150 * 1000);
	test_batch *c = pull(f, f->w[0], (pull_args){.want = 1000, .done = a2->tasks, .ndone = a2->ntasks});
	size_t first_turn = 0;
	while (first_turn < c->ntasks && c->tasks[first_turn].id < base + 1000)
		first_turn++;
	assert_true(first_turn > 32);
	/* a second large map beside the first: no small turns either */
	map_echo(f, 1000);
	test_batch *d = pull(f, f->w[1], (pull_args){.want = 1000, .done = b2->tasks, .ndone = b2->ntasks});
	first_turn = 0;
	while (first_turn < d->ntasks && d->tasks[first_turn].id < base + 1000)
		first_turn++;
	assert_true(first_turn > 32);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
	batch_free(b2);
	batch_free(c);
	batch_free(d);
}

/* A job of at most 64 tasks is small: its tasks go marked to run ahead of
 * what a worker holds. A job of 65 is not. */
static void test_small_jobs_tasks_run_ahead(void **state)
{
	fixture *f = *state;
	size_t seen = 0, ahead = 0;
	uint64_t base = 0;
	test_batch *last[2] = {NULL, NULL};

	pool_of_two(f, "");
	map_echo(f, 65);
	map_echo(f, 64);
	for (int k = 0; seen < 129 && k < 40; k++) { /* the two workers in turn, reporting what they ran */
		test_batch *b = last[k % 2];
		test_batch *n =
		        pull(f, f->w[k % 2],
		             (pull_args){.want = 1000, .done = b ? b->tasks : NULL, .ndone = b ? b->ntasks : 0});
		if (!seen)
			base = n->tasks[0].id; /* the 65's probe: ids base.. base + 64, then the 64's */
		for (size_t i = 0; i < n->ntasks; i++) {
			assert_int_equal(n->tasks[i].ahead, n->tasks[i].id >= base + 65);
			ahead += n->tasks[i].ahead;
		}
		seen += n->ntasks;
		if (b)
			batch_free(b);
		last[k % 2] = n;
	}
	assert_int_equal(seen, 129);
	assert_int_equal(ahead, 64);
	batch_free(last[0]);
	batch_free(last[1]);
}

/* Jobs take turns in a pool's queue: a small job submitted while a large
 * map has hundreds of tasks queued is handed out by the next pulls, not
 * after the map: once a batch of the map went, its probe to the next
 * empty-handed worker (a busy one passes over it to the map's tasks), then
 * its other tasks in the next batch. */
static void test_small_job_served_during_large_map(void **state)
{
	fixture *f = *state;
	char big[32];

	pool_of_two(f, "");
	map_echo(f, 1000);
	snprintf(big, sizeof(big), "%s", f->job);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1000});
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 1000, .done = a->tasks, .ndone = 1});
	assert_int_equal(a2->ntasks, 201);
	uint64_t big_first = a->tasks[0].id;
	map_function(f, "pi", 3); /* ids big_first + 1000 .. + 1002, of a function not measured here */
	uint64_t small_first = big_first + 1000;
	/* the map's turns (32 tasks beside a small job that just came) around
	 * the small job's probe, which waits for a worker with room */
	test_batch *b0 = pull(f, f->w[1], (pull_args){.want = 1000});
	assert_int_equal(b0->ntasks, 64);
	for (size_t i = 0; i < b0->ntasks; i++)
		assert_int_equal(b0->tasks[i].id, big_first + 202 + i);
	/* busy (201 in hand): passes over the small job's probe, takes nothing more (no room) */
	test_batch *a3 = pull(f, f->w[0], (pull_args){.want = 1000, .in_hand = 201});
	assert_int_equal(a3->ntasks, 0);
	/* empty-handed: the probe first, then the map's next tasks */
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000, .done = b0->tasks, .ndone = b0->ntasks});
	assert_true(b->ntasks >= 2);
	assert_int_equal(b->tasks[0].id, small_first);
	assert_int_equal(b->tasks[1].id, big_first + 266);
	for (size_t i = 1; i < b->ntasks; i++)
		assert_true(b->tasks[i].id < small_first);
	/* the probe answered: the small job's last two come in the next batch,
	 * though 600-odd of the map's are queued before them */
	test_batch *b2 = pull(f, f->w[1], (pull_args){.want = 1000, .done = b->tasks, .ndone = b->ntasks});
	int small = 0;
	for (size_t i = 0; i < b2->ntasks; i++)
		small += b2->tasks[i].id >= small_first;
	assert_int_equal(small, 2);
	json_t *out = job_get(f);
	assert_string_equal(json_string_value(json_object_get(out, "state")), "running");
	assert_int_equal(json_integer_value(json_object_get(out, "done")), 1);
	json_decref(out);
	batch_free(a);
	batch_free(a2);
	batch_free(a3);
	batch_free(b0);
	batch_free(b);
	batch_free(b2);
}

/* A new job's probe goes to a worker that holds less than a batch's work
 * (50 tasks of 100 us): it starts within 5 ms there,
 * where waiting for an empty-handed worker could take as long as a large
 * map keeps them busy. */
static void test_probe_to_a_worker_with_room(void **state)
{
	fixture *f = *state;

	test_batch *a;
	test_batch *a2 = past_the_probe(f, 1000, 1000, &a);
	uint64_t small_first = a->tasks[0].id + 1000;
	map_function(f, "pi", 3); /* a function not measured here */
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000}); /* the map's turns around the probe */
	assert_int_equal(b->ntasks, 64);
	/* 50 in hand of 100 us: 15 ms of room, the probe (priced as a batch) alone */
	test_batch *c = pull(f, f->w[0], (pull_args){.want = 1000, .in_hand = 50});
	assert_int_equal(c->ntasks, 1);
	assert_int_equal(c->tasks[0].id, small_first);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
	batch_free(c);
}

/* A small job of a function its pool has measured is priced at it, not
 * probed: beside a large map of echo (10 us), a 3-task echo map goes whole
 * in the next batch, between two turns of the map (a probe would go first
 * in a batch or not at all). */
static void test_small_map_of_a_measured_function_is_not_probed(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo(f, 1000);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1000});
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 1000, .done = a->tasks, .ndone = 1, .run_us = 10});
	assert_int_equal(a2->ntasks, 500); /* its share */
	uint64_t small_first = a->tasks[0].id + 1000;
	map_echo(f, 3);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 1000});
	/* the map's turn (32 beside a small job that just came), the small
	 * job, the map's next turn */
	assert_int_equal(b->ntasks, 67);
	assert_int_equal(b->tasks[32].id, small_first);
	size_t small = 0;
	for (size_t i = 0; i < b->ntasks; i++)
		if (b->tasks[i].id >= small_first) {
			assert_int_equal(b->tasks[i].id, small_first + small);
			small++;
		}
	assert_int_equal(small, 3);
	batch_free(a);
	batch_free(a2);
	batch_free(b);
}

/* The fair share caps a batch: each live worker holds about as much of
 * the pool's work. 10 tasks among 2 workers: the first takes 5, and
 * asking again with them in hand it gets none of the other's 5, which the
 * second takes whole. (Shared from the queue alone, the first took 3 more
 * and the second 2: a quarter of a map's time with one worker idle.) */
static void test_fair_share_caps_small_queues(void **state)
{
	fixture *f = *state;

	test_batch *a;
	test_batch *a2 = past_the_probe(f, 11, 100, &a);
	assert_int_equal(a2->ntasks, 5);
	test_batch *a3 = pull(f, f->w[0], (pull_args){.want = 100, .in_hand = 5});
	assert_int_equal(a3->ntasks, 0);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 100});
	assert_int_equal(b->ntasks, 5);
	assert_int_equal(b->tasks[0].id, a2->tasks[4].id + 1);
	batch_free(a);
	batch_free(a2);
	batch_free(a3);
	batch_free(b);
}

/* At a map's end a worker that holds tasks takes no more than its share
 * of the queue: the other's count is from its last pull, and it may have
 * run most of them since. Two workers hold 3 of 8 tasks each; the first
 * ran 2 and takes 1 of the 2 left (not 2, its share were the other's 3
 * still held), and the second, having run 2 too, the last. */
static void test_a_holders_share_is_no_more_than_its_share_of_the_queue(void **state)
{
	fixture *f = *state;

	test_batch *a;
	test_batch *a2 = past_the_probe(f, 9, 3, &a);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 3});
	assert_int_equal(a2->ntasks, 3);
	assert_int_equal(b->ntasks, 3);
	test_batch *a3 = pull(f, f->w[0], (pull_args){.want = 100, .in_hand = 1, .done = a2->tasks, .ndone = 2});
	assert_int_equal(a3->ntasks, 1);
	test_batch *b2 = pull(f, f->w[1], (pull_args){.want = 100, .in_hand = 1, .done = b->tasks, .ndone = 2});
	assert_int_equal(b2->ntasks, 1);
	assert_int_equal(b2->tasks[0].id, a3->tasks[0].id + 1);
	batch_free(a);
	batch_free(a2);
	batch_free(a3);
	batch_free(b);
	batch_free(b2);
}

/* A worker that dies holding tasks: they go back to the queue and the
 * other worker, running what it gets, gets exactly them; the job
 * completes once, every task done once. */
static void test_lost_worker_tasks_are_requeued(void **state)
{
	fixture *f = *state;

	test_batch *a;
	test_batch *a2 = past_the_probe(f, 6, 10, &a);
	assert_int_equal(a2->ntasks, 3);
	fake_backend_exit(f->fake, f->w[0], 1);
	/* Once the executor saw it end, its 3 tasks are queued again. */
	test_batch *b = NULL;
	size_t got = 0;
	uint64_t ids[8];
	for (int i = 0; i < 100 && got < 5; i++) {
		test_batch *ran = b;
		b = pull(f, f->w[1],
		         (pull_args){.want = 10, .done = ran ? ran->tasks : NULL, .ndone = ran ? ran->ntasks : 0});
		if (ran)
			batch_free(ran);
		for (size_t k = 0; k < b->ntasks && got < 8; k++)
			ids[got++] = b->tasks[k].id;
		if (got < 5)
			usleep(10000);
	}
	assert_int_equal(got, 5); /* the 2 never handed out and the 3 the dead one held */
	batch_free(pull(f, f->w[1], (pull_args){.want = 10, .done = b->tasks, .ndone = b->ntasks}));
	batch_free(b);
	for (size_t k = 0; k < a2->ntasks; k++) {
		int found = 0;
		for (size_t i = 0; i < got; i++)
			found |= ids[i] == a2->tasks[k].id;
		assert_true(found);
	}
	json_t *j = job_get(f);
	assert_int_equal(json_integer_value(json_object_get(j, "done")), 6);
	json_decref(j);
	batch_free(a);
	batch_free(a2);
}

/* After a call answered in a later cycle, the cycle that answered the
 * pull before it has moved the generations. */
static void cycle_done(fixture *f)
{
	json_decref(job_get(f));
}

/* A follower of a pool's output looks again only after a cycle that stored
 * some: a task's result alone moves the generation, not the output's. */
static void test_output_generation_moves_only_with_output(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo(f, 4);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 1});
	cycle_done(f);
	uint64_t any = engine_generation(f->e, ENGINE_WATCH_ANY);
	uint64_t output = engine_generation(f->e, ENGINE_WATCH_OUTPUT);
	test_batch *b = pull(f, f->w[0], (pull_args){.want = 1, .done = a->tasks, .ndone = 1});
	cycle_done(f);
	assert_true(engine_generation(f->e, ENGINE_WATCH_ANY) > any); /* a result: long polls look */
	assert_int_equal(engine_generation(f->e, ENGINE_WATCH_OUTPUT), output); /* not the output's */
	test_batch *c = pull(f, f->w[0], (pull_args){.want = 1, .done = b->tasks, .ndone = 1, .printed = "hello"});
	cycle_done(f);
	assert_true(engine_generation(f->e, ENGINE_WATCH_OUTPUT) > output);
	batch_free(a);
	batch_free(b);
	batch_free(c);
}

/* A local pool's workers start --local-starts at a time (here 2): the
 * third once one of the first two connected, the fourth once the other
 * did, and no more than the pool's size. */
static void test_local_workers_start_a_few_at_a_time(void **state)
{
	fixture *f = *state;
	char w[4][32];

	pool_of(f, 4, f->pool);
	assert_string_not_equal(fake_backend_worker(f->fake, 0, w[0]), "");
	assert_string_not_equal(fake_backend_worker(f->fake, 1, w[1]), "");
	usleep(200000); /* time for a third to come, were it started */
	assert_int_equal(fake_backend_runs(f->fake), 2);

	map_echo(f, 8);
	batch_free(pull(f, w[0], (pull_args){.want = 1}));
	assert_string_not_equal(fake_backend_worker(f->fake, 2, w[2]), "");
	assert_int_equal(fake_backend_runs(f->fake), 3); /* w[1] still starting holds the other place */

	batch_free(pull(f, w[1], (pull_args){.want = 1}));
	assert_string_not_equal(fake_backend_worker(f->fake, 3, w[3]), "");
	batch_free(pull(f, w[2], (pull_args){.want = 1}));
	batch_free(pull(f, w[3], (pull_args){.want = 1}));
	usleep(100000);
	assert_int_equal(fake_backend_runs(f->fake), 4);
}

/* While one pool's starts take every place, another pool still starts
 * its workers, one at a time. */
static void test_a_pool_starts_beside_another_holding_the_starts(void **state)
{
	fixture *f = *state;
	char other[32], w[4][32];

	pool_of(f, 4, f->pool);
	assert_string_not_equal(fake_backend_worker(f->fake, 1, w[1]), "");
	pool_of(f, 2, other);
	assert_string_not_equal(fake_backend_worker(f->fake, 2, w[2]), "");
	usleep(200000); /* time for a fourth to come, were it started */
	assert_int_equal(fake_backend_runs(f->fake), 3);
}

/* A connected worker silent for two leases is killed. */
static void test_silent_worker_loses_its_lease(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "");
	map_echo(f, 4);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 10});
	batch_free(a);
	for (int i = 0; i < 200 && fake_backend_kills(f->fake, f->w[0]) == 0; i++)
		usleep(10000);
	assert_int_equal(fake_backend_kills(f->fake, f->w[0]), 1);
}

/* retry_errors: a failing task runs again, up to max_attempts, then fails
 * for good with its last error. */
static void test_errors_retried_up_to_max_attempts(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "\"max_attempts\":2,\"retry_errors\":true");
	map_echo(f, 1);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 10});
	assert_int_equal(a->ntasks, 1);
	assert_int_equal(a->tasks[0].attempt, 1);
	test_batch *a2 = pull(f, f->w[0], (pull_args){.want = 10, .done = a->tasks, .ndone = 1, .fail = 1});
	assert_int_equal(a2->ntasks, 1);
	assert_int_equal(a2->tasks[0].id, a->tasks[0].id);
	assert_int_equal(a2->tasks[0].attempt, 2);
	test_batch *a3 = pull(f, f->w[0], (pull_args){.want = 10, .done = a2->tasks, .ndone = 1, .fail = 1});
	assert_int_equal(a3->ntasks, 0);
	json_t *j = job_get(f);
	assert_int_equal(json_integer_value(json_object_get(j, "failed")), 1);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "done");
	json_decref(j);
	batch_free(a);
	batch_free(a2);
	batch_free(a3);
}

/* A worker that lists fewer tasks than it was handed (an answer lost on
 * the way) gets the missing ones requeued: another worker receives them. */
static void test_resync_requeues_what_the_worker_lacks(void **state)
{
	fixture *f = *state;

	test_batch *a;
	test_batch *a2 = past_the_probe(f, 9, 10, &a);
	assert_int_equal(a2->ntasks, 4);
	uint64_t held[] = {a2->tasks[0].id};
	test_batch *a3 = pull(f, f->w[0], (pull_args){.want = 0, .in_hand = 1, .resync = 1, .held = held, .nheld = 1});
	batch_free(a3);
	test_batch *b = pull(f, f->w[1], (pull_args){.want = 20});
	test_batch *b2 = pull(f, f->w[1], (pull_args){.want = 20, .in_hand = (uint32_t)b->ntasks});
	size_t seen = 0;
	for (size_t k = 1; k < a2->ntasks; k++)
		for (int pass = 0; pass < 2; pass++) {
			test_batch *x = pass ? b2 : b;
			for (size_t i = 0; i < x->ntasks; i++)
				seen += x->tasks[i].id == a2->tasks[k].id;
		}
	assert_int_equal(seen, 3); /* the three it did not list, each once */
	batch_free(a);
	batch_free(a2);
	batch_free(b);
	batch_free(b2);
}

/* A task running past the pool's timeout fails with "timed out", and its
 * worker is told to stop and killed. */
static void test_timeout_fails_the_task_and_replaces_the_worker(void **state)
{
	fixture *f = *state;

	pool_of_two(f, "\"timeout_s\":1");
	map_echo(f, 1);
	test_batch *a = pull(f, f->w[0], (pull_args){.want = 10});
	assert_int_equal(a->ntasks, 1);
	test_batch *a2 = pull(f, f->w[0],
	                      (pull_args){.want = 0, .in_hand = 1, .running_task = a->tasks[0].id, .running_ms = 1500});
	assert_int_equal(a2->status, ENGINE_BATCH_STOP);
	json_t *j = job_get(f);
	assert_int_equal(json_integer_value(json_object_get(j, "failed")), 1);
	json_decref(j);
	for (int i = 0; i < 100 && fake_backend_kills(f->fake, f->w[0]) == 0; i++)
		usleep(10000);
	assert_int_equal(fake_backend_kills(f->fake, f->w[0]), 1);
	batch_free(a);
	batch_free(a2);
}

/* A get started through the engine, waited for here. */
typedef struct get_wait {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
} get_wait;

static void get_done(void *ctx)
{
	get_wait *g = ctx;

	pthread_mutex_lock(&g->mu);
	g->done = 1;
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* Waits (20 s at most: a call never answered fails the test) for c,
 * started with get_done and g; its error, *out the answer. */
static int await_call(engine_call *c, get_wait *g, json_t **out, char *detail, size_t detail_len)
{
	struct timespec until = cm_timespec_in(CLOCK_REALTIME, 20000);
	int done;

	assert_non_null(c);
	pthread_mutex_lock(&g->mu);
	while (!g->done && pthread_cond_timedwait(&g->cv, &g->mu, &until) == 0)
		;
	done = g->done;
	pthread_mutex_unlock(&g->mu);
	if (!done)
		fail_msg("the engine did not answer within 20 s");
	return engine_call_finish(c, out, detail, detail_len);
}

/* A pool that failed (its workers kept exiting before they connected) is
 * deleted: the DELETE is answered once its backend released them, though
 * the failure is still there to be seen while it waits for that. */
static void test_failed_pool_delete_answered(void **state)
{
	fixture *f = *state;
	static get_wait g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	char detail[256] = "", id[32];
	json_t *out = NULL;
	int failed = 0;

	pool_of_two(f, "");
	for (int i = 0; i < FAKE_RUNS_MAX && !failed; i++) {
		assert_string_not_equal(fake_backend_worker(f->fake, i, id), "");
		fake_backend_exit(f->fake, id, 1);
		for (int k = 0; k < 100 && fake_backend_runs(f->fake) <= i + 1 && !failed; k++) {
			usleep(10000);
			assert_int_equal(engine_pool_get(f->e, f->pool, &out), CM_OK);
			failed = strcmp(json_string_value(json_object_get(out, "state")), "failed") == 0;
			json_decref(out);
		}
	}
	assert_true(failed);
	/* Some cycles on: a failed pool whose workers all ended is no longer
	 * ticked, and its DELETE must wake it. */
	usleep(200000);
	fake_backend_set_release_ms(f->fake, 300);
	engine_call *c = engine_pool_delete_start(f->e, f->pool, get_done, &g);
	assert_int_equal(await_call(c, &g, &out, detail, sizeof(detail)), CM_OK);
	assert_string_equal(json_string_value(json_object_get(out, "state")), "terminated");
	json_decref(out);
}

/* The state of id as get (engine_pool_get, engine_job_get) shows it, or
 * "gone". */
static const char *state_of(fixture *f, int (*get)(engine *, const char *, json_t **), const char *id)
{
	static char state[32];
	json_t *out = NULL;

	if (get(f->e, id, &out) != CM_OK)
		return "gone";
	snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(out, "state")));
	json_decref(out);
	return state;
}

/* Terminated pools stay for --retain but are no longer ticked once at
 * rest: each is still found by its id, among many, and removed by a
 * second DELETE; the others stay. */
static void test_terminated_pools_found_and_removed_at_rest(void **state)
{
	fixture *f = *state;
	char ids[40][32], detail[256] = "";
	json_t *out = NULL;

	for (int i = 0; i < 40; i++) {
		get_wait g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
		pool_of(f, 1, ids[i]);
		engine_call *c = engine_pool_delete_start(f->e, ids[i], get_done, &g);
		assert_int_equal(await_call(c, &g, &out, detail, sizeof(detail)), CM_OK);
		assert_string_equal(json_string_value(json_object_get(out, "state")), "terminated");
		json_decref(out);
	}
	usleep(200000); /* cycles on: at rest */
	for (int i = 0; i < 40; i++)
		assert_string_equal(state_of(f, engine_pool_get, ids[i]), "terminated");
	for (int i = 0; i < 40; i += 3) {
		get_wait g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
		engine_call *c = engine_pool_delete_start(f->e, ids[i], get_done, &g);
		assert_int_equal(await_call(c, &g, &out, detail, sizeof(detail)), CM_OK);
		assert_string_equal(json_string_value(json_object_get(out, "state")), "deleted");
		json_decref(out);
	}
	for (int i = 0; i < 40; i++)
		assert_string_equal(state_of(f, engine_pool_get, ids[i]), i % 3 ? "terminated" : "gone");
	/* and a pool made after them is found among them too */
	pool_of_two(f, "");
	assert_string_equal(state_of(f, engine_pool_get, f->pool), "active");
}

/* Pops one item from end (or a queue with end -1); its error, *out the answer. */
static int get_one(fixture *f, const char *id, int end, json_t **out, char *detail, size_t detail_len)
{
	get_wait g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

	return await_call(engine_queue_get_start(f->e, id, end, 1, 0, NULL, NULL, get_done, &g), &g, out, detail,
	                  detail_len);
}

/* A pool's DELETE is answered once its backend removed what its workers
 * left (their containers), not merely once they ended: a caller that
 * lists containers right after finds none. */
static void test_pool_delete_answered_after_release(void **state)
{
	fixture *f = *state;
	get_wait g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	char detail[256] = "";
	json_t *out = NULL;

	pool_of_two(f, "");
	fake_backend_set_release_ms(f->fake, 300);
	engine_call *c = engine_pool_delete_start(f->e, f->pool, get_done, &g);
	assert_int_equal(await_call(c, &g, &out, detail, sizeof(detail)), CM_OK);
	assert_string_equal(json_string_value(json_object_get(out, "state")), "terminated");
	assert_int_equal(fake_backend_released(f->fake), 2);
	json_decref(out);
}

/* A result finds its task's job among many, jobs of no task (which share
 * their base with the next job) included, also after jobs before and
 * between were removed: each job ends with exactly its own results. */
static void test_results_find_their_job_among_many(void **state)
{
	fixture *f = *state;
	char ids[6][32];
	json_t *out = NULL;

	pool_of_two(f, "");
	for (int k = 0; k < 6; k++) {
		map_echo(f, k % 3 == 1 ? 0 : 2 + k); /* jobs 1 and 4 have no task */
		snprintf(ids[k], sizeof(ids[k]), "%s", f->job);
	}
	assert_string_equal(state_of(f, engine_job_get, ids[1]), "done");
	assert_int_equal(engine_job_delete(f->e, ids[1], &out), CM_OK); /* removed: between two others */
	json_decref(out);
	test_batch *b = pull(f, f->w[0], (pull_args){.want = 100});
	int rounds = 0;
	while (b->ntasks && rounds++ < 50) {
		test_batch *next = pull(f, f->w[0], (pull_args){.want = 100, .done = b->tasks, .ndone = b->ntasks});
		batch_free(b);
		b = next;
	}
	batch_free(b);
	static const char *const want[6] = {"done", "gone", "done", "done", "done", "done"};
	for (int k = 0; k < 6; k++) {
		assert_string_equal(state_of(f, engine_job_get, ids[k]), want[k]);
		if (k == 1)
			continue;
		assert_int_equal(engine_job_get(f->e, ids[k], &out), CM_OK);
		assert_int_equal(json_integer_value(json_object_get(out, "done")), k % 3 == 1 ? 0 : 2 + k);
		assert_int_equal(json_integer_value(json_object_get(out, "failed")), 0);
		json_decref(out);
	}
	assert_int_equal(engine_job_delete(f->e, ids[0], &out), CM_OK); /* the first */
	json_decref(out);
	assert_int_equal(engine_job_delete(f->e, ids[5], &out), CM_OK); /* the last */
	json_decref(out);
	assert_string_equal(state_of(f, engine_job_get, ids[3]), "done");
	assert_string_equal(state_of(f, engine_job_get, ids[4]), "done");
}

/* --retain: an ended job is removed once it has been over for that long
 * (not at once); a running one, however old, stays. */
static void test_ended_jobs_removed_after_retention(void **state)
{
	fixture *f = *state;
	char ended[32];
	json_t *out = NULL;

	pool_of_two(f, "");
	map_echo(f, 3);
	snprintf(ended, sizeof(ended), "%s", f->job);
	test_batch *b = pull(f, f->w[0], (pull_args){.want = 100});
	while (b->ntasks) {
		test_batch *next = pull(f, f->w[0], (pull_args){.want = 100, .done = b->tasks, .ndone = b->ntasks});
		batch_free(b);
		b = next;
	}
	batch_free(b);
	out = job_get(f);
	assert_string_equal(json_string_value(json_object_get(out, "state")), "done");
	json_decref(out);
	map_echo(f, 2); /* runs on: nobody pulls it */
	int gone = 0;
	for (int i = 0; i < 100 && !gone; i++) {
		gone = engine_job_get(f->e, ended, &out) == CM_ENOENT;
		if (!gone) {
			json_decref(out);
			usleep(100000);
		}
	}
	assert_true(gone);
	out = job_get(f);
	assert_string_equal(json_string_value(json_object_get(out, "state")), "running");
	json_decref(out);
}

/* A pipe's ends resolve to the queue of their direction: in a duplex pipe
 * what end 0 sends end 1 receives and back; in a simplex one only end 0
 * sends and only end 1 receives. */
static void test_pipe_ends_resolve_to_their_direction(void **state)
{
	fixture *f = *state;
	char detail[256] = "", *item[] = {"\"ping\""}, *back[] = {"\"pong\""};
	size_t len[] = {6};
	json_t *out = NULL;
	char duplex[32], simplex[32];

	assert_int_equal(engine_queue_create(f->e, "duplex", NULL, &out, NULL, 0), CM_OK);
	snprintf(duplex, sizeof(duplex), "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);
	assert_int_equal(engine_queue_create(f->e, "simplex", NULL, &out, NULL, 0), CM_OK);
	snprintf(simplex, sizeof(simplex), "%s", json_string_value(json_object_get(out, "id")));
	json_decref(out);

	assert_int_equal(engine_queue_put(f->e, duplex, 0, item, len, 1, &out, detail, sizeof(detail)), CM_OK);
	json_decref(out);
	assert_int_equal(engine_queue_put(f->e, duplex, 1, back, len, 1, &out, detail, sizeof(detail)), CM_OK);
	json_decref(out);
	assert_int_equal(get_one(f, duplex, 1, &out, detail, sizeof(detail)), CM_OK);
	assert_string_equal(json_string_value(json_array_get(json_object_get(out, "items"), 0)), "ping");
	json_decref(out);
	assert_int_equal(get_one(f, duplex, 0, &out, detail, sizeof(detail)), CM_OK);
	assert_string_equal(json_string_value(json_array_get(json_object_get(out, "items"), 0)), "pong");
	json_decref(out);

	assert_int_equal(engine_queue_put(f->e, simplex, 1, item, len, 1, &out, detail, sizeof(detail)), CM_ECLOSED);
	char want[128];
	snprintf(want, sizeof(want), "end 1 of simplex pipe %s cannot send", simplex);
	assert_string_equal(detail, want);
	assert_int_equal(get_one(f, simplex, 0, &out, detail, sizeof(detail)), CM_ECLOSED);
	snprintf(want, sizeof(want), "end 0 of simplex pipe %s cannot receive", simplex);
	assert_string_equal(detail, want);
	assert_int_equal(engine_queue_put(f->e, simplex, 0, item, len, 1, &out, detail, sizeof(detail)), CM_OK);
	json_decref(out);
	assert_int_equal(get_one(f, simplex, 1, &out, detail, sizeof(detail)), CM_OK);
	assert_string_equal(json_string_value(json_array_get(json_object_get(out, "items"), 0)), "ping");
	json_decref(out);
	assert_int_equal(get_one(f, "x-no-such-pipe", 1, &out, detail, sizeof(detail)), CM_ENOENT);
	assert_string_equal(detail, "no such pipe");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_probe_then_batches_within_fair_share, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_local_workers_start_a_few_at_a_time, setup_two_starts, teardown),
	        cmocka_unit_test_setup_teardown(test_a_pool_starts_beside_another_holding_the_starts, setup_two_starts,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_fair_share_caps_small_queues, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_a_holders_share_is_no_more_than_its_share_of_the_queue, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_batches_cover_the_round_trip, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_parked_pull_says_its_wait, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pull_with_more_lines_is_not_parked, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_output_waits_for_the_program_following_it, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_batch_says_when_the_queue_is_empty, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_batch_bytes_are_capped, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_one_task_jobs_batched_at_their_function_cost, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_applies_priced_by_their_function_beside_another, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_function_costs_kept_for_the_last_eight, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_small_job_served_during_large_map, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_small_jobs_tasks_run_ahead, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_large_job_turn_shared_among_open_jobs, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_large_jobs_go_small_turns_while_small_jobs_come, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_probe_to_a_worker_with_room, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_small_map_of_a_measured_function_is_not_probed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_lost_worker_tasks_are_requeued, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_output_generation_moves_only_with_output, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_silent_worker_loses_its_lease, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_errors_retried_up_to_max_attempts, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_resync_requeues_what_the_worker_lacks, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_timeout_fails_the_task_and_replaces_the_worker, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pipe_ends_resolve_to_their_direction, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_pool_delete_answered_after_release, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_failed_pool_delete_answered, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_terminated_pools_found_and_removed_at_rest, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_results_find_their_job_among_many, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_ended_jobs_removed_after_retention, setup_retain_2s, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

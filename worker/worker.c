/*
 * The worker's two threads, each taking turns at the same two jobs: talking
 * to the hub and running tasks.
 *
 *   talk:  Pull{results, want} -> Batch{tasks} -> queue them
 *   run:   take a task -> run it -> put its result in the outbox
 *          (a small job's tasks and the others take turns)
 *
 * A thread runs a queued task when no task runs; it talks when nobody talks
 * and there is something to say (results, room for more tasks, a heartbeat
 * due). So the thread whose pull brought a lone task runs it and sends its
 * result itself, with no hand-off between threads (each cost tens of
 * microseconds of an apply's round trip), while during a long task or a
 * batch the other thread keeps talking: heartbeats go on, and results
 * travel while the next task runs. While tasks are in hand, a result waits
 * up to RESULT_WAIT_MS for others to go with it, and more tasks are asked
 * for once those in hand last only two round trips and a little: tasks of
 * a few milliseconds go some to an exchange, not one each. A small job's
 * results (an apply's) and a job's last ones go at once.
 *
 * How many tasks the worker asks for adapts to their length and to the
 * link: enough to stay busy for BUDGET_MS beyond the one running plus two of
 * the hub's round trips (a batch is asked for while the last one runs, and
 * lands a round trip later), so short tasks travel in large batches, long
 * ones one at a time (no tail of tasks stuck behind a slow one), and a far
 * worker does not wait on its link. Results stay in the outbox until a
 * Batch answered the Pull carrying them; a lost answer means they are sent
 * again, and the gateway drops duplicates.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <nng/nng.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/sha256.h"
#include "proto/frame.h"
#include "worker/hub_link.h"
#include "worker/manager.h"
#include "worker/output.h"
#include "worker/runtime.h"
#include "worker/values.h"
#include "worker/worker.h"

#define BUDGET_MS 20.0
#define IDLE_TOLERATED 0.05 /* of a task's time, waiting on the link (target_in_hand) */
/* A result waits this long at most for others to go with it while the
 * worker has work in hand (has_something_to_say). */
#define RESULT_WAIT_MS BUDGET_MS
/* Tasks held at most: 16,384 no-ops are some 8 ms of work, more than a
 * pull's round trip, so the executor does not wait for the next batch
 * (at 4,096 the CPUs were idle a quarter of a no-op map). */
#define MAX_BATCH 16384
#define PIPELINE_MAX 1024 /* rt: tasks sent to the runtime at once */
/* Short tasks of one run are taken a stretch at a time, about this long
 * by their average: the clock read and the lock taken a task (two each)
 * were a third of a no-op map's time in the worker. An apply that comes
 * meanwhile waits this long at most before its turn. */
#define STRETCH_MS 0.1
#define STRETCH_MAX 256
/* A stretch that runs this long is cut (the coarse clock's, a tick or
 * two: it costs a few nanoseconds to read, the precise one tens). */
#define STRETCH_LONG_MS 5
#define HEARTBEAT_MS 1000
/* How long one exchange may take: the gateway parks an idle pull for up to
 * 1 s, so never less than 2 s; never more than half the time after which the
 * worker gives the gateway up. */
#define RECV_TIMEOUT_MAX_MS 10000
/* How long a worker waits for its runtime to load before it dials anyway
 * (its first task then waits for the rest): well inside the gateway's
 * time to connect (CONNECT_GRACE_MS). */
#define RUNTIME_LOAD_WAIT_MS 5000
#define RECV_TIMEOUT_MIN_MS 2000
#define MAX_PULL_RESULTS_BYTES (8u << 20)
#define MAX_PULL_OUTPUT_BYTES (1u << 20)
#define MAX_PULL_OUTPUT_LINES 1024 /* what the gateway stores of one pull (engine/output.c) */

/* A job's context (runtime.h), shared by the tasks of it the worker holds;
 * touched under worker.mu only. */
typedef struct context {
	uint64_t key;
	size_t refs;
	size_t len;
	char text[];
} context;

/* What consecutive tasks of one job in a batch share (its TaskRun), and
 * their arguments, each NUL-terminated (plugins get C strings): one
 * allocation a run, not one a task, freed with its last task; touched under
 * worker.mu only. */
typedef struct run {
	size_t refs; /* its tasks not freed yet */
	worker_fn fn; /* its function, resolved (the name in the strings below) */
	unsigned timeout_ms;
	context *context; /* NULL: none */
	size_t ncommand;
	char *command[]; /* then the strings: the function's name, the command, the arguments */
} run;

typedef struct task {
	uint64_t id;
	run *run;
	const char *arg; /* in its run */
	size_t arg_len;
	unsigned attempt;
} task;

/* Tasks queued in arrival order. */
typedef struct task_ring {
	task *tasks;
	size_t head, count, cap;
} task_ring;

/* A value this long or shorter is kept in the result itself: a no-op's
 * "null", a number, a short string cost no allocation. */
#define RESULT_INLINE 24

typedef struct result {
	uint64_t id;
	uint32_t run_us;
	uint32_t attempt;
	Strand__Outcome outcome;
	uint32_t failed_inputs; /* of a task of several inputs that failed: those that failed alone */
	uint64_t output_mark; /* the lines written before it ended (worker_output_mark): sent first */
	size_t len;
	char *value; /* len > RESULT_INLINE: an allocation of its own */
	char small[RESULT_INLINE]; /* else here */
} result;

typedef struct worker {
	const worker_config *cfg;
	atomic_int *stop;
	worker_fns *fns;
	worker_values *values; /* those tasks' arguments name */

	hub_link *link;
	int recv_ms; /* the longest one exchange's step may take */
	int link_down; /* the last exchange failed: said once, not at every redial */

	pthread_mutex_t mu;
	pthread_cond_t wake; /* a thread with nothing to do waits for something to do */
	/* Queued tasks: those of small jobs (TaskRun.ahead) and the rest. Tasks
	 * are taken by turns from the two, so an apply that comes while a
	 * large map's batch is held waits for one task, not the batch. */
	task_ring ahead, others;
	int took_ahead; /* the last task taken was ahead: one of the others goes next */
	int taken_ahead; /* what runs was taken from ahead: a client waits for its result */
	int urgent; /* the outbox holds such a result: it goes now (has_something_to_say) */
	int64_t out_since; /* when the outbox's oldest result came (ms; about, after a partial send) */
	result *out; /* finished, not yet acknowledged */
	size_t nout, capout;
	/* What a thread took to run (PIPELINE_MAX): [ran, ntaken) not finished
	 * yet; ntaken is 0 while no task runs. */
	task *taken;
	size_t ntaken, ran;
	/* How a stretch's tasks ended, and where each one's value ends in the
	 * running thread's buffer (STRETCH_MAX each). */
	Strand__Outcome *outcomes;
	size_t *ends;
	double running_since; /* when taken[ran] began, monotonic s */
	int talking; /* a thread is in an exchange with the hub */
	int64_t beat; /* when the next pull is due even with nothing to say (ms) */
	int64_t last_ok; /* when the hub last answered (ms) */
	/* The last pull brought nothing of what it asked for, or left the
	 * gateway's queue empty: asking again before something changes would
	 * only cost a round trip, which the next result would wait behind,
	 * and the results may be the last a job waits for. (Not merely fewer
	 * than asked: the gateway's reckoning of a batch's time and the
	 * worker's round differently, by a task or so.) */
	int starved;
	int resync; /* the last exchange failed: list what we hold */
	int quit;
	int code; /* the process's exit code once quit */
	double avg_ms; /* moving average of task run time */
	/* Moving average of an exchange's time less what its pull waited at
	 * the gateway for work (Batch.parked_us): the link's round trip and
	 * the gateway's turn, which grows when the gateway is busy. */
	double rtt_ms;
	uint64_t pid; /* this process's, in each task's seed: a getpid() per task was 4 % of a no-op map */
	proto_arena batches; /* the talking thread's: the last batch, decoded (gone at the next) */
} worker;

static void task_free(task *t)
{
	run *r = t->run;

	if (--r->refs)
		return;
	if (r->context && --r->context->refs == 0)
		free(r->context);
	free(r);
}

static task *ring_at(const task_ring *r, size_t i)
{
	return &r->tasks[(r->head + i) % r->cap];
}

/* Room for n more tasks in r. */
static int ring_reserve(task_ring *r, size_t n)
{
	if (r->count + n <= r->cap)
		return CM_OK;
	size_t cap = r->cap ? r->cap : 64;
	while (cap < r->count + n)
		cap *= 2;
	task *p = malloc(cap * sizeof(*p));
	if (!p)
		return CM_ENOMEM;
	for (size_t i = 0; i < r->count; i++)
		p[i] = *ring_at(r, i);
	free(r->tasks);
	*r = (task_ring){.tasks = p, .head = 0, .count = r->count, .cap = cap};
	return CM_OK;
}

static void ring_fini(task_ring *r)
{
	for (size_t i = 0; i < r->count; i++)
		task_free(ring_at(r, i));
	free(r->tasks);
}

static const char *result_value(const result *r)
{
	return r->len > RESULT_INLINE ? r->value : r->small;
}

static void result_free(result *r)
{
	if (r->len > RESULT_INLINE)
		free(r->value);
}

/* A task's result into the outbox, its value a copy of value[0..len);
 * output_mark: worker_output_mark() as it ended (a stretch's results take
 * one, not a lock each). */
static int push_result(worker *w, const task *t, Strand__Outcome outcome, uint32_t failed_inputs, uint32_t run_us,
                       uint64_t output_mark, const char *value, size_t len)
{
	result r = {.id = t->id,
	            .run_us = run_us,
	            .attempt = t->attempt,
	            .outcome = outcome,
	            .failed_inputs = failed_inputs,
	            .output_mark = output_mark,
	            .len = len};

	if (w->nout == w->capout) {
		size_t cap = w->capout ? w->capout * 2 : 256;
		result *p = realloc(w->out, cap * sizeof(*p));
		if (!p)
			return CM_ENOMEM;
		w->out = p;
		w->capout = cap;
	}
	if (len > RESULT_INLINE && !(r.value = malloc(len)))
		return CM_ENOMEM;
	if (len)
		memcpy(len > RESULT_INLINE ? r.value : r.small, value, len);
	if (!w->nout)
		w->out_since = cm_now_ms();
	w->out[w->nout++] = r;
	return CM_OK;
}

/* Tasks queued, not taken yet. */
static size_t queued(const worker *w)
{
	return w->ahead.count + w->others.count;
}

/* Tasks taken, not finished: the one running and those after it. */
static size_t in_flight(const worker *w)
{
	return w->ntaken - w->ran;
}

static int is_runtime_task(const task *t)
{
	return t->run->fn.kind == WORKER_FN_RUNTIME;
}

/* The ring the next task comes from: ahead and the others take turns. */
static task_ring *next_ring(worker *w)
{
	int ahead = w->ahead.count && (!w->took_ahead || !w->others.count);

	w->took_ahead = ahead;
	return ahead ? &w->ahead : &w->others;
}

/* How many of the tasks at r's front, of one run, go as a stretch: as
 * many as fill STRETCH_MS by the worker's average, while no task waits
 * ahead (a small job's go one at a time, taking turns) and the run has no
 * timeout (the gateway times out the task a pull says runs). */
static size_t stretch(const worker *w, const task_ring *r)
{
	const run *first = ring_at(r, 0)->run;
	size_t n = 1, most;

	if (r == &w->ahead || w->ahead.count || first->timeout_ms || w->avg_ms < 0)
		return 1;
	most = w->avg_ms * STRETCH_MAX < STRETCH_MS ? STRETCH_MAX : (size_t)(STRETCH_MS / w->avg_ms);
	while (n < r->count && n < most && ring_at(r, n)->run == first)
		n++;
	return n;
}

/* Moves what runs next from ring r to w->taken: one task, a stretch of
 * short ones, or the run of rt: tasks at its front when the pool has a
 * runtime (sent to it all at once). Returns how many; w->mu is held. */
static size_t take(worker *w, task_ring *r, int pipelined)
{
	size_t n = 1;

	if (pipelined)
		while (n < r->count && n < PIPELINE_MAX && is_runtime_task(ring_at(r, n)))
			n++;
	else
		n = stretch(w, r);
	for (size_t i = 0; i < n; i++) {
		w->taken[i] = *ring_at(r, 0);
		r->head = (r->head + 1) % r->cap;
		r->count--;
	}
	w->ntaken = n;
	w->ran = 0;
	w->taken_ahead = r == &w->ahead;
	w->running_since = cm_now_s();
	return n;
}

/* taken[ran, ran + n) ended, each with its outcome and its value in
 * values (up to ends[i], from the one before's end or 0), and failed_inputs
 * (a runtime's one task, runtime_done); their results join the outbox, and
 * the next one begins. A stretch's tasks are timed
 * together, each at their average. While more of the taken tasks run, the
 * other thread is woken to send the results; after the last, this thread
 * goes back to take_turns, which sends them or wakes the other. Returns
 * whether the worker is stopping. */
static int finish(worker *w, size_t n, const Strand__Outcome *outcomes, uint32_t failed_inputs, const char *values,
                  const size_t *ends)
{
	pthread_mutex_lock(&w->mu);
	double now = cm_now_s(), ms = (now - w->running_since) * 1000.0 / (double)n;
	w->avg_ms = w->avg_ms < 0 ? ms : 0.8 * w->avg_ms + 0.2 * ms;
	uint32_t run_us = ms * 1000.0 > 4e9 ? UINT32_MAX : (uint32_t)(ms * 1000.0);
	uint64_t mark = worker_output_mark();
	for (size_t i = 0, at = 0; i < n; at = ends[i++])
		/* Out of memory: the task runs again after its lease. */
		(void)push_result(w, &w->taken[w->ran + i], outcomes[i], failed_inputs, run_us, mark, values + at,
		                  ends[i] - at);
	w->ran += n;
	w->urgent |= w->taken_ahead;
	w->running_since = now;
	int quit = w->quit;
	if (!w->talking && w->ran < w->ntaken)
		pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
	return quit;
}

/* A result in the file at path (too large for a pull), stored as a value
 * and out's bytes from at on replaced by the result that names it,
 * {"$value":"SHA256"}, or by the reason it could not be. Whether the
 * result stands. */
static int result_file_stored(worker *w, cm_buf *out, size_t at, const char *path)
{
	char sha[CM_SHA256_HEX + 1], why[512];
	int err = worker_values_store(w->values, path, sha, why, sizeof(why));

	out->len = at;
	if (err == CM_OK)
		return cm_buf_printf(out, "{\"$value\":\"%s\"}", sha) == CM_OK;
	unlink(path);
	(void)cm_buf_printf(out, "the result could not be stored: %s", why);
	return 0;
}

/* A runtime's result written to a file ({"$value_file":"PATH"}: too large
 * for a pull), out's bytes from at on, stored as a value and replaced by
 * the result that names it, {"$value":"SHA256"}, or by the reason it could
 * not be. Whether the result stands (any other result does). */
static int result_stored(worker *w, cm_buf *out, size_t at)
{
	static const char head[] = "{\"$value_file\":";
	json_t *j;

	if (out->len - at < sizeof(head) || memcmp(out->data + at, head, sizeof(head) - 1) != 0 ||
	    !(j = json_loadb(out->data + at, out->len - at, 0, NULL)))
		return 1;
	const char *path = json_string_value(json_object_get(j, "$value_file"));
	char *copy = path ? strdup(path) : NULL;
	json_decref(j);
	out->len = at;
	if (!copy) {
		(void)cm_buf_puts(out, "the result could not be stored: the runtime's result names no file");
		return 0;
	}
	int ok = result_file_stored(w, out, at, copy);
	free(copy);
	return ok;
}

static int runtime_done(void *ctx, size_t i, worker_runtime_outcome how, uint32_t failed_inputs, cm_buf *out)
{
	worker *w = ctx;

	(void)i; /* answers come in order: it is taken[ran] */
	if (how == RT_OK && !result_stored(w, out, 0))
		how = RT_ERROR;
	Strand__Outcome outcome = how == RT_OK     ? STRAND__OUTCOME__OK
	                          : how == RT_LOST ? STRAND__OUTCOME__LOST
	                                           : STRAND__OUTCOME__FAILED;
	int quit = finish(w, 1, &outcome, failed_inputs, out->data, &out->len);
	cm_buf_fini(out);
	/* The worker stops: the rest is not run. */
	return quit ? CM_ESHUTDOWN : CM_OK;
}

/* A task's argument that names a value ({"$value":"SHA256"}): the value's
 * file, fetched unless cached, as a runtime's argument
 * ({"$value_file":"PATH"}, *text new), or NULL in *text when the argument
 * names none. CM_OK, or an error with why. */
static int refs_arg(worker *w, const char *arg, size_t len, char **text, char *why, size_t why_len);

static int value_file_arg(worker *w, const char *arg, size_t len, char **text, char *why, size_t why_len)
{
	char sha[CM_SHA256_HEX + 1], path[1200];
	int err;

	*text = NULL;
	if (len != CM_VALUE_REF_LEN || !cm_value_ref(arg, len, sha))
		return refs_arg(w, arg, len, text, why, why_len);
	if ((err = worker_values_path(w->values, sha, path, sizeof(path), why, why_len)) != CM_OK)
		return err;
	json_t *j = json_pack("{s:s}", "$value_file", path);
	*text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!*text) {
		snprintf(why, why_len, "worker out of memory running the task");
		return CM_ENOMEM;
	}
	return CM_OK;
}

/* A task's argument that holds references to values (strand.put's),
 * {"$refs": ["SHA256", ...], "arg": ARG}: each value's file, fetched
 * unless cached, as a runtime's argument ({"$ref_files": {"SHA256":
 * "PATH", ...}, "arg": ARG}, ARG as its file if it names a value; *text
 * new), or NULL in *text when the argument holds none. CM_OK, or an error
 * with why. */
static int refs_arg(worker *w, const char *arg, size_t len, char **text, char *why, size_t why_len)
{
	static const char head[] = "{\"$refs\":[";
	char path[1200], *inner = NULL;
	json_t *given, *refs, *one, *files;
	size_t i;
	int err = CM_OK;

	if (len < sizeof(head) - 1 || memcmp(arg, head, sizeof(head) - 1) != 0 ||
	    !(given = json_loadb(arg, len, 0, NULL)))
		return CM_OK;
	refs = json_object_get(given, "$refs");
	files = json_object();
	json_array_foreach (refs, i, one) {
		const char *sha = json_string_value(one);
		if (!sha || !cm_sha256_name_valid(sha)) {
			snprintf(why, why_len, "the argument's $refs holds what is not a value's name");
			err = CM_EINVAL;
		} else if ((err = worker_values_path(w->values, sha, path, sizeof(path), why, why_len)) == CM_OK) {
			json_object_set_new(files, sha, json_string(path));
		}
		if (err != CM_OK)
			break;
	}
	/* ARG naming a value: its file, as for an argument that is one. */
	char *arg_text =
	        err == CM_OK ? json_dumps(json_object_get(given, "arg"), JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (arg_text && strlen(arg_text) == CM_VALUE_REF_LEN)
		err = value_file_arg(w, arg_text, CM_VALUE_REF_LEN, &inner, why, why_len);
	if (err == CM_OK) {
		json_t *out =
		        json_pack("{s:O, s:o}", "$ref_files", files, "arg",
		                  inner ? json_loads(inner, 0, NULL) : json_incref(json_object_get(given, "arg")));
		*text = out ? json_dumps(out, JSON_COMPACT) : NULL;
		json_decref(out);
		if (!*text) {
			snprintf(why, why_len, "worker out of memory running the task");
			err = CM_ENOMEM;
		}
	}
	free(inner);
	free(arg_text);
	json_decref(files);
	json_decref(given);
	return err;
}

/* The same for a function run in the worker: the value's bytes (*value
 * new, *len its length). */
static int value_in_memory(worker *w, const char *arg, char **value, size_t *len, char *why, size_t why_len)
{
	char sha[CM_SHA256_HEX + 1], path[1200];
	struct stat st;
	int err, fd;

	*value = NULL;
	if (!cm_value_ref(arg, *len, sha))
		return CM_OK;
	if ((err = worker_values_path(w->values, sha, path, sizeof(path), why, why_len)) != CM_OK)
		return err;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0 ||
	    !(*value = malloc((size_t)st.st_size + 1)) || cm_read_all(fd, *value, (size_t)st.st_size) != 0) {
		snprintf(why, why_len, "value %s: cannot read %.300s: %s", sha, path, strerror(errno));
		free(*value);
		*value = NULL;
		if (fd >= 0)
			close(fd);
		return CM_EIO;
	}
	close(fd);
	(*value)[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return CM_OK;
}

/* The taken rt: tasks, through the pool's runtime; one whose value cannot
 * be had fails in its turn, saying why, between those run before and
 * after it. */
static void run_in_runtime(worker *w, worker_runtime *rt)
{
	worker_runtime_task *rts = calloc(w->ntaken, sizeof(*rts));
	char **files = calloc(w->ntaken, sizeof(*files)), why[512];
	size_t from = 0;
	int err = CM_OK;

	if (!rts || !files) {
		free(rts);
		free(files);
		cm_error("out of memory running tasks: they are run again after their lease");
		return;
	}
	for (size_t i = 0; i <= w->ntaken && err == CM_OK; i++) {
		if (i < w->ntaken) {
			const task *t = &w->taken[i];
			const context *c = t->run->context;
			rts[i] = (worker_runtime_task){.function = t->run->fn.name + 3,
			                               .arg = t->arg,
			                               .arg_len = t->arg_len,
			                               .timeout_ms = t->run->timeout_ms,
			                               .context_key = c ? c->key : 0,
			                               .context = c ? c->text : NULL,
			                               .context_len = c ? c->len : 0};
			if (value_file_arg(w, t->arg, t->arg_len, &files[i], why, sizeof(why)) == CM_OK) {
				if (files[i]) {
					rts[i].arg = files[i];
					rts[i].arg_len = strlen(files[i]);
				}
				continue;
			}
		}
		if (i > from)
			err = worker_runtime_run_many(rt, rts + from, i - from, runtime_done, w);
		if (err == CM_OK && i < w->ntaken) {
			Strand__Outcome failed = STRAND__OUTCOME__FAILED;
			size_t end = strlen(why);
			if (finish(w, 1, &failed, 0, why, &end))
				err = CM_ESHUTDOWN;
		}
		from = i + 1;
	}
	if (err == CM_ENOMEM)
		cm_error("out of memory running tasks: they are run again after their lease");
	for (size_t i = 0; i < w->ntaken; i++)
		free(files[i]);
	free(files);
	free(rts);
}

static int64_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs the taken tasks (one, or a stretch) on this thread, their outputs
 * one after another into out (the thread's, used again and again: short
 * results cost no allocation), and finishes them together. A stretch
 * that runs long (its tasks are not as short as those before them) is cut:
 * once past STRETCH_LONG_MS what ran is finished, and the rest one by one,
 * so their results do not wait for the stretch's end. */
static void run_taken(worker *w, cm_buf *out)
{
	size_t n = w->ntaken, from = 0; /* taken[from]: the first not finished */
	int64_t began = n > 1 ? coarse_ms() : 0;

	out->len = 0;
	for (size_t i = 0; i < n; i++) {
		const task *t = &w->taken[i];
		const run *r = t->run;
		size_t at = out->len, k = i - from;
		int ok = 0;
		const char *arg = t->arg;
		size_t arg_len = t->arg_len;
		char *value = NULL, why[512];
		if (arg_len == CM_VALUE_REF_LEN &&
		    value_in_memory(w, arg, &value, &arg_len, why, sizeof(why)) != CM_OK) {
			if (cm_buf_puts(out, why) != CM_OK)
				out->len = at;
		} else if (worker_fns_call(w->fns, &r->fn, value ? value : arg, arg_len, r->command, r->ncommand,
		                           r->timeout_ms, t->id * 0x9E3779B97F4A7C15ull ^ w->pid ^ t->attempt, out,
		                           &ok) != CM_OK) {
			out->len = at;
			ok = 0;
			if (cm_buf_puts(out, "worker out of memory running the task") != CM_OK)
				out->len = at;
		}
		free(value);
		/* A runtime's may name a file: a large result (a manager stores
		 * its own); a command's or plugin's past 8 MiB is in a file of ours. */
		if (ok == WORKER_RESULT_FILE) {
			char *path = strndup(out->data + at, out->len - at);
			ok = path ? result_file_stored(w, out, at, path) : 0;
			if (!path)
				out->len = at;
			free(path);
		} else if (ok && r->fn.kind == WORKER_FN_RUNTIME) {
			ok = result_stored(w, out, at);
		}
		w->outcomes[k] = ok ? STRAND__OUTCOME__OK : STRAND__OUTCOME__FAILED;
		w->ends[k] = out->len;
		if (i + 1 == n || from > 0 || coarse_ms() - began > STRETCH_LONG_MS) {
			(void)finish(w, k + 1, w->outcomes, 0, out->data, w->ends);
			from = i + 1;
			out->len = 0;
		}
	}
}

/* Runs what comes next in the queue, on the calling thread (out: its
 * buffer for results); w->mu is held (and released while the task runs). */
static void run_next(worker *w, cm_buf *out)
{
	worker_runtime *rt = worker_fns_runtime(w->fns);
	task_ring *r = next_ring(w);
	int pipelined = rt && is_runtime_task(ring_at(r, 0));
	size_t n = take(w, r, pipelined);

	pthread_mutex_unlock(&w->mu);
	if (pipelined)
		run_in_runtime(w, rt);
	else
		run_taken(w, out);
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < n; i++)
		task_free(&w->taken[i]);
	w->ntaken = w->ran = 0;
}

/* The batch's contexts, each with no task yet; NULL entries where memory
 * ran out (their tasks then fail to queue). */
static context **batch_contexts(const Strand__Batch *b)
{
	context **cs = calloc(b->n_contexts + 1, sizeof(*cs));

	for (size_t i = 0; cs && i < b->n_contexts; i++) {
		const Strand__Context *m = b->contexts[i];
		if ((cs[i] = malloc(sizeof(context) + m->value.len))) {
			*cs[i] = (context){.key = m->key, .refs = 0, .len = m->value.len};
			memcpy(cs[i]->text, m->value.data, m->value.len);
		}
	}
	return cs;
}

/* The context of key among cs (a batch's), or NULL. */
static context *context_of(context **cs, size_t n, uint64_t key)
{
	for (size_t i = 0; i < n; i++)
		if (cs[i] && cs[i]->key == key)
			return cs[i];
	return NULL;
}

/* Queues the count tasks of run m, the batch's tasks [first, first +
 * count), whose arguments begin at *args (moved past them). */
static int queue_run(worker *w, const Strand__Batch *b, const Strand__TaskRun *m, size_t first, const uint8_t **args,
                     context **cs, size_t ncs)
{
	const uint8_t *arg = *args;
	size_t fn_len = strlen(m->function), arg_bytes = 0;
	context *c = NULL;

	for (size_t i = first; i < first + m->count; i++)
		arg_bytes += b->arg_lens[i];
	*args += arg_bytes;
	if (!m->count)
		return CM_OK;
	if (m->context && !(c = context_of(cs, ncs, m->context))) {
		/* Never so from a gateway of this version: the tasks fail saying so. */
		static const char why[] = "the gateway sent this task without its job's context";
		int err = CM_OK;
		uint64_t mark = worker_output_mark();
		for (size_t i = first; i < first + m->count && err == CM_OK; i++) {
			task t = {.id = b->task_ids[i], .attempt = b->attempts[i]};
			err = push_result(w, &t, STRAND__OUTCOME__FAILED, 0, 0, mark, why, sizeof(why) - 1);
		}
		return err;
	}
	size_t bytes = fn_len + 1 + arg_bytes + m->count; /* each argument NUL-terminated */
	for (size_t j = 0; j < m->n_command; j++)
		bytes += strlen(m->command[j]) + 1;
	run *r = malloc(sizeof(*r) + m->n_command * sizeof(char *) + bytes);
	if (!r)
		return CM_ENOMEM;
	*r = (run){.refs = m->count, .timeout_ms = m->timeout_ms, .context = c, .ncommand = m->n_command};
	if (c)
		c->refs++;
	char *at = (char *)&r->command[m->n_command];
	worker_fn_resolve(memcpy(at, m->function, fn_len + 1), &r->fn);
	at += fn_len + 1;
	for (size_t j = 0; j < m->n_command; j++) {
		size_t len = strlen(m->command[j]);
		r->command[j] = memcpy(at, m->command[j], len + 1);
		at += len + 1;
	}
	task_ring *ring = m->ahead ? &w->ahead : &w->others;
	for (size_t i = first; i < first + m->count; i++) {
		size_t len = b->arg_lens[i];
		if (len)
			memcpy(at, arg, len);
		at[len] = '\0';
		*ring_at(ring, ring->count++) =
		        (task){.id = b->task_ids[i], .run = r, .arg = at, .arg_len = len, .attempt = b->attempts[i]};
		at += len + 1;
		arg += len;
	}
	return CM_OK;
}

/* Takes ownership of the tasks in b (copies them out of the message). */
static int queue_tasks(worker *w, const Strand__Batch *b)
{
	const uint8_t *args = b->args.data;
	size_t ahead = 0, first = 0;
	int err = CM_OK;

	for (size_t i = 0; i < b->n_runs; i++)
		ahead += b->runs[i]->ahead ? b->runs[i]->count : 0;
	if (ring_reserve(&w->ahead, ahead) != CM_OK || ring_reserve(&w->others, b->n_task_ids - ahead) != CM_OK)
		return CM_ENOMEM;
	context **cs = batch_contexts(b);
	if (!cs)
		return CM_ENOMEM;
	worker_values_grant(w->values, b->value_grants, b->n_value_grants);
	/* The columns agree (proto_frame_decode_in checked them). */
	for (size_t i = 0; i < b->n_runs && err == CM_OK; i++) {
		err = queue_run(w, b, b->runs[i], first, &args, cs, b->n_contexts);
		first += b->runs[i]->count;
	}
	for (size_t i = 0; i < b->n_contexts; i++)
		if (cs[i] && cs[i]->refs == 0)
			free(cs[i]);
	free(cs);
	return err;
}

/* Tasks that cover cover_ms by the worker's average, and the one running
 * (see target_in_hand on the rounding). */
static size_t tasks_covering(const worker *w, double cover_ms)
{
	double n = 1.0 + ceil(cover_ms / (w->avg_ms > 0.001 ? w->avg_ms : 0.001) - IDLE_TOLERATED);

	return n > MAX_BATCH ? MAX_BATCH : n < 1.0 ? 1 : (size_t)n;
}

/* How many tasks to hold (queued + running): enough to cover the budget
 * (none for tasks longer than it) and two round trips; one more than that
 * for the one running. A part of a task counts as a whole one unless it is
 * under IDLE_TOLERATED: a task of 50 ms with a 20 ms round trip is held
 * with the next (or the worker would wait 20 ms each), while over loopback
 * (a fraction of a millisecond) a long task is held alone, and no task
 * waits behind a slow one that another worker could have run. */
static size_t target_in_hand(const worker *w)
{
	if (w->avg_ms < 0)
		return 1;
	return tasks_covering(w, (w->avg_ms < BUDGET_MS ? BUDGET_MS : 0) + 2 * w->rtt_ms);
}

/* How few tasks in hand make it time to ask for more: those that last two
 * round trips and a quarter of the budget (a round trip varies), and the
 * one running. Asked for there, the next batch comes before the last task
 * runs out and brings the rest of the budget's worth: a worker with tasks
 * of a millisecond asks every 15 or so, not after each (an exchange costs
 * the worker and the gateway CPU, which 1,000 workers on a few cores do
 * not have for every task). Tasks longer than the budget are asked for as
 * each ends, as before. */
static size_t refill_in_hand(const worker *w)
{
	size_t target = target_in_hand(w), refill;

	if (w->avg_ms < 0)
		return 1;
	refill = tasks_covering(w, 2 * w->rtt_ms + (w->avg_ms < BUDGET_MS ? BUDGET_MS / 4 : 0));
	return refill < target ? refill : target;
}

/* One exchange with the hub: pull (want, in_hand, resync, held, running
 * task) filled by the caller, plus the nsend results in sent (a snapshot of
 * the outbox's head: the executor may grow the outbox meanwhile).
 * Returns CM_OK with *batch set, or an error. */
static int exchange(worker *w, Strand__Pull *pull, const result *sent, size_t nsend, const worker_output_lines *lines,
                    Strand__Batch **batch)
{
	uint8_t *columns = NULL, *values = NULL;
	uint8_t *frame = NULL;
	size_t frame_len;
	uint8_t *reply = NULL;
	size_t reply_len;
	ProtobufCMessage *msg = NULL;
	char detail[256];
	size_t bytes = 0;
	int err;
	int rv;

	for (size_t i = 0; i < nsend; i++)
		bytes += sent[i].len;
	if (nsend &&
	    (!(columns = malloc(nsend * (sizeof(uint64_t) + sizeof(Strand__Outcome) + 4 * sizeof(uint32_t)))) ||
	     (bytes && !(values = malloc(bytes))))) {
		err = CM_ENOMEM;
		goto out;
	}
	uint64_t *ids = (uint64_t *)columns;
	Strand__Outcome *outcomes = (Strand__Outcome *)(ids + nsend);
	uint32_t *run_us = (uint32_t *)(outcomes + nsend), *attempts = run_us + nsend, *lens = attempts + nsend;
	uint32_t *failed_inputs = lens + nsend;
	size_t partly = 0; /* results of tasks some of whose inputs failed: the column goes only with one */
	bytes = 0;
	for (size_t i = 0; i < nsend; i++) {
		ids[i] = sent[i].id;
		partly += (failed_inputs[i] = sent[i].failed_inputs) != 0;
		outcomes[i] = sent[i].outcome;
		run_us[i] = sent[i].run_us;
		attempts[i] = sent[i].attempt;
		lens[i] = (uint32_t)sent[i].len;
		if (sent[i].len)
			memcpy(values + bytes, result_value(&sent[i]), sent[i].len);
		bytes += sent[i].len;
	}
	pull->result_ids = ids;
	pull->n_result_ids = nsend;
	pull->outcomes = outcomes;
	pull->n_outcomes = nsend;
	pull->run_us = run_us;
	pull->n_run_us = nsend;
	pull->attempts = attempts;
	pull->n_attempts = nsend;
	pull->value_lens = lens;
	pull->n_value_lens = nsend;
	pull->failed_inputs = partly ? failed_inputs : NULL;
	pull->n_failed_inputs = partly ? nsend : 0;
	pull->values.data = values;
	pull->values.len = bytes;
	pull->output_lens = lines->lens;
	pull->n_output_lens = lines->n;
	pull->output_streams = lines->streams;
	pull->n_output_streams = lines->n;
	pull->output.data = (uint8_t *)lines->text.data;
	pull->output.len = lines->text.len;
	pull->output_first = lines->first;
	pull->worker_id = (char *)w->cfg->worker_id;
	pull->pool_id = (char *)w->cfg->pool_id;
	err = proto_frame_encode(PROTO_PULL, w->cfg->worker_id, w->cfg->secret, &pull->base, &frame, &frame_len);
	if (err != CM_OK)
		goto out;
	if ((rv = hub_link_exchange(w->link, frame, frame_len, w->recv_ms, &reply, &reply_len)) != 0) {
		if (!w->link_down && rv != NNG_ETIMEDOUT)
			cm_warn("hub %s: %s", w->cfg->hub, nng_strerror(rv));
		w->link_down = 1;
		err = CM_EUNAVAIL;
		goto out;
	}
	w->link_down = 0;
	err = proto_frame_decode_in(&w->batches, PROTO_BATCH, reply, reply_len, &msg, detail, sizeof(detail));
	if (err != CM_OK) {
		cm_warn("refusing a frame from the hub: %s", detail);
		err = CM_EUNAVAIL;
		goto out;
	}
	*batch = (Strand__Batch *)msg;
out:
	free(reply);
	free(frame);
	free(columns);
	free(values);
	return err;
}

/* Whether there is something to tell the hub: results, room for more
 * tasks (unless the gateway had none last time), nothing at all in hand
 * (an idle pull waits at the gateway for work), or a heartbeat due. */
static int has_something_to_say(const worker *w)
{
	size_t in_hand = queued(w) + in_flight(w);

	/* While there is work in hand, results wait up to RESULT_WAIT_MS for
	 * others (so tasks of a few ms go some to an exchange, not one each),
	 * unless someone waits for them: a small job's (an apply's), or the
	 * last of a job (the gateway had no more to give). */
	int64_t now = cm_now_ms();
	return in_hand == 0 || (!w->starved && in_hand < refill_in_hand(w)) ||
	       (w->nout > 0 && (w->starved || w->urgent || now - w->out_since >= RESULT_WAIT_MS)) || now >= w->beat ||
	       worker_output_due(now);
}

/* Waits ms before the next exchange, w->mu released, still talking: the
 * other thread does not try meanwhile. */
static void pause_talking(worker *w, int ms)
{
	pthread_mutex_unlock(&w->mu);
	usleep((useconds_t)ms * 1000);
	pthread_mutex_lock(&w->mu);
}

/* One exchange with the hub and what follows from its answer; w->mu is held
 * (and released during the exchange). Sets w->quit (and w->code) when the
 * worker is to stop. */
static void talk(worker *w)
{
	Strand__Batch *batch = NULL;
	size_t in_hand = queued(w) + in_flight(w);
	size_t target = target_in_hand(w);
	size_t nsend = 0;
	size_t bytes = 0;
	result *sent = NULL;
	uint64_t *held = NULL;
	Strand__Pull pull = STRAND__PULL__INIT;
	worker_output_lines lines = {0};
	int err;

	/* The lines first: a result goes with every line printed before it
	 * ended, or waits for a later pull that has room for them. */
	err = worker_output_peek(&lines, MAX_PULL_OUTPUT_BYTES, MAX_PULL_OUTPUT_LINES);
	while (nsend < w->nout && bytes < MAX_PULL_RESULTS_BYTES && w->out[nsend].output_mark <= lines.first + lines.n)
		bytes += w->out[nsend++].len + 16;
	if (nsend && !(sent = malloc(nsend * sizeof(*sent)))) {
		worker_output_lines_fini(&lines);
		w->code = 1;
		w->quit = 1;
		return;
	}
	if (nsend)
		memcpy(sent, w->out, nsend * sizeof(*sent));
	pull.want = target > in_hand ? (uint32_t)(target - in_hand) : 0;
	pull.output_more = lines.more;
	pull.round_trip_us = (uint32_t)(w->rtt_ms * 1000.0);
	/* Finished tasks whose results wait for a later pull are held too. */
	pull.in_hand = (uint32_t)(in_hand + (w->nout - nsend));
	if (in_flight(w)) {
		pull.running_task = w->taken[w->ran].id;
		pull.running_ms = (uint32_t)((cm_now_s() - w->running_since) * 1000.0);
	}
	if (w->resync && (held = malloc((pull.in_hand + 1) * sizeof(*held)))) {
		pull.resync = 1;
		for (size_t i = 0; i < w->ahead.count; i++)
			held[pull.n_held++] = ring_at(&w->ahead, i)->id;
		for (size_t i = 0; i < w->others.count; i++)
			held[pull.n_held++] = ring_at(&w->others, i)->id;
		for (size_t i = w->ran; i < w->ntaken; i++)
			held[pull.n_held++] = w->taken[i].id;
		for (size_t i = nsend; i < w->nout; i++)
			held[pull.n_held++] = w->out[i].id;
		pull.held = held;
	}
	/* Results a client waits for go now; if the exchange fails, they
	 * still do at the next. */
	int urgent = w->urgent;
	if (nsend == w->nout)
		w->urgent = 0;
	w->talking = 1;
	pthread_mutex_unlock(&w->mu);

	double began = cm_now_s();
	if (err == CM_OK)
		err = exchange(w, &pull, sent, nsend, &lines, &batch);
	double took_ms = (cm_now_s() - began) * 1000.0;
	free(sent);
	free(held);
	if (err == CM_OK && batch->status != STRAND__BATCH__STATUS__RETRY)
		worker_output_sent(lines.n);
	worker_output_lines_fini(&lines);

	pthread_mutex_lock(&w->mu);
	w->beat = cm_now_ms() + HEARTBEAT_MS;
	if (err != CM_OK) {
		w->resync = 1;
		w->urgent |= urgent;
		if (cm_now_ms() - w->last_ok > (int64_t)w->cfg->gateway_timeout_s * 1000) {
			cm_error("gateway away for over %d s; exiting", w->cfg->gateway_timeout_s);
			w->code = 3;
			w->quit = 1;
		} else {
			pause_talking(w, 100);
		}
		w->talking = 0;
		return;
	}
	w->last_ok = cm_now_ms();
	/* A worker that holds one long task at a time exchanges only with
	 * nothing in hand: its round trip counts too, less any wait for work,
	 * or it would never learn to ask for the next task before it needs it. */
	double rtt_ms = took_ms - batch->parked_us / 1000.0;
	if (rtt_ms < 0)
		rtt_ms = 0;
	w->rtt_ms = w->rtt_ms == 0 ? rtt_ms : 0.8 * w->rtt_ms + 0.2 * rtt_ms;
	if (batch->status == STRAND__BATCH__STATUS__RETRY) {
		/* The gateway recorded nothing (its store failed): keep the
		 * results, and say what we hold when we ask again. */
		w->resync = 1;
		w->urgent |= urgent;
		pause_talking(w, 200);
		w->talking = 0;
		return;
	}
	w->talking = 0;
	w->resync = 0;
	/* The gateway has recorded what we sent: drop it. */
	if (nsend) {
		for (size_t i = 0; i < nsend; i++)
			result_free(&w->out[i]);
		memmove(w->out, w->out + nsend, (w->nout - nsend) * sizeof(*w->out));
		w->nout -= nsend;
		w->out_since = cm_now_ms();
	}
	if (batch->status == STRAND__BATCH__STATUS__REFUSED) {
		cm_error("gateway refused this worker: %s", batch->error);
		w->code = 2;
		w->quit = 1;
	} else if (batch->status == STRAND__BATCH__STATUS__STOP) {
		cm_info("gateway says stop");
		w->quit = 1;
	} else if (queue_tasks(w, batch) != CM_OK) {
		cm_error("out of memory queueing tasks");
		w->code = 1;
		w->quit = 1;
	} else {
		w->starved = batch->queue_empty || (pull.want && !batch->n_task_ids);
		w->resync = batch->list_held;
	}
}

/* What each of the two threads does until the worker stops: run the next
 * task if none runs, talk to the hub if nobody does and there is something
 * to say, else wait for either (at most until the next heartbeat). */
static void *take_turns(void *arg)
{
	worker *w = arg;
	cm_buf out; /* this thread's results, task after task */

	cm_buf_init(&out);
	pthread_mutex_lock(&w->mu);
	while (!w->quit) {
		if (*w->stop) {
			w->quit = 1;
			break;
		}
		if (!w->ntaken && queued(w)) {
			/* A result waiting or room for more tasks: the other
			 * thread talks meanwhile. */
			if (!w->talking && has_something_to_say(w))
				pthread_cond_signal(&w->wake);
			run_next(w, &out);
		} else if (!w->talking && has_something_to_say(w)) {
			talk(w);
		} else {
			/* Until the heartbeat is due; while the other thread talks
			 * (an idle pull waits at the gateway for seconds), until it
			 * wakes this one: it does when its answer brings work to
			 * share. Waking every millisecond meanwhile, as the past
			 * heartbeat had it, cost each idle worker a thousand wakes a
			 * second: a thousand idle workers kept two cores busy. Results
			 * that wait for company go when their wait is over. */
			int64_t wait_ms = w->talking ? 200 : w->beat - cm_now_ms();
			if (!w->talking && w->nout && w->out_since + RESULT_WAIT_MS - cm_now_ms() < wait_ms)
				wait_ms = w->out_since + RESULT_WAIT_MS - cm_now_ms();
			struct timespec ts = cm_timespec_in(CLOCK_REALTIME, wait_ms < 1     ? 1
			                                                    : wait_ms > 200 ? 200
			                                                                    : wait_ms);
			pthread_cond_timedwait(&w->wake, &w->mu, &ts);
		}
	}
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->mu);
	cm_buf_fini(&out);
	return NULL;
}

/* Waits for the runtime started ahead to load, in slices that hear a
 * stop, for at most RUNTIME_LOAD_WAIT_MS. */
static void await_runtime(worker_runtime *rt, atomic_int *stop)
{
	for (int waited = 0; waited < RUNTIME_LOAD_WAIT_MS && !*stop; waited += 100)
		if (worker_runtime_await_start(rt, 100) != CM_ETIMEDOUT)
			return;
	if (!*stop)
		cm_info("the runtime is still loading after %d s: dialing meanwhile", RUNTIME_LOAD_WAIT_MS / 1000);
}

int worker_run(const worker_config *cfg, atomic_int *stop)
{
	worker w = {.cfg = cfg, .stop = stop, .avg_ms = -1, .pid = (uint64_t)getpid(), .last_ok = cm_now_ms()};
	int recv_ms = cfg->gateway_timeout_s * 1000 / 2;
	pthread_t other;
	int rv;

	w.fns = worker_fns_new(cfg->plugin_path);
	w.values = worker_values_new(cfg);
	w.taken = malloc(PIPELINE_MAX * sizeof(*w.taken));
	w.outcomes = malloc(STRETCH_MAX * sizeof(*w.outcomes));
	w.ends = malloc(STRETCH_MAX * sizeof(*w.ends));
	if (!w.fns || !w.values || !w.taken || !w.outcomes || !w.ends) {
		worker_fns_free(w.fns);
		worker_values_free(w.values);
		free(w.taken);
		free(w.outcomes);
		free(w.ends);
		return 1;
	}
	if (cfg->runtime && worker_fns_set_runtime(w.fns, cfg->runtime) != CM_OK) {
		cm_error("the runtime is not a JSON array of strings: %s", cfg->runtime);
		worker_fns_free(w.fns);
		return 1;
	}
	if (cfg->runtime) {
		/* Started before the worker asks for work, and waited for: a
		 * task taken while the interpreter loads waits in this worker's
		 * hand though another's may be up, and a local gateway starts a
		 * pool's next workers once this one connects (engine/scale.c),
		 * so that a new pool's first runtimes load on cores of their
		 * own, not all at once. */
		char why[128];
		worker_runtime *rt = worker_fns_runtime(w.fns);
		worker_runtime_use_values(rt, w.values);
		if (worker_runtime_start(rt, why, sizeof(why)) != CM_OK)
			cm_warn("%s (the first task tries again)", why);
		else
			await_runtime(rt, stop);
	}
	if (cfg->manager) {
		worker_manager *m = NULL;
		char *why = NULL;
		if (worker_manager_new(cfg->manager, cfg->plugin_path, worker_fns_runtime(w.fns), &m, &why) != CM_OK) {
			cm_error("cannot host a manager: %s", why ? why : "out of memory");
			free(why);
			worker_fns_free(w.fns);
			return 1;
		}
		worker_fns_host(w.fns, m);
	}
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.wake, NULL);
	/* A failed exchange is tried again after 100 ms, dialing anew: a
	 * restarted gateway gets its workers back quickly. */
	w.recv_ms = recv_ms < RECV_TIMEOUT_MIN_MS   ? RECV_TIMEOUT_MIN_MS
	            : recv_ms > RECV_TIMEOUT_MAX_MS ? RECV_TIMEOUT_MAX_MS
	                                            : recv_ms;
	if ((rv = hub_link_new(cfg, 0, &w.link)) != 0) {
		cm_error("cannot dial hub %s: %s", cfg->hub, nng_strerror(rv));
		w.code = 1;
		goto out_sock;
	}
	worker_api_init(cfg);
	worker_output_capture();
	if (pthread_create(&other, NULL, take_turns, &w) != 0) {
		w.code = 1;
		goto out_sock;
	}
	cm_info("worker %s of pool %s dialing %s", cfg->worker_id, cfg->pool_id, cfg->hub);
	take_turns(&w);
	/* A task still running finishes on its own; it is not interrupted. */
	pthread_join(other, NULL);
	worker_api_fini();
out_sock:
	hub_link_free(w.link);
	ring_fini(&w.ahead);
	ring_fini(&w.others);
	for (size_t i = 0; i < w.nout; i++)
		result_free(&w.out[i]);
	free(w.taken);
	free(w.outcomes);
	free(w.ends);
	free(w.out);
	proto_arena_fini(&w.batches);
	worker_fns_free(w.fns);
	worker_values_free(w.values);
	pthread_cond_destroy(&w.wake);
	pthread_mutex_destroy(&w.mu);
	return w.code;
}

/*
 * Jobs and their tasks in the engine: the pool's queue of task-id ranges,
 * handing tasks out (assign: fair share, batches sized by measured task
 * time), pulls with their piggy-backed results, retries and requeues, maps.
 * Runs on the engine thread; requests and pulls come in through requests.c.
 *
 * The queue of a pool is a list of task-id ranges: a map is one range, and
 * requeued tasks become small ranges at the front. Handing out tasks is one
 * UPDATE per range.
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

job *engine__job_find(engine *e, const char *id)
{
	id_link *l = id_table_find(e->jobs, JOB_BUCKETS, id);
	job *j = l ? ID_TABLE_ITEM(l, job) : NULL;

	return j && !j->pool->deleted ? j : NULL; /* one of a deleted pool goes with it */
}

/* The first index of p->jobs whose job's base is above id. */
static size_t jobs_above(const pool *p, int64_t id)
{
	size_t lo = 0, hi = p->njobs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->jobs[mid]->base <= id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static job *job_of_task(pool *p, int64_t id)
{
	size_t at;

	if (p->last_job && id >= p->last_job->base && id < p->last_job->base + p->last_job->total)
		return p->last_job;
	if (!(at = jobs_above(p, id)))
		return NULL;
	job *j = p->jobs[at - 1];
	return id < j->base + j->total ? (p->last_job = j) : NULL;
}

int engine__job_reserve(pool *p)
{
	size_t cap = p->jobs_cap ? p->jobs_cap * 2 : 16;
	job **a;

	if (p->njobs < p->jobs_cap)
		return CM_OK;
	if (!(a = realloc(p->jobs, cap * sizeof(*a))))
		return CM_ENOMEM;
	p->jobs = a;
	p->jobs_cap = cap;
	return CM_OK;
}

/* Adds a job to its pool (which keeps jobs in base order: jobs are created
 * in id order, so this appends) and to the id index. engine__job_reserve
 * made room for it. */
void engine__job_attach(engine *e, pool *p, job *j)
{
	p->jobs[p->njobs++] = j;
	id_table_add(e->jobs, JOB_BUCKETS, &j->by_id, j->id);
}

int engine__queue_push(pool *p, job *j, int64_t lo, int64_t hi, int front)
{
	int64_t now = cm_now_ms();
	range *r;

	/* The job's next tasks join its last range, if they come within
	 * QUEUE_JOIN_MS of it (the wait is counted from the range's start). */
	if (!front && p->qtail && p->qtail->job == j && p->qtail->hi + 1 == lo &&
	    now - p->qtail->queued_ms <= QUEUE_JOIN_MS) {
		p->qtail->hi = hi;
		p->queued += hi - lo + 1;
		return CM_OK;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return CM_ENOMEM;
	r->lo = lo;
	r->hi = hi;
	r->queued_ms = now;
	r->job = j;
	if (front) {
		r->next = p->qhead;
		p->qhead = r;
		if (!p->qtail)
			p->qtail = r;
	} else {
		if (p->qtail)
			p->qtail->next = r;
		else
			p->qhead = r;
		p->qtail = r;
	}
	p->queued += hi - lo + 1;
	return CM_OK;
}

void engine__queue_clear(pool *p)
{
	while (p->qhead) {
		range *r = p->qhead;
		p->qhead = r->next;
		free(r);
	}
	p->qtail = NULL;
	p->queued = 0;
}

job_context *engine__context_new(const void *text, size_t len)
{
	job_context *c = malloc(sizeof(*c) + len);

	if (c) {
		c->next = NULL;
		c->len = len;
		memcpy(c->text, text, len);
	}
	return c;
}

void engine__contexts_free(job_context *c)
{
	while (c) {
		job_context *next = c->next;
		free(c);
		c = next;
	}
}

/* An ended job hands out no more tasks: its context goes once this cycle's
 * batches are answered. */
static void retire_context(engine *e, job *j)
{
	if (!j->context)
		return;
	j->context->next = e->retired;
	e->retired = j->context;
	j->context = NULL;
}

void engine__job_opened(job *j)
{
	j->pool->open_jobs++;
	if (j->total <= SMALL_JOB_TASKS) {
		j->pool->open_small++;
		j->pool->small_at = cm_now_ms();
	}
}

static void job_closed(job *j)
{
	j->pool->open_jobs--;
	j->pool->open_small -= j->total <= SMALL_JOB_TASKS;
}

void engine__job_check_done(engine *e, job *j)
{
	if (j->done < j->total || j->state != JOB_RUNNING)
		return;
	retire_context(e, j);
	free(j->inputs); /* its counts stay */
	j->inputs = NULL;
	j->state = JOB_DONE;
	j->ended_ms = cm_wall_ms();
	store_job_set_state(e->st, j->num, job_state_names[j->state], j->ended_ms);
	job_closed(j);
	if (j->waiters)
		engine__applies_end(e, j);
	engine__event_job(e, j);
	/* An apply's end is not logged: at thousands a second its lines would
	 * be most of the log and a write on the engine's path (the event
	 * stream still has it). */
	if (j->total > 1)
		cm_info("job %s done: %lld results, %lld failed", j->id, (long long)j->total, (long long)j->failed);
}

/* Work on a job's tasks done a slice a cycle (engine__chores_step), so no
 * request waits behind a large job: filling a cancelled job's missing
 * results (j set), or deleting a removed job's tasks (j NULL). */
typedef struct chore {
	job *j;
	int64_t num, lo, hi;
	struct chore *next;
	char why[]; /* a cancelled job's error text */
} chore;

static int chore_add(engine *e, job *j, int64_t num, int64_t lo, int64_t hi, const char *why)
{
	size_t n = strlen(why) + 1;
	chore *c = malloc(sizeof(*c) + n);

	if (!c)
		return CM_ENOMEM;
	*c = (chore){.j = j, .num = num, .lo = lo, .hi = hi, .next = e->chores};
	memcpy(c->why, why, n);
	e->chores = c;
	return CM_OK;
}

int engine__doom(engine *e, int64_t num, int64_t lo, int64_t hi)
{
	return chore_add(e, NULL, num, lo, hi, "");
}

int engine__cancel_rest(engine *e, job *j, const char *why)
{
	return chore_add(e, j, j->num, j->base, j->base + j->total - 1, why);
}

/* Chores, newest first, up to CHORE_SLICE tasks a cycle (a chore that
 * ends counts CHORE_JOB_COST more: its job's row and results go), in this
 * cycle's transaction. A failed cycle reloads the chores from the store
 * (jobs "cancelling" and "deleting"). */
void engine__chores_step(engine *e)
{
	int64_t budget = CHORE_SLICE;

	while (e->chores && budget > 0) {
		chore *c = e->chores;
		int64_t n = 0;
		int64_t hi = c->hi - c->lo >= budget ? c->lo + budget - 1 : c->hi;
		if (c->j) {
			if (store_job_cancel(e->st, c->lo, hi, c->j->done + 1, c->why, &n) != CM_OK)
				return;
			c->j->done += n;
			c->j->failed += n;
			c->j->pool->tasks_done += n;
			c->j->pool->tasks_failed += n;
		} else if (store_tasks_delete(e->st, c->lo, hi) != CM_OK) {
			return;
		}
		budget -= hi - c->lo + 1 + CHORE_JOB_COST;
		c->lo = hi + 1;
		if (c->lo <= c->hi)
			return;
		if (c->j && c->j->inputs_total) { /* every input not done fails with it */
			c->j->inputs_failed += c->j->inputs_total - c->j->inputs_done;
			c->j->inputs_done = c->j->inputs_total;
			if (store_job_inputs_count(e->st, c->num, c->j->inputs_done, c->j->inputs_failed) != CM_OK)
				return;
		}
		int done = 1;
		if ((c->j ? store_job_set_state(e->st, c->num, job_state_names[JOB_CANCELLED], c->j->ended_ms)
		          : store_job_delete(e->st, c->num, CHORE_GROUPS, &done)) != CM_OK ||
		    !done)
			return;
		e->chores = c->next;
		free(c);
	}
}

/* Drops the chores of job j (it is being removed). */
static void chores_drop_job(engine *e, const job *j)
{
	for (chore **at = &e->chores; *at;) {
		chore *c = *at;
		if (c->j == j) {
			*at = c->next;
			free(c);
		} else {
			at = &c->next;
		}
	}
}

void engine__chores_clear(engine *e)
{
	while (e->chores) {
		chore *c = e->chores;
		e->chores = c->next;
		free(c);
	}
}

/* Ends a running job whose tasks are out of the queue: it is "cancelling"
 * in the store until each task without a result has an error result (a
 * slice a cycle), so every index of the job gets an answer and no client
 * waits on a job that cannot finish. Results workers send meanwhile are
 * recorded as they come. */
static void job_cancel(engine *e, job *j, const char *why)
{
	/* Arguments still to come never will: the job is what it received. */
	engine__fill_abort(e, j, "the job was cancelled before this part was stored");
	if (j->received < j->total) {
		j->total = j->received;
		if (j->inputs_total) /* the inputs of the tasks it received */
			j->inputs_total = j->inputs_received;
		store_job_set_total(e->st, j->num, j->total, j->inputs_total);
	}
	j->state = JOB_CANCELLED;
	j->ended_ms = cm_wall_ms();
	retire_context(e, j);
	store_job_set_state(e->st, j->num, "cancelling", j->ended_ms);
	job_closed(j);
	if (j->waiters) /* they look once: an apply's cancelled result is in by then, as a rule */
		engine__applies_end(e, j);
	engine__event_job(e, j);
	if (engine__cancel_rest(e, j, why) != CM_OK)
		cm_error("job %s: out of memory; its missing results are filled after a restart", j->id);
}

/* Ends every unfinished job of a pool that ends. */
void engine__pool_cancel_jobs(engine *e, pool *p, const char *why)
{
	engine__queue_clear(p);
	for (size_t i = 0; i < p->njobs; i++)
		if (p->jobs[i]->state == JOB_RUNNING)
			job_cancel(e, p->jobs[i], why);
}

/* Takes j's ranges out of its pool's queue. */
static void queue_drop_job(pool *p, job *j)
{
	range **at = &p->qhead, *last = NULL;

	while (*at) {
		range *r = *at;
		if (r->job == j) {
			p->queued -= r->hi - r->lo + 1;
			*at = r->next;
			free(r);
		} else {
			last = r;
			at = &r->next;
		}
	}
	p->qtail = last;
}

/* Takes j out of the id index; its pool's array is the caller's. */
static void job_unhash(engine *e, job *j)
{
	if (j->pool->last_job == j)
		j->pool->last_job = NULL;
	id_table_remove(e->jobs, JOB_BUCKETS, &j->by_id);
}

void engine__job_free(job *j)
{
	engine__job_unlist(j);
	free(j->function);
	free(j->name);
	free(j->inputs);
	free(j->context);
	for (size_t i = 0; i < j->ncommand; i++)
		free(j->command[i]);
	free(j->command);
	free(j);
}

/* The job o names when it has ended. A running one is cancelled (its
 * queued tasks leave the queue, every missing result fails "cancelled", a
 * slice a cycle; it stays readable) and o answered with it; none: o's
 * error. NULL both ways. */
static job *ended_else_cancel(engine *e, op *o)
{
	job *j = engine__job_find(e, o->id);

	if (!j) {
		o->err = CM_ENOENT;
		return NULL;
	}
	if (j->state != JOB_RUNNING)
		return j;
	queue_drop_job(j->pool, j);
	job_cancel(e, j, "cancelled");
	cm_info("job %s cancelled with %lld of %lld results; the rest fail in the background", j->id,
	        (long long)j->done, (long long)j->total);
	o->out = engine__job_json(j);
	return NULL;
}

/* POST /v1/jobs/{id}/cancel: an ended job is left as it is. */
void engine__handle_job_cancel(engine *e, op *o)
{
	job *j = ended_else_cancel(e, o);

	if (!j)
		return;
	o->err = CM_ECLOSED;
	snprintf(o->detail, sizeof(o->detail), "job %s has ended (%s): nothing to cancel; DELETE removes it", j->id,
	         job_state_names[j->state]);
}

/* DELETE /v1/jobs/{id}: an ended job is removed: gone from every view at
 * once, its tasks deleted a slice a cycle. */
void engine__handle_job_delete(engine *e, op *o)
{
	job *j = ended_else_cancel(e, o);

	if (!j)
		return;
	json_t *out = engine__job_json(j);
	if (!out) {
		o->err = CM_ENOMEM;
		return;
	}
	if ((o->err = engine__job_remove(e, j)) != CM_OK) {
		json_decref(out);
		return;
	}
	json_object_set_new(out, "state", json_string("deleted"));
	o->out = out;
}

/* An ended job gone from every view, its tasks doomed, its memory freed;
 * its place in its pool's array is left to the caller. */
static int job_remove_unlisted(engine *e, job *j)
{
	/* Memory first: a store failure fails the cycle, which reloads. */
	int err = engine__doom(e, j->num, j->base, j->base + j->total - 1);

	if (err != CM_OK)
		return err;
	if (store_job_forget(e->st, j->num) != CM_OK)
		return CM_EIO;
	chores_drop_job(e, j); /* a cancellation still filling: the tasks go anyway */
	engine__event_job_removed(e, j);
	cm_info("job %s removed; its %lld tasks go in the background", j->id, (long long)j->total);
	job_unhash(e, j);
	engine__job_free(j);
	return CM_OK;
}

int engine__job_remove(engine *e, job *j)
{
	pool *p = j->pool;
	size_t at = jobs_above(p, j->base) - 1;
	int err;

	while (p->jobs[at] != j) /* jobs of no task share their base with the next job */
		at--;
	if ((err = job_remove_unlisted(e, j)) != CM_OK)
		return err;
	memmove(p->jobs + at, p->jobs + at + 1, (p->njobs - at - 1) * sizeof(*p->jobs));
	p->njobs--;
	return CM_OK;
}

int engine__jobs_remove_ended(engine *e, pool *p, int64_t cutoff, int max)
{
	size_t kept = 0, i = 0;
	int removed = 0;

	/* One pass over the old jobs, up to the max-th removed, kept ones moved
	 * down in place, then the rest of the array moved once: removing from
	 * the front of a million jobs costs one move, not one per job, and
	 * each cycle looks at no more jobs than it removes and keeps before. */
	for (; i < p->njobs && p->jobs[i]->created_ms <= cutoff && removed < max; i++) {
		job *j = p->jobs[i];
		if (j->state != JOB_RUNNING && j->ended_ms <= cutoff) {
			if (job_remove_unlisted(e, j) == CM_OK) {
				removed++;
				continue;
			}
			removed = max; /* memory, or a failed write that fails the cycle: stop */
		}
		p->jobs[kept++] = j;
	}
	if (kept == i) /* nothing removed (p->jobs may be NULL) */
		return removed;
	memmove(p->jobs + kept, p->jobs + i, (p->njobs - i) * sizeof(*p->jobs));
	p->njobs -= i - kept;
	return removed;
}

/* A task of several inputs recorded: its inputs counted, failed_inputs of
 * them failed (0 on a failed task: every one; its error says which did,
 * docs/tasks.md), the counts written with its result. */
static void count_inputs(engine *e, job *j, int64_t id, int ok, uint32_t failed_inputs)
{
	int64_t at = id - j->base;
	int64_t n = j->inputs && at >= 0 && at < j->total ? j->inputs[at] : 0;
	int64_t failed = ok ? 0 : failed_inputs && failed_inputs < n ? failed_inputs : n;

	j->inputs_done += n;
	j->inputs_failed += failed;
	store_job_inputs_count(e->st, j->num, j->inputs_done, j->inputs_failed);
}

/* Records one result; returns 1 if it was the first for that task. from:
 * the worker it came from, as store_holder_ref found it (only the task's
 * holder's counts), or STORE_FROM_GATEWAY for the gateway's own verdict.
 * failed_inputs: as count_inputs's. */
static int record(engine *e, job *j, int64_t id, int64_t from, int ok, const void *value, size_t len,
                  uint32_t failed_inputs)
{
	int recorded = 0;

	if (store_task_complete_from(e->st, id, j->done + 1, ok, value, len, from, &recorded) != CM_OK || !recorded)
		return 0;
	if (j->inputs_total)
		count_inputs(e, j, id, ok, failed_inputs);
	j->done++;
	j->pool->tasks_done++;
	if (!ok) {
		j->failed++;
		j->pool->tasks_failed++;
	}
	if (j->waiters)
		engine__applies_result(e, j, id - j->base, ok, value, len);
	engine__job_progressed(e, j);
	engine__job_check_done(e, j);
	return 1;
}

/* A task its runtime died on, out of attempts: its error says how often,
 * then how the last runtime ended (the worker's words). */
static int record_lost(engine *e, job *j, int64_t id, int64_t from, const engine_result *r)
{
	char head[48];
	int n = snprintf(head, sizeof(head), "lost %u time%s: ", r->attempt, r->attempt == 1 ? "" : "s");
	char *msg = malloc((size_t)n + r->len);
	int recorded;

	if (!msg)
		return record(e, j, id, from, 0, r->value, r->len, 0);
	memcpy(msg, head, (size_t)n);
	memcpy(msg + n, r->value, r->len);
	recorded = record(e, j, id, from, 0, msg, (size_t)n + r->len, 0);
	free(msg);
	return recorded;
}

void engine__pull_finish(engine *e, op *o, engine_batch_status status, const char *error)
{
	o->u.pull.batch.status = status;
	o->u.pull.batch.error = error ? error : "";
	if (o->u.pull.parked_at > 0) {
		double us = (cm_now_s() - o->u.pull.parked_at) * 1e6;
		o->u.pull.batch.parked_us = us < UINT32_MAX ? (uint32_t)us : UINT32_MAX;
	}
	engine__ready(e, o);
}

typedef struct requeue_ctx {
	engine *e;
	pool *p;
	int exit_code;
	int64_t requeued, failed;
	range *head, *tail; /* collected in id order, then put at the front */
} requeue_ctx;

static int requeue_one(void *ctx, int64_t id, const void *arg, size_t len, int attempts)
{
	requeue_ctx *c = ctx;
	job *j = job_of_task(c->p, id);

	(void)arg;
	(void)len;
	if (!j || j->state != JOB_RUNNING)
		return CM_OK;
	if (attempts >= j->max_attempts) {
		char msg[128];
		int n = snprintf(msg, sizeof(msg), "worker lost %d time%s (last exit code %d)", attempts,
		                 attempts == 1 ? "" : "s", c->exit_code);
		record(c->e, j, id, STORE_FROM_GATEWAY, 0, msg, (size_t)n, 0);
		c->failed++;
		return CM_OK;
	}
	c->requeued++;
	c->p->tasks_retried++;
	if (c->tail && c->tail->job == j && c->tail->hi + 1 == id) {
		c->tail->hi = id;
		return CM_OK;
	}
	range *r = calloc(1, sizeof(*r));
	if (!r)
		return CM_ENOMEM;
	r->lo = r->hi = id;
	r->job = j;
	if (c->tail)
		c->tail->next = r;
	else
		c->head = r;
	c->tail = r;
	return CM_OK;
}

/* Puts the ranges requeue_one collected at the front of the pool's queue:
 * they are the oldest work. */
static void requeue_splice(pool *p, requeue_ctx *c)
{
	if (!c->head)
		return;
	for (range *r = c->head; r; r = r->next)
		p->queued += r->hi - r->lo + 1;
	c->tail->next = p->qhead;
	p->qhead = c->head;
	if (!p->qtail)
		p->qtail = c->tail;
	c->head = c->tail = NULL;
}

/* Puts a worker's pending tasks back at the front of its pool's queue (or
 * fails those out of attempts). */
void engine__requeue_worker(engine *e, pool *p, const char *worker_id, int exit_code)
{
	requeue_ctx c = {.e = e, .p = p, .exit_code = exit_code};

	store_tasks_requeue(e->st, worker_id, requeue_one, &c);
	requeue_splice(p, &c);
	if (c.requeued || c.failed)
		cm_info("pool %s: %lld tasks of worker %s requeued, %lld failed for good", p->id, (long long)c.requeued,
		        worker_id, (long long)c.failed);
}

/* A task's framing in a batch (its id, attempt, length, in their columns),
 * or a string's, generously. */
#define TASK_FRAME_OVERHEAD 32

typedef struct assign_ctx {
	op *o;
	job *j;
	size_t run_bytes; /* what the run of j's tasks shares: counted on its first task, then 0 */
} assign_ctx;

/* Room for one more task, and for one more run, in o's batch. */
static int batch_room(op *o)
{
	if (o->u.pull.ntasks == o->u.pull.cap_tasks) {
		size_t cap = o->u.pull.cap_tasks ? o->u.pull.cap_tasks * 2 : 64;
		uint64_t *ids = realloc(o->u.pull.ids, cap * sizeof(*ids));
		if (ids)
			o->u.pull.ids = ids;
		uint32_t *attempts = realloc(o->u.pull.attempts, cap * sizeof(*attempts));
		if (attempts)
			o->u.pull.attempts = attempts;
		uint32_t *lens = realloc(o->u.pull.arg_lens, cap * sizeof(*lens));
		if (lens)
			o->u.pull.arg_lens = lens;
		if (!ids || !attempts || !lens)
			return CM_ENOMEM;
		o->u.pull.cap_tasks = cap;
	}
	if (o->u.pull.nruns == o->u.pull.cap_runs) {
		size_t cap = o->u.pull.cap_runs ? o->u.pull.cap_runs * 2 : 8;
		engine_run *runs = realloc(o->u.pull.runs, cap * sizeof(*runs));
		if (!runs)
			return CM_ENOMEM;
		o->u.pull.runs = runs;
		o->u.pull.cap_runs = cap;
	}
	return CM_OK;
}

/* As the hub frames a run of j's tasks: its framing, the function's name
 * and the command, once a run. */
static size_t run_bytes(const job *j)
{
	size_t bytes = TASK_FRAME_OVERHEAD + strlen(j->function);

	for (size_t i = 0; i < j->ncommand; i++)
		bytes += strlen(j->command[i]) + TASK_FRAME_OVERHEAD;
	return bytes;
}

static int add_task(void *ctx, int64_t id, const void *arg, size_t len, int attempts)
{
	assign_ctx *c = ctx;
	op *o = c->o;

	/* The job's context goes once where a run of its tasks begins. */
	size_t bytes = len + TASK_FRAME_OVERHEAD + c->run_bytes;
	uint64_t context = c->j->context ? (uint64_t)c->j->num : 0;
	if (context && context != o->u.pull.last_context)
		bytes += c->j->context->len + TASK_FRAME_OVERHEAD;
	if (o->u.pull.ntasks && o->u.pull.bytes + bytes > BATCH_BYTES_MAX)
		return STORE_TASK_LEAVE;
	if (batch_room(o) != CM_OK)
		return CM_ENOMEM;
	/* The argument's copy goes after the others: the batch's arguments
	 * travel as one blob. */
	if (len && cm_buf_append(&o->u.pull.args, arg, len) != CM_OK)
		return CM_ENOMEM;
	if (c->run_bytes) /* the first of a run */
		o->u.pull.runs[o->u.pull.nruns++] = (engine_run){.function = c->j->function,
		                                                 .command = c->j->command,
		                                                 .ncommand = c->j->ncommand,
		                                                 .timeout_ms = c->j->timeout_ms,
		                                                 .context_key = context,
		                                                 .context = c->j->context ? c->j->context->text : NULL,
		                                                 .context_len = c->j->context ? c->j->context->len : 0,
		                                                 .ahead = c->j->total <= SMALL_JOB_TASKS};
	o->u.pull.runs[o->u.pull.nruns - 1].count++;
	o->u.pull.ids[o->u.pull.ntasks] = (uint64_t)id;
	o->u.pull.attempts[o->u.pull.ntasks] = (uint32_t)attempts;
	o->u.pull.arg_lens[o->u.pull.ntasks++] = (uint32_t)len;
	o->u.pull.bytes += bytes;
	c->run_bytes = 0;
	if (context)
		o->u.pull.last_context = context;
	return CM_OK;
}

/* How many of p's queued tasks worker w may take. One that holds nothing
 * takes its share of all the pool's work, queued and held, so that each
 * live worker holds about as much: shared from the queue alone, the
 * second of two idle workers took half of what the first had left of a
 * map's 8 chunks, 4 and 2, then 5 and 3, a quarter of the map's time with
 * one runtime idle. One that holds tasks takes no more than its share of
 * the queue, nor more than would put it above the others: what another
 * holds is counted from its last pull, and it may have run some since
 * (counted at face value, a worker with one nap left took both of the
 * last two while the other's were ending, 5 and 3 again). A worker holding
 * nothing gets at least one task while any is queued. */
static int64_t fair_share(const pool *p, const worker *w)
{
	int64_t live = 0, held = 0;

	for (const worker *x = p->workers; x; x = x->next)
		if ((x->state == W_STARTING || x->state == W_CONNECTED) && !x->retiring) {
			live++;
			held += x->pending;
		}
	if (live == 0)
		live = 1;
	int64_t of_all = (p->queued + held + live - 1) / live - w->pending;
	if (w->pending == 0)
		return of_all;
	int64_t of_queue = (p->queued + live - 1) / live;
	return of_all < of_queue ? (of_all > 0 ? of_all : 0) : of_queue;
}

/* Takes r (after prev, NULL at the head) out of p's queue; with to_tail,
 * puts it back last. */
static void queue_unlink(pool *p, range *prev, range *r, int to_tail)
{
	*(prev ? &prev->next : &p->qhead) = r->next;
	if (p->qtail == r)
		p->qtail = prev;
	r->next = NULL;
	if (!to_tail)
		return;
	*(p->qtail ? &p->qtail->next : &p->qhead) = r;
	p->qtail = r;
}

/* Hands tasks from p's queue to worker w, into o's batch: up to want, no
 * more than its fair share (fair_share), and so that the worker holds the
 * task it runs next plus about BATCH_BUDGET_US and two of its round trips
 * more, in time (a far worker's next batch is a round trip away), costed
 * job by job from each job's measured task time (the in_hand tasks it
 * already holds count, at the pool's run time). A worker holding nothing
 * always gets one task. Chunks are not split, unless the batch reaches
 * BATCH_BYTES_MAX.
 * Jobs take turns, each its share of the batch among the pool's open jobs:
 * a range that gave tasks and still has some goes behind the other jobs'
 * ranges, so an apply or a small map submitted while a large map runs is
 * handed out by the next pulls, not after the map. A job whose cost is not
 * known yet gets one task out, as a probe, which waits at its place for a
 * worker with room; a busy worker's pull passes over it (up to PROBE_SKIPS
 * such jobs) to the work behind. */
void engine__assign(engine *e, pool *p, worker *w, uint32_t want, uint32_t in_hand, uint32_t round_trip_us, op *o)
{
	int skipped = 0;
	int64_t target;
	int64_t share;
	int64_t given = 0;
	double held_cost;
	double room;
	range *prev = NULL, *r;

	o->u.pull.batch.queue_empty = !p->qhead;
	if (!want || !p->qhead)
		return;
	/* What the worker holds is priced at the pool's run time over all its
	 * results: mostly of the jobs handed out most, which are what workers
	 * hold. */
	held_cost = p->est_known ? p->est_us : BATCH_BUDGET_US;
	if (held_cost < 1.0)
		held_cost = 1.0;
	/* A worker says its round trip: one that says more than a second
	 * (none is that far) gets a second's worth. */
	room = BATCH_BUDGET_US + 2.0 * (round_trip_us < ROUND_TRIP_MAX_US ? round_trip_us : ROUND_TRIP_MAX_US) +
	       held_cost - (double)in_hand * held_cost;
	share = fair_share(p, w);
	target = (int64_t)want < share ? (int64_t)want : share;
	/* A job's turn is its share of the batch among the pool's open jobs:
	 * a large map beside 64 applies in flight goes in small batches, so
	 * the cycles that record its results stay short and the applies are
	 * answered within a few of them. */
	int64_t turn = p->open_jobs > 1 ? target / p->open_jobs : target;
	if (turn < 1)
		turn = 1;
	/* While small jobs keep coming (applies, a manager's calls: one came
	 * in the last BESIDE_SMALL_MS and some are open), a large job goes
	 * BESIDE_SMALL_TURN tasks a turn: each of its turns costs the cycle
	 * that records it, and the small jobs wait for those cycles. A long
	 * apply alone, or two maps, hold no one back. */
	int64_t now = cm_now_ms();
	int beside_small = p->open_small > 0 && now - p->small_at < BESIDE_SMALL_MS;
	while (given < target && (r = prev ? prev->next : p->qhead)) {
		job *j = r->job;
		int64_t size = r->hi - r->lo + 1;
		int64_t take;
		/* A job whose cost is not known (a large map; a small job of a
		 * function the pool has not measured lately) sends one task
		 * alone, to learn it: first in a batch, for a worker with less
		 * than a batch's work in hand (it starts within that). */
		if (j->avg_us < 0 && j->total <= SMALL_JOB_TASKS && !j->ncommand)
			j->avg_us = engine__function_cost(p, j->function); /* measured since it came */
		int probe = j->avg_us < 0;
		double cost = j->avg_us > 1.0 ? j->avg_us : j->avg_us < 0 ? BATCH_BUDGET_US : 1.0;
		int free_one = given == 0 && in_hand == 0;
		assign_ctx c = {o, j, run_bytes(j)};
		size_t before = o->u.pull.ntasks, runs_before = o->u.pull.nruns, bytes_before = o->u.pull.bytes,
		       args_before = o->u.pull.args.len;
		uint64_t context_before = o->u.pull.last_context;

		if (probe)
			take = given == 0 && room > 0;
		else if ((take = room > 0 ? (int64_t)(room / cost) : 0) == 0)
			take = free_one;
		if (take > turn)
			take = turn;
		if (beside_small && j->total > SMALL_JOB_TASKS && take > BESIDE_SMALL_TURN)
			take = BESIDE_SMALL_TURN;
		if (take > target - given)
			take = target - given;
		if (take <= 0 && probe && skipped++ < PROBE_SKIPS) {
			prev = r;
			continue;
		}
		if (take <= 0)
			break;
		if (j->chunksize > 1)
			take = (take + j->chunksize - 1) / j->chunksize * j->chunksize;
		if (take > size)
			take = size;
		int64_t next;
		if (store_tasks_assign(e->st, r->lo, r->lo + take - 1, w->id, add_task, &c, &next) != CM_OK) {
			/* Nothing of this range was marked: none of it goes. */
			o->u.pull.ntasks = before;
			o->u.pull.nruns = runs_before;
			o->u.pull.args.len = args_before;
			o->u.pull.bytes = bytes_before;
			o->u.pull.last_context = context_before;
			break;
		}
		int full = next <= r->lo + take - 1; /* the batch holds all the bytes it may */
		take = next - r->lo;
		given += take;
		engine__observe_tasks(&p->queue_wait, (double)(now - r->queued_ms) / 1000.0, (uint64_t)take);
		room -= (double)take * cost;
		w->pending += (int64_t)(o->u.pull.ntasks - before);
		p->queued -= take;
		r->lo += take;
		if (r->lo > r->hi) {
			queue_unlink(p, prev, r, 0);
			free(r);
		} else if (r->next && r->next->job != j) {
			queue_unlink(p, prev, r, 1); /* its turn is over */
		} else {
			prev = r;
		}
		if (full)
			break;
	}
	o->u.pull.batch.runs = o->u.pull.runs;
	o->u.pull.batch.nruns = o->u.pull.nruns;
	o->u.pull.batch.ids = o->u.pull.ids;
	o->u.pull.batch.attempts = o->u.pull.attempts;
	o->u.pull.batch.arg_lens = o->u.pull.arg_lens;
	o->u.pull.batch.ntasks = o->u.pull.ntasks;
	o->u.pull.batch.args = (const uint8_t *)o->u.pull.args.data;
	o->u.pull.batch.args_len = o->u.pull.args.len;
	o->u.pull.batch.queue_empty = !p->qhead;
	if (o->u.pull.ntasks)
		w->idle_since = 0;
}

int engine__pool_drained(const pool *p)
{
	return p->queued == 0 && p->open_jobs == 0;
}

void engine__handle_pull(engine *e, op *o)
{
	const engine_pull_msg *m = o->u.pull.msg;
	pool *p = engine__pool_find(e, m->pool_id);
	worker *w = NULL;

	o->u.pull.batch.lease_ms = (uint32_t)e->cfg->lease_ms;
	/* The hub checked the worker's secret and that it serves this pool. */
	if (p)
		for (w = p->workers; w && strcmp(w->id, m->worker_id) != 0; w = w->next)
			;
	if (!w || w->state == W_EXITED) {
		engine__pull_finish(e, o, ENGINE_BATCH_REFUSED, "unknown worker or pool");
		return;
	}
	op *gave_up = waitlist_take(&w->parked);
	if (gave_up) { /* the worker gave up on its parked pull and asked again */
		gave_up->u.pull.discard = 1;
		engine__ready(e, gave_up);
	}
	w->last_seen = cm_now_ms();
	if (w->state == W_STARTING) {
		w->state = W_CONNECTED;
		p->fail_streak = 0;
		store_worker_set_state(e->st, w->id, "connected", 0);
		cm_info("worker %s of pool %s connected", w->id, p->id);
		/* A local pool's next worker may start now (scale.c). */
		if (p->state == POOL_ACTIVE || (p->state == POOL_CLOSED && !engine__pool_drained(p)))
			engine__pool_converge(e, p, w->last_seen);
	}
	/* Its lines first: a task printed them before its result, and an
	 * apply's answer (apply.c) says the number of the pool's last line.
	 * While they would push out lines the program has not read, nothing
	 * of the pull is taken: the worker keeps it all and asks again. */
	if ((p->state == POOL_ACTIVE || p->state == POOL_CLOSED) &&
	    engine__pool_output_held_back(p, w, m, w->last_seen)) {
		engine__pull_finish(e, o, ENGINE_BATCH_RETRY, "the program is behind with the pool's output");
		return;
	}
	if (m->noutput)
		engine__pool_output(e, p, w, m);
	requeue_ctx retry = {.e = e, .p = p, .exit_code = -1};
	job *measured = NULL; /* the job of the run of results being read */
	int64_t from = STORE_FROM_NOBODY; /* the worker, looked up once for all its results */
	if (m->nresults)
		store_holder_ref(e->st, w->id, &from); /* a failed read: none counts, and the commit fails */
	for (size_t i = 0; i < m->nresults; i++) {
		const engine_result *r = &m->results[i];
		job *j = job_of_task(p, (int64_t)r->task_id);
		if (w->pending > 0)
			w->pending--;
		if (!j)
			continue;
		j->avg_us = j->avg_us < 0 ? r->run_us : engine__cost_average(j->avg_us, r->run_us);
		engine__pool_measured(p, r->run_us);
		engine__observe_tasks(&p->run_time, r->run_us / 1e6, 1);
		/* Its function's cost, once per run of one job's results (a
		 * batch's results are mostly of one job). */
		if (measured && j != measured && !measured->ncommand)
			engine__function_measured(p, measured->function, measured->avg_us);
		measured = j;
		if (!r->ok && (j->retry_errors || r->lost) && (int)r->attempt < j->max_attempts &&
		    j->state == JOB_RUNNING && store_task_requeue_one(e->st, (int64_t)r->task_id) == CM_OK) {
			/* The caller asked for errors to be retried, or its runtime
			 * died on it: an attempt lost, as with a crashed worker. */
			requeue_one(&retry, (int64_t)r->task_id, NULL, 0, (int)r->attempt);
			continue;
		}
		int recorded =
		        r->lost ? record_lost(e, j, (int64_t)r->task_id, from, r)
		                : record(e, j, (int64_t)r->task_id, from, r->ok, r->value, r->len, r->failed_inputs);
		if (recorded && !r->ok) /* for the failures page: where, how long */
			store_failure_note(e->st, (int64_t)r->task_id, w->id, r->run_us);
	}
	if (measured && !measured->ncommand)
		engine__function_measured(p, measured->function, measured->avg_us);
	requeue_splice(p, &retry);
	if (m->resync) {
		/* Tasks recorded as ours that the worker does not hold were in an
		 * answer lost on the way (a gateway restart, a dropped connection). */
		requeue_ctx lost = {.e = e, .p = p, .exit_code = -1};
		store_tasks_release(e->st, w->id, m->held, m->nheld, requeue_one, &lost);
		requeue_splice(p, &lost);
		w->pending = (int64_t)m->nheld;
	}
	if (m->running_task) {
		job *j = job_of_task(p, (int64_t)m->running_task);
		if (j && j->timeout_ms && m->running_ms > j->timeout_ms && j->state == JOB_RUNNING) {
			char msg[96];
			int n = snprintf(msg, sizeof(msg), "timed out after %.1f s", j->timeout_ms / 1000.0);
			cm_warn("task %llu of job %s timed out on worker %s; replacing the worker",
			        (unsigned long long)m->running_task, j->id, w->id);
			record(e, j, (int64_t)m->running_task, STORE_FROM_GATEWAY, 0, msg, (size_t)n, 0);
			/* The function cannot be interrupted inside the worker: replace
			 * the worker; its other tasks go back to the queue. */
			w->state = W_STOPPING;
			engine__worker_stop(p, w, 1);
			engine__pull_finish(e, o, ENGINE_BATCH_STOP, NULL);
			return;
		}
	}
	if (w->retiring && m->in_hand == 0)
		w->state = W_STOPPING; /* it retires, and holds nothing now: it may go */
	if (w->state == W_STOPPING || p->state == POOL_TERMINATING || p->state == POOL_TERMINATED ||
	    p->state == POOL_FAILED || (p->state == POOL_CLOSED && engine__pool_drained(p))) {
		engine__pull_finish(e, o, ENGINE_BATCH_STOP, NULL);
		return;
	}
	/* Tasks handed to this worker that it does not count were in an answer
	 * it never got (lost, or taken by someone holding its secret): it lists
	 * what it holds next time, and the rest goes back to the queue. The
	 * store is asked only when the counts disagree or the worker holds
	 * nothing (a forged result can lower w->pending), not on every pull. */
	if (!m->resync && ((int64_t)m->in_hand < w->pending || m->in_hand == 0)) {
		int64_t held = 0;
		store_tasks_held_count(e->st, w->id, &held);
		o->u.pull.batch.list_held = (int64_t)m->in_hand < held;
	}
	if (!w->retiring) /* one that retires only finishes what it holds */
		engine__assign(e, p, w, m->want, m->in_hand, m->round_trip_us, o);
	if (o->u.pull.ntasks == 0 && m->in_hand == 0 && !o->u.pull.batch.list_held && !m->output_more) {
		o->u.pull.parked_at = cm_now_s();
		if (!w->idle_since)
			w->idle_since = cm_now_ms();
		waitlist_add(&w->parked, o);
		return;
	}
	engine__pull_finish(e, o, ENGINE_BATCH_OK, NULL);
}

/* How many of p's jobs are numbered below num (they are in number order). */
static size_t jobs_below(const pool *p, int64_t num)
{
	size_t lo = 0, hi = p->njobs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->jobs[mid]->num < num)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void engine__handle_job_list(engine *e, op *o)
{
	size_t npools = 0, k = 0;
	int64_t below = o->u.job_list.below > 0 ? o->u.job_list.below : INT64_MAX, last = 0;
	int found = 0, scanned = 0, known = 0;

	for (pool *p = e->pools; p; p = p->next)
		npools++;
	pool **ps = calloc(npools ? npools : 1, sizeof(*ps));
	size_t *at = calloc(npools ? npools : 1, sizeof(*at)); /* jobs of ps[i] not looked at yet */
	job_view *views = calloc((size_t)o->u.job_list.limit, sizeof(*views));
	if (!ps || !at || !views) {
		o->err = CM_ENOMEM;
		goto out;
	}
	for (pool *p = e->pools; p; p = p->next)
		if (o->id ? strcmp(p->id, o->id) == 0 : !p->spec.manager[0]) {
			known = 1;
			/* only pools with jobs to show: the merge below looks at
			 * each of them for every job it takes */
			if ((at[k] = jobs_below(p, below)))
				ps[k++] = p;
		}
	if (o->id && !known) {
		o->err = CM_ENOENT;
		goto out;
	}
	/* The newest first across pools: each pool's jobs are in number order. */
	for (;;) {
		size_t best = k;
		for (size_t i = 0; i < k; i++)
			if (at[i] && (best == k || ps[i]->jobs[at[i] - 1]->num > ps[best]->jobs[at[best] - 1]->num))
				best = i;
		if (best == k) { /* none left */
			last = 0;
			break;
		}
		if (found == o->u.job_list.limit || scanned == JOB_LIST_SCAN)
			break;
		const job *jb = ps[best]->jobs[--at[best]];
		last = jb->num;
		scanned++;
		if (!o->u.job_list.state || strcmp(engine__job_state(jb), o->u.job_list.state) == 0) {
			/* copied: the page is written by the thread that asked */
			engine__job_view(&views[found], jb);
			if ((o->err = engine__job_view_keep(&views[found])) != CM_OK)
				goto out;
			found++;
		}
	}
	o->u.job_list.views = views;
	o->u.job_list.nviews = (size_t)found;
	o->u.job_list.last = last;
	views = NULL;
out:
	for (int i = 0; views && i < found; i++)
		job_view_fini(&views[i]);
	free(views);
	free(ps);
	free(at);
}

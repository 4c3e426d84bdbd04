/*
 * The engine thread; see engine.h. Everything below runs on that thread,
 * except the public entry points at the end (HTTP and hub threads), which
 * only touch the inbox under e->mu. This file holds the cycle, pools, jobs,
 * workers and pulls; queues and pipes are in engine_queues.c, processes and
 * rings in engine_processes.c, the types they share in engine_int.h.
 *
 * One cycle:
 *
 *   wait for requests or the next tick (TICK_MS)
 *   BEGIN
 *     handle every request that arrived      -> ready list, or parked
 *     tick: reap workers, expire leases, hand queued tasks to parked pulls,
 *           answer parked pulls whose heartbeat is due, finish terminations,
 *           start replacement workers
 *   COMMIT
 *   answer everything on the ready list; wake long polls
 *
 * A worker's pull with nothing to hand out is parked (up to PARK_MS) rather
 * than answered empty, so idle workers do not spin and new work reaches them
 * at the next cycle. A worker that still holds tasks is never parked, so its
 * results are never held back.
 *
 * The queue of a pool is a list of task-id ranges: a map is one range, and
 * requeued tasks become small ranges at the front. Handing out tasks is one
 * UPDATE per range.
 */
#define _GNU_SOURCE
#include "gateway/engine_int.h"
#include "gateway/policy.h"

/* ---- small helpers ------------------------------------------------------ */

static unsigned hash_id(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h % JOB_BUCKETS;
}

static job *job_find(engine *e, const char *id)
{
	for (job *j = e->jobs[hash_id(id)]; j; j = j->hash_next)
		if (strcmp(j->id, id) == 0)
			return j;
	return NULL;
}

/* Adds a job to its pool (which keeps jobs in base order: jobs are created
 * in id order, so this appends) and to the id index. */
static void job_attach(engine *e, struct pool *p, job *j);

bx *engine__backend_for(engine *e, const char *name)
{
	for (size_t i = 0; i < e->nbackends; i++)
		if (strcmp(bx_name(e->backends[i]), name) == 0)
			return e->backends[i];
	return NULL;
}

pool *engine__pool_find(engine *e, const char *id)
{
	for (pool *p = e->pools; p; p = p->next)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
}

static job *job_of_task(pool *p, int64_t id)
{
	if (p->last_job && id >= p->last_job->base && id < p->last_job->base + p->last_job->total)
		return p->last_job;
	for (job *j = p->jobs; j; j = j->next)
		if (id >= j->base && id < j->base + j->total)
			return p->last_job = j;
	return NULL;
}

void engine__iso_time(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void engine__ready(engine *e, op *o)
{
	o->next = e->ready;
	e->ready = o;
}

static void pool_cancel_jobs(engine *e, pool *p, const char *why);
static void state_clear(engine *e);
static void handle_backend_event(engine *e, op *o);
static int recover(engine *e, char *detail, size_t detail_len);

static void pool_set_state(engine *e, pool *p, pool_state s, const char *reason)
{
	p->state = s;
	if (reason)
		snprintf(p->reason, sizeof(p->reason), "%s", reason);
	store_pool_set_state(e->st, p->id, pool_state_names[s], reason);
	if (s == POOL_FAILED) {
		char why[600];
		snprintf(why, sizeof(why), "cancelled: the pool failed: %s", reason ? reason : "");
		pool_cancel_jobs(e, p, why);
	}
	cm_info("pool %s %s%s%s", p->id, pool_state_names[s], reason ? ": " : "", reason ? reason : "");
}

static void job_attach(engine *e, pool *p, job *j)
{
	if (p->jobs_tail)
		p->jobs_tail->next = j;
	else
		p->jobs = j;
	p->jobs_tail = j;
	j->hash_next = e->jobs[hash_id(j->id)];
	e->jobs[hash_id(j->id)] = j;
}

/* ---- JSON views --------------------------------------------------------- */

static json_t *job_json(const job *j)
{
	char created[32];
	char self[64], results[80];

	engine__iso_time(j->created_ms, created);
	snprintf(self, sizeof(self), "/v1/jobs/%s", j->id);
	snprintf(results, sizeof(results), "/v1/jobs/%s/results", j->id);
	return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:s, s:{s:s, s:s}}", "id", j->id, "pool",
	                 j->pool->id, "state", j->state, "function", j->function, "total", (json_int_t)j->total, "done",
	                 (json_int_t)j->done, "failed", (json_int_t)j->failed, "chunksize", j->chunksize, "created_at",
	                 created, "links", "self", self, "results", results);
}

static json_t *pool_json(const pool *p)
{
	json_t *workers = json_array();
	json_t *o;
	char created[32];
	int64_t pending = 0;
	int live = 0;

	for (const worker *w = p->workers; w; w = w->next) {
		if (w->state != W_EXITED) {
			live++;
			pending += w->pending;
		}
		json_t *wj =
		        json_pack("{s:s, s:s, s:s, s:I, s:i}", "id", w->id, "state", worker_state_names[w->state],
		                  "handle", w->handle, "pending", (json_int_t)w->pending, "exit_code", w->exit_code);
		if (!w->handle[0])
			; /* its backend has not started it yet */
		else if (strcmp(bx_name(p->backend), "local") == 0)
			json_object_set_new(wj, "pid", json_integer(atoi(w->handle)));
		else
			json_object_set_new(wj, "container",
			                    json_stringn(w->handle, strlen(w->handle) < 12 ? strlen(w->handle) : 12));
		json_array_append_new(workers, wj);
	}
	engine__iso_time(p->created_ms, created);
	o = json_pack("{s:s, s:s, s:i, s:s, s:{s:f, s:I, s:i}, s:i, s:s, s:i, s:o,"
	              " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
	              "id", p->id, "state", pool_state_names[p->state], "processes", p->spec.processes, "backend",
	              p->spec.backend, "resources", "cpu", p->spec.cpu, "memory_mb", (json_int_t)p->spec.memory_mb,
	              "gpu", p->spec.gpu, "max_attempts", p->spec.max_attempts, "created_at", created, "live_workers",
	              live, "workers", workers, "counters", "tasks_queued", (json_int_t)p->queued, "tasks_pending",
	              (json_int_t)pending, "tasks_done", (json_int_t)p->tasks_done, "tasks_failed",
	              (json_int_t)p->tasks_failed, "jobs_open", (json_int_t)p->open_jobs, "workers_started",
	              (json_int_t)p->workers_started, "workers_lost", (json_int_t)p->workers_lost);
	if (o && p->reason[0])
		json_object_set_new(o, "reason", json_string(p->reason));
	if (o && strcmp(bx_name(p->backend), "docker") == 0)
		json_object_set_new(o, "image", json_string(p->spec.image));
	if (o && p->spec.manager[0])
		json_object_set_new(o, "type", json_string(p->spec.manager));
	return o;
}

/* ---- queue -------------------------------------------------------------- */

static int queue_push(pool *p, job *j, int64_t lo, int64_t hi, int front)
{
	range *r;

	if (!front && p->qtail && p->qtail->job == j && p->qtail->hi + 1 == lo) {
		p->qtail->hi = hi;
		p->queued += hi - lo + 1;
		return CM_OK;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return CM_ENOMEM;
	r->lo = lo;
	r->hi = hi;
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

static void queue_clear(pool *p)
{
	while (p->qhead) {
		range *r = p->qhead;
		p->qhead = r->next;
		free(r);
	}
	p->qtail = NULL;
	p->queued = 0;
}

/* ---- job completion ----------------------------------------------------- */

static void job_check_done(engine *e, job *j)
{
	if (j->done < j->total || strcmp(j->state, "running") != 0)
		return;
	snprintf(j->state, sizeof(j->state), "done");
	store_job_set_state(e->st, j->num, j->state);
	j->pool->open_jobs--;
	cm_info("job %s done: %lld results, %lld failed", j->id, (long long)j->total, (long long)j->failed);
}

/* Ends every unfinished job of a pool that ends: each task without a result
 * gets an error result, so every index of the job has an answer and no
 * client waits on a job that cannot finish. */
static void pool_cancel_jobs(engine *e, pool *p, const char *why)
{
	queue_clear(p);
	for (job *j = p->jobs; j; j = j->next) {
		int64_t n = 0;
		if (strcmp(j->state, "running") != 0)
			continue;
		if (store_job_cancel(e->st, j->num, j->base, j->done + 1, why, &n) == CM_OK) {
			j->done += n;
			j->failed += n;
			p->tasks_done += n;
			p->tasks_failed += n;
		}
		snprintf(j->state, sizeof(j->state), "cancelled");
		store_job_set_state(e->st, j->num, j->state);
		p->open_jobs--;
	}
}

/* Records one result; returns 1 if it was the first for that task. */
/* holder: the worker the result came from (only the task's holder's
 * counts), NULL for the gateway's own verdict. */
static int record(engine *e, job *j, int64_t id, const char *holder, int ok, const void *value, size_t len)
{
	int recorded = 0;

	if (store_task_complete(e->st, id, j->done + 1, ok, value, len, holder, &recorded) != CM_OK || !recorded)
		return 0;
	j->done++;
	j->pool->tasks_done++;
	if (!ok) {
		j->failed++;
		j->pool->tasks_failed++;
	}
	job_check_done(e, j);
	return 1;
}

/* ---- workers ------------------------------------------------------------ */

/* What starts a worker of pool p: strand-worker with its identity in the
 * environment (locally the program; in a container the image's entrypoint).
 * The strings live in env_text (room for 8) and *ca (free it). */
static backend_run_spec worker_run_spec(engine *e, pool *p, worker *w, char env_text[][600], char **envp, char **argv,
                                        char labels[][160], char **labelp, char **ca)
{
	int local = p->backend == e->local;
	backend_run_spec run = {.argv = argv, .env = envp, .spec = &p->spec};
	size_t n = 0;

	snprintf(env_text[n++], 600, "STRAND_HUB=%s", e->cfg->hub);
	snprintf(env_text[n++], 600, "STRAND_POOL_ID=%s", p->id);
	snprintf(env_text[n++], 600, "STRAND_WORKER_ID=%s", w->id);
	snprintf(env_text[n++], 600, "STRAND_SECRET=%s", w->secret);
	if (local && e->cfg->plugin_path[0])
		snprintf(env_text[n++], 600, "STRAND_PLUGIN_PATH=%.500s", e->cfg->plugin_path);
	if (p->spec.manager[0])
		snprintf(env_text[n++], 600, "STRAND_MANAGER_TYPE=%s", p->spec.manager);
	if (e->cfg->hub_server_name[0])
		snprintf(env_text[n++], 600, "STRAND_HUB_SERVER_NAME=%.255s", e->cfg->hub_server_name);
	for (size_t i = 0; i < n; i++)
		envp[i] = env_text[i];
	/* A certificate chain does not fit the fixed entries. */
	*ca = NULL;
	if (e->hub_ca.len && asprintf(ca, "STRAND_HUB_CA_PEM=%s", e->hub_ca.data) > 0)
		envp[n++] = *ca;
	run.nenv = n;
	if (local) {
		argv[run.argc++] = (char *)e->cfg->worker_bin;
	} else {
		snprintf(labels[0], 160, "strand.pool=%s", p->id);
		snprintf(labels[1], 160, "strand.worker=%s", w->id);
		labelp[0] = labels[0];
		labelp[1] = labels[1];
		run.labels = labelp;
		run.nlabels = 2;
	}
	return run;
}

/* Asks w's backend to stop it, once per strength. */
static void worker_stop(pool *p, worker *w, int hard)
{
	if (w->stop_sent >= 1 + hard)
		return;
	w->stop_sent = 1 + hard;
	bx_stop(p->backend, w->id, hard);
}

/* Adds a worker in state starting and asks the backend to start it; the
 * backend answers later (worker_started). */
static int worker_spawn(engine *e, pool *p)
{
	worker *w = calloc(1, sizeof(*w));
	char env[8][600], labels[2][160];
	char *envp[9], *argv[1], *labelp[2], *ca = NULL;
	int err;

	if (!w)
		return CM_ENOMEM;
	cm_id_new('w', w->id);
	cm_random_hex(w->secret, CREDENTIALS_SECRET_LEN / 2);
	w->pool = p;
	/* Known to the hub before it can dial in. */
	if ((err = credentials_add(e->creds, w->id, p->id, w->secret)) != CM_OK) {
		free(w);
		return err;
	}
	backend_run_spec run = worker_run_spec(e, p, w, env, envp, argv, labels, labelp, &ca);
	err = bx_run(p->backend, w->id, &run, NULL);
	if (ca) {
		explicit_bzero(ca, strlen(ca));
		free(ca);
	}
	explicit_bzero(env, sizeof(env));
	if (err != CM_OK) {
		credentials_remove(e->creds, w->id);
		free(w);
		return err;
	}
	w->started = w->last_seen = cm_now_ms();
	w->next = p->workers;
	p->workers = w;
	p->workers_started++;
	store_worker_insert(e->st, w->id, p->id, "", w->secret, cm_wall_ms());
	return CM_OK;
}

/* The backend answered a worker's start. */
static void worker_started(engine *e, pool *p, worker *w, const bx_event *ev)
{
	if (ev->err != CM_OK) {
		char reason[600];
		snprintf(reason, sizeof(reason), "%s backend cannot start a worker: %s", bx_name(p->backend),
		         ev->detail);
		w->state = W_EXITED;
		w->exit_code = -1;
		credentials_remove(e->creds, w->id);
		store_worker_set_state(e->st, w->id, "exited", -1);
		if (p->state != POOL_TERMINATING && p->state != POOL_TERMINATED)
			pool_set_state(e, p, POOL_FAILED, reason);
		return;
	}
	snprintf(w->handle, sizeof(w->handle), "%s", ev->handle);
	store_worker_set_handle(e->st, w->id, w->handle);
	cm_info("pool %s started worker %s (%s %.12s)", p->id, w->id, bx_name(p->backend), w->handle);
}

static void pull_finish(engine *e, op *o, Strand__Batch__Status status, const char *error)
{
	o->batch.status = status;
	o->batch.error = (char *)(error ? error : "");
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
	if (!j || strcmp(j->state, "running") != 0)
		return CM_OK;
	if (attempts >= j->max_attempts) {
		char msg[128];
		int n = snprintf(msg, sizeof(msg), "worker lost %d time%s (last exit code %d)", attempts,
		                 attempts == 1 ? "" : "s", c->exit_code);
		record(c->e, j, id, NULL, 0, msg, (size_t)n);
		c->failed++;
		return CM_OK;
	}
	c->requeued++;
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
static void requeue_worker(engine *e, pool *p, const char *worker_id, int exit_code)
{
	requeue_ctx c = {.e = e, .p = p, .exit_code = exit_code};

	store_tasks_requeue(e->st, worker_id, requeue_one, &c);
	requeue_splice(p, &c);
	if (c.requeued || c.failed)
		cm_info("pool %s: %lld tasks of worker %s requeued, %lld failed for good", p->id, (long long)c.requeued,
		        worker_id, (long long)c.failed);
}

static void worker_gone(engine *e, worker *w, int exit_code, const char *last_words)
{
	pool *p = w->pool;
	int expected = w->state == W_STOPPING || p->state == POOL_TERMINATING || p->state == POOL_TERMINATED;

	if (w->state == W_STARTING && !expected)
		p->fail_streak++;
	w->state = W_EXITED;
	w->exit_code = exit_code;
	credentials_remove(e->creds, w->id);
	store_worker_set_state(e->st, w->id, "exited", exit_code);
	if (w->parked) {
		w->parked->discard = 1;
		engine__ready(e, w->parked);
		w->parked = NULL;
	}
	if (!expected) {
		p->workers_lost++;
		cm_warn("worker %s of pool %s exited with code %d", w->id, p->id, exit_code);
	} else {
		cm_info("worker %s of pool %s stopped (code %d)", w->id, p->id, exit_code);
	}
	requeue_worker(e, p, w->id, exit_code);
	w->pending = 0;
	if (last_words && last_words[0])
		snprintf(p->last_words, sizeof(p->last_words), "%.255s", last_words);
	bx_release(p->backend, w->id);
}

/* ---- pulls -------------------------------------------------------------- */

typedef struct assign_ctx {
	op *o;
	job *j;
} assign_ctx;

static int add_task(void *ctx, int64_t id, const void *arg, size_t len, int attempts)
{
	assign_ctx *c = ctx;
	op *o = c->o;
	Strand__Task *t;

	if (o->ntasks == o->cap_tasks) {
		size_t cap = o->cap_tasks ? o->cap_tasks * 2 : 64;
		Strand__Task **p = realloc(o->tasks, cap * sizeof(*p));
		if (!p)
			return CM_ENOMEM;
		o->tasks = p;
		o->cap_tasks = cap;
	}
	t = malloc(sizeof(*t) + len);
	if (!t)
		return CM_ENOMEM;
	strand__task__init(t);
	t->id = (uint64_t)id;
	t->function = c->j->function;
	t->arg.data = (uint8_t *)(t + 1);
	t->arg.len = len;
	if (len)
		memcpy(t->arg.data, arg, len);
	t->attempt = (uint32_t)attempts;
	t->command = c->j->command;
	t->n_command = c->j->ncommand;
	t->timeout_ms = c->j->timeout_ms;
	o->tasks[o->ntasks++] = t;
	return CM_OK;
}

static int live_workers(const pool *p)
{
	int n = 0;

	for (const worker *w = p->workers; w; w = w->next)
		n += w->state == W_STARTING || w->state == W_CONNECTED;
	return n ? n : 1;
}

/* Hands tasks from the pool's queue to worker w, into o's batch: up to want,
 * no more than its fair share of the queue, and so that the worker holds the
 * task it runs next plus about BATCH_BUDGET_US more, in time, costed job by
 * job from each job's measured task time (the in_hand tasks it already holds
 * count). A worker holding nothing always gets one task; a job whose task
 * time is not known yet gets only that one, as a probe. Chunks are not split. */
static void assign(engine *e, pool *p, worker *w, uint32_t want, uint32_t in_hand, op *o)
{
	int64_t target;
	int64_t share;
	int64_t given = 0;
	double head_cost;
	double room;

	if (!want || !p->qhead)
		return;
	head_cost = p->qhead->job->avg_us >= 0 ? p->qhead->job->avg_us : BATCH_BUDGET_US;
	if (head_cost < 1.0)
		head_cost = 1.0;
	room = BATCH_BUDGET_US + head_cost - (double)in_hand * head_cost;
	share = (p->queued + live_workers(p) - 1) / live_workers(p);
	target = (int64_t)want < share ? (int64_t)want : share;
	while (given < target && p->qhead) {
		range *r = p->qhead;
		job *j = r->job;
		int64_t size = r->hi - r->lo + 1;
		int64_t take;
		double cost = j->avg_us > 1.0 ? j->avg_us : 1.0;
		int free_one = given == 0 && in_hand == 0;
		assign_ctx c = {o, j};
		size_t before = o->ntasks;

		if (j->avg_us < 0)
			take = free_one;
		else if ((take = room > 0 ? (int64_t)(room / cost) : 0) == 0)
			take = free_one;
		if (take > target - given)
			take = target - given;
		if (take <= 0)
			break;
		if (j->chunksize > 1)
			take = (take + j->chunksize - 1) / j->chunksize * j->chunksize;
		if (take > size)
			take = size;
		if (store_tasks_assign(e->st, r->lo, r->lo + take - 1, w->id, add_task, &c) != CM_OK)
			break;
		given += take;
		room -= (double)take * cost;
		w->pending += (int64_t)(o->ntasks - before);
		p->queued -= take;
		r->lo += take;
		if (r->lo > r->hi) {
			p->qhead = r->next;
			if (!p->qhead)
				p->qtail = NULL;
			free(r);
		}
	}
	o->batch.tasks = o->tasks;
	o->batch.n_tasks = o->ntasks;
}

static int pool_drained(const pool *p)
{
	return p->queued == 0 && p->open_jobs == 0;
}

static void handle_pull(engine *e, op *o)
{
	Strand__Pull *m = o->pull;
	pool *p = engine__pool_find(e, m->pool_id);
	worker *w = NULL;

	o->batch.lease_ms = (uint32_t)e->cfg->lease_ms;
	/* The hub checked the worker's secret and that it serves this pool. */
	if (p)
		for (w = p->workers; w && strcmp(w->id, m->worker_id) != 0; w = w->next)
			;
	if (!w || w->state == W_EXITED) {
		pull_finish(e, o, STRAND__BATCH__STATUS__REFUSED, "unknown worker or pool");
		return;
	}
	if (w->parked) {
		/* The worker gave up on its parked pull and asked again. */
		w->parked->discard = 1;
		engine__ready(e, w->parked);
		w->parked = NULL;
	}
	w->last_seen = cm_now_ms();
	if (w->state == W_STARTING) {
		w->state = W_CONNECTED;
		p->fail_streak = 0;
		store_worker_set_state(e->st, w->id, "connected", 0);
		cm_info("worker %s of pool %s connected", w->id, p->id);
	}
	requeue_ctx retry = {.e = e, .p = p, .exit_code = -1};
	for (size_t i = 0; i < m->n_results; i++) {
		const Strand__Result *r = m->results[i];
		job *j = job_of_task(p, (int64_t)r->task_id);
		if (w->pending > 0)
			w->pending--;
		if (!j)
			continue;
		j->avg_us = j->avg_us < 0 ? r->run_us : 0.8 * j->avg_us + 0.2 * r->run_us;
		if (!r->ok && j->retry_errors && (int)r->attempt < j->max_attempts && !strcmp(j->state, "running") &&
		    store_task_requeue_one(e->st, (int64_t)r->task_id) == CM_OK) {
			/* The caller asked for errors to be retried. */
			requeue_one(&retry, (int64_t)r->task_id, NULL, 0, (int)r->attempt);
			continue;
		}
		record(e, j, (int64_t)r->task_id, w->id, r->ok, r->value.data, r->value.len);
	}
	requeue_splice(p, &retry);
	if (m->resync) {
		/* Tasks recorded as ours that the worker does not hold were in an
		 * answer lost on the way (a gateway restart, a dropped connection). */
		requeue_ctx lost = {.e = e, .p = p, .exit_code = -1};
		store_tasks_release(e->st, w->id, m->held, m->n_held, requeue_one, &lost);
		requeue_splice(p, &lost);
		w->pending = (int64_t)m->n_held;
	}
	if (m->running_task) {
		job *j = job_of_task(p, (int64_t)m->running_task);
		if (j && j->timeout_ms && m->running_ms > j->timeout_ms && !strcmp(j->state, "running")) {
			char msg[96];
			int n = snprintf(msg, sizeof(msg), "timed out after %.1f s", j->timeout_ms / 1000.0);
			cm_warn("task %llu of job %s timed out on worker %s; replacing the worker",
			        (unsigned long long)m->running_task, j->id, w->id);
			record(e, j, (int64_t)m->running_task, NULL, 0, msg, (size_t)n);
			/* The function cannot be interrupted inside the worker: replace
			 * the worker; its other tasks go back to the queue. */
			w->state = W_STOPPING;
			worker_stop(p, w, 1);
			pull_finish(e, o, STRAND__BATCH__STATUS__STOP, NULL);
			return;
		}
	}
	if (w->state == W_STOPPING || p->state == POOL_TERMINATING || p->state == POOL_TERMINATED ||
	    p->state == POOL_FAILED || (p->state == POOL_CLOSED && pool_drained(p))) {
		pull_finish(e, o, STRAND__BATCH__STATUS__STOP, NULL);
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
		o->batch.list_held = (int64_t)m->in_hand < held;
	}
	assign(e, p, w, m->want, m->in_hand, o);
	if (o->ntasks == 0 && m->in_hand == 0 && !o->batch.list_held) {
		o->park_until = cm_now_ms() + PARK_MS;
		w->parked = o;
		return;
	}
	pull_finish(e, o, STRAND__BATCH__STATUS__OK, NULL);
}

/* ---- requests from HTTP ------------------------------------------------- */

static void handle_pool_create(engine *e, op *o)
{
	pool *p = calloc(1, sizeof(*p));
	char *spec_json = NULL;

	if (!p) {
		o->err = CM_ENOMEM;
		return;
	}
	p->spec = *o->pool_spec;
	cm_id_new(p->spec.manager[0] ? 'm' : 'p', p->id);
	p->backend = engine__backend_for(e, p->spec.backend);
	p->created_ms = cm_wall_ms();
	spec_json = spec_pool_json(&p->spec);
	if (!p->backend || !spec_json ||
	    (o->err = store_pool_insert(e->st, p->id, spec_json, "active", p->created_ms)) != CM_OK) {
		if (!o->err)
			o->err = p->backend ? CM_ENOMEM : CM_EUNSUPPORTED;
		snprintf(o->detail, sizeof(o->detail), "cannot create the pool: %s", cm_strerror(o->err));
		free(spec_json);
		free(p);
		return;
	}
	free(spec_json);
	p->next = e->pools;
	e->pools = p;
	cm_info("pool %s created: %d %s workers", p->id, p->spec.processes, p->spec.backend);
	for (int i = 0; i < p->spec.processes && p->state == POOL_ACTIVE; i++)
		worker_spawn(e, p);
	o->out = pool_json(p);
}

static void handle_pool_close(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);

	if (!p) {
		o->err = CM_ENOENT;
		return;
	}
	if (p->state == POOL_ACTIVE)
		pool_set_state(e, p, POOL_CLOSED, NULL);
	o->out = pool_json(p);
}

static void handle_pool_delete(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);

	if (!p) {
		o->err = CM_ENOENT;
		engine__ready(e, o);
		return;
	}
	if (p->state != POOL_TERMINATING && p->state != POOL_TERMINATED) {
		pool_set_state(e, p, POOL_TERMINATING, NULL);
		for (worker *w = p->workers; w; w = w->next) {
			if (w->state == W_EXITED)
				continue;
			w->state = W_STOPPING;
			worker_stop(p, w, 0);
			if (w->parked) {
				pull_finish(e, w->parked, STRAND__BATCH__STATUS__STOP, NULL);
				w->parked = NULL;
			}
		}
		p->kill_at = cm_now_ms() + TERM_GRACE_MS;
		pool_cancel_jobs(e, p, "cancelled: the pool was terminated");
	}
	if (p->state == POOL_TERMINATED) {
		o->out = pool_json(p);
		engine__ready(e, o);
		return;
	}
	/* Answered by the tick once every worker is gone. */
	o->next = p->delete_waiters;
	p->delete_waiters = o;
}

static void handle_map(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);
	map_spec *m = o->map;
	job *j;
	store_job sj;
	char existing[20];

	if (!p) {
		o->err = CM_ENOENT;
		return;
	}
	if (o->idem_key && store_job_find_idem(e->st, p->id, o->idem_key, existing) == CM_OK &&
	    (j = job_find(e, existing))) {
		o->out = job_json(j);
		return;
	}
	if (p->state != POOL_ACTIVE) {
		o->err = CM_ECLOSED;
		snprintf(o->detail, sizeof(o->detail), "pool %s is %s and takes no new work%s%.150s", p->id,
		         pool_state_names[p->state], p->reason[0] ? ": " : "", p->reason);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		o->err = CM_ENOMEM;
		return;
	}
	cm_id_new('j', j->id);
	j->num = e->next_job;
	j->base = e->next_task;
	j->total = (int64_t)m->nargs;
	j->chunksize = m->chunksize;
	j->timeout_ms = m->timeout_ms ? m->timeout_ms : (unsigned)p->spec.timeout_s * 1000u;
	j->max_attempts = m->max_attempts ? m->max_attempts : p->spec.max_attempts;
	j->retry_errors = m->retry_errors >= 0 ? m->retry_errors : p->spec.retry_errors;
	j->avg_us = -1;
	j->pool = p;
	j->created_ms = cm_wall_ms();
	snprintf(j->state, sizeof(j->state), "running");
	sj = (store_job){.num = j->num,
	                 .id = j->id,
	                 .pool_id = p->id,
	                 .function = m->function,
	                 .idem_key = o->idem_key,
	                 .state = j->state,
	                 .base = j->base,
	                 .total = j->total,
	                 .chunksize = j->chunksize,
	                 .created_ms = j->created_ms,
	                 .max_attempts = j->max_attempts,
	                 .retry_errors = j->retry_errors,
	                 .timeout_ms = j->timeout_ms};
	json_t *cmd = NULL;
	char *cmd_json = NULL;
	if (m->ncommand) {
		cmd = json_array();
		for (size_t i = 0; i < m->ncommand; i++)
			json_array_append_new(cmd, json_string(m->command[i]));
		cmd_json = json_dumps(cmd, JSON_COMPACT);
		json_decref(cmd);
		sj.command_json = cmd_json;
	}
	if ((o->err = store_job_insert(e->st, &sj)) != CM_OK ||
	    (o->err = store_tasks_insert(e->st, j->num, j->base, m->nargs, m->args, m->lens)) != CM_OK ||
	    (j->total && (o->err = queue_push(p, j, j->base, j->base + j->total - 1, 0)) != CM_OK)) {
		snprintf(o->detail, sizeof(o->detail), "cannot store the job: %s", store_errmsg(e->st));
		free(cmd_json);
		free(j);
		return;
	}
	free(cmd_json);
	e->next_job++;
	e->next_task += j->total;
	j->function = m->function;
	j->command = m->command;
	j->ncommand = m->ncommand;
	m->function = NULL;
	m->command = NULL;
	m->ncommand = 0;
	job_attach(e, p, j);
	p->open_jobs++;
	job_check_done(e, j);
	o->out = job_json(j);
}

static void handle(engine *e, op *o)
{
	job *j;

	switch (o->kind) {
	case OP_PULL: handle_pull(e, o); return; /* answers itself, now or later */
	case OP_BACKEND_EVENT: handle_backend_event(e, o); return; /* no one to answer */
	case OP_QUEUE_CREATE:
	case OP_QUEUE_INFO:
	case OP_QUEUE_DELETE:
	case OP_QUEUE_PUT:
	case OP_QUEUE_GET: engine__handle_queue(e, o); return; /* answers itself, now or later */
	case OP_PROC_START:
	case OP_PROC_GET:
	case OP_PROC_LIST:
	case OP_PROC_DELETE:
	case OP_PROC_LOGS: engine__handle_process(e, o); return;
	case OP_RING_START:
	case OP_RING_GET:
	case OP_RING_DELETE: engine__handle_ring(e, o); return;
	case OP_POOL_CREATE: handle_pool_create(e, o); break;
	case OP_POOL_GET: {
		pool *p = engine__pool_find(e, o->id);
		if (p)
			o->out = pool_json(p);
		else
			o->err = CM_ENOENT;
		break;
	}
	case OP_POOL_LIST: {
		json_t *a = json_array();
		for (pool *p = e->pools; p; p = p->next)
			json_array_append_new(a, pool_json(p));
		o->out = json_pack("{s:o}", "pools", a);
		break;
	}
	case OP_POOL_CLOSE: handle_pool_close(e, o); break;
	case OP_POOL_JOBS: {
		/* Most recent first, at most 100: jobs are kept in base order. */
		pool *p = engine__pool_find(e, o->id);
		json_t *a;
		size_t n = 0;
		if (!p) {
			o->err = CM_ENOENT;
			break;
		}
		a = json_array();
		for (job *jj = p->jobs; jj; jj = jj->next)
			n++;
		for (job *jj = p->jobs; jj; jj = jj->next, n--)
			if (n <= 100)
				json_array_insert_new(a, 0, job_json(jj));
		o->out = json_pack("{s:o}", "jobs", a);
		break;
	}
	case OP_POOL_DELETE: handle_pool_delete(e, o); return;
	case OP_MAP: handle_map(e, o); break;
	case OP_JOB_GET:
	case OP_JOB_INFO:
		j = job_find(e, o->id);
		if (!j)
			o->err = CM_ENOENT;
		else if (o->kind == OP_JOB_GET)
			o->out = job_json(j);
		else {
			o->info = (job_info){.num = j->num, .base = j->base, .total = j->total};
			snprintf(o->info.pool, sizeof(o->info.pool), "%s", j->pool->id);
		}
		break;
	}
	if (o->err && !o->detail[0])
		snprintf(o->detail, sizeof(o->detail), "%s", cm_strerror(o->err));
	engine__ready(e, o);
}

/* ---- the tick ----------------------------------------------------------- */

static void tick_pool(engine *e, pool *p, int64_t now)
{
	int live = 0;

	for (worker *w = p->workers; w; w = w->next) {
		if (w->state == W_EXITED)
			continue;
		live++;
		if (p->state == POOL_TERMINATING && now >= p->kill_at)
			worker_stop(p, w, 1);
		else if ((w->state == W_CONNECTED && now - w->last_seen > 2 * (int64_t)e->cfg->lease_ms &&
		          !w->parked) ||
		         (w->state == W_STARTING &&
		          now - w->started > (w->adopted ? 2 * (int64_t)e->cfg->lease_ms : CONNECT_GRACE_MS))) {
			/* Silent for two leases (or never connected): take its
			 * tasks back; the reap above requeues them. */
			if (w->stop_sent < 2)
				cm_warn("worker %s of pool %s lost its lease; killing it", w->id, p->id);
			worker_stop(p, w, 1);
		}
		if (w->parked) {
			op *o = w->parked;
			if (p->state != POOL_ACTIVE && !(p->state == POOL_CLOSED && !pool_drained(p))) {
				w->parked = NULL;
				pull_finish(e, o, STRAND__BATCH__STATUS__STOP, NULL);
			} else if (p->qhead) {
				w->parked = NULL;
				assign(e, p, w, o->pull->want ? o->pull->want : 1, 0, o);
				pull_finish(e, o, STRAND__BATCH__STATUS__OK, NULL);
			} else if (now >= o->park_until) {
				w->parked = NULL;
				pull_finish(e, o, STRAND__BATCH__STATUS__OK, NULL);
			}
		}
	}
	if (p->state == POOL_TERMINATING && live == 0) {
		pool_set_state(e, p, POOL_TERMINATED, NULL);
	}
	if (p->state == POOL_TERMINATED) {
		while (p->delete_waiters) {
			op *o = p->delete_waiters;
			p->delete_waiters = o->next;
			o->out = pool_json(p);
			engine__ready(e, o);
		}
		return;
	}
	if (p->state == POOL_FAILED)
		return;
	if (p->spec.manager[0] && p->workers_lost > 0) {
		/* A manager's state lived in its one process: a new one would
		 * silently start from nothing. */
		char reason[400];
		snprintf(reason, sizeof(reason), "the manager process ended, and its state with it%s%.300s",
		         p->last_words[0] ? ": " : "", p->last_words);
		pool_set_state(e, p, POOL_FAILED, reason);
		return;
	}
	if (p->fail_streak >= 3 + p->spec.processes) {
		char reason[480];
		snprintf(reason, sizeof(reason),
		         "%d workers in a row exited before connecting to the hub %.60s%s%.256s", p->fail_streak,
		         e->cfg->hub, p->last_words[0] ? "; the last one said: " : "", p->last_words);
		pool_set_state(e, p, POOL_FAILED, reason);
		return;
	}
	/* Keep `processes` workers while there is or may be work. */
	if (p->state == POOL_ACTIVE || (p->state == POOL_CLOSED && !pool_drained(p)))
		while (live < p->spec.processes && p->state != POOL_FAILED && worker_spawn(e, p) == CM_OK)
			live++;
}

/* ---- cycle -------------------------------------------------------------- */

void engine__answer(engine *e, op *o, int committed)
{
	if (o->kind == OP_BACKEND_EVENT) { /* not handled: a reload re-adopts, and its end is reported again */
		bx_event_free(o->event);
		free(o);
		return;
	}
	if (o->qcall) {
		engine__answer_queue_call(e, o, committed);
		return;
	}
	if (o->kind == OP_PULL) {
		uint8_t *frame = NULL;
		size_t len = 0;
		Strand__Batch retry = STRAND__BATCH__INIT;
		/* Nothing of this cycle was recorded: the worker keeps its results
		 * and asks again; tasks handed out in it were never handed out. */
		retry.status = STRAND__BATCH__STATUS__RETRY;
		if (o->discard || proto_frame_encode(PROTO_BATCH, NULL, NULL, committed ? &o->batch.base : &retry.base,
		                                     &frame, &len) != CM_OK)
			hub_discard(o->slot);
		else
			hub_reply(o->slot, frame, len);
		for (size_t i = 0; i < o->ntasks; i++)
			free(o->tasks[i]);
		free(o->tasks);
		protobuf_c_message_free_unpacked(&o->pull->base, NULL);
		free(o);
		return;
	}
	if (!committed) {
		json_decref(o->out);
		o->out = NULL;
		o->err = CM_EUNAVAIL;
		snprintf(o->detail, sizeof(o->detail), "the store could not commit: %s", store_errmsg(e->st));
	}
	engine_call_done done = o->done_fn;
	void *ctx = o->done_ctx;
	pthread_mutex_lock(&e->mu);
	o->done = 1;
	if (!done)
		pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&e->mu);
	if (done)
		done(ctx); /* o stays until its caller reads it (engine_call_finish) */
}

/* The worker that owner names, and its pool; NULL if none. */
static worker *worker_find(engine *e, const char *owner, pool **pool_out)
{
	for (pool *p = e->pools; p; p = p->next)
		for (worker *w = p->workers; w; w = w->next)
			if (strcmp(w->id, owner) == 0) {
				*pool_out = p;
				return w;
			}
	return NULL;
}

/* What an executor reported: a start, an end, or logs a reader waits for. */
static void handle_backend_event(engine *e, op *o)
{
	bx_event *ev = o->event;
	pool *p = NULL;
	worker *w = ev->kind == BX_LOGS ? NULL : worker_find(e, ev->owner, &p);

	if (ev->kind == BX_LOGS) {
		for (op **pp = &e->log_reads; *pp; pp = &(*pp)->next) {
			op *reader = *pp;
			if (reader != ev->tag)
				continue;
			*pp = reader->next;
			reader->out = json_stringn(ev->logs.data ? ev->logs.data : "", ev->logs.len);
			engine__ready(e, reader);
			break;
		}
	} else if (w && ev->kind == BX_STARTED) {
		worker_started(e, p, w, ev);
	} else if (w && w->state != W_EXITED) {
		worker_gone(e, w, ev->exit_code, ev->detail);
	} else if (w) {
		bx_release(ev->from, ev->owner);
	} else if (!engine__process_event(e, ev)) {
		/* No one has that owner any more (forgotten in a reload): it must
		 * not run unseen. */
		if (ev->kind == BX_STARTED && ev->err == CM_OK)
			bx_stop(ev->from, ev->owner, 1);
		else if (ev->kind == BX_EXITED)
			bx_release(ev->from, ev->owner);
	}
	bx_event_free(ev);
	free(o);
}

/* At shutdown everything the engine started ends with it: each is asked to
 * stop, killed after the grace, and its end awaited, for a bounded time (a
 * hung daemon must not keep the gateway from exiting). Runs on the engine
 * thread after its last cycle; what arrives meanwhile is answered as not
 * recorded, except the backends' events. */
static void stop_everything(engine *e)
{
	int64_t grace_end = cm_now_ms() + TERM_GRACE_MS, give_up = grace_end + STOP_WAIT_MS;
	int hard = 0;

	for (;;) {
		int live = engine__processes_stop(e, hard);
		for (pool *p = e->pools; p; p = p->next)
			for (worker *w = p->workers; w; w = w->next)
				if (w->state != W_EXITED) {
					w->state = W_STOPPING;
					worker_stop(p, w, hard);
					live++;
				}
		if (!live)
			break;
		if (cm_now_ms() >= give_up) {
			cm_warn("%d workers or processes did not end in time; leaving them", live);
			break;
		}
		hard = cm_now_ms() >= grace_end;
		usleep(10000);
		pthread_mutex_lock(&e->mu);
		op *batch = e->inbox;
		e->inbox = NULL;
		pthread_mutex_unlock(&e->mu);
		while (batch) {
			op *o = batch;
			batch = o->next;
			if (o->kind == OP_BACKEND_EVENT) {
				handle_backend_event(e, o);
			} else {
				o->err = CM_ESHUTDOWN;
				engine__answer(e, o, 0);
			}
		}
		while (e->ready) {
			op *o = e->ready;
			e->ready = o->next;
			engine__answer(e, o, 1);
		}
	}
}

/* After a commit failed (disk full, database read-only), memory is ahead of
 * the database. Everyone waiting was told nothing was recorded (503 over
 * HTTP, RETRY to workers, who keep their results); now memory is rebuilt
 * from what is stored, exactly as at a restart, with the live workers
 * adopted again. Workers and processes started in the failed cycle are
 * unknown to the database: each backend stops and forgets them. */
static int reload(engine *e)
{
	char detail[256] = "";

	cm_error("commit failed (%s): nothing of this cycle was recorded; reloading the stored state",
	         store_errmsg(e->st));
	state_clear(e);
	if (recover(e, detail, sizeof(detail)) != CM_OK) {
		cm_error("cannot reload the stored state: %s; stopping", detail);
		return CM_EIO;
	}
	size_t cap = engine__processes_count(e) + 1;
	for (pool *p = e->pools; p; p = p->next)
		for (worker *w = p->workers; w; w = w->next)
			cap++;
	char(*owners)[BX_OWNER_MAX] = calloc(cap, BX_OWNER_MAX);
	if (!owners)
		return CM_ENOMEM;
	for (size_t b = 0; b < e->nbackends; b++) {
		bx *x = e->backends[b];
		size_t n = 0;
		for (pool *p = e->pools; p; p = p->next)
			for (worker *w = p->workers; w && p->backend == x; w = w->next)
				snprintf(owners[n++], BX_OWNER_MAX, "%s", w->id);
		engine__processes_owners(e, x, owners, &n);
		bx_retain(x, owners, n);
	}
	free(owners);
	return CM_OK;
}

/* The gateway itself stood still (SIGSTOP, a long commit, a swapped-out
 * host): its workers could not be heard meanwhile, so their silence says
 * nothing. Leases restart from now instead of killing healthy workers. */
static void forgive_stall(engine *e, int64_t now)
{
	int64_t gap = e->last_cycle ? now - e->last_cycle : 0;

	e->last_cycle = now;
	if (gap <= e->cfg->lease_ms / 2)
		return;
	cm_warn("the gateway stood still for %lld ms; worker leases restart now", (long long)gap);
	for (pool *p = e->pools; p; p = p->next) {
		for (worker *w = p->workers; w; w = w->next) {
			if (w->last_seen < now)
				w->last_seen = now;
			if (w->state == W_STARTING)
				w->started += gap;
		}
	}
}

static void *engine_main(void *arg)
{
	engine *e = arg;

	for (;;) {
		op *batch, *rev = NULL;
		int stop, closing;
		int committed;

		pthread_mutex_lock(&e->mu);
		if (!e->inbox && !e->stopping) {
			struct timespec ts = cm_timespec_in(CLOCK_REALTIME, TICK_MS);
			pthread_cond_timedwait(&e->wake, &e->mu, &ts);
		}
		batch = e->inbox;
		e->inbox = NULL;
		stop = e->stopping;
		closing = e->closing;
		pthread_mutex_unlock(&e->mu);
		forgive_stall(e, cm_now_ms());
		while (batch) { /* the inbox is LIFO; handle in arrival order */
			op *n = batch->next;
			batch->next = rev;
			rev = batch;
			batch = n;
		}

		committed = store_begin(e->st) == CM_OK;
		for (op *o = rev, *n; o; o = n) {
			n = o->next;
			/* SQLite ends the transaction itself on some errors (a full
			 * disk): from then on nothing of this cycle may be written,
			 * or it would be stored in autocommit yet answered as failed. */
			if (committed && !store_in_transaction(e->st))
				committed = 0;
			if (committed)
				handle(e, o);
			else
				engine__ready(e, o); /* answered below as not recorded */
		}
		int64_t now = cm_now_ms();
		for (pool *p = e->pools; p && committed && store_in_transaction(e->st); p = p->next)
			tick_pool(e, p, now);
		for (queue *q = e->queues; q && committed && store_in_transaction(e->st); q = q->next)
			if (q->getters)
				engine__queue_tick(e, q, now);
		if (committed && store_in_transaction(e->st)) {
			engine__tick_processes(e, now);
			engine__tick_rings(e);
		}
		if (closing)
			engine__queues_quiesce(e); /* readers that wait would hold up the HTTP stop */
		if (committed && !store_in_transaction(e->st))
			committed = 0;
		if (committed && store_commit(e->st) != CM_OK) {
			cm_error("commit failed: %s", store_errmsg(e->st));
			store_rollback(e->st);
			committed = 0;
		}
		while (e->ready) {
			op *o = e->ready;
			e->ready = o->next;
			engine__answer(e, o, committed);
		}
		/* Long polls look again only when something they read may have
		 * changed: an idle tick leaves the generation where it was. */
		int64_t changes = store_total_changes(e->st);
		if (changes != e->changes || !committed) {
			void (*on_commit)(void *);
			void *ctx;
			e->changes = changes;
			pthread_mutex_lock(&e->mu);
			e->gen++;
			on_commit = e->on_commit;
			ctx = e->on_commit_ctx;
			pthread_mutex_unlock(&e->mu);
			if (on_commit)
				on_commit(ctx);
		}
		if (!committed && reload(e) != CM_OK) {
			pthread_mutex_lock(&e->mu);
			e->stopping = e->closing = 1;
			pthread_mutex_unlock(&e->mu);
			stop = 1;
		}
		if (stop)
			break;
	}
	stop_everything(e);
	return NULL;
}

/* ---- load and recovery -------------------------------------------------- */

static void load_pool(void *ctx, const char *id, const char *spec_json, const char *state, const char *reason,
                      int64_t created_ms)
{
	engine *e = ctx;
	pool *p = calloc(1, sizeof(*p));
	char detail[256];

	if (!p)
		return;
	snprintf(p->id, sizeof(p->id), "%s", id);
	for (int s = 0; s <= POOL_FAILED; s++)
		if (strcmp(state, pool_state_names[s]) == 0)
			p->state = (pool_state)s;
	if (spec_pool_load(spec_json, e->cfg->image, &p->spec, detail, sizeof(detail)) != CM_OK) {
		cm_warn("pool %s: stored spec unreadable (%s); marking it failed", id, detail);
		p->state = POOL_FAILED;
	}
	p->backend = engine__backend_for(e, p->spec.backend);
	if (!p->backend)
		p->backend = e->local;
	if (reason)
		snprintf(p->reason, sizeof(p->reason), "%s", reason);
	p->created_ms = created_ms;
	p->next = e->pools;
	e->pools = p;
}

static void load_job(void *ctx, const store_job *sj)
{
	engine *e = ctx;
	pool *p = engine__pool_find(e, sj->pool_id);
	job *j;

	if (!p || !(j = calloc(1, sizeof(*j))))
		return;
	snprintf(j->id, sizeof(j->id), "%s", sj->id);
	j->num = sj->num;
	j->base = sj->base;
	j->total = sj->total;
	j->done = sj->done;
	j->failed = sj->failed;
	j->chunksize = sj->chunksize;
	j->max_attempts = sj->max_attempts;
	j->retry_errors = sj->retry_errors;
	j->timeout_ms = (unsigned)sj->timeout_ms;
	j->avg_us = -1;
	j->created_ms = sj->created_ms;
	j->function = strdup(sj->function);
	snprintf(j->state, sizeof(j->state), "%s", sj->state);
	if (sj->command_json) {
		json_t *a = json_loads(sj->command_json, 0, NULL);
		size_t n = json_array_size(a);
		j->command = n ? calloc(n, sizeof(char *)) : NULL;
		for (size_t i = 0; j->command && i < n; i++)
			j->command[j->ncommand++] = strdup(json_string_value(json_array_get(a, i)));
		json_decref(a);
	}
	j->pool = p;
	p->tasks_done += j->done;
	p->tasks_failed += j->failed;
	if (strcmp(j->state, "running") == 0)
		p->open_jobs++;
	job_attach(e, p, j);
}

typedef struct load_queue_ctx {
	pool *p;
	job *j;
} load_queue_ctx;

static int load_queued(void *ctx, int64_t id, const void *arg, size_t len, int attempts)
{
	load_queue_ctx *c = ctx;

	(void)arg;
	(void)len;
	(void)attempts;
	return queue_push(c->p, c->j, id, id, 0);
}

/* A worker of the previous run (or of this run, on a reload) that is still
 * alive is adopted: it keeps its id and tasks, and must reconnect within two
 * leases (it does so on its own, its results kept) or it is replaced. */
static void load_worker(void *ctx, const char *id, const char *pool_id, const char *handle, const char *state,
                        const char *secret, int64_t started_ms)
{
	engine *e = ctx;
	pool *p = engine__pool_find(e, pool_id);
	worker *w = NULL;

	(void)state;
	(void)started_ms;
	if (!p || p->state == POOL_TERMINATED || p->state == POOL_FAILED || !(w = calloc(1, sizeof(*w))) ||
	    bx_adopt(p->backend, id, handle) != CM_OK) {
		store_worker_set_state(e->st, id, "exited", -1);
		free(w);
		return;
	}
	snprintf(w->id, sizeof(w->id), "%s", id);
	w->pool = p;
	snprintf(w->handle, sizeof(w->handle), "%s", handle);
	/* A worker of a release before per-worker secrets has none: the hub
	 * refuses it and it is replaced after two leases, like a silent one. */
	if (secret && strlen(secret) == CREDENTIALS_SECRET_LEN) {
		snprintf(w->secret, sizeof(w->secret), "%s", secret);
		credentials_add(e->creds, w->id, p->id, w->secret);
	}
	w->state = W_STARTING;
	w->adopted = 1;
	w->started = w->last_seen = cm_now_ms();
	w->next = p->workers;
	p->workers = w;
	cm_info("pool %s: adopting worker %s (%s %.12s)", p->id, w->id, bx_name(p->backend), handle);
}
static int recover(engine *e, char *detail, size_t detail_len)
{
	int64_t queued = 0;
	int njobs = 0;

	credentials_clear(e->creds); /* the workers loaded below are all there are */
	if (store_pool_each(e->st, load_pool, e) != CM_OK || store_job_each(e->st, load_job, e) != CM_OK ||
	    store_queue_each(e->st, engine__load_queue, e) != CM_OK ||
	    store_process_each(e->st, engine__load_process, e) != CM_OK ||
	    store_ring_each(e->st, engine__load_ring, e) != CM_OK ||
	    store_next_ids(e->st, &e->next_job, &e->next_task) != CM_OK || store_begin(e->st) != CM_OK ||
	    store_worker_each_live(e->st, load_worker, e) != CM_OK) {
		snprintf(detail, detail_len, "cannot load state: %s", store_errmsg(e->st));
		store_rollback(e->st);
		return CM_EIO;
	}
	/* What the workers that are gone held goes back to the queue (it was
	 * handed out, not failed); adopted workers keep theirs. */
	store_tasks_requeue_orphans(e->st);
	for (pool *p = e->pools; p; p = p->next) {
		char why[300], refusal[400];
		/* The operator may have tightened the policy since the pool was
		 * made: it starts no worker the policy now forbids. */
		if ((p->state == POOL_ACTIVE || p->state == POOL_CLOSED) &&
		    policy_check_run(e->cfg, &p->spec, why, sizeof(why)) != CM_OK) {
			snprintf(refusal, sizeof(refusal), "the gateway's policy forbids it now: %s", why);
			pool_set_state(e, p, POOL_FAILED, refusal);
		}
		if (p->state == POOL_TERMINATING)
			pool_set_state(e, p, POOL_TERMINATED, NULL);
		if (p->state == POOL_TERMINATED || p->state == POOL_FAILED)
			pool_cancel_jobs(e, p, "cancelled: the pool ended");
		for (job *j = p->jobs; j; j = j->next) {
			load_queue_ctx c = {p, j};
			njobs++;
			if (strcmp(j->state, "running") == 0)
				store_tasks_queued_each(e->st, j->num, load_queued, &c);
		}
		queued += p->queued;
	}
	if (store_commit(e->st) != CM_OK) {
		snprintf(detail, detail_len, "cannot commit recovery: %s", store_errmsg(e->st));
		return CM_EIO;
	}
	cm_info("loaded %d jobs, %lld queued tasks", njobs, (long long)queued);
	return CM_OK;
}

/* ---- public ------------------------------------------------------------- */

/* From an executor's thread: the event joins the inbox like a request. */
static void post_event(void *ctx, bx_event *ev)
{
	engine *e = ctx;
	op *o = calloc(1, sizeof(*o));

	if (!o) {
		bx_event_free(ev);
		return;
	}
	o->kind = OP_BACKEND_EVENT;
	o->event = ev;
	pthread_mutex_lock(&e->mu);
	o->next = e->inbox;
	e->inbox = o;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->mu);
}

int engine_new(const gw_config *cfg, credentials *creds, backend *const *backends, size_t n, engine **out, char *detail,
               size_t detail_len)
{
	engine *e = calloc(1, sizeof(*e));
	int err;

	if (!e || n > ENGINE_BACKENDS_MAX) {
		for (size_t i = 0; i < n; i++)
			if (backends[i])
				backends[i]->ops->free(backends[i]);
		free(e);
		return e ? CM_EINVAL : CM_ENOMEM;
	}
	e->cfg = cfg;
	e->creds = creds;
	cm_buf_init(&e->hub_ca);
	/* A TLS hub: the workers get the CA to check it by (the certificate
	 * itself when it is self-signed). */
	if (strncmp(cfg->hub, "tls+", 4) == 0 && (err = cm_read_pem(cfg->hub_ca[0] ? cfg->hub_ca : cfg->tls_cert,
	                                                            &e->hub_ca, detail, detail_len)) != CM_OK) {
		cm_buf_fini(&e->hub_ca);
		for (size_t i = 0; i < n; i++)
			if (backends[i])
				backends[i]->ops->free(backends[i]);
		free(e);
		return err;
	}
	{
		/* Process output is kept next to the database. */
		char logs[1100];
		snprintf(logs, sizeof(logs), "%s.logs", cfg->db);
		mkdir(logs, 0755);
	}
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->wake, NULL);
	err = CM_OK;
	for (size_t i = 0; i < n; i++) /* each takes its backend, also on failure */
		if (!(e->backends[e->nbackends] = bx_new(backends[i], post_event, e)))
			err = CM_ENOMEM;
		else
			e->nbackends++;
	if (err == CM_OK && !(e->local = engine__backend_for(e, "local"))) {
		snprintf(detail, detail_len, "the local backend is missing");
		err = CM_EINVAL;
	}
	if (err != CM_OK || (err = store_open(cfg->db, 1, &e->st, detail, detail_len)) != CM_OK ||
	    (err = recover(e, detail, detail_len)) != CM_OK) {
		engine_free(e);
		return err;
	}
	*out = e;
	return CM_OK;
}

int engine_start(engine *e)
{
	if (pthread_create(&e->thread, NULL, engine_main, e) != 0)
		return CM_EIO;
	e->started = 1;
	return CM_OK;
}

void engine_quiesce(engine *e)
{
	void (*on_commit)(void *);
	void *ctx;

	pthread_mutex_lock(&e->mu);
	e->closing = 1;
	pthread_cond_signal(&e->wake);
	on_commit = e->on_commit;
	ctx = e->on_commit_ctx;
	pthread_mutex_unlock(&e->mu);
	if (on_commit)
		on_commit(ctx);
}

void engine_free(engine *e)
{
	if (!e)
		return;
	if (e->started) {
		pthread_mutex_lock(&e->mu);
		e->stopping = e->closing = 1;
		pthread_cond_signal(&e->wake);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->thread, NULL);
	}
	for (size_t i = 0; i < e->nbackends; i++) /* no event comes after this */
		bx_free(e->backends[i]);
	/* Requests that arrived after the last cycle were never handled. */
	while (e->inbox) {
		op *o = e->inbox;
		e->inbox = o->next;
		o->err = CM_ESHUTDOWN;
		engine__answer(e, o, 0);
	}
	state_clear(e);
	store_close(e->st);
	cm_buf_fini(&e->hub_ca);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* Frees pools, jobs and workers, answering what waits on them as not
 * recorded. */
static void state_clear(engine *e)
{
	while (e->log_reads) {
		op *o = e->log_reads;
		e->log_reads = o->next;
		engine__answer(e, o, 0);
	}
	while (e->pools) {
		pool *p = e->pools;
		e->pools = p->next;
		queue_clear(p);
		while (p->workers) {
			worker *w = p->workers;
			p->workers = w->next;
			if (w->parked)
				engine__answer(e, w->parked, 0);
			free(w);
		}
		while (p->jobs) {
			job *j = p->jobs;
			p->jobs = j->next;
			free(j->function);
			for (size_t i = 0; i < j->ncommand; i++)
				free(j->command[i]);
			free(j->command);
			free(j);
		}
		while (p->delete_waiters) {
			op *o = p->delete_waiters;
			p->delete_waiters = o->next;
			engine__answer(e, o, 0);
		}
		free(p);
	}
	memset(e->jobs, 0, sizeof(e->jobs));
	engine__processes_clear(e);
	engine__queues_clear(e);
}

/* Hands op to the engine and waits for its answer. */
int engine__submit(engine *e, op *o)
{
	pthread_cond_init(&o->cv, NULL);
	pthread_mutex_lock(&e->mu);
	if (e->closing) {
		pthread_mutex_unlock(&e->mu);
		pthread_cond_destroy(&o->cv);
		snprintf(o->detail, sizeof(o->detail), "the gateway is shutting down");
		return o->err = CM_ESHUTDOWN;
	}
	o->next = e->inbox;
	e->inbox = o;
	pthread_cond_signal(&e->wake);
	while (!o->done)
		pthread_cond_wait(&o->cv, &e->mu);
	pthread_mutex_unlock(&e->mu);
	pthread_cond_destroy(&o->cv);
	return o->err;
}

op *engine__call_new(op_kind kind, const char *id, engine_call_done done, void *ctx)
{
	op *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->kind = kind;
	snprintf(o->owned_id, sizeof(o->owned_id), "%s", id);
	o->id = o->owned_id;
	o->done_fn = done;
	o->done_ctx = ctx;
	return o;
}

engine_call *engine__start(engine *e, op *o)
{
	pthread_mutex_lock(&e->mu);
	if (e->closing) {
		pthread_mutex_unlock(&e->mu);
		snprintf(o->detail, sizeof(o->detail), "the gateway is shutting down");
		o->err = CM_ESHUTDOWN;
		o->done = 1;
		o->done_fn(o->done_ctx);
		return o;
	}
	o->next = e->inbox;
	e->inbox = o;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->mu);
	return o;
}

int engine_call_finish(engine_call *c, json_t **out, char *detail, size_t detail_len)
{
	int err = c->err;

	snprintf(detail, detail_len, "%s", c->detail);
	if (err == CM_OK)
		*out = c->out;
	else
		json_decref(c->out);
	free(c);
	return err;
}

int engine__run_simple(engine *e, op_kind kind, const char *id, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = kind, .id = id};
	int err = engine__submit(e, &o);

	if (detail)
		snprintf(detail, detail_len, "%s", o.detail);
	if (err == CM_OK)
		*out = o.out;
	else
		json_decref(o.out);
	return err;
}

int engine_pool_create(engine *e, const pool_spec *spec, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_POOL_CREATE, .pool_spec = spec};
	int err = engine__submit(e, &o);

	snprintf(detail, detail_len, "%s", o.detail);
	if (err == CM_OK)
		*out = o.out;
	return err;
}

int engine_pool_get(engine *e, const char *id, json_t **out)
{
	return engine__run_simple(e, OP_POOL_GET, id, out, NULL, 0);
}

int engine_pool_list(engine *e, json_t **out)
{
	return engine__run_simple(e, OP_POOL_LIST, NULL, out, NULL, 0);
}

int engine_pool_close(engine *e, const char *id, json_t **out, char *detail, size_t detail_len)
{
	return engine__run_simple(e, OP_POOL_CLOSE, id, out, detail, detail_len);
}

engine_call *engine_pool_delete_start(engine *e, const char *id, engine_call_done done, void *ctx)
{
	op *o = engine__call_new(OP_POOL_DELETE, id, done, ctx);

	return o ? engine__start(e, o) : NULL;
}

int engine_pool_jobs(engine *e, const char *id, json_t **out)
{
	return engine__run_simple(e, OP_POOL_JOBS, id, out, NULL, 0);
}

int engine_job_get(engine *e, const char *id, json_t **out)
{
	return engine__run_simple(e, OP_JOB_GET, id, out, NULL, 0);
}

int engine_map(engine *e, const char *pool_id, map_spec *spec, const char *idem_key, json_t **out, char *detail,
               size_t detail_len)
{
	op o = {.kind = OP_MAP, .id = pool_id, .map = spec, .idem_key = idem_key};
	int err = engine__submit(e, &o);

	snprintf(detail, detail_len, "%s", o.detail);
	if (err == CM_OK)
		*out = o.out;
	return err;
}

int engine_job_info(engine *e, const char *id, job_info *out)
{
	op o = {.kind = OP_JOB_INFO, .id = id};
	int err = engine__submit(e, &o);

	if (err == CM_OK)
		*out = o.info;
	return err;
}

uint64_t engine_generation(engine *e)
{
	uint64_t g;

	pthread_mutex_lock(&e->mu);
	g = e->gen;
	pthread_mutex_unlock(&e->mu);
	return g;
}

int engine_closing(engine *e)
{
	int closing;

	pthread_mutex_lock(&e->mu);
	closing = e->closing;
	pthread_mutex_unlock(&e->mu);
	return closing;
}

void engine_on_commit(engine *e, void (*on_commit)(void *ctx), void *ctx)
{
	pthread_mutex_lock(&e->mu);
	e->on_commit = on_commit;
	e->on_commit_ctx = ctx;
	pthread_mutex_unlock(&e->mu);
}

void engine_pull(engine *e, hub_slot *slot, Strand__Pull *pull)
{
	op *o = calloc(1, sizeof(*o));

	if (!o) {
		protobuf_c_message_free_unpacked(&pull->base, NULL);
		hub_discard(slot);
		return;
	}
	o->kind = OP_PULL;
	o->pull = pull;
	o->slot = slot;
	strand__batch__init(&o->batch);
	pthread_mutex_lock(&e->mu);
	if (e->stopping) {
		pthread_mutex_unlock(&e->mu);
		protobuf_c_message_free_unpacked(&pull->base, NULL);
		free(o);
		return; /* the hub is about to close; nobody to answer */
	}
	o->next = e->inbox;
	e->inbox = o;
	pthread_cond_signal(&e->wake);
	pthread_mutex_unlock(&e->mu);
}

/*
 * Loading and recovery: at start (and after a commit failed) the engine's
 * memory is rebuilt from the store alone, live workers and processes are
 * adopted again, and what the lost ones held goes back to the queue. Also
 * forgiving a stall of the gateway itself.
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"
#include "gateway/policy.h"

/* After a commit failed (disk full, database read-only), memory is ahead of
 * the database. Everyone waiting was told nothing was recorded (503 over
 * HTTP, RETRY to workers, who keep their results); now memory is rebuilt
 * from what is stored, exactly as at a restart, with the live workers
 * adopted again. Workers and processes started in the failed cycle are
 * unknown to the database: each backend stops and forgets them. */
int engine__reload(engine *e)
{
	char detail[256] = "";

	cm_error("commit failed (%s): nothing of this cycle was recorded; reloading the stored state",
	         store_errmsg(e->st));
	engine__state_clear(e);
	if (engine__recover(e, detail, sizeof(detail)) != CM_OK) {
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
void engine__forgive_stall(engine *e, int64_t now)
{
	int64_t gap = e->last_cycle ? now - e->last_cycle : 0;

	e->last_cycle = now;
	if (gap <= e->cfg->lease_ms / 2)
		return;
	cm_warn("the gateway stood still for %lld ms; worker and client leases restart now", (long long)gap);
	for (client_lease *l = e->client_leases; l; l = l->next)
		if (l->expires < now + l->lease_ms)
			l->expires = now + l->lease_ms;
	for (pool *p = e->pools; p; p = p->next) {
		for (worker *w = p->workers; w; w = w->next) {
			if (w->last_seen < now)
				w->last_seen = now;
			if (w->state == W_STARTING)
				w->started += gap;
		}
	}
}

static void load_pool(void *ctx, const char *id, const char *spec_json, const char *state, const char *reason,
                      int64_t created_ms)
{
	engine *e = ctx;
	pool *p = calloc(1, sizeof(*p));
	char detail[256];

	if (!p)
		return;
	snprintf(p->id, sizeof(p->id), "%s", id);
	p->seq = ++e->made; /* the store gives them in the order they were made */
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
	/* Not stored: --retain counts an ended pool's age from this start. */
	if (p->state == POOL_TERMINATED || p->state == POOL_FAILED)
		p->ended_ms = cm_wall_ms();
	if (strcmp(state, "deleted") == 0) { /* its jobs were still going */
		p->state = POOL_TERMINATED;
		p->deleted = 1;
		p->next = e->deleted_pools;
		e->deleted_pools = p;
		return;
	}
	engine__pool_link(e, p);
}

static void load_job(void *ctx, const store_job *sj)
{
	engine *e = ctx;
	pool *p = engine__pool_find_any(e, sj->pool_id);
	job *j;

	if (strcmp(sj->state, "deleting") == 0) { /* removed: its tasks are still going */
		engine__doom(e, sj->num, sj->base, sj->base + sj->total - 1);
		return;
	}
	if (!p || engine__job_reserve(p) != CM_OK || !(j = calloc(1, sizeof(*j))))
		return;
	snprintf(j->id, sizeof(j->id), "%s", sj->id);
	j->num = sj->num;
	j->base = sj->base;
	j->total = sj->total;
	j->received = sj->received;
	j->done = sj->done;
	j->failed = sj->failed;
	j->chunksize = sj->chunksize;
	j->max_attempts = sj->max_attempts;
	j->retry_errors = sj->retry_errors;
	j->timeout_ms = (unsigned)sj->timeout_ms;
	j->avg_us = -1;
	j->created_ms = sj->created_ms;
	j->function = strdup(sj->function);
	j->name = sj->name ? strdup(sj->name) : NULL;
	j->inputs_total = sj->inputs_total;
	j->inputs_done = sj->inputs_done;
	j->inputs_failed = sj->inputs_failed;
	int cancelling = strcmp(sj->state, "cancelling") == 0;
	j->state = strcmp(sj->state, "done") == 0                      ? JOB_DONE
	           : strcmp(sj->state, "cancelled") == 0 || cancelling ? JOB_CANCELLED
	                                                               : JOB_RUNNING;
	j->ended_ms = j->state == JOB_RUNNING ? 0 : sj->ended_ms;
	if (sj->context && j->state == JOB_RUNNING) /* an ended job hands out nothing more */
		j->context = engine__context_new(sj->context, sj->context_len);
	/* A running job's tasks of several inputs: each one's count again (an
	 * ended job needs only its counts). */
	if (j->inputs_total && j->state == JOB_RUNNING && (j->inputs = calloc((size_t)j->total, sizeof(*j->inputs))) &&
	    store_job_inputs_read(e->st, j->num, j->total, j->inputs) == CM_OK)
		for (int64_t i = 0; i < j->received; i++)
			j->inputs_received += j->inputs[i];
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
	engine__job_attach(e, p, j);
	if (j->state == JOB_RUNNING)
		engine__job_opened(j);
	if (cancelling) /* its missing results were still being filled */
		engine__cancel_rest(e, j, "cancelled");
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
	return engine__queue_push(c->p, c->j, id, id, 0);
}

/* A worker that ended, shown with its pool (pools.c keeps the most
 * recent EXITED_KEPT of them). */
static void load_ended_worker(void *ctx, const char *id, const char *pool_id, const char *handle, int exit_code,
                              const char *last_words)
{
	pool *p = engine__pool_find(ctx, pool_id);
	worker *w = p ? calloc(1, sizeof(*w)) : NULL;

	if (!w)
		return;
	snprintf(w->id, sizeof(w->id), "%s", id);
	snprintf(w->handle, sizeof(w->handle), "%s", handle);
	w->pool = p;
	w->state = W_EXITED;
	w->exit_code = exit_code;
	snprintf(w->last_words, sizeof(w->last_words), "%s", last_words);
	w->next = p->workers;
	p->workers = w;
}

/* A pool's counters of workers started and lost, over all its runs. */
static void load_worker_tally(void *ctx, const char *pool_id, int64_t started, int64_t lost)
{
	pool *p = engine__pool_find(ctx, pool_id);

	if (p) {
		p->workers_started = started;
		p->workers_lost = lost;
	}
}

/* A worker of the previous run (or of this run, on a reload) that is still
 * alive is adopted: it keeps its id and tasks, and must reconnect within two
 * leases (it does so on its own, its results kept) or it is replaced. */
static void load_worker(void *ctx, const char *id, const char *pool_id, const char *handle, const char *state,
                        const char *secret_hash, int64_t started_ms, int64_t output_next)
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
	if (secret_hash && strlen(secret_hash) == CREDENTIALS_HASH_LEN) {
		snprintf(w->secret_hash, sizeof(w->secret_hash), "%s", secret_hash);
		credentials_add(e->creds, w->id, p->id, p->spec.code, w->secret_hash);
	}
	w->state = W_STARTING;
	w->adopted = 1;
	w->output_next = (uint64_t)output_next; /* the lines it sends again are not stored twice */
	w->started = w->last_seen = cm_now_ms();
	w->next = p->workers;
	p->workers = w;
	cm_info("pool %s: adopting worker %s (%s %.12s)", p->id, w->id, bx_name(p->backend), handle);
}

int engine__recover(engine *e, char *detail, size_t detail_len)
{
	int64_t queued = 0;
	int njobs = 0;

	credentials_clear(e->creds); /* the workers loaded below are all there are */
	if (store_pool_each(e->st, load_pool, e) != CM_OK || store_job_each(e->st, load_job, e) != CM_OK ||
	    store_queue_each(e->st, engine__load_queue, e) != CM_OK ||
	    store_process_each(e->st, engine__load_process, e) != CM_OK ||
	    store_ring_each(e->st, engine__load_ring, e) != CM_OK ||
	    store_lease_each(e->st, engine__load_client_lease, e) != CM_OK ||
	    store_queue_holds_each(e->st, engine__load_queue_hold, e) != CM_OK ||
	    store_join_token_each(e->st, engine__load_join_token, e) != CM_OK ||
	    store_output_counts(e->st, engine__load_output_count, e) != CM_OK ||
	    store_next_ids(e->st, &e->next_job, &e->next_task) != CM_OK ||
	    store_worker_each_ended(e->st, EXITED_KEPT, load_ended_worker, load_worker_tally, e) != CM_OK ||
	    store_begin(e->st) != CM_OK || store_worker_each_live(e->st, load_worker, e) != CM_OK) {
		snprintf(detail, detail_len, "cannot load state: %s", store_errmsg(e->st));
		store_rollback(e->st);
		return CM_EIO;
	}
	/* What the workers that are gone held goes back to the queue (it was
	 * handed out, not failed); adopted workers keep theirs. */
	store_tasks_requeue_orphans(e->st);
	engine__queue_holds_settle(e); /* and what the clients gone had taken ahead */
	for (pool *p = e->pools; p; p = p->next) {
		char why[300], refusal[400];
		/* The operator may have tightened the policy since the pool was
		 * made: it starts no worker the policy now forbids. */
		if ((p->state == POOL_ACTIVE || p->state == POOL_CLOSED) &&
		    policy_check_run(e->cfg, &p->spec, why, sizeof(why)) != CM_OK) {
			snprintf(refusal, sizeof(refusal), "the gateway's policy forbids it now: %s", why);
			engine__pool_set_state(e, p, POOL_FAILED, refusal);
		}
		if (p->state == POOL_TERMINATING)
			engine__pool_set_state(e, p, POOL_TERMINATED, NULL);
		if (p->state == POOL_TERMINATED || p->state == POOL_FAILED)
			engine__pool_cancel_jobs(e, p, "cancelled: the pool ended");
		for (size_t i = 0; i < p->njobs; i++) {
			load_queue_ctx c = {p, p->jobs[i]};
			njobs++;
			if (c.j->state == JOB_RUNNING)
				store_tasks_queued_each(e->st, c.j->num, load_queued, &c);
		}
		queued += p->queued;
	}
	for (pool *p = e->deleted_pools; p; p = p->next)
		engine__pool_cancel_jobs(e, p, "cancelled: the pool was deleted");
	if (store_commit(e->st) != CM_OK) {
		snprintf(detail, detail_len, "cannot commit recovery: %s", store_errmsg(e->st));
		return CM_EIO;
	}
	cm_info("loaded %d jobs, %lld queued tasks", njobs, (long long)queued);
	return CM_OK;
}

/* Frees pools, jobs and workers, answering what waits on them as not
 * recorded. */
void engine__state_clear(engine *e)
{
	engine__fills_drop(e);
	engine__chores_clear(e);
	waitlist_drop_all(e, &e->log_reads);
	waitlist_drop_all(e, &e->applies); /* they look once */
	while (e->pools) {
		pool *p = e->pools;
		e->pools = p->next;
		engine__pool_free(e, p);
	}
	while (e->deleted_pools) {
		pool *p = e->deleted_pools;
		e->deleted_pools = p->next;
		engine__pool_free(e, p);
	}
	memset(e->pool_ids, 0, sizeof(e->pool_ids));
	e->ticked = NULL;
	memset(e->jobs, 0, sizeof(e->jobs));
	engine__processes_clear(e);
	engine__queues_clear(e);
	engine__client_leases_clear(e);
	engine__join_tokens_clear(e);
}

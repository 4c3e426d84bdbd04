/*
 * Pools and their workers in the engine: creating, closing and terminating
 * pools, starting workers through their backend's executor and hearing
 * back (started, gone), and the tick that keeps each pool's workers alive
 * and within their leases. Runs on the engine thread; requests come in
 * through requests.c.
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

void engine__pool_link(engine *e, pool *p)
{
	p->next = e->pools;
	e->pools = p;
	id_table_add(e->pool_ids, POOL_BUCKETS, &p->by_id, p->id);
	engine__pool_tick_again(e, p);
}

/* p out of e->pools, e->pool_ids and e->ticked. */
static void pool_unlink(engine *e, pool *p)
{
	pool **at = &e->pools;

	while (*at != p)
		at = &(*at)->next;
	*at = p->next;
	id_table_remove(e->pool_ids, POOL_BUCKETS, &p->by_id);
	if (p->ticked) {
		for (at = &e->ticked; *at != p; at = &(*at)->ticked_next)
			;
		*at = p->ticked_next;
		p->ticked = 0;
	}
}

pool *engine__pool_find(engine *e, const char *id)
{
	id_link *l = id_table_find(e->pool_ids, POOL_BUCKETS, id);

	return l ? ID_TABLE_ITEM(l, pool) : NULL;
}

void engine__pool_tick_again(engine *e, pool *p)
{
	if (!p->ticked) {
		p->ticked = 1;
		p->ticked_next = e->ticked;
		e->ticked = p;
	}
}

/* Whether an ended pool has nothing left for a cycle to do: every worker
 * exited, no DELETE waits, and all of it was said. */
static int pool_at_rest(const pool *p)
{
	if ((p->state != POOL_TERMINATED && p->state != POOL_FAILED) || p->delete_waiters.head)
		return 0;
	for (const worker *w = p->workers; w; w = w->next)
		if (w->state != W_EXITED)
			return 0;
	return engine__events_said(p);
}

void engine__tick_pools(engine *e, int64_t now)
{
	for (pool *p = e->ticked; p && store_in_transaction(e->st); p = p->ticked_next)
		engine__tick_pool(e, p, now);
	/* Apart from the ticks, which may put pools back. */
	for (pool **at = &e->ticked; *at;) {
		pool *p = *at;
		if (pool_at_rest(p)) {
			*at = p->ticked_next;
			p->ticked = 0;
		} else {
			at = &p->ticked_next;
		}
	}
}

void engine__pool_set_state(engine *e, pool *p, pool_state s, const char *reason)
{
	engine__pool_tick_again(e, p);
	p->state = s;
	if (s == POOL_TERMINATED || s == POOL_FAILED)
		p->ended_ms = cm_wall_ms();
	/* The pool keeps the start of a longer reason (the bound tells gcc so). */
	if (reason)
		snprintf(p->reason, sizeof(p->reason), "%.*s", (int)sizeof(p->reason) - 1, reason);
	store_pool_set_state(e->st, p->id, pool_state_names[s], reason);
	if (s == POOL_FAILED) {
		char why[600];
		snprintf(why, sizeof(why), "cancelled: the pool failed: %s", reason ? p->reason : "");
		engine__pool_cancel_jobs(e, p, why);
	}
	cm_info("pool %s %s%s%s", p->id, pool_state_names[s], reason ? ": " : "", reason ? reason : "");
}

size_t engine__hub_env(engine *e, const char *pool_id, const char *id, const char *secret, const char *code,
                       char env_text[][600], char **envp, char **ca)
{
	size_t n = 0;

	snprintf(env_text[n++], 600, "STRAND_HUB=%s", e->cfg->hub_advertise);
	snprintf(env_text[n++], 600, "STRAND_POOL_ID=%s", pool_id);
	snprintf(env_text[n++], 600, "STRAND_WORKER_ID=%s", id);
	snprintf(env_text[n++], 600, "STRAND_SECRET=%s", secret);
	if (e->cfg->hub_server_name[0])
		snprintf(env_text[n++], 600, "STRAND_HUB_SERVER_NAME=%.255s", e->cfg->hub_server_name);
	if (code[0])
		snprintf(env_text[n++], 600, "STRAND_CODE=%s", code);
	for (size_t i = 0; i < n; i++)
		envp[i] = env_text[i];
	/* A certificate chain does not fit the fixed entries. */
	*ca = NULL;
	if (e->hub_ca.len && asprintf(ca, "STRAND_HUB_CA_PEM=%s", e->hub_ca.data) > 0)
		envp[n++] = *ca;
	return n;
}

/* What starts a worker of pool p: strand-worker with its identity in the
 * environment (the program by its path where the backend runs programs, in
 * a container the image's entrypoint), named strand-<pool>-<n>, the pool's
 * nth worker, which STRAND_WORKER_NUMBER says to its tasks too (a Python
 * task's multiprocessing.current_process() is PoolWorker-<n>, as in a
 * multiprocessing pool), and labelled with its pool and id. The strings
 * live in env_text (room for 10), labels, name and *ca (free it). */
static backend_run_spec worker_run_spec(engine *e, pool *p, worker *w, const char *secret, char env_text[][600],
                                        char **envp, char **argv, char labels[][160], char **labelp, char name[64],
                                        char **ca)
{
	int native = bx_native(p->backend);
	backend_run_spec run = {.argv = argv, .env = envp, .spec = &p->spec, .group = p->id};
	size_t n = engine__hub_env(e, p->id, w->id, secret, p->spec.code, env_text, envp, ca);
	size_t t = ENGINE_HUB_ENV; /* env_text entries past the hub's */

	if (native && e->cfg->plugin_path[0]) {
		snprintf(env_text[t], 600, "STRAND_PLUGIN_PATH=%.500s", e->cfg->plugin_path);
		envp[n++] = env_text[t++];
	}
	if (p->spec.manager[0]) {
		snprintf(env_text[t], 600, "STRAND_MANAGER_TYPE=%s", p->spec.manager);
		envp[n++] = env_text[t++];
	}
	if (p->spec.runtime[0]) {
		snprintf(env_text[t], 600, "STRAND_RUNTIME=%s", p->spec.runtime);
		envp[n++] = env_text[t++];
	}
	snprintf(env_text[t], 600, "STRAND_WORKER_NUMBER=%lld", (long long)p->workers_started + 1);
	envp[n++] = env_text[t++];
	run.nenv = n;
	if (native)
		argv[run.argc++] = (char *)e->cfg->worker_bin;
	snprintf(labels[0], 160, "strand.pool=%s", p->id);
	snprintf(labels[1], 160, "strand.worker=%s", w->id);
	labelp[0] = labels[0];
	labelp[1] = labels[1];
	run.labels = labelp;
	run.nlabels = 2;
	snprintf(name, 64, "strand-%s-%lld", p->id, (long long)p->workers_started + 1);
	run.name = name;
	return run;
}

/* Asks w's backend to stop it, once per strength. */
void engine__worker_stop(pool *p, worker *w, int hard)
{
	if (w->stop_sent >= 1 + hard)
		return;
	w->stop_sent = 1 + hard;
	bx_stop(p->backend, w->id, hard);
}

/* Adds a worker in state starting and asks the backend to start it; the
 * backend answers later (worker_started). */
int engine__worker_spawn(engine *e, pool *p)
{
	worker *w = calloc(1, sizeof(*w));
	char env[10][600], labels[2][160], name[64];
	char *envp[11], *argv[1], *labelp[2], *ca = NULL;
	char secret[CREDENTIALS_SECRET_LEN + 1];
	int err;

	/* An external pool's workers join by themselves (join.c). */
	if (strcmp(p->spec.backend, "external") == 0) {
		free(w);
		return CM_EUNSUPPORTED;
	}
	if (!w)
		return CM_ENOMEM;
	cm_id_new('w', w->id);
	/* The secret goes to the worker alone; the gateway keeps its hash. */
	credentials_new_secret(secret, w->secret_hash);
	w->pool = p;
	/* Known to the hub before it can dial in. */
	if ((err = credentials_add(e->creds, w->id, p->id, p->spec.code, w->secret_hash)) != CM_OK) {
		explicit_bzero(secret, sizeof(secret));
		free(w);
		return err;
	}
	backend_run_spec run = worker_run_spec(e, p, w, secret, env, envp, argv, labels, labelp, name, &ca);
	err = bx_run(p->backend, w->id, &run, NULL);
	explicit_bzero(secret, sizeof(secret));
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
	engine__pool_tick_again(e, p);
	p->workers_started++;
	store_worker_insert(e->st, w->id, p->id, "", w->secret_hash, cm_wall_ms());
	return CM_OK;
}

/* The backend answered a worker's start. */
void engine__worker_started(engine *e, pool *p, worker *w, const bx_event *ev)
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
			engine__pool_set_state(e, p, POOL_FAILED, reason);
		return;
	}
	snprintf(w->handle, sizeof(w->handle), "%s", ev->handle);
	store_worker_set_handle(e->st, w->id, w->handle);
	cm_info("pool %s started worker %s (%s %.12s)", p->id, w->id, bx_name(p->backend), w->handle);
}

/* A batch job waits for room as long as the cluster is full: that is no
 * failure to connect. Its time to connect runs from when it runs. */
void engine__worker_queued(worker *w, int queued)
{
	w->queued = queued;
	if (!queued)
		w->started = w->last_seen = cm_now_ms();
}

void engine__worker_gone(engine *e, worker *w, int exit_code, const char *last_words)
{
	pool *p = w->pool;
	int expected = w->state == W_STOPPING || p->state == POOL_TERMINATING || p->state == POOL_TERMINATED;

	if (w->state == W_STARTING && !expected) {
		p->fail_streak++;
		p->fail_exit_code = exit_code;
	}
	w->state = W_EXITED;
	w->exit_code = exit_code;
	credentials_remove(e->creds, w->id);
	store_worker_set_state(e->st, w->id, expected ? "exited" : "lost", exit_code);
	op *parked = waitlist_take(&w->parked);
	if (parked) {
		parked->u.pull.discard = 1;
		engine__ready(e, parked);
	}
	if (!expected) {
		p->workers_lost++;
		cm_warn("worker %s of pool %s exited with code %d", w->id, p->id, exit_code);
	} else {
		cm_info("worker %s of pool %s stopped (code %d)", w->id, p->id, exit_code);
	}
	engine__requeue_worker(e, p, w->id, exit_code);
	engine__queue_reader_gone(e, w->id);
	w->pending = 0;
	if (last_words && last_words[0]) {
		snprintf(p->last_words, sizeof(p->last_words), "%.255s", last_words);
		snprintf(w->last_words, sizeof(w->last_words), "%s", last_words);
		cm_utf8_sanitize(w->last_words); /* the tail of a log may cut a character */
		store_worker_set_last_words(e->st, w->id, w->last_words);
	}
	if (exit_code == BACKEND_NEVER_STARTED && !expected) {
		char reason[400];
		snprintf(reason, sizeof(reason), "%s backend cannot start a worker: %.300s", bx_name(p->backend),
		         last_words ? last_words : "");
		engine__pool_set_state(e, p, POOL_FAILED, reason);
	}
	bx_release(p->backend, w->id);
}

void engine__handle_pool_create(engine *e, op *o)
{
	pool *p;
	char *spec_json = NULL;

	if (engine__client_lease_missing(e, o->u.pool_create.spec->lease, o))
		return;
	if ((o->err = engine__quota_pool(e, NULL, o->u.pool_create.spec, o->detail, sizeof(o->detail))) != CM_OK)
		return;
	if (!(p = calloc(1, sizeof(*p)))) {
		o->err = CM_ENOMEM;
		return;
	}
	p->spec = *o->u.pool_create.spec;
	cm_id_new(p->spec.manager[0] ? 'm' : 'p', p->id);
	p->backend = engine__backend_for(e, p->spec.backend);
	p->created_ms = cm_wall_ms();
	p->seq = ++e->made;
	spec_json = spec_pool_json(&p->spec);
	if (!p->backend || !spec_json ||
	    (o->err = store_pool_insert(e->st, p->id, spec_json, "active", p->created_ms)) != CM_OK) {
		if (!o->err)
			o->err = p->backend ? CM_ENOMEM : CM_EUNSUPPORTED;
		if (!p->backend)
			snprintf(o->detail, sizeof(o->detail), "backend '%s' is not configured in this gateway",
			         p->spec.backend);
		else
			snprintf(o->detail, sizeof(o->detail), "cannot create the pool: %s", cm_strerror(o->err));
		free(spec_json);
		free(p);
		return;
	}
	free(spec_json);
	engine__pool_link(e, p);
	cm_info("pool %s created: %d %s workers", p->id, p->spec.processes, p->spec.backend);
	engine__pool_converge(e, p, cm_now_ms());
	o->out = engine__pool_json(p);
}

void engine__handle_pool_close(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);

	if (!p) {
		o->err = CM_ENOENT;
		return;
	}
	if (p->state == POOL_ACTIVE)
		engine__pool_set_state(e, p, POOL_CLOSED, NULL);
	o->out = engine__pool_json(p);
}

void engine__pool_terminate(engine *e, pool *p)
{
	if (p->state == POOL_TERMINATING || p->state == POOL_TERMINATED)
		return;
	engine__pool_set_state(e, p, POOL_TERMINATING, NULL);
	for (worker *w = p->workers; w; w = w->next) {
		if (w->state == W_EXITED)
			continue;
		w->state = W_STOPPING;
		engine__worker_stop(p, w, 0);
		op *parked = waitlist_take(&w->parked);
		if (parked)
			engine__pull_finish(e, parked, ENGINE_BATCH_STOP, NULL);
	}
	p->kill_at = cm_now_ms() + TERM_GRACE_MS;
	engine__pool_cancel_jobs(e, p, "cancelled: the pool was terminated");
}

/* DELETE: a pool that runs is terminated, answered once it is (as a job
 * is cancelled); one terminated already is removed, as an ended job is:
 * gone from every view at once, its jobs and output a few a cycle. */
void engine__handle_pool_delete(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);

	if (!p) {
		o->err = CM_ENOENT;
		engine__ready(e, o);
		return;
	}
	if (p->state == POOL_TERMINATED) {
		json_t *out = engine__pool_json(p);
		if (!out || (o->err = engine__pool_delete(e, p, "deleted")) != CM_OK) {
			o->err = o->err ? o->err : CM_ENOMEM;
			json_decref(out);
		} else {
			json_object_set_new(out, "state", json_string("deleted"));
			o->out = out;
		}
		engine__ready(e, o);
		return;
	}
	engine__pool_terminate(e, p);
	if (p->state == POOL_TERMINATED) {
		o->out = engine__pool_json(p);
		engine__ready(e, o);
		return;
	}
	waitlist_add(&p->delete_waiters, o); /* answered by the tick once every worker is gone */
}

int engine__pool_delete(engine *e, pool *p, const char *why)
{
	if (store_pool_set_state(e->st, p->id, "deleted", NULL) != CM_OK)
		return CM_EIO;
	pool_unlink(e, p);
	p->next = e->deleted_pools;
	e->deleted_pools = p;
	p->deleted = 1;
	engine__event_pool_removed(e, p);
	cm_info("%s %s %s: its %zu jobs and its output go in the background", p->spec.manager[0] ? "manager" : "pool",
	        p->id, why, p->njobs);
	return CM_OK;
}

pool *engine__pool_find_any(engine *e, const char *id)
{
	pool *p = engine__pool_find(e, id);

	for (pool *d = e->deleted_pools; d && !p; d = d->next)
		if (strcmp(d->id, id) == 0)
			p = d;
	return p;
}

void engine__pool_free(engine *e, pool *p)
{
	engine__queue_clear(p);
	while (p->workers) {
		worker *w = p->workers;
		p->workers = w->next;
		waitlist_drop_all(e, &w->parked);
		free(w);
	}
	for (size_t i = 0; i < p->njobs; i++)
		engine__job_free(p->jobs[i]);
	free(p->jobs);
	waitlist_drop_all(e, &p->delete_waiters);
	free(p);
}

int engine__deleted_pools_step(engine *e, int max)
{
	int removed = 0;

	for (pool **at = &e->deleted_pools; *at && removed < max;) {
		pool *p = *at;
		/* A job still being cancelled ends first: its results fill in. */
		removed += engine__jobs_remove_ended(e, p, INT64_MAX, max - removed);
		if (p->njobs || removed >= max) {
			at = &p->next;
			continue;
		}
		if (store_pool_delete(e->st, p->id) != CM_OK)
			return max; /* the cycle's commit fails, and reloads */
		*at = p->next;
		cm_info("%s %s removed", p->spec.manager[0] ? "manager" : "pool", p->id);
		engine__pool_free(e, p);
		removed++;
	}
	return removed;
}

/* Exited workers stay in the pool's view (their exit codes), the
 * EXITED_KEPT most recently started; older ones are forgotten, here and in
 * the store, so a pool that resizes or autoscales for months stays small.
 * Nothing refers to an exited worker: its credentials, pull and backend
 * handle went when it ended. */
static void forget_old_exited(engine *e, pool *p)
{
	int kept = 0;

	for (worker **at = &p->workers; *at;) {
		worker *w = *at;
		if (w->state == W_EXITED && ++kept > EXITED_KEPT) {
			if (store_worker_forget(e->st, w->id) != CM_OK)
				return; /* the cycle's commit fails, and reloads */
			*at = w->next;
			free(w);
		} else {
			at = &w->next;
		}
	}
}

static void answer_delete_waiters(engine *e, pool *p)
{
	op *o;

	while ((o = waitlist_take(&p->delete_waiters))) {
		o->out = engine__pool_json(p);
		engine__ready(e, o);
	}
}

void engine__pool_settled(engine *e, const char *pool_id)
{
	pool *p = engine__pool_find(e, pool_id);

	if (p && p->state == POOL_TERMINATING && p->settling) {
		engine__pool_set_state(e, p, POOL_TERMINATED, NULL);
		answer_delete_waiters(e, p);
	}
}

void engine__tick_pool(engine *e, pool *p, int64_t now)
{
	int live = 0;

	forget_old_exited(e, p);
	for (worker *w = p->workers; w; w = w->next) {
		if (w->state == W_EXITED)
			continue;
		live++;
		if (p->state == POOL_TERMINATING && now >= p->kill_at)
			engine__worker_stop(p, w, 1);
		else if ((w->state == W_CONNECTED && now - w->last_seen > 2 * (int64_t)e->cfg->lease_ms &&
		          !w->parked.head) ||
		         (w->state == W_STARTING && !w->queued &&
		          now - w->started > (w->adopted ? 2 * (int64_t)e->cfg->lease_ms : CONNECT_GRACE_MS))) {
			/* Silent for two leases (or never connected): take its
			 * tasks back; the reap above requeues them. */
			if (w->stop_sent < 2)
				cm_warn("worker %s of pool %s lost its lease; killing it", w->id, p->id);
			engine__worker_stop(p, w, 1);
		}
		op *o = w->parked.head;
		if (!o)
			continue;
		if (p->state != POOL_ACTIVE && !(p->state == POOL_CLOSED && !engine__pool_drained(p))) {
			waitlist_take(&w->parked);
			engine__pull_finish(e, o, ENGINE_BATCH_STOP, NULL);
		} else if (p->qhead) {
			waitlist_take(&w->parked);
			engine__assign(e, p, w, o->u.pull.msg->want ? o->u.pull.msg->want : 1, 0,
			               o->u.pull.msg->round_trip_us, o);
			engine__pull_finish(e, o, ENGINE_BATCH_OK, NULL);
		} else if (now - (int64_t)(o->u.pull.parked_at * 1000) >= PARK_MS) { /* one clock: cm_now_ms's */
			waitlist_take(&w->parked);
			engine__pull_finish(e, o, ENGINE_BATCH_OK, NULL);
		}
	}
	if (p->state == POOL_TERMINATING && live == 0 && !p->settling) {
		/* Each ended worker's release went to the executor before this:
		 * the DELETE is answered once those ran (no container left). */
		p->settling = 1;
		if (bx_settle(p->backend, p->id) != CM_OK)
			engine__pool_set_state(e, p, POOL_TERMINATED, NULL);
	}
	if (p->state == POOL_TERMINATED) {
		answer_delete_waiters(e, p);
		return;
	}
	/* A pool being deleted stays so: nothing below (a failure seen from
	 * the workers it stops, replacements) applies to it. */
	if (p->state == POOL_FAILED || p->state == POOL_TERMINATING)
		return;
	if (p->spec.manager[0] && p->workers_lost > 0) {
		/* A manager's state lived in its one process: a new one would
		 * silently start from nothing. */
		char reason[400];
		snprintf(reason, sizeof(reason), "the manager process ended, and its state with it%s%.300s",
		         p->last_words[0] ? ": " : "", p->last_words);
		engine__pool_set_state(e, p, POOL_FAILED, reason);
		return;
	}
	if (p->fail_streak >= 3 + p->spec.processes) {
		/* A local worker's output is the gateway's own: said where to
		 * look, as the backend has no last words of it. */
		int local = strcmp(bx_name(p->backend), "local") == 0;
		char reason[560];
		snprintf(
		        reason, sizeof(reason),
		        "%d workers in a row exited before connecting to the hub %.60s (the last with code %d)%s%.256s",
		        p->fail_streak, e->cfg->hub_advertise, p->fail_exit_code,
		        p->last_words[0] ? "; the last one said: "
		        : local          ? "; what they wrote is in the gateway's own output"
		                         : "",
		        p->last_words);
		engine__pool_set_state(e, p, POOL_FAILED, reason);
		return;
	}
	/* Keep `processes` workers while there is or may be work. */
	if (p->state == POOL_ACTIVE || (p->state == POOL_CLOSED && !engine__pool_drained(p)))
		engine__pool_converge(e, p, now);
}

static worker *worker_in(pool *p, const char *owner)
{
	for (worker *w = p->workers; w; w = w->next)
		if (strcmp(w->id, owner) == 0)
			return w;
	return NULL;
}

/* The worker that owner names, and its pool; NULL if none. A worker that
 * has not exited is in a ticked pool: the rest are looked through only
 * when it is not there. */
worker *engine__worker_find(engine *e, const char *owner, pool **pool_out)
{
	worker *w;

	for (pool *p = e->ticked; p; p = p->ticked_next)
		if ((w = worker_in(p, owner))) {
			*pool_out = p;
			return w;
		}
	for (pool *p = e->pools; p; p = p->next)
		if (!p->ticked && (w = worker_in(p, owner))) {
			*pool_out = p;
			return w;
		}
	return NULL;
}

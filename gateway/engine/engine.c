/*
 * The engine thread; see engine.h. Everything here runs on that thread but
 * engine_new, engine_start, engine_quiesce and engine_free at the end (the
 * gateway's main thread). This file holds the cycle: taking requests and
 * backend events, handling them in one transaction, answering after the
 * commit, stopping. Requests come in through requests.c; the rest is by
 * concern (engine_int.h lists the files and what they share).
 *
 * One cycle:
 *
 *   wait for requests or the next tick (TICK_MS); first look for them
 *   for SPIN_S when those of one of the last two cycles came that soon
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
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

/* ---- small helpers ------------------------------------------------------ */

bx *engine__backend_for(engine *e, const char *name)
{
	for (size_t i = 0; i < e->nbackends; i++)
		if (strcmp(bx_name(e->backends[i]), name) == 0)
			return e->backends[i];
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

static void handle_backend_event(engine *e, op *o);

/* ---- requests ----------------------------------------------------------- */

static void handle(engine *e, op *o)
{
	job *j;

	switch (o->kind) {
	case OP_PULL: engine__handle_pull(e, o); return; /* answers itself, now or later */
	case OP_BACKEND_EVENT: handle_backend_event(e, o); return; /* no one to answer */
	case OP_QUEUE_CREATE:
	case OP_QUEUE_INFO:
	case OP_QUEUE_DELETE:
	case OP_QUEUE_PUT:
	case OP_QUEUE_GET:
	case OP_QUEUE_RELEASE: engine__handle_queue(e, o); return; /* answers itself, now or later */
	case OP_PROC_START:
	case OP_PROC_GET:
	case OP_PROC_DELETE:
	case OP_PROC_LOGS: engine__handle_process(e, o); return;
	case OP_RING_START:
	case OP_RING_GET:
	case OP_RING_DELETE: engine__handle_ring(e, o); return;
	case OP_LIST: engine__handle_list(e, o); break;
	case OP_JOIN_TOKEN:
	case OP_JOIN: engine__handle_join(e, o); break;
	case OP_POOL_CREATE: engine__handle_pool_create(e, o); break;
	case OP_POOL_GET: {
		pool *p = engine__pool_find(e, o->id);
		if (p)
			o->out = engine__pool_json(p);
		else
			o->err = CM_ENOENT;
		break;
	}
	case OP_POOL_OUTPUT_READ: engine__pool_output_read(e, o); break;
	case OP_POOL_CLOSE: engine__handle_pool_close(e, o); break;
	case OP_POOL_PATCH: engine__handle_pool_patch(e, o); break;
	case OP_POOL_DELETE: engine__handle_pool_delete(e, o); return;
	case OP_MAP: engine__handle_map(e, o); return; /* answers itself, now or once its arguments are in */
	case OP_JOB_ARGS: engine__handle_job_args(e, o); return;
	case OP_JOB_DELETE: engine__handle_job_delete(e, o); break;
	case OP_JOB_CANCEL: engine__handle_job_cancel(e, o); break;
	case OP_JOB_LIST: engine__handle_job_list(e, o); break;
	case OP_METRICS: engine__handle_metrics(e, o); break;
	case OP_HISTORY: engine__handle_history(e, o); break;
	case OP_LEASE_CREATE:
	case OP_LEASE_RENEW:
	case OP_LEASE_GET:
	case OP_LEASE_DELETE: engine__handle_client_lease(e, o); break;
	case OP_JOB_GET:
	case OP_JOB_INFO:
		j = engine__job_find(e, o->id);
		if (!j)
			o->err = CM_ENOENT;
		else if (o->kind == OP_JOB_GET)
			o->out = engine__job_json(j);
		else {
			o->u.info = (job_info){
			        .num = j->num, .base = j->base, .total = j->total, .inputs_total = j->inputs_total};
			snprintf(o->u.info.pool, sizeof(o->u.info.pool), "%s", j->pool->id);
		}
		break;
	}
	if (o->err && !o->detail[0])
		snprintf(o->detail, sizeof(o->detail), "%s", cm_strerror(o->err));
	engine__ready(e, o);
}

/* ---- cycle -------------------------------------------------------------- */

void engine__answer(engine *e, op *o, int committed)
{
	if (o->kind == OP_BACKEND_EVENT) { /* not handled: a reload re-adopts, and its end is reported again */
		bx_event_free(o->u.event);
		free(o);
		return;
	}
	if ((o->kind == OP_QUEUE_PUT || o->kind == OP_QUEUE_GET || o->kind == OP_QUEUE_INFO) &&
	    o->u.queue.call) { /* a worker's */
		engine__answer_queue_call(e, o, committed);
		return;
	}
	if (o->kind == OP_MAP && o->u.map.wait_until) {
		if (engine__apply_settle(e, o, committed))
			return; /* it waits for its result */
		if (o->u.map.stored)
			committed = 1; /* its job was stored in an earlier cycle: it looks there */
	}
	if (o->kind == OP_PULL) {
		/* Nothing of this cycle was recorded: the worker keeps its results
		 * and asks again; tasks handed out in it were never handed out. */
		engine_batch retry = {.status = ENGINE_BATCH_RETRY, .error = ""};
		if (o->u.pull.discard)
			e->link.drop(e->link.ctx, o->slot);
		else
			e->link.batch(e->link.ctx, o->slot, committed ? &o->u.pull.batch : &retry);
		free(o->u.pull.runs);
		free(o->u.pull.ids);
		free(o->u.pull.attempts);
		free(o->u.pull.arg_lens);
		cm_buf_fini(&o->u.pull.args);
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

/* What an executor reported: a start, an end, or logs a reader waits for. */
static void handle_backend_event(engine *e, op *o)
{
	bx_event *ev = o->u.event;
	pool *p = NULL;
	worker *w = ev->kind == BX_LOGS || ev->kind == BX_SETTLED ? NULL : engine__worker_find(e, ev->owner, &p);

	if (ev->kind == BX_SETTLED) {
		engine__pool_settled(e, ev->owner);
	} else if (ev->kind == BX_LOGS) {
		op *reader = ev->tag;
		if (waitlist_remove(&e->log_reads, reader)) { /* else answered already (a reload) */
			reader->out = json_stringn(ev->logs.data ? ev->logs.data : "", ev->logs.len);
			engine__ready(e, reader);
		}
	} else if (w && ev->kind == BX_STARTED) {
		engine__worker_started(e, p, w, ev);
	} else if (ev->kind == BX_QUEUED || ev->kind == BX_RUNNING) {
		if (w)
			engine__worker_queued(w, ev->kind == BX_QUEUED);
	} else if (w && w->state != W_EXITED) {
		engine__worker_gone(e, w, ev->exit_code, ev->detail);
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
	int64_t start = cm_now_ms(), asked_end = start + STOP_ASKED_MS,
	        give_up = asked_end + TERM_GRACE_MS + STOP_WAIT_MS;

	/* A worker waiting on its pull is told to stop, as when its pool ends,
	 * and exits by itself (code 0), on any hub: a signal would end it
	 * with 143, or, in a container or pod, reach only what runs it. It
	 * gets SIGTERM only if it is still there at asked_end; the others at
	 * once; SIGKILL follows TERM_GRACE_MS after a SIGTERM. */
	for (pool *p = e->pools; p; p = p->next)
		for (worker *w = p->workers; w; w = w->next)
			if (w->state != W_EXITED && w->parked.head) {
				engine__pull_finish(e, waitlist_take(&w->parked), ENGINE_BATCH_STOP, NULL);
				w->told_stop = 1;
			}
	for (;;) {
		int64_t now = cm_now_ms();
		int live = engine__processes_stop(e, now >= start + TERM_GRACE_MS);
		for (pool *p = e->pools; p; p = p->next)
			for (worker *w = p->workers; w; w = w->next)
				if (w->state != W_EXITED) {
					int64_t term_at = w->told_stop ? asked_end : start;
					w->state = W_STOPPING;
					if (now >= term_at)
						engine__worker_stop(p, w, now >= term_at + TERM_GRACE_MS);
					live++;
				}
		if (!live)
			break;
		if (now >= give_up) {
			cm_warn("%d workers or processes did not end in time; leaving them", live);
			break;
		}
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

/* How long the engine looks for the next request before it sleeps, when
 * requests of one of the last two cycles came that soon after the cycle
 * before. An apply's result comes back some 35 us after its task went
 * out, and a client's next apply some 50 us after the answer: found by
 * looking, neither has to wake the engine. On this virtual machine a
 * wake-up of a thread asleep on the other CPU goes through the
 * hypervisor, and takes longest when the host is busy. bench/latency, 8
 * rotating runs of 1,000: p50 libstrand 0.219 -> 0.185 ms, raw HTTP
 * 0.222 -> 0.170 ms, and in the three runs of a noisy minute 0.28-0.33 ->
 * 0.15-0.27 ms; 92 % of the looks found a request. Requests that come
 * later (a map's pulls, ms apart) or not at all (an idle gateway's ticks)
 * are not looked for, as that takes a CPU the workers and the HTTP
 * threads share: a map of 900,000 no-ops looked 92 times, 8 ms in all. */
#define SPIN_S 100e-6

/* One step of a busy wait: tells the CPU so (the other hyper-thread runs,
 * and the loop's exit is not mispredicted). */
static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Waits up to SPIN_S for a post after the seen-th, without the mutex
 * (posters take it; polled under it, the engine would hold them up). */
static void spin_for_post(engine *e, unsigned seen)
{
	double until = cm_now_s() + SPIN_S;

	do {
		for (int i = 0; i < 64; i++)
			cpu_relax();
		if (atomic_load_explicit(&e->posts, memory_order_relaxed) != seen)
			return;
	} while (cm_now_s() < until);
}

static void *engine_main(void *arg)
{
	engine *e = arg;
	/* whether each of the last two cycles' requests came within SPIN_S of
	 * the cycle before (an apply's alternate: its result soon after its
	 * task went out, the client's next request maybe later) */
	int soon = 0, soon_before = 0;
	double ended = cm_now_s();
	unsigned taken = 0; /* e->posts when the inbox was last emptied */

	pthread_setname_np(pthread_self(), "engine"); /* each thread named, for top -H and perf */

	for (;;) {
		op *batch, *rev = NULL;
		int stop, closing;
		int committed;

		if ((soon || soon_before) && !e->fills)
			spin_for_post(e, taken);
		pthread_mutex_lock(&e->mu);
		if (!e->inbox && !e->stopping && !e->fills) {
			struct timespec ts = cm_timespec_in(CLOCK_REALTIME, TICK_MS);
			pthread_cond_timedwait(&e->wake, &e->mu, &ts);
		}
		batch = e->inbox;
		e->inbox = NULL;
		taken = atomic_load_explicit(&e->posts, memory_order_relaxed);
		stop = e->stopping;
		closing = e->closing;
		pthread_mutex_unlock(&e->mu);
		double began = cm_now_s();
		soon_before = soon;
		soon = batch && began - ended <= SPIN_S;
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
		/* Arguments in before the pools' ticks: a parked worker gets an
		 * apply's task in the cycle that stored it. */
		if (committed && store_in_transaction(e->st))
			engine__fill_step(e);
		/* Measured here, next to the lease checks, so that a stop anywhere
		 * in the cycle (handling, the commit, the wait) is forgiven. */
		int64_t now = cm_now_ms();
		engine__forgive_stall(e, now);
		if (committed && store_in_transaction(e->st))
			engine__tick_pools(e, now);
		for (queue *q = e->queues; q && committed && store_in_transaction(e->st); q = q->next)
			if (q->getters.head)
				engine__queue_tick(e, q, now);
		if (committed && store_in_transaction(e->st)) {
			engine__applies_tick(e, now);
			engine__tick_processes(e, now);
			engine__tick_rings(e);
			engine__tick_client_leases(e, now);
			engine__tick_join_tokens(e, now);
			engine__chores_step(e);
			engine__upkeep(e, now);
			engine__history_tick(e, now);
			engine__events_tick(e, now);
		}
		if (closing) { /* readers that wait would hold up the HTTP stop */
			engine__queues_quiesce(e);
			engine__applies_quiesce(e);
		}
		if (committed && !store_in_transaction(e->st))
			committed = 0;
		double commit_began = cm_now_s();
		if (committed && store_commit(e->st) != CM_OK) {
			cm_error("commit failed: %s", store_errmsg(e->st));
			store_rollback(e->st);
			committed = 0;
		}
		if (committed)
			engine__observe(&e->commit_time, cm_now_s() - commit_began);
		while (e->ready) {
			op *o = e->ready;
			e->ready = o->next;
			engine__answer(e, o, committed);
		}
		engine__contexts_free(e->retired);
		e->retired = NULL;
		engine__observe(&e->cycle_time, cm_now_s() - began);
		size_t said = engine__events_end_cycle(e, committed);
		/* Long polls look again only when something they read may have
		 * changed: an idle tick leaves the generation where it was. */
		int64_t changes = store_total_changes(e->st);
		int output_stored = e->output_stored;
		e->output_stored = 0;
		if (changes != e->changes || !committed || said) {
			void (*on_commit)(void *, engine_watch);
			void *ctx;
			engine_watch moved = output_stored || !committed ? ENGINE_WATCH_OUTPUT : ENGINE_WATCH_ANY;
			e->changes = changes;
			pthread_mutex_lock(&e->mu);
			e->gen++;
			if (moved == ENGINE_WATCH_OUTPUT)
				e->output_gen = e->gen;
			on_commit = e->on_commit;
			ctx = e->on_commit_ctx;
			pthread_mutex_unlock(&e->mu);
			if (on_commit)
				on_commit(ctx, moved);
		}
		if (!committed && engine__reload(e) != CM_OK) {
			pthread_mutex_lock(&e->mu);
			e->stopping = e->closing = 1;
			pthread_mutex_unlock(&e->mu);
			stop = 1;
		}
		if (stop)
			break;
		ended = cm_now_s();
	}
	stop_everything(e);
	return NULL;
}

/* ---- start and stop ----------------------------------------------------- */

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
	e->fills_tail = &e->fills;
	cm_buf_init(&e->hub_ca);
	events_batch_init(&e->event_batch);
	cm_buf_init(&e->job_text);
	/* A TLS hub: the workers get the CA to check it by (the certificate
	 * itself when it is self-signed). */
	int family, tls;
	if (cm_socket_url(cfg->hub, &family, &tls) && tls &&
	    (err = cm_read_pem(cfg->hub_ca[0] ? cfg->hub_ca : cfg->tls_cert, &e->hub_ca, detail, detail_len)) !=
	            CM_OK) {
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
		if (!(e->backends[e->nbackends] = bx_new(backends[i], engine__post_backend_event, e)))
			err = CM_ENOMEM;
		else
			e->nbackends++;
	if (err == CM_OK && !(e->local = engine__backend_for(e, "local"))) {
		snprintf(detail, detail_len, "the local backend is missing");
		err = CM_EINVAL;
	}
	if (err == CM_OK)
		err = events_new(&e->events);
	if (err != CM_OK ||
	    (err = store_open(cfg->db,
	                      STORE_WRITER | (cfg->sync_full ? STORE_SYNC_FULL : 0) |
	                              (cfg->db_shared ? STORE_SHARED : 0),
	                      &e->st, detail, detail_len)) != CM_OK ||
	    (err = engine__recover(e, detail, detail_len)) != CM_OK) {
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
	void (*on_commit)(void *, engine_watch);
	void *ctx;

	pthread_mutex_lock(&e->mu);
	e->closing = 1;
	pthread_cond_signal(&e->wake);
	on_commit = e->on_commit;
	ctx = e->on_commit_ctx;
	pthread_mutex_unlock(&e->mu);
	if (on_commit)
		on_commit(ctx, ENGINE_WATCH_OUTPUT);
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
	engine__state_clear(e);
	engine__contexts_free(e->retired);
	events_batch_fini(&e->event_batch);
	cm_buf_fini(&e->job_text);
	events_free(e->events);
	store_close(e->st);
	cm_buf_fini(&e->hub_ca);
	pthread_cond_destroy(&e->wake);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

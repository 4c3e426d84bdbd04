/*
 * Every way into the engine from another thread: the HTTP threads' requests,
 * the hub's worker frames, the backends' executors' events, and what long
 * polls read. Each packs its arguments into an op and hands it to the
 * engine thread's inbox under e->mu; nothing here touches the engine's
 * state, which only the engine thread reads and writes (engine.c and the
 * files by concern, listed in engine_int.h).
 *
 * Three ways to hand over an op:
 *   submit          the caller waits for the answer (one cycle)
 *   start           returns at once; the op's done callback runs later
 *   post            no answer to wait for (a worker's frame, an event)
 */
#define _GNU_SOURCE
#include "gateway/engine/engine_int.h"

/* ---- handing over ------------------------------------------------------- */

/* Puts o in the inbox; e->mu is held. The caller wakes the engine. */
static void inbox_push(engine *e, op *o)
{
	o->next = e->inbox;
	e->inbox = o;
	atomic_fetch_add_explicit(&e->posts, 1, memory_order_relaxed);
}

/* From any thread, o joins the inbox, unless the gateway is closing (HTTP
 * requests) or stopping (workers' frames). CM_ESHUTDOWN: not taken. */
typedef enum post_when { POST_ALWAYS, POST_UNLESS_STOPPING, POST_UNLESS_CLOSING } post_when;

static int post(engine *e, op *o, post_when when)
{
	int refused;

	pthread_mutex_lock(&e->mu);
	refused = (when == POST_UNLESS_CLOSING && e->closing) || (when == POST_UNLESS_STOPPING && e->stopping);
	if (!refused)
		inbox_push(e, o);
	pthread_mutex_unlock(&e->mu);
	/* Woken after the unlock: woken under it, the engine ran into the
	 * mutex still held here and slept again, to be woken a second time by
	 * the unlock (two futex wakes and two switches a request, `strace` of
	 * an HTTP thread). The engine looks at its inbox under the mutex
	 * before it waits, so no post is missed; engine_free destroys the
	 * condition only after every poster has stopped (main.c's order). */
	if (!refused)
		pthread_cond_signal(&e->wake);
	return refused ? CM_ESHUTDOWN : CM_OK;
}

/* Hands op to the engine and waits for its answer. */
static int submit(engine *e, op *o)
{
	pthread_cond_init(&o->cv, NULL);
	pthread_mutex_lock(&e->mu);
	if (e->closing) {
		pthread_mutex_unlock(&e->mu);
		pthread_cond_destroy(&o->cv);
		snprintf(o->detail, sizeof(o->detail), "the gateway is shutting down");
		return o->err = CM_ESHUTDOWN;
	}
	inbox_push(e, o);
	pthread_cond_signal(&e->wake); /* the wait below lets go of the mutex at once */
	while (!o->done)
		pthread_cond_wait(&o->cv, &e->mu);
	pthread_mutex_unlock(&e->mu);
	pthread_cond_destroy(&o->cv);
	return o->err;
}

static op *call_new(op_kind kind, const char *id, engine_call_done done, void *ctx)
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

static engine_call *start(engine *e, op *o)
{
	if (post(e, o, POST_UNLESS_CLOSING) != CM_OK) {
		snprintf(o->detail, sizeof(o->detail), "the gateway is shutting down");
		o->err = CM_ESHUTDOWN;
		o->done = 1;
		o->done_fn(o->done_ctx);
	}
	return o;
}

/* Hands o over and waits: its answer into *out (on CM_OK), the reason of
 * a refusal into detail (NULL: not wanted). */
static int submit_answer(engine *e, op *o, json_t **out, char *detail, size_t detail_len)
{
	int err = submit(e, o);

	if (detail)
		snprintf(detail, detail_len, "%s", o->detail);
	if (err == CM_OK)
		*out = o->out;
	else
		json_decref(o->out);
	return err;
}

/* A request that names at most an id. */
static int run_simple(engine *e, op_kind kind, const char *id, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = kind, .id = id};

	return submit_answer(e, &o, out, detail, detail_len);
}

/* A call of kind on id that answers later, through done. */
static engine_call *start_simple(engine *e, op_kind kind, const char *id, engine_call_done done, void *ctx)
{
	op *o = call_new(kind, id, done, ctx);

	return o ? start(e, o) : NULL;
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

/* From an executor's thread: the event joins the inbox like a request
 * (also while stopping: stop_everything waits for the ends). */
void engine__post_backend_event(void *ctx, bx_event *ev)
{
	op *o = calloc(1, sizeof(*o));

	if (!o) {
		bx_event_free(ev);
		return;
	}
	o->kind = OP_BACKEND_EVENT;
	o->u.event = ev;
	post(ctx, o, POST_ALWAYS);
}

uint64_t engine_generation(engine *e, engine_watch what)
{
	uint64_t g;

	pthread_mutex_lock(&e->mu);
	g = what == ENGINE_WATCH_OUTPUT ? e->output_gen : e->gen;
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

void engine_on_commit(engine *e, void (*on_commit)(void *ctx, engine_watch moved), void *ctx)
{
	pthread_mutex_lock(&e->mu);
	e->on_commit = on_commit;
	e->on_commit_ctx = ctx;
	pthread_mutex_unlock(&e->mu);
}

/* ---- pools and managers ------------------------------------------------- */

int engine_pool_create(engine *e, const pool_spec *spec, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_POOL_CREATE, .u.pool_create.spec = spec};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_list(engine *e, engine_list_kind kind, const engine_list_page *pg, json_t **out)
{
	op o = {.kind = OP_LIST, .u.list = {.kind = kind, .page = pg}};
	int err = submit(e, &o);

	/* the page's JSON made here, off the engine thread */
	if (err == CM_OK && !(*out = engine__list_json(&o)))
		err = CM_ENOMEM;
	return err;
}

int engine_join_token(engine *e, const char *pool_id, int64_t uses, int64_t ttl_s, json_t **out, char *detail,
                      size_t detail_len)
{
	op o = {.kind = OP_JOIN_TOKEN, .id = pool_id, .u.join = {.uses = uses, .ttl_s = ttl_s}};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_join(engine *e, const char *token, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_JOIN, .u.join = {.token = token}};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_pool_get(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_POOL_GET, id, out, NULL, 0);
}

int engine_pool_output_read(engine *e, const char *id, int64_t after, const char *lease, int *missed)
{
	op o = {.kind = OP_POOL_OUTPUT_READ, .id = id, .u.output_read = {.after = after, .lease = lease}};
	int err = submit(e, &o);

	*missed = o.u.output_read.missed;
	return err;
}

int engine_pool_close(engine *e, const char *id, json_t **out, char *detail, size_t detail_len)
{
	return run_simple(e, OP_POOL_CLOSE, id, out, detail, detail_len);
}

int engine_pool_patch(engine *e, const char *id, const pool_patch *patch, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_POOL_PATCH, .id = id, .u.patch = patch};

	return submit_answer(e, &o, out, detail, detail_len);
}

engine_call *engine_pool_delete_start(engine *e, const char *id, engine_call_done done, void *ctx)
{
	return start_simple(e, OP_POOL_DELETE, id, done, ctx);
}

/* ---- jobs: maps, applies, their parts and views ------------------------- */

int engine_map(engine *e, const char *pool_id, map_spec *spec, const char *idem_key, json_t **out, char *detail,
               size_t detail_len)
{
	op o = {.kind = OP_MAP, .id = pool_id, .u.map.spec = spec, .u.map.idem_key = idem_key};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_job_args(engine *e, const char *job_id, int64_t offset, const spec_args *args, json_t **out, char *detail,
                    size_t detail_len)
{
	op o = {.kind = OP_JOB_ARGS, .id = job_id, .u.part.args = args, .u.part.offset = offset};

	return submit_answer(e, &o, out, detail, detail_len);
}

engine_call *engine_apply_start(engine *e, const char *pool_id, map_spec *spec, const char *idem_key, int64_t wait_ms,
                                engine_call_done done, void *ctx)
{
	op *o = call_new(OP_MAP, pool_id, done, ctx);

	if (!o)
		return NULL;
	o->u.map.spec = spec;
	o->u.map.idem_key = idem_key;
	o->u.map.wait_until = cm_now_ms() + (wait_ms > 0 ? wait_ms : 1);
	cm_buf_init(&o->u.map.item);
	cm_buf_init(&o->u.map.view);
	return start(e, o);
}

int engine_apply_finish(engine_call *c, engine_apply_answer *out, char *detail, size_t detail_len)
{
	int err = c->err;

	snprintf(detail, detail_len, "%s", c->detail);
	*out = (engine_apply_answer){0};
	if (err == CM_OK) {
		snprintf(out->id, sizeof(out->id), "%s", c->u.map.job_id);
		out->job_len = c->u.map.view.len;
		out->job = cm_buf_steal(&c->u.map.view);
		out->info = c->u.map.info;
		out->info_ok = c->u.map.info_ok;
		if (c->u.map.item.len) {
			out->item_len = c->u.map.item.len;
			out->item = cm_buf_steal(&c->u.map.item);
		}
	}
	cm_buf_fini(&c->u.map.item);
	cm_buf_fini(&c->u.map.view);
	free(c);
	return err;
}

int engine_job_get(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_JOB_GET, id, out, NULL, 0);
}

int engine_job_list(engine *e, const char *pool_id, const char *state, int64_t cursor, int limit, cm_buf *page)
{
	op o = {.kind = OP_JOB_LIST, .id = pool_id, .u.job_list = {.state = state, .below = cursor, .limit = limit}};
	int err = submit(e, &o);

	/* the page written here, off the engine thread, from its copies */
	if (err == CM_OK)
		err = cm_buf_puts(page, "{\"jobs\":[");
	for (size_t i = 0; i < o.u.job_list.nviews; i++) {
		if (err == CM_OK && i)
			err = cm_buf_puts(page, ",");
		if (err == CM_OK)
			err = job_view_text(&o.u.job_list.views[i], page);
		job_view_fini(&o.u.job_list.views[i]);
	}
	free(o.u.job_list.views);
	if (err == CM_OK)
		err = o.u.job_list.last
		              ? cm_buf_printf(page, "],\"next_cursor\":\"%lld\"}", (long long)o.u.job_list.last)
		              : cm_buf_puts(page, "],\"next_cursor\":null}");
	return err;
}

int engine_job_delete(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_JOB_DELETE, id, out, NULL, 0);
}

int engine_job_cancel(engine *e, const char *id, json_t **out, char *detail, size_t detail_len)
{
	return run_simple(e, OP_JOB_CANCEL, id, out, detail, detail_len);
}

int engine_job_info(engine *e, const char *id, job_info *out)
{
	op o = {.kind = OP_JOB_INFO, .id = id};
	int err = submit(e, &o);

	if (err == CM_OK)
		*out = o.u.info;
	return err;
}

/* ---- clients' leases ---------------------------------------------------- */

int engine_lease_create(engine *e, int64_t lease_ms, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_LEASE_CREATE, .u.lease_ms = lease_ms};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_lease_renew(engine *e, const char *id, int64_t lease_ms, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_LEASE_RENEW, .id = id, .u.lease_ms = lease_ms};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_lease_get(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_LEASE_GET, id, out, NULL, 0);
}

int engine_lease_delete(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_LEASE_DELETE, id, out, NULL, 0);
}

/* ---- queues and pipes --------------------------------------------------- */

int engine_queue_create(engine *e, const char *kind, const char *lease, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_QUEUE_CREATE, .u.queue.kind = kind};

	snprintf(o.u.queue.lease, sizeof(o.u.queue.lease), "%s", lease ? lease : "");
	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_queue_info(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_QUEUE_INFO, id, out, NULL, 0);
}

int engine_queue_delete(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_QUEUE_DELETE, id, out, NULL, 0);
}

int engine_queue_put(engine *e, const char *id, int pipe_end, char *const *items, const size_t *lens, size_t n,
                     json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_QUEUE_PUT,
	        .id = pipe_end < 0 ? id : NULL,
	        .u.queue.pipe = pipe_end < 0 ? NULL : id,
	        .u.queue.pipe_end = pipe_end,
	        .u.queue.items = items,
	        .u.queue.lens = lens,
	        .u.queue.nitems = n};

	return submit_answer(e, &o, out, detail, detail_len);
}

engine_call *engine_queue_get_start(engine *e, const char *id, int pipe_end, int64_t max, int64_t wait_ms,
                                    const char *lease, const char *used_hold, engine_call_done done, void *ctx)
{
	op *o = call_new(OP_QUEUE_GET, id, done, ctx);

	if (!o)
		return NULL;
	if (pipe_end >= 0) {
		o->u.queue.pipe = o->id;
		o->id = NULL;
	}
	o->u.queue.pipe_end = pipe_end;
	o->u.queue.max = max;
	o->u.queue.deadline = cm_now_ms() + wait_ms;
	snprintf(o->u.queue.lease, sizeof(o->u.queue.lease), "%s", lease ? lease : "");
	snprintf(o->u.queue.hold, sizeof(o->u.queue.hold), "%s", used_hold ? used_hold : "");
	return start(e, o);
}

int engine_queue_release(engine *e, const char *id, int pipe_end, const char *hold, int64_t used, json_t **out,
                         char *detail, size_t detail_len)
{
	op o = {.kind = OP_QUEUE_RELEASE,
	        .id = pipe_end < 0 ? id : NULL,
	        .u.queue.pipe = pipe_end < 0 ? NULL : id,
	        .u.queue.pipe_end = pipe_end,
	        .u.queue.used = used};

	snprintf(o.u.queue.hold, sizeof(o.u.queue.hold), "%s", hold);
	return submit_answer(e, &o, out, detail, detail_len);
}

/* ---- processes and rings ------------------------------------------------ */

int engine_process_start(engine *e, const process_spec *spec, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_PROC_START, .u.proc.spec = spec};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_process_get(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_PROC_GET, id, out, NULL, 0);
}

engine_call *engine_process_delete_start(engine *e, const char *id, engine_call_done done, void *ctx)
{
	return start_simple(e, OP_PROC_DELETE, id, done, ctx);
}

int engine_process_logs(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_PROC_LOGS, id, out, NULL, 0);
}

int engine_ring_start(engine *e, const process_spec *spec, int size, json_t **out, char *detail, size_t detail_len)
{
	op o = {.kind = OP_RING_START, .u.proc.spec = spec, .u.proc.ring_size = size};

	return submit_answer(e, &o, out, detail, detail_len);
}

int engine_ring_get(engine *e, const char *id, json_t **out)
{
	return run_simple(e, OP_RING_GET, id, out, NULL, 0);
}

engine_call *engine_ring_delete_start(engine *e, const char *id, engine_call_done done, void *ctx)
{
	return start_simple(e, OP_RING_DELETE, id, done, ctx);
}

/* ---- what the gateway shows --------------------------------------------- */

int engine_history(engine *e, json_t **out)
{
	return run_simple(e, OP_HISTORY, NULL, out, NULL, 0);
}

int engine_metrics(engine *e, cm_buf *out)
{
	json_t *text = NULL;
	int err = run_simple(e, OP_METRICS, NULL, &text, NULL, 0);

	if (err == CM_OK)
		err = cm_buf_append(out, json_string_value(text), json_string_length(text));
	json_decref(text);
	return err;
}

events *engine_events(engine *e)
{
	return e->events;
}

/* ---- workers, through the hub ------------------------------------------- */

/* A worker's frame (o, new) for the engine, answered through the link
 * into slot; not taken once the gateway stops (the hub answers it). */
static int post_for_slot(engine *e, op *o, hub_slot *slot)
{
	o->slot = slot;
	if (post(e, o, POST_UNLESS_STOPPING) != CM_OK) {
		free(o);
		return CM_ESHUTDOWN;
	}
	return CM_OK;
}

void engine_set_link(engine *e, const engine_link *link)
{
	e->link = *link;
}

int engine_pull(engine *e, hub_slot *slot, const engine_pull_msg *m)
{
	op *o = calloc(1, sizeof(*o));

	if (!o)
		return CM_ENOMEM;
	o->kind = OP_PULL;
	o->u.pull.msg = m;
	return post_for_slot(e, o, slot);
}

int engine_queue_call(engine *e, hub_slot *slot, const engine_queue_msg *call)
{
	op *o = calloc(1, sizeof(*o));

	if (!o)
		return CM_ENOMEM;
	o->kind = call->put ? OP_QUEUE_PUT : call->size ? OP_QUEUE_INFO : OP_QUEUE_GET;
	o->u.queue.call = call;
	o->u.queue.max = call->max ? call->max : 1;
	o->u.queue.deadline = cm_now_ms() + call->wait_ms;
	return post_for_slot(e, o, slot);
}

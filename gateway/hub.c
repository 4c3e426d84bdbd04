/*
 * The hub: HUB_SLOTS nng REP contexts, each an explicit state machine driven
 * by its aio callback (nng's threads) and by the engine thread's answer
 * (engine_link):
 *
 *   RECV --request--> WAIT (engine holds the slot) --batch/queue_reply--> SEND --sent--> RECV
 *                        \--drop--> RECV (the worker times out and asks again)
 *
 * All protobuf lives here: a frame is decoded into the slot, handed to the
 * engine as plain structs pointing into it, and freed once the engine
 * answered; the answer is encoded here.
 *
 * A slot is parked in WAIT while the engine holds an idle worker's pull, so
 * HUB_SLOTS bounds the workers that can wait at once; beyond that, requests
 * queue inside nng until a slot frees up.
 */
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/supplemental/tls/tls.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gateway/hub.h"
#include "gateway/result_check.h"
#include "proto/frame.h"

#define HUB_SLOTS 256

typedef enum slot_state { SLOT_RECV, SLOT_WAIT, SLOT_SEND } slot_state;

struct hub_slot {
	hub *hub;
	nng_ctx ctx;
	nng_aio *aio;
	slot_state state;
	/* while the engine holds it (WAIT): the frame it was given, decoded
	 * into the slot's arena (one block a frame, not a few allocations a
	 * result; freed whole when the engine has answered) */
	ProtobufCMessage *msg;
	proto_arena arena;
	engine_pull_msg pull;
	engine_result *results;
	engine_queue_msg call;
	const uint8_t **items;
	size_t *lens;
};

struct hub {
	engine *engine;
	credentials *creds;
	/* While stopping: frames are refused without reaching the engine, and
	 * hub_refuse_frames waits until no callback is inside the engine. */
	pthread_mutex_t mu;
	pthread_cond_t idle;
	int refusing;
	int in_engine; /* callbacks handing a frame to the engine now */
	nng_socket sock;
	hub_slot slots[HUB_SLOTS];
	int nslots;
};

static void slot_recv(hub_slot *s)
{
	s->state = SLOT_RECV;
	nng_ctx_recv(s->ctx, s->aio);
}

/* Frees the frame the engine held. */
static void slot_release(hub_slot *s)
{
	proto_arena_fini(&s->arena); /* the message with it */
	free(s->results);
	free(s->items);
	free(s->lens);
	s->msg = NULL;
	s->results = NULL;
	s->items = NULL;
	s->lens = NULL;
}

/* Sends frame (taken) as the slot's answer; nothing sent when it cannot. */
static void send_frame(hub_slot *s, uint8_t *frame, size_t len)
{
	nng_msg *msg;

	if (nng_msg_alloc(&msg, 0) != 0 || nng_msg_append(msg, frame, len) != 0) {
		free(frame);
		slot_recv(s);
		return;
	}
	free(frame);
	s->state = SLOT_SEND;
	nng_aio_set_msg(s->aio, msg);
	nng_ctx_send(s->ctx, s->aio);
}

static void send_message(hub_slot *s, proto_type type, const ProtobufCMessage *m)
{
	uint8_t *frame;
	size_t len;

	if (proto_frame_encode(type, NULL, NULL, m, &frame, &len) == CM_OK)
		send_frame(s, frame, len);
	else
		slot_recv(s);
}

static void refuse(hub_slot *s, const char *why)
{
	Strand__Batch b = STRAND__BATCH__INIT;

	b.status = STRAND__BATCH__STATUS__REFUSED;
	b.error = (char *)why;
	send_message(s, PROTO_BATCH, &b.base);
}

/* ---- the engine's answers (engine_link), on the engine's thread --------- */

static void on_batch(void *ctx, hub_slot *s, const engine_batch *eb)
{
	static const Strand__Batch__Status status[] = {
	        [ENGINE_BATCH_OK] = STRAND__BATCH__STATUS__OK,
	        [ENGINE_BATCH_REFUSED] = STRAND__BATCH__STATUS__REFUSED,
	        [ENGINE_BATCH_STOP] = STRAND__BATCH__STATUS__STOP,
	        [ENGINE_BATCH_RETRY] = STRAND__BATCH__STATUS__RETRY,
	};
	Strand__Batch b = STRAND__BATCH__INIT;
	Strand__Task *tasks = eb->ntasks ? calloc(eb->ntasks, sizeof(*tasks)) : NULL;
	Strand__Task **ptrs = eb->ntasks ? calloc(eb->ntasks, sizeof(*ptrs)) : NULL;
	Strand__Context *contexts = eb->ntasks ? calloc(eb->ntasks, sizeof(*contexts)) : NULL;
	Strand__Context **cptrs = eb->ntasks ? calloc(eb->ntasks, sizeof(*cptrs)) : NULL;
	size_t ncontexts = 0;

	(void)ctx;
	slot_release(s);
	if (eb->ntasks && (!tasks || !ptrs || !contexts || !cptrs)) {
		free(tasks);
		free(ptrs);
		free(contexts);
		free(cptrs);
		slot_recv(s); /* no answer: the worker asks again, its tasks come back by resync */
		return;
	}
	for (size_t i = 0; i < eb->ntasks; i++) {
		const engine_task *t = &eb->tasks[i];
		strand__task__init(&tasks[i]);
		tasks[i].id = t->id;
		tasks[i].function = (char *)t->function;
		tasks[i].arg.data = (uint8_t *)t->arg;
		tasks[i].arg.len = t->arg_len;
		tasks[i].attempt = t->attempt;
		tasks[i].command = (char **)t->command;
		tasks[i].n_command = t->ncommand;
		tasks[i].timeout_ms = t->timeout_ms;
		tasks[i].context = t->context_key;
		tasks[i].ahead = t->ahead != 0;
		ptrs[i] = &tasks[i];
		/* A job's tasks come in runs (its queue ranges): a context is added
		 * where a run starts, so once, or a few times when requeued
		 * ranges interleave. */
		if (t->context_key && (!ncontexts || contexts[ncontexts - 1].key != t->context_key)) {
			Strand__Context *c = &contexts[ncontexts];
			strand__context__init(c);
			c->key = t->context_key;
			c->value.data = (uint8_t *)t->context;
			c->value.len = t->context_len;
			cptrs[ncontexts++] = c;
		}
	}
	b.status = status[eb->status];
	b.error = (char *)(eb->error ? eb->error : "");
	b.tasks = ptrs;
	b.n_tasks = eb->ntasks;
	b.lease_ms = eb->lease_ms;
	b.list_held = eb->list_held;
	b.contexts = cptrs;
	b.n_contexts = ncontexts;
	send_message(s, PROTO_BATCH, &b.base);
	free(tasks);
	free(ptrs);
	free(contexts);
	free(cptrs);
}

static void on_queue_reply(void *ctx, hub_slot *s, const engine_queue_reply *r)
{
	Strand__QueueReply reply = STRAND__QUEUE_REPLY__INIT;
	ProtobufCBinaryData *bins = r->nitems ? calloc(r->nitems, sizeof(*bins)) : NULL;

	(void)ctx;
	slot_release(s);
	reply.ok = r->ok;
	reply.error = (char *)(r->error ? r->error : "");
	for (size_t i = 0; bins && i < r->nitems; i++) {
		bins[i].data = (uint8_t *)r->items[i];
		bins[i].len = r->lens[i];
	}
	reply.items = bins;
	reply.n_items = bins ? r->nitems : 0;
	send_message(s, PROTO_QUEUE_REPLY, &reply.base);
	free(bins);
}

static void on_drop(void *ctx, hub_slot *s)
{
	(void)ctx;
	slot_release(s);
	slot_recv(s);
}

/* Each result that is not readable JSON (or an error that is not UTF-8)
 * becomes a failed task saying so, here on nng's thread rather than on the
 * engine's. The replaced bytes were allocated by protobuf-c's default
 * allocator (malloc), so they are freed and allocated the same way. */
static void check_results(hub_slot *s, Strand__Pull *pull)
{
	for (size_t i = 0; i < pull->n_results; i++) {
		Strand__Result *r = pull->results[i];
		char why[200];
		uint8_t *copy;
		size_t n;
		if (result_check(r->ok, r->value.data, r->value.len, why, sizeof(why)))
			continue;
		n = strlen(why);
		/* In the frame's arena, as what it replaces was. */
		if (!(copy = proto_arena_alloc(&s->arena, n)))
			n = 0;
		else
			memcpy(copy, why, n);
		r->value.data = copy;
		r->value.len = n;
		r->ok = 0;
	}
}

/* The engine's view of a decoded pull or queue call: plain structs that
 * point into the message the slot keeps. */
static int describe(hub_slot *s, proto_type type)
{
	if (type == PROTO_QUEUE_CALL) {
		Strand__QueueCall *c = (Strand__QueueCall *)s->msg;
		if (c->n_items && (!(s->items = calloc(c->n_items, sizeof(*s->items))) ||
		                   !(s->lens = calloc(c->n_items, sizeof(*s->lens)))))
			return CM_ENOMEM;
		for (size_t i = 0; i < c->n_items; i++) {
			s->items[i] = c->items[i].data;
			s->lens[i] = c->items[i].len;
		}
		s->call = (engine_queue_msg){.worker_id = c->worker_id,
		                             .pool_id = c->pool_id,
		                             .put = c->op == STRAND__QUEUE_CALL__OP__PUT,
		                             .queue = c->queue,
		                             .pipe_end = c->pipe_end,
		                             .items = s->items,
		                             .lens = s->lens,
		                             .nitems = c->n_items,
		                             .max = c->max,
		                             .wait_ms = c->wait_ms};
		return CM_OK;
	}
	Strand__Pull *p = (Strand__Pull *)s->msg;
	if (p->n_results && !(s->results = calloc(p->n_results, sizeof(*s->results))))
		return CM_ENOMEM;
	for (size_t i = 0; i < p->n_results; i++) {
		const Strand__Result *r = p->results[i];
		s->results[i] = (engine_result){.task_id = r->task_id,
		                                .ok = r->ok,
		                                .value = r->value.data,
		                                .len = r->value.len,
		                                .run_us = r->run_us,
		                                .attempt = r->attempt,
		                                .lost = r->lost && !r->ok};
	}
	s->pull = (engine_pull_msg){.worker_id = p->worker_id,
	                            .pool_id = p->pool_id,
	                            .want = p->want,
	                            .in_hand = p->in_hand,
	                            .results = s->results,
	                            .nresults = p->n_results,
	                            .resync = p->resync,
	                            .held = p->held,
	                            .nheld = p->n_held,
	                            .running_task = p->running_task,
	                            .running_ms = p->running_ms};
	return CM_OK;
}

/* Hands a decoded frame (kept by the slot) to the engine, unless the
 * gateway is stopping: then it is refused, and hub_refuse_frames knows when
 * no callback is left inside the engine. */
static void to_engine(hub_slot *s, proto_type type, ProtobufCMessage *m)
{
	hub *h = s->hub;
	int err;

	s->msg = m;
	if (describe(s, type) != CM_OK) {
		slot_release(s);
		refuse(s, "the gateway is out of memory");
		return;
	}
	pthread_mutex_lock(&h->mu);
	if (h->refusing) {
		pthread_mutex_unlock(&h->mu);
		slot_release(s);
		refuse(s, "the gateway is stopping");
		return;
	}
	h->in_engine++;
	pthread_mutex_unlock(&h->mu);
	s->state = SLOT_WAIT;
	err = type == PROTO_QUEUE_CALL ? engine_queue_call(h->engine, s, &s->call)
	                               : engine_pull(h->engine, s, &s->pull);
	if (err != CM_OK) { /* not taken: the engine will not answer it */
		slot_release(s);
		refuse(s, err == CM_ESHUTDOWN ? "the gateway is stopping" : "the gateway is out of memory");
	}
	pthread_mutex_lock(&h->mu);
	if (--h->in_engine == 0)
		pthread_cond_broadcast(&h->idle);
	pthread_mutex_unlock(&h->mu);
}

/* Whether the decoded message names the worker the header authenticated,
 * and that worker's pool. */
static int names_sender(const proto_header *h, const char *pool, const char *worker_id, const char *pool_id)
{
	return worker_id && pool_id && strlen(worker_id) == h->worker_id_len &&
	       memcmp(worker_id, h->worker_id, h->worker_id_len) == 0 && strcmp(pool_id, pool) == 0;
}

/* A frame in: who sent it is checked from its header before its body is
 * decoded (within a budget), then it goes to the engine. */
static void on_frame(hub_slot *s, nng_msg *msg)
{
	const uint8_t *data = nng_msg_body(msg);
	size_t len = nng_msg_len(msg);
	ProtobufCMessage *m = NULL;
	char detail[256], pool[20];
	proto_header h;
	int named;

	if (proto_frame_header(data, len, &h, detail, sizeof(detail)) != CM_OK) {
		nng_msg_free(msg);
		refuse(s, detail);
		return;
	}
	if (h.type != PROTO_PULL && h.type != PROTO_QUEUE_CALL) {
		nng_msg_free(msg);
		refuse(s, "the hub takes Pull and QueueCall frames only");
		return;
	}
	if (!credentials_check(s->hub->creds, h.worker_id, h.worker_id_len, h.secret, h.secret_len, pool)) {
		nng_msg_free(msg);
		refuse(s, "unknown worker or wrong secret");
		return;
	}
	if (proto_frame_decode_in(&s->arena, h.type, data, len, &m, detail, sizeof(detail)) != CM_OK) {
		cm_warn("hub: refused a frame of worker %.*s: %s", (int)h.worker_id_len, h.worker_id, detail);
		nng_msg_free(msg);
		refuse(s, detail);
		return;
	}
	if (h.type == PROTO_QUEUE_CALL)
		named = names_sender(&h, pool, ((Strand__QueueCall *)m)->worker_id, ((Strand__QueueCall *)m)->pool_id);
	else
		named = names_sender(&h, pool, ((Strand__Pull *)m)->worker_id, ((Strand__Pull *)m)->pool_id);
	nng_msg_free(msg); /* h pointed into it */
	if (!named) {
		proto_arena_fini(&s->arena);
		refuse(s, "the frame's body names another worker or pool than its sender");
		return;
	}
	if (h.type == PROTO_PULL)
		check_results(s, (Strand__Pull *)m);
	to_engine(s, h.type, m);
}

static void on_aio(void *arg)
{
	hub_slot *s = arg;
	int rv = nng_aio_result(s->aio);

	switch (s->state) {
	case SLOT_RECV:
		if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
			return;
		if (rv != 0) {
			slot_recv(s);
			return;
		}
		nng_msg *msg = nng_aio_get_msg(s->aio);
		nng_aio_set_msg(s->aio, NULL); /* on_frame owns it now */
		on_frame(s, msg);
		return;
	case SLOT_SEND:
		if (rv != 0) {
			nng_msg_free(nng_aio_get_msg(s->aio));
			nng_aio_set_msg(s->aio, NULL);
			if (rv == NNG_ECLOSED || rv == NNG_ECANCELED)
				return;
		}
		slot_recv(s);
		return;
	case SLOT_WAIT: return; /* no aio runs while the engine holds the slot */
	}
}

/* Listens on cfg->hub; a tls+tcp:// hub presents the gateway's certificate
 * (--tls-cert, --tls-key). */
static int listen_on(hub *h, const gw_config *cfg, char *detail, size_t detail_len)
{
	nng_tls_config *t = NULL;
	nng_listener l;
	cm_buf cert, key;
	int rv, err = CM_OK;

	cm_buf_init(&cert);
	cm_buf_init(&key);
	if ((rv = nng_listener_create(&l, h->sock, cfg->hub)) != 0) {
		snprintf(detail, detail_len, "cannot listen on hub %s: %s", cfg->hub, nng_strerror(rv));
		return CM_EUNAVAIL;
	}
	if (strncmp(cfg->hub, "tls+", 4) == 0) {
		if ((err = cm_read_pem(cfg->tls_cert, &cert, detail, detail_len)) == CM_OK &&
		    (err = cm_read_pem(cfg->tls_key, &key, detail, detail_len)) == CM_OK &&
		    ((rv = nng_tls_config_alloc(&t, NNG_TLS_MODE_SERVER)) != 0 ||
		     (rv = nng_tls_config_own_cert(t, cert.data, key.data, NULL)) != 0 ||
		     (rv = nng_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, t)) != 0)) {
			snprintf(detail, detail_len, "hub TLS with %s: %s", cfg->tls_cert, nng_strerror(rv));
			err = CM_EINVAL;
		}
		if (t)
			nng_tls_config_free(t); /* the listener holds its own reference */
		if (key.data)
			explicit_bzero(key.data, key.len);
		cm_buf_fini(&cert);
		cm_buf_fini(&key);
	}
	if (err == CM_OK && (rv = nng_listener_start(l, 0)) != 0) {
		snprintf(detail, detail_len, "cannot listen on hub %s: %s", cfg->hub, nng_strerror(rv));
		err = CM_EUNAVAIL;
	}
	if (err != CM_OK)
		nng_listener_close(l);
	return err;
}

int hub_start(const gw_config *cfg, engine *e, credentials *creds, hub **out, char *detail, size_t detail_len)
{
	hub *h = calloc(1, sizeof(*h));
	int rv;

	if (!h)
		return CM_ENOMEM;
	h->engine = e;
	h->creds = creds;
	engine_set_link(e, &(engine_link){.ctx = h, .batch = on_batch, .queue_reply = on_queue_reply, .drop = on_drop});
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->idle, NULL);
	if ((rv = nng_rep0_open(&h->sock)) != 0 ||
	    (rv = nng_socket_set_size(h->sock, NNG_OPT_RECVMAXSZ, PROTO_FRAME_MAX)) != 0) {
		snprintf(detail, detail_len, "hub socket: %s", nng_strerror(rv));
		free(h);
		return CM_EIO;
	}
	for (int i = 0; i < HUB_SLOTS; i++) {
		hub_slot *s = &h->slots[i];
		s->hub = h;
		if ((rv = nng_aio_alloc(&s->aio, on_aio, s)) != 0 || (rv = nng_ctx_open(&s->ctx, h->sock)) != 0) {
			snprintf(detail, detail_len, "hub context: %s", nng_strerror(rv));
			if (s->aio)
				nng_aio_free(s->aio);
			h->nslots = i;
			hub_free(h);
			return CM_EIO;
		}
		h->nslots = i + 1;
	}
	if ((rv = listen_on(h, cfg, detail, detail_len)) != CM_OK) {
		hub_free(h);
		return rv;
	}
	for (int i = 0; i < h->nslots; i++)
		slot_recv(&h->slots[i]);
	*out = h;
	return CM_OK;
}

void hub_refuse_frames(hub *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->mu);
	h->refusing = 1;
	while (h->in_engine)
		pthread_cond_wait(&h->idle, &h->mu);
	pthread_mutex_unlock(&h->mu);
}

void hub_free(hub *h)
{
	if (!h)
		return;
	/* Every slot the engine held was answered when it stopped, so the
	 * contexts are receiving or sending a refusal. Their operations are
	 * stopped first (a stopped aio takes no new one, and on_aio does not
	 * start one after a cancel), then the contexts closed, and only then
	 * the socket: nng_close with a context still cycling under a storm of
	 * frames could wait forever (seen in test_rogue_worker). */
	for (int i = 0; i < h->nslots; i++)
		nng_aio_stop(h->slots[i].aio);
	for (int i = 0; i < h->nslots; i++)
		nng_ctx_close(h->slots[i].ctx);
	nng_close(h->sock);
	for (int i = 0; i < h->nslots; i++) {
		/* A refusal that a stopped aio never sent is still ours. */
		nng_msg *unsent = nng_aio_get_msg(h->slots[i].aio);
		if (unsent)
			nng_msg_free(unsent);
		nng_aio_free(h->slots[i].aio);
		slot_release(&h->slots[i]);
	}
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

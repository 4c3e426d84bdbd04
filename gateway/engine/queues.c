/*
 * SimpleQueues and Pipes in the engine; see engine.h. Runs on the engine
 * thread; requests (HTTP and hub threads) come in through requests.c. Items live in the store;
 * memory holds counts and the readers waiting, served first come, first
 * served (a queue of kind "turns" serves each its share: queue_turns.c).
 * Calls from code inside workers arrive from the hub and are answered
 * with QueueReply frames.
 */
#define _GNU_SOURCE
#include <inttypes.h>

#include "gateway/engine/engine_int.h"

/* ---- queues and pipes --------------------------------------------------- */

static queue *queue_find(engine *e, const char *id)
{
	id_link *l = id_table_find(e->queue_ids, QUEUE_BUCKETS, id);

	return l ? ID_TABLE_ITEM(l, queue) : NULL;
}

static queue *queue_add(engine *e, const char *id, const char *kind, int64_t created_ms, int64_t size,
                        const char *lease)
{
	queue *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	if (strcmp(kind, "turns") == 0) {
		if (!(q->turns = turns_new())) {
			free(q);
			return NULL;
		}
		turns_deal(q->turns, size); /* no reader yet: anyone's */
	}
	snprintf(q->id, sizeof(q->id), "%s", id);
	snprintf(q->kind, sizeof(q->kind), "%s", kind);
	snprintf(q->lease, sizeof(q->lease), "%s", lease);
	q->created_ms = created_ms;
	q->seq = ++e->made;
	q->size = size;
	q->next = e->queues;
	e->queues = q;
	id_table_add(e->queue_ids, QUEUE_BUCKETS, &q->by_id, q->id);
	return q;
}

static void queue_free(queue *q)
{
	while (q->holds) {
		queue_hold *h = q->holds;
		q->holds = h->next;
		free(h);
	}
	turns_free(q->turns);
	free(q);
}

/* Deletes the queue *at links to (in e->queues) with its items (stored
 * and held); its waiting readers hear it is gone. */
static int queue_remove_at(engine *e, queue **at)
{
	queue *q = *at;
	int err = store_queue_delete(e->st, q->id);

	if (err != CM_OK)
		return err;
	e->queue_bytes -= q->bytes;
	waitlist_answer_all(e, &q->getters, CM_ENOENT, NULL);
	*at = q->next;
	id_table_remove(e->queue_ids, QUEUE_BUCKETS, &q->by_id);
	queue_free(q);
	return CM_OK;
}

static int queue_remove(engine *e, queue *q)
{
	queue **at = &e->queues;

	while (*at != q)
		at = &(*at)->next;
	return queue_remove_at(e, at);
}

/* Who asks: the lease a client reads under, the worker or process whose
 * code calls, or "" for a reader that names neither. */
static const char *reader_of(const op *o)
{
	if (o->u.queue.lease[0])
		return o->u.queue.lease;
	return o->u.queue.call ? o->u.queue.call->worker_id : "";
}

/* How many items o's reader may take from q now (a "turns" queue's
 * readers are looked up one by one: none when it is empty). */
static int64_t may_take(const queue *q, const op *o)
{
	int64_t n = q->turns && q->size > 0 ? turns_allowance(q->turns, reader_of(o)) : q->size;

	return n < q->size ? n : q->size;
}

/* n more items at q's head to take (put, or given back). */
static void items_came(queue *q, int64_t n)
{
	q->size += n;
	if (q->turns)
		turns_deal(q->turns, n);
}

/* ---- holds: items a client took ahead under its lease ------------------ */

/* Whether hold is one of lease's: "<lease>." and its own id. */
static int hold_of(const char *hold, const char *lease)
{
	size_t n = strlen(lease);

	return n && strncmp(hold, lease, n) == 0 && hold[n] == '.';
}

static queue_hold **hold_find(queue *q, const char *id)
{
	queue_hold **at = &q->holds;

	while (*at && strcmp((*at)->id, id) != 0)
		at = &(*at)->next;
	return *at ? at : NULL;
}

static queue_hold *hold_add(queue *q, const char *id, int64_t n, int64_t bytes)
{
	queue_hold *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	snprintf(h->id, sizeof(h->id), "%s", id);
	h->n = n;
	h->bytes = bytes;
	h->next = q->holds;
	q->holds = h;
	return h;
}

/* Ends the hold at *at: its first `used` items are gone, the others are at
 * q's head again, and readers waiting get them. *used_out: how many went. */
static int hold_end(engine *e, queue *q, queue_hold **at, int64_t used, int64_t *used_out)
{
	queue_hold *h = *at;
	int64_t removed = h->n, removed_bytes = h->bytes;
	int err = used >= h->n ? store_queue_hold_drop(e->st, h->id)
	                       : store_queue_release(e->st, h->id, used, &removed, &removed_bytes);

	if (err != CM_OK)
		return err;
	items_came(q, h->n - removed);
	q->bytes -= removed_bytes;
	e->queue_bytes -= removed_bytes;
	*at = h->next;
	if (used_out)
		*used_out = removed;
	if (h->n > removed)
		engine__queue_tick(e, q, cm_now_ms());
	free(h);
	return CM_OK;
}

void engine__queue_holds_end(engine *e, const char *lease)
{
	for (queue *q = e->queues; q; q = q->next)
		for (queue_hold **at = &q->holds; *at;)
			if (hold_of((*at)->id, lease)) {
				cm_info("queue %s: %" PRId64 " items back from hold %s: its lease ended", q->id,
				        (*at)->n, (*at)->id);
				if (hold_end(e, q, at, 0, NULL) != CM_OK)
					at = &(*at)->next; /* kept, held: the next start gives them back */
			} else {
				at = &(*at)->next;
			}
}

void engine__load_queue_hold(void *ctx, const char *queue_id, const char *hold, int64_t n, int64_t bytes)
{
	queue *q = queue_find(ctx, queue_id);

	if (q)
		hold_add(q, hold, n, bytes);
}

void engine__queue_holds_settle(engine *e)
{
	for (queue *q = e->queues; q; q = q->next)
		for (queue_hold **at = &q->holds; *at;) {
			char lease[20];
			snprintf(lease, sizeof(lease), "%.*s", (int)strcspn((*at)->id, "."), (*at)->id);
			if (engine__client_lease_known(e, lease) || hold_end(e, q, at, 0, NULL) != CM_OK)
				at = &(*at)->next;
		}
}

typedef struct collected {
	json_t *items;
	int64_t bytes;
} collected;

static int collect_item(void *ctx, const void *value, size_t len)
{
	collected *c = ctx;
	json_t *v = json_loadb(value, len, JSON_DECODE_ANY, NULL);

	c->bytes += (int64_t)len;
	return v && json_array_append_new(c->items, v) == 0 ? CM_OK : CM_ENOMEM;
}

/* Takes up to o->u.queue.max items for the reader o (under a hold of its
 * lease, if it has one; in a "turns" queue, of its share) and readies its
 * answer. others: whether other readers wait behind it. */
static void queue_serve(engine *e, queue *q, op *o, int others)
{
	collected c = {.items = json_array()};
	const char *lease = o->u.queue.lease;
	int64_t n = 0, bytes = 0, max = o->u.queue.max, share = may_take(q, o);
	char hold[48] = "", own[20];

	if (lease[0]) {
		if (!engine__client_lease_known(e, lease)) { /* it ended while this waited */
			o->err = CM_ENOENT;
			snprintf(o->detail, sizeof(o->detail),
			         "no such lease: it ended (deleted, or not renewed in time)");
			json_decref(c.items);
			engine__ready(e, o);
			return;
		}
		if (others && !q->turns)
			max = 1; /* one each, as they come; in turns each has its own */
		cm_id_new('h', own);
		snprintf(hold, sizeof(hold), "%s.%s", lease, own);
	}
	if (max > share)
		max = share; /* none at a wait's end with nothing for it */
	if (max > 0)
		o->err = store_queue_take(e->st, q->id, max, ENGINE_TAKE_BYTES, hold[0] ? hold : NULL, collect_item, &c,
		                          &n, &bytes);
	if (o->err == CM_OK && n && hold[0] && !hold_add(q, hold, n, bytes))
		o->err = CM_ENOMEM;
	if (o->err == CM_OK) {
		q->size -= n;
		if (q->turns)
			turns_took(q->turns, reader_of(o), n);
		if (!hold[0]) {
			q->bytes -= bytes;
			e->queue_bytes -= bytes;
		}
		o->out = json_pack("{s:s, s:o}", "queue", q->id, "items", c.items);
		if (n && hold[0])
			json_object_set_new(o->out, "hold", json_string(hold));
	} else {
		json_decref(c.items);
	}
	engine__ready(e, o);
}

/* Serves waiting readers in arrival order while there are items for
 * them, and answers those whose wait is over with nothing. */
void engine__queue_tick(engine *e, queue *q, int64_t now)
{
	waitlist still = {0};
	op *o;

	while ((o = waitlist_take(&q->getters))) {
		if (may_take(q, o) > 0 || now >= o->u.queue.deadline)
			queue_serve(e, q, o, q->getters.head || still.head);
		else
			waitlist_add(&still, o);
	}
	q->getters = still;
}

/* An end of a pipe, for a put (send) or a get (receive), to the queue of
 * its direction, into o->u.queue.qid: in a duplex pipe "<pipe>.E" carries what end E
 * sends; a simplex pipe has "<pipe>.0" only, end 0 sending, end 1 receiving.
 * Used by HTTP and by code inside workers alike. */
static int resolve_pipe(engine *e, op *o, const char *pipe, int end)
{
	int sending = o->kind == OP_QUEUE_PUT;
	char probe[64];
	int duplex;

	snprintf(probe, sizeof(probe), "%.50s.0", pipe);
	if (!queue_find(e, probe)) {
		snprintf(o->detail, sizeof(o->detail), "no such pipe");
		return CM_ENOENT;
	}
	snprintf(probe, sizeof(probe), "%.50s.1", pipe);
	duplex = queue_find(e, probe) != NULL;
	if (end < 0 || end > 1 || (!duplex && end != (sending ? 0 : 1))) {
		snprintf(o->detail, sizeof(o->detail), "end %d of %s pipe %.40s cannot %s", end,
		         duplex ? "duplex" : "simplex", pipe, sending ? "send" : "receive");
		return CM_ECLOSED;
	}
	snprintf(o->u.queue.qid, sizeof(o->u.queue.qid), "%.50s.%d", pipe, duplex ? (sending ? end : 1 - end) : 0);
	o->id = o->u.queue.qid;
	return CM_OK;
}

/* A worker's queue call: checks who asks, resolves a pipe end to the queue
 * of its direction, and checks the items are JSON. Returns CM_OK, or an
 * error with o->detail set. */
static int resolve_pipe(engine *e, op *o, const char *pipe, int end);

static int resolve_queue_call(engine *e, op *o)
{
	const engine_queue_msg *m = o->u.queue.call;
	pool *p = engine__pool_find(e, m->pool_id);
	worker *w = NULL;
	int sending = m->put;

	/* The hub checked the caller's secret and that it serves this pool: a
	 * pool's worker, or a process running a function (its own id as pool). */
	if (p)
		for (w = p->workers; w && strcmp(w->id, m->worker_id) != 0; w = w->next)
			;
	if (!w && !engine__process_may_call(e, m->worker_id, m->pool_id)) {
		snprintf(o->detail, sizeof(o->detail), "unknown worker or pool");
		return CM_EINVAL;
	}
	if (m->pipe_end >= 0) {
		int err = resolve_pipe(e, o, m->queue, m->pipe_end);
		if (err != CM_OK)
			return err;
	} else {
		snprintf(o->u.queue.qid, sizeof(o->u.queue.qid), "%.60s", m->queue);
		o->id = o->u.queue.qid;
	}
	if (sending) {
		o->u.queue.owned_items = calloc(m->nitems + 1, sizeof(char *));
		o->u.queue.owned_lens = calloc(m->nitems + 1, sizeof(size_t));
		if (!o->u.queue.owned_items || !o->u.queue.owned_lens)
			return CM_ENOMEM;
		for (size_t i = 0; i < m->nitems; i++) {
			json_t *v = json_loadb((const char *)m->items[i], m->lens[i], JSON_DECODE_ANY, NULL);
			if (!v || !(o->u.queue.owned_items[i] = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY))) {
				json_decref(v);
				snprintf(o->detail, sizeof(o->detail), "item %zu is not JSON", i);
				return CM_EINVAL;
			}
			json_decref(v);
			o->u.queue.owned_lens[i] = strlen(o->u.queue.owned_items[i]);
			o->u.queue.nitems = i + 1;
		}
		o->u.queue.items = o->u.queue.owned_items;
		o->u.queue.lens = o->u.queue.owned_lens;
	}
	return CM_OK;
}

void engine__handle_queue(engine *e, op *o)
{
	queue *q;
	char id[20];

	if ((o->u.queue.call && (o->err = resolve_queue_call(e, o)) != CM_OK) ||
	    (o->u.queue.pipe && (o->err = resolve_pipe(e, o, o->u.queue.pipe, o->u.queue.pipe_end)) != CM_OK)) {
		engine__ready(e, o);
		return;
	}
	q = o->kind != OP_QUEUE_CREATE ? queue_find(e, o->id) : NULL;
	if (o->kind != OP_QUEUE_CREATE && !q) {
		o->err = CM_ENOENT;
		engine__ready(e, o);
		return;
	}
	switch (o->kind) {
	case OP_QUEUE_CREATE: {
		/* A queue, or a pipe: one direction per queue, "<pipe>.0" and
		 * (duplex) "<pipe>.1". */
		int64_t now = cm_wall_ms();
		int pipe = strcmp(o->u.queue.kind, "queue") != 0 && strcmp(o->u.queue.kind, "turns") != 0;
		int ends = strcmp(o->u.queue.kind, "duplex") == 0 ? 2 : 1;
		const char *lease = o->u.queue.lease;
		if (engine__client_lease_missing(e, lease, o) ||
		    (o->err = engine__quota_queue(e, pipe, o->detail, sizeof(o->detail))) != CM_OK)
			break;
		cm_id_new(pipe ? 'x' : 'q', id);
		if (!pipe) {
			if ((o->err = store_queue_insert(e->st, id, o->u.queue.kind, now, lease)) == CM_OK) {
				if ((q = queue_add(e, id, o->u.queue.kind, now, 0, lease)))
					o->out = engine__queue_json(q);
				else
					o->err = CM_ENOMEM;
			}
			break;
		}
		json_t *dirs = json_array();
		for (int i = 0; i < ends && o->err == CM_OK; i++) {
			char qid[48];
			snprintf(qid, sizeof(qid), "%s.%d", id, i);
			if ((o->err = store_queue_insert(e->st, qid, o->u.queue.kind, now, lease)) == CM_OK &&
			    (q = queue_add(e, qid, o->u.queue.kind, now, 0, lease)))
				json_array_append_new(dirs, engine__queue_json(q));
		}
		o->out = json_pack("{s:s, s:b, s:o}", "id", id, "duplex", ends == 2, "directions", dirs);
		break;
	}
	case OP_QUEUE_INFO:
		if (o->u.queue.call) /* a task's size call: a number, no view */
			o->u.queue.size = q->size;
		else
			o->out = engine__queue_json(q);
		break;
	case OP_QUEUE_DELETE: {
		char gone[sizeof(q->id)];
		snprintf(gone, sizeof(gone), "%s", q->id);
		if ((o->err = queue_remove(e, q)) == CM_OK)
			o->out = json_pack("{s:s, s:b}", "id", gone, "deleted", 1);
		break;
	}
	case OP_QUEUE_PUT: {
		int64_t bytes = 0;
		for (size_t i = 0; i < o->u.queue.nitems; i++)
			bytes += (int64_t)o->u.queue.lens[i];
		if ((o->err = engine__quota_queue_bytes(e, bytes, o->detail, sizeof(o->detail))) != CM_OK ||
		    (o->err = store_queue_put(e->st, q->id, o->u.queue.nitems, o->u.queue.items, o->u.queue.lens)) !=
		            CM_OK)
			break;
		items_came(q, (int64_t)o->u.queue.nitems);
		q->bytes += bytes;
		e->queue_bytes += bytes;
		o->out = json_pack("{s:s, s:I, s:I}", "queue", q->id, "put", (json_int_t)o->u.queue.nitems, "size",
		                   (json_int_t)q->size);
		engine__queue_tick(e, q, cm_now_ms()); /* readers waiting get these now */
		break;
	}
	case OP_QUEUE_GET: {
		/* The caller used up its last hold: gone before it takes more (a
		 * hold not found was released by a first try of this request). */
		queue_hold **at = o->u.queue.hold[0] ? hold_find(q, o->u.queue.hold) : NULL;
		if (o->u.queue.hold[0] && !hold_of(o->u.queue.hold, o->u.queue.lease)) {
			o->err = CM_EINVAL;
			snprintf(o->detail, sizeof(o->detail), "used: hold %.47s is not one of lease %.19s's",
			         o->u.queue.hold, o->u.queue.lease);
			break;
		}
		if (at && (o->err = hold_end(e, q, at, INT64_MAX, NULL)) != CM_OK)
			break;
		if (q->turns && (o->err = turns_join(q->turns, reader_of(o))) != CM_OK) {
			if (o->err == CM_EQUOTA)
				snprintf(o->detail, sizeof(o->detail),
				         "queue %s has %d readers, the most a queue dealt in turns has", q->id,
				         TURNS_READERS_MAX);
			break;
		}
		/* In turns, readers waiting have nothing of theirs: none is passed. */
		if (may_take(q, o) > 0 && (q->turns || !q->getters.head)) {
			queue_serve(e, q, o, q->getters.head != NULL);
			return;
		}
		waitlist_add(&q->getters, o); /* behind the readers already waiting */
		return;
	}
	case OP_QUEUE_RELEASE: {
		queue_hold **at = hold_find(q, o->u.queue.hold);
		int64_t n, used = 0;
		if (!at) {
			o->err = CM_ENOENT;
			snprintf(o->detail, sizeof(o->detail), "no such hold (released already, or its lease ended)");
			break;
		}
		if (o->u.queue.used > (n = (*at)->n)) {
			o->err = CM_EINVAL;
			snprintf(o->detail, sizeof(o->detail), "used: the hold has %" PRId64 " items", n);
			break;
		}
		if ((o->err = hold_end(e, q, at, o->u.queue.used, &used)) == CM_OK)
			o->out = json_pack("{s:s, s:s, s:I, s:I, s:I}", "queue", q->id, "hold", o->u.queue.hold, "used",
			                   (json_int_t)used, "returned", (json_int_t)(n - used), "size",
			                   (json_int_t)q->size);
		break;
	}
	default: break;
	}
	engine__ready(e, o);
}

/* Answers a worker's queue call through the hub. */
void engine__answer_queue_call(engine *e, op *o, int committed)
{
	json_t *items = json_object_get(o->out, "items");
	size_t n = json_array_size(items);
	char **texts = NULL;
	size_t *lens = NULL;
	engine_queue_reply reply = {.ok = committed && o->err == CM_OK};

	reply.error = reply.ok ? "" : o->detail[0] ? o->detail : committed ? cm_strerror(o->err) : "not recorded";
	reply.size = o->u.queue.size;
	if (reply.ok && n && (texts = calloc(n, sizeof(*texts))) && (lens = calloc(n, sizeof(*lens)))) {
		for (size_t i = 0; i < n; i++) {
			texts[i] = json_dumps(json_array_get(items, i), JSON_COMPACT | JSON_ENCODE_ANY);
			lens[i] = texts[i] ? strlen(texts[i]) : 0;
		}
		reply.items = texts;
		reply.lens = lens;
		reply.nitems = n;
	}
	e->link.queue_reply(e->link.ctx, o->slot, &reply);
	for (size_t i = 0; texts && i < n; i++)
		free(texts[i]);
	free(texts);
	free(lens);
	for (size_t i = 0; o->u.queue.owned_items && i < o->u.queue.nitems; i++)
		free(o->u.queue.owned_items[i]);
	free(o->u.queue.owned_items);
	free(o->u.queue.owned_lens);
	json_decref(o->out);
	free(o);
}

void engine__load_queue(void *ctx, const char *id, const char *kind, int64_t created_ms, int64_t size, int64_t bytes,
                        const char *lease)
{
	engine *e = ctx;
	queue *q = queue_add(e, id, kind, created_ms, size, lease);

	if (q) {
		q->bytes = bytes;
		e->queue_bytes += bytes;
	}
}

void engine__queues_clear(engine *e)
{
	while (e->queues) {
		queue *q = e->queues;
		e->queues = q->next;
		waitlist_drop_all(e, &q->getters);
		queue_free(q);
	}
	memset(e->queue_ids, 0, sizeof(e->queue_ids));
	e->queue_bytes = 0;
}

void engine__queues_of_lease_end(engine *e, const char *id)
{
	/* One walk, each removed where it is found: finding each from the
	 * list's head again walked a program's thousand queues a thousand
	 * times. */
	for (queue **at = &e->queues; *at;) {
		queue *q = *at;
		if (strcmp(q->lease, id) != 0) {
			at = &q->next;
			continue;
		}
		cm_info("%s %s deleted: its client's lease %s ended", engine__queue_is_pipe(q) ? "pipe" : "queue",
		        q->id, id);
		if (queue_remove_at(e, at) != CM_OK) /* the cycle's commit fails, which reloads */
			at = &q->next;
	}
}

void engine__queue_reader_gone(engine *e, const char *reader)
{
	for (queue *q = e->queues; q; q = q->next)
		if (q->turns && turns_leave(q->turns, reader))
			engine__queue_tick(e, q, cm_now_ms()); /* its share is theirs now */
}

void engine__queues_quiesce(engine *e)
{
	for (queue *q = e->queues; q; q = q->next)
		waitlist_answer_all(e, &q->getters, CM_ESHUTDOWN, "the gateway is shutting down");
}

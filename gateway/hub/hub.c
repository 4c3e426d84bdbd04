/*
 * The hub: a listener and the connections workers dial, each carrying one
 * exchange at a time (proto/wire.h), on sockets of its own (poll.c, whose
 * thread reads every connection), in TLS (tls.c) for tls+tcp://. A
 * connection is an explicit state machine driven by its reads and sends
 * finishing (on hub_poll's thread) and by the engine thread's answer
 * (engine_link):
 *
 *   (HANDSHAKE, in TLS) --> HEAD --sender authenticated--> BODY --> WAIT
 *                            ^                                       |
 *                            +------------ sent ---------- SEND <----+
 *                                                (engine: batch / queue_reply)
 *
 * HEAD reads the length and the frame's header in one go (a small frame
 * whole).
 *
 * A frame that cannot be read is answered with a refusal: the connection
 * goes on when the whole frame was read, and is closed when what followed
 * its header was not (an unknown sender, a frame over the cap). The engine's
 * drop (a pull of a worker that is gone) closes it.
 *
 * What a peer that knows no secret can make the hub hold is small: a
 * frame's header is read first (PROTO_HEADER_MAX bytes at most) and its sender
 * checked before the rest is allocated, and a connection must bring its
 * first frame within FIRST_FRAME_MS. Any frame, once begun, must arrive
 * within FRAME_MS. One address holds at most per_address connections that
 * have not named a worker yet, and opens at most per_address a second
 * (address_limits.h). At most conns_max connections are open, and the frames
 * held in memory at once (read, decoded, waiting for the engine) are within
 * HELD_BYTES_MAX: past it, a connection is closed and its worker, which
 * keeps its results, asks again.
 *
 * All protobuf lives here: a frame is decoded into the connection's arena,
 * handed to the engine as plain structs pointing into it, and freed once
 * the engine answered; the answer is encoded here.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/hub/address_limits.h"
#include "gateway/hub/hub.h"
#include "gateway/hub/poll.h"
#include "gateway/hub/tls.h"
#include "gateway/result_check.h"
#include "proto/frame.h"
#include "proto/wire.h"

/* Connections at most: a quarter of the open-file limit, which the HTTP
 * side leaves to the hub (http/api.c), and never more than this. */
#define CONNS_MAX 4096
#define FIRST_FRAME_MS 10000
#define FRAME_MS 60000
#define HELD_BYTES_MAX ((size_t)1 << 30)
#define BLOB_PIECE ((size_t)1 << 20) /* of a code package or a value, a frame */

typedef enum slot_state { SLOT_HANDSHAKE, SLOT_HEAD, SLOT_BODY, SLOT_WAIT, SLOT_SEND } slot_state;

/* One worker's connection (the engine's hub_slot: what it answers). */
struct hub_slot {
	hub *hub;
	int fd;
	hub_tls_conn *tls; /* a tls+tcp:// hub's */
	/* Held by whoever arms the connection, across the arming, and by
	 * hub_poll's thread as it takes it: so the thread also sees all the
	 * arming one wrote (the kernel's epoll orders them, but a mutex is what
	 * ThreadSanitizer sees). Contended only when the event comes during
	 * its arming. */
	pthread_mutex_t mu;
	int polled; /* fd is in hub_poll's set */
	/* While hub_poll's thread may take the connection (it is armed): when
	 * its wait ends (INT64_MAX: never); 0 while another holds it. */
	int64_t armed_until;
	uint8_t *want; /* the read armed for */
	size_t want_len;
	slot_state state;
	int authenticated; /* a frame of it named a known worker and its secret */
	/* Where it came from (has_addr: a TCP peer), and whether it has yet
	 * to name a worker (stranger; under hub.mu, which counts them). */
	hub_address addr;
	int has_addr, stranger;
	int close_after_send; /* what followed a refused header was never read */
	int64_t deadline; /* of the frame being read */
	char worker[256]; /* the worker the frame's header named */
	/* A value it is storing (BlobPut), piece by piece: */
	blob_upload *upload; /* NULL: none, or one stored already (put_exists) */
	char put_sha[CM_SHA256_HEX + 1];
	uint64_t put_at; /* the next piece's offset */
	int put_exists; /* stored already: its pieces are acknowledged, not kept */
	char pool[20]; /* ... its pool */
	char code[65]; /* ... and the code package its pool runs ("": none) */
	/* HEAD: the length and the header (or all of a small frame) */
	uint8_t head[WIRE_PREFIX + PROTO_HEADER_MAX];
	size_t head_got;
	/* BODY: the whole frame, once its sender is known */
	uint8_t *frame;
	size_t frame_len, frame_got;
	size_t held; /* its part of hub.held */
	/* sending: the answer, after its prefix */
	uint8_t out_prefix[WIRE_PREFIX];
	uint8_t *out;
	struct iovec iov[2];
	unsigned niov;
	/* while the engine holds it (WAIT): the frame it was given, decoded
	 * into the arena (one block a frame, not a few allocations a result;
	 * freed whole when the engine has answered) */
	ProtobufCMessage *msg;
	proto_arena arena;
	engine_pull_msg pull;
	engine_result *results;
	engine_queue_msg call;
	const uint8_t **items;
	size_t *lens;
	struct hub_slot *prev, *next;
};

struct hub {
	engine *engine;
	credentials *creds;
	blob_store *code, *values;
	/* What value grants are made with: random, for this run of the hub (a
	 * grant from before a restart is refused, and its task runs again). */
	char grant_key[CM_SHA256_HEX + 1];
	hub_poll *poll;
	hub_tls *tls; /* tls+tcp:// */
	pthread_mutex_t mu;
	/* While stopping: frames are refused without reaching the engine, and
	 * hub_refuse_frames waits until no callback is inside the engine. */
	pthread_cond_t idle;
	int refusing;
	int in_engine; /* callbacks handing a frame to the engine now */
	int closing; /* hub_free owns every connection from here on */
	hub_slot *conns; /* open connections */
	/* What a flood of strangers would log a line each for: a line a
	 * second at most, with a count. */
	cm_log_limit refused_log, full_log, handshake_log, stranger_log;
	int nconns, conns_max;
	int per_address; /* --hub-per-address */
	hub_pace *pace; /* new connections an address, under mu */
	size_t held; /* bytes of frames read or decoded, not yet answered */
};

static void slot_close(hub_slot *s);

/* Gives an own socket's connection to hub_poll's thread until its event
 * (out: writable, else readable) or until (INT64_MAX: no end). */
static void arm(hub_slot *s, int out, int64_t until)
{
	int err;

	pthread_mutex_lock(&s->mu);
	s->armed_until = until;
	if ((err = hub_poll_arm(s->hub->poll, s->fd, s, out, &s->polled)) != 0)
		s->armed_until = 0;
	pthread_mutex_unlock(&s->mu);
	if (err)
		slot_close(s);
}

/* ---- reading ------------------------------------------------------------ */

/* Arms the connection for the read it wants (out: TLS must write first). */
static void arm_read(hub_slot *s, int out)
{
	int idle = s->state == SLOT_HEAD && s->head_got == 0 && s->authenticated; /* a worker between frames */

	arm(s, out, idle ? INT64_MAX : s->deadline);
}

static void read_more(hub_slot *s, uint8_t *into, size_t len)
{
	s->want = into;
	s->want_len = len;
	/* What TLS decrypted already no poll tells of: armed for writable,
	 * which a socket that is not sending is at once, the read takes it. */
	arm_read(s, s->tls && hub_tls_pending(s->tls));
}

/* Reads on in HEAD: as much as the buffer takes, never past the frame. */
static void read_head(hub_slot *s)
{
	size_t room = sizeof(s->head) - s->head_got;

	if (s->head_got >= WIRE_PREFIX && WIRE_PREFIX + s->frame_len - s->head_got < room)
		room = WIRE_PREFIX + s->frame_len - s->head_got;
	read_more(s, s->head + s->head_got, room);
}

/* Waits for the next frame: a connection that never brought one, for
 * FIRST_FRAME_MS; a worker's, as long as it wants. */
static void next_frame(hub_slot *s)
{
	s->state = SLOT_HEAD;
	s->head_got = 0;
	s->deadline = cm_now_ms() + FIRST_FRAME_MS;
	read_head(s);
}

/* Frees the frame and what the engine held of it. */
static void slot_release(hub_slot *s)
{
	proto_arena_fini(&s->arena); /* the message with it */
	free(s->results);
	free(s->items);
	free(s->lens);
	free(s->frame);
	s->msg = NULL;
	s->results = NULL;
	s->items = NULL;
	s->lens = NULL;
	s->frame = NULL;
	if (s->held) {
		pthread_mutex_lock(&s->hub->mu);
		s->hub->held -= s->held;
		pthread_mutex_unlock(&s->hub->mu);
		s->held = 0;
	}
}

/* ---- sending ------------------------------------------------------------ */

/* Sends what is left of the answer, on the calling thread (the engine's,
 * for an answer) while the socket takes it; the rest once it has room, on
 * hub_poll's. Returns whether all went. */
static int send_on_socket(hub_slot *s)
{
	while (s->niov) {
		ssize_t n;
		if (s->tls) {
			n = hub_tls_writev(s->tls, s->iov, s->niov);
			if (n == HUB_TLS_WANT_WRITE || n == HUB_TLS_WANT_READ) {
				arm(s, n == HUB_TLS_WANT_WRITE, cm_now_ms() + FRAME_MS);
				return 0;
			}
		} else {
			struct msghdr m = {.msg_iov = s->iov, .msg_iovlen = s->niov};
			n = sendmsg(s->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				arm(s, 1, cm_now_ms() + FRAME_MS);
				return 0;
			}
		}
		if (n < 0) {
			slot_close(s);
			return 0;
		}
		wire_iov_advance(s->iov, &s->niov, (size_t)n);
	}
	return 1;
}

/* Sends what is left of the answer; once all went, the next frame is read
 * (or the connection ends, after a refusal that ends it). */
static void send_more(hub_slot *s)
{
	if (!send_on_socket(s))
		return;
	free(s->out);
	s->out = NULL;
	if (s->close_after_send)
		slot_close(s);
	else
		next_frame(s);
}

/* Sends frame (taken) as the answer to the connection's exchange. */
static void send_frame(hub_slot *s, uint8_t *frame, size_t len)
{
	s->out = frame;
	wire_prefix_put(s->out_prefix, len);
	s->iov[0] = (struct iovec){.iov_base = s->out_prefix, .iov_len = WIRE_PREFIX};
	s->iov[1] = (struct iovec){.iov_base = frame, .iov_len = len};
	s->niov = 2;
	s->state = SLOT_SEND;
	send_more(s);
}

static void send_message(hub_slot *s, proto_type type, const ProtobufCMessage *m)
{
	uint8_t *frame;
	size_t len;

	if (proto_frame_encode(type, NULL, NULL, m, &frame, &len) == CM_OK)
		send_frame(s, frame, len);
	else
		slot_close(s); /* no answer: the worker dials again and asks again */
}

static void refuse(hub_slot *s, const char *why)
{
	Strand__Batch b = STRAND__BATCH__INIT;

	b.status = STRAND__BATCH__STATUS__REFUSED;
	b.error = (char *)why;
	send_message(s, PROTO_BATCH, &b.base);
}

/* A refusal, after which the connection ends: the rest of the frame was
 * not read, so nothing after it could be. */
static void refuse_and_close(hub_slot *s, const char *why)
{
	cm_log_limited(&s->hub->refused_log, CM_LOG_WARN, "hub: refused a connection: %s", why);
	s->close_after_send = 1;
	refuse(s, why);
}

/* ---- the engine's answers (engine_link), on the engine's thread --------- */

/* The grant that lets worker fetch the value named sha (what: "read"), or
 * remove it ("take": a queue item's, read once). */
static void grant_for(const hub *h, const char *what, const char *worker, const char *sha, char out[CM_SHA256_HEX + 1])
{
	char text[256 + 1 + CM_SHA256_HEX + 16];
	int n = strcmp(what, "read") == 0 ? snprintf(text, sizeof(text), "%s %s", worker, sha)
	                                  : snprintf(text, sizeof(text), "%s %s %s", what, worker, sha);

	cm_hmac_sha256_hex(h->grant_key, CM_SHA256_HEX, text, (size_t)n, out);
}

static void value_grant(const hub *h, const char *worker, const char *sha, char out[CM_SHA256_HEX + 1])
{
	grant_for(h, "read", worker, sha, out);
}

/* Whether grant (its text) is what for worker and sha. */
static int grant_valid(const hub *h, const char *what, const char *worker, const char *sha, const char *grant)
{
	char want[CM_SHA256_HEX + 1];

	if (!cm_sha256_name_valid(sha) || !grant || strlen(grant) != CM_SHA256_HEX)
		return 0;
	grant_for(h, what, worker, sha, want);
	return cm_secret_equal(want, grant, CM_SHA256_HEX);
}

static void free_grants(char **grants, size_t n)
{
	while (n)
		free(grants[--n]);
	free(grants);
}

/* Adds "SHA256 GRANT" for sha to *out (*n of them). CM_OK or CM_ENOMEM
 * (*out freed). */
static int add_grant(const hub_slot *s, const char *sha, char ***out, size_t *n)
{
	char grant[CM_SHA256_HEX + 1];
	char **more = realloc(*out, (*n + 1) * sizeof(**out));

	if (more)
		*out = more;
	if (!more || !((*out)[*n] = malloc(2 * CM_SHA256_HEX + 2))) {
		free_grants(*out, *n);
		*out = NULL;
		*n = 0;
		return CM_ENOMEM;
	}
	value_grant(s->hub, s->worker, sha, grant);
	snprintf((*out)[(*n)++], 2 * CM_SHA256_HEX + 2, "%s %s", sha, grant);
	return CM_OK;
}

/* A manager call's argument, {"method": M, "args": [ARG]}: the value its
 * ARG names ({"$value":"SHA256"}: a call's value too large to go inline),
 * into sha. 0 when it names none. */
static int call_names_value(const char *arg, size_t len, char sha[CM_SHA256_HEX + 1])
{
	static const char head[] = "{\"$value\":\"";
	const char *at = memmem(arg, len, head, sizeof(head) - 1);

	return at && (size_t)(arg + len - at) >= CM_VALUE_REF_LEN && cm_value_ref(at, CM_VALUE_REF_LEN, sha);
}

/* An argument that holds references to values (strand.put's), {"$refs":
 * ["SHA256", ...], "arg": ARG} (docs/tasks.md): a grant for each name it
 * lists (up to REFS_MAX), and for the value ARG names if it names one.
 * CM_OK or CM_ENOMEM. */
#define REFS_MAX 256
static int refs_grants(const hub_slot *s, const char *arg, size_t len, char ***out, size_t *n)
{
	static const char head[] = "{\"$refs\":[\"", tail[] = "],\"arg\":";
	char sha[CM_SHA256_HEX + 1];
	const char *p = arg + sizeof(head) - 1, *end = arg + len;

	if (len < sizeof(head) - 1 || memcmp(arg, head, sizeof(head) - 1) != 0)
		return CM_OK;
	for (int k = 0; k < REFS_MAX && end - p > CM_SHA256_HEX && p[CM_SHA256_HEX] == '"'; k++) {
		memcpy(sha, p, CM_SHA256_HEX);
		sha[CM_SHA256_HEX] = '\0';
		if (!cm_sha256_name_valid(sha))
			return CM_OK;
		if (add_grant(s, sha, out, n) != CM_OK)
			return CM_ENOMEM;
		p += CM_SHA256_HEX + 1;
		if (end - p >= 2 && p[0] == ',' && p[1] == '"')
			p += 2;
		else
			break;
	}
	/* ARG naming a value: what is left is exactly the reference and a '}'. */
	if ((size_t)(end - p) == sizeof(tail) - 1 + CM_VALUE_REF_LEN + 1 && memcmp(p, tail, sizeof(tail) - 1) == 0 &&
	    cm_value_ref(p + sizeof(tail) - 1, CM_VALUE_REF_LEN, sha) && end[-1] == '}')
		return add_grant(s, sha, out, n);
	return CM_OK;
}

/* "SHA256 GRANT" for each argument of the batch that names a value or
 * holds references to values, and each manager call whose argument names
 * one (*out, *n; none for most batches, at the cost of a length compare
 * and a byte's a task). CM_OK or CM_ENOMEM. */
static int value_grants(const hub_slot *s, const engine_batch *eb, char ***out, size_t *n)
{
	char sha[CM_SHA256_HEX + 1];
	const char *arg = (const char *)eb->args;
	size_t i = 0;

	*out = NULL;
	*n = 0;
	for (size_t r = 0; r < eb->nruns; r++) {
		int calls = strcmp(eb->runs[r].function, "manager") == 0;
		for (size_t end = i + eb->runs[r].count; i < end && i < eb->ntasks; arg += eb->arg_lens[i++]) {
			size_t len = eb->arg_lens[i];
			int named = len == CM_VALUE_REF_LEN ? cm_value_ref(arg, len, sha)
			            : calls                 ? call_names_value(arg, len, sha)
			                                    : 0;
			if (named && add_grant(s, sha, out, n) != CM_OK)
				return CM_ENOMEM;
			if (!named && len > 2 && arg[0] == '{' && arg[2] == '$' &&
			    refs_grants(s, arg, len, out, n) != CM_OK)
				return CM_ENOMEM;
		}
	}
	return CM_OK;
}

static void on_batch(void *ctx, hub_slot *s, const engine_batch *eb)
{
	static const Strand__Batch__Status status[] = {
	        [ENGINE_BATCH_OK] = STRAND__BATCH__STATUS__OK,
	        [ENGINE_BATCH_REFUSED] = STRAND__BATCH__STATUS__REFUSED,
	        [ENGINE_BATCH_STOP] = STRAND__BATCH__STATUS__STOP,
	        [ENGINE_BATCH_RETRY] = STRAND__BATCH__STATUS__RETRY,
	};
	size_t n = eb->nruns, ncontexts = 0, ngrants = 0;
	Strand__Batch b = STRAND__BATCH__INIT;
	char **grants = NULL;
	/* A run and at most one context a run: a context goes where a run
	 * starts unless the last one added is the same, so once a job, or a
	 * few times when requeued ranges interleave. */
	void *block = n ? malloc(n * (sizeof(Strand__TaskRun) + sizeof(Strand__TaskRun *) + sizeof(Strand__Context) +
	                              sizeof(Strand__Context *)))
	                : NULL;

	(void)ctx;
	slot_release(s);
	if ((n && !block) || value_grants(s, eb, &grants, &ngrants) != CM_OK) {
		free(block);
		slot_close(s); /* no answer: the worker asks again, its tasks come back by resync */
		return;
	}
	Strand__TaskRun *runs = block;
	Strand__TaskRun **run_ptrs = (Strand__TaskRun **)(runs + n);
	Strand__Context *contexts = (Strand__Context *)(run_ptrs + n);
	Strand__Context **context_ptrs = (Strand__Context **)(contexts + n);
	for (size_t i = 0; i < n; i++) {
		const engine_run *er = &eb->runs[i];
		Strand__TaskRun *r = &runs[i];
		strand__task_run__init(r);
		r->function = (char *)er->function;
		r->command = (char **)er->command;
		r->n_command = er->ncommand;
		r->timeout_ms = er->timeout_ms;
		r->context = er->context_key;
		r->ahead = er->ahead != 0;
		r->count = (uint32_t)er->count;
		run_ptrs[i] = r;
		if (er->context_key && (!ncontexts || contexts[ncontexts - 1].key != er->context_key)) {
			Strand__Context *c = &contexts[ncontexts];
			strand__context__init(c);
			c->key = er->context_key;
			c->value.data = (uint8_t *)er->context;
			c->value.len = er->context_len;
			context_ptrs[ncontexts++] = c;
		}
	}
	b.status = status[eb->status];
	b.error = (char *)(eb->error ? eb->error : "");
	b.lease_ms = eb->lease_ms;
	b.list_held = eb->list_held;
	b.parked_us = eb->parked_us;
	b.queue_empty = eb->queue_empty;
	b.contexts = context_ptrs;
	b.n_contexts = ncontexts;
	b.runs = run_ptrs;
	b.n_runs = n;
	/* The engine's columns as they are. */
	b.task_ids = (uint64_t *)eb->ids;
	b.n_task_ids = eb->ntasks;
	b.attempts = (uint32_t *)eb->attempts;
	b.n_attempts = eb->ntasks;
	b.arg_lens = (uint32_t *)eb->arg_lens;
	b.n_arg_lens = eb->ntasks;
	b.args.data = (uint8_t *)eb->args;
	b.args.len = eb->args_len;
	b.value_grants = grants;
	b.n_value_grants = ngrants;
	send_message(s, PROTO_BATCH, &b.base);
	free(block);
	free_grants(grants, ngrants);
}

static void on_queue_reply(void *ctx, hub_slot *s, const engine_queue_reply *r)
{
	Strand__QueueReply reply = STRAND__QUEUE_REPLY__INIT;
	ProtobufCBinaryData *bins = r->nitems ? calloc(r->nitems, sizeof(*bins)) : NULL;
	/* "SHA GRANT TAKE" for each item that names a value (a length compare
	 * for the others). */
	char(*grants)[3 * CM_SHA256_HEX + 3] = NULL;
	char **named = NULL;
	size_t ngrants = 0;

	(void)ctx;
	slot_release(s);
	reply.ok = r->ok;
	reply.error = (char *)(r->error ? r->error : "");
	reply.size = r->size > 0 ? (uint64_t)r->size : 0;
	for (size_t i = 0; bins && i < r->nitems; i++) {
		char sha[CM_SHA256_HEX + 1], read[CM_SHA256_HEX + 1], take[CM_SHA256_HEX + 1];
		bins[i].data = (uint8_t *)r->items[i];
		bins[i].len = r->lens[i];
		if (r->lens[i] != CM_VALUE_REF_LEN || !cm_value_ref(r->items[i], r->lens[i], sha))
			continue;
		if (!grants &&
		    (!(grants = calloc(r->nitems, sizeof(*grants))) || !(named = calloc(r->nitems, sizeof(*named)))))
			break; /* out of memory: the item cannot be read, and says so */
		value_grant(s->hub, s->worker, sha, read);
		grant_for(s->hub, "take", s->worker, sha, take);
		snprintf(grants[ngrants], sizeof(grants[ngrants]), "%s %s %s", sha, read, take);
		named[ngrants] = grants[ngrants];
		ngrants++;
	}
	reply.items = bins;
	reply.n_items = bins ? r->nitems : 0;
	reply.value_grants = named;
	reply.n_value_grants = ngrants;
	send_message(s, PROTO_QUEUE_REPLY, &reply.base);
	free(bins);
	free(grants);
	free(named);
}

/* The pull of a worker that is gone: its connection ends with it. */
static void on_drop(void *ctx, hub_slot *s)
{
	(void)ctx;
	slot_close(s);
}

/* A result that is not readable JSON (or an error that is not UTF-8)
 * becomes a failed task saying so, here on the hub's thread rather than on
 * the engine's; the reason goes in the frame's arena. */
static void check_result(hub_slot *s, engine_result *r)
{
	char why[200];
	uint8_t *copy;
	size_t n;

	if (result_check(r->ok, r->value, r->len, why, sizeof(why)))
		return;
	n = strlen(why);
	if (!(copy = proto_arena_alloc(&s->arena, n)))
		n = 0;
	else
		memcpy(copy, why, n);
	r->value = copy;
	r->len = n;
	r->ok = 0; /* a lost attempt stays lost: only its words are replaced */
}

/* Whether grants ("SHA256 GRANT" each) hold the sender's grant to read
 * the value sha: a worker names (in a queue item, a manager call's
 * argument) only what it may read itself. */
static int grant_given(const hub_slot *s, const char *sha, char *const *grants, size_t n)
{
	for (size_t g = 0; g < n; g++)
		if (strlen(grants[g]) == 2 * CM_SHA256_HEX + 1 && strncmp(grants[g], sha, CM_SHA256_HEX) == 0 &&
		    grant_valid(s->hub, "read", s->worker, sha, grants[g] + CM_SHA256_HEX + 1))
			return 1;
	return 0;
}

/* Whether each item of a put that names a value ({"$value":"SHA256"})
 * comes with that grant (QueueCall.value_grants). */
static int items_vouched(const hub_slot *s, const Strand__QueueCall *c)
{
	char sha[CM_SHA256_HEX + 1];

	for (size_t i = 0; i < c->n_items; i++)
		if (c->items[i].len == CM_VALUE_REF_LEN &&
		    cm_value_ref((const char *)c->items[i].data, c->items[i].len, sha) &&
		    !grant_given(s, sha, c->value_grants, c->n_value_grants))
			return 0;
	return 1;
}

/* The engine's view of a decoded pull or queue call: plain structs that
 * point into the message the slot keeps (results checked on the way). */
static int describe(hub_slot *s, proto_type type)
{
	if (type == PROTO_QUEUE_CALL) {
		Strand__QueueCall *c = (Strand__QueueCall *)s->msg;
		if (c->op == STRAND__QUEUE_CALL__OP__PUT && !items_vouched(s, c))
			return CM_EPERM;
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
		                             .size = c->op == STRAND__QUEUE_CALL__OP__SIZE,
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
	size_t n = p->n_result_ids, at = 0;
	if (n && !(s->results = malloc(n * sizeof(*s->results)))) /* each one set below */
		return CM_ENOMEM;
	/* The columns agree (proto_frame_decode_in checked them). */
	for (size_t i = 0; i < n; i++) {
		engine_result *r = &s->results[i];
		*r = (engine_result){.task_id = p->result_ids[i],
		                     .ok = p->outcomes[i] == STRAND__OUTCOME__OK,
		                     .value = p->values.data + at,
		                     .len = p->value_lens[i],
		                     .run_us = p->run_us[i],
		                     .attempt = p->attempts[i],
		                     .lost = p->outcomes[i] == STRAND__OUTCOME__LOST,
		                     .failed_inputs = p->n_failed_inputs ? p->failed_inputs[i] : 0};
		at += p->value_lens[i];
		check_result(s, r);
	}
	s->pull = (engine_pull_msg){.worker_id = p->worker_id,
	                            .pool_id = p->pool_id,
	                            .want = p->want,
	                            .in_hand = p->in_hand,
	                            .round_trip_us = p->round_trip_us,
	                            .results = s->results,
	                            .nresults = n,
	                            .resync = p->resync,
	                            .held = p->held,
	                            .nheld = p->n_held,
	                            .running_task = p->running_task,
	                            .running_ms = p->running_ms,
	                            .output = p->output.data,
	                            .output_lens = p->output_lens,
	                            .output_streams = p->output_streams,
	                            .noutput = p->n_output_lens,
	                            .output_first = p->output_first,
	                            .output_more = p->output_more};
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
	if ((err = describe(s, type)) != CM_OK) {
		slot_release(s);
		refuse(s, err == CM_EPERM ? "a queue item names a value its sender was given no grant to read"
		                          : "the gateway is out of memory");
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

/* ---- a task's manager calls (ManagerCall) ------------------------------ */

/* A manager call from a task (a manager proxy used in a Process or a
 * pool's task): an apply on the manager, of its reserved function
 * "manager" with the call as its one argument, answered once its result
 * is in. The engine's done may run before engine_apply_start returns (on
 * the engine's thread, or inside it when the gateway stops): whichever of
 * the two comes second answers. */
typedef struct manager_call {
	hub_slot *slot;
	engine_call *call;
	atomic_int halves;
	map_spec spec;
	size_t offs[2];
	char manager[64];
} manager_call;

/* The answer: the result item, with grants to fetch and remove a value
 * it names (a result past what goes inline, read once). The manager's
 * runtime is the caller's own program's, as the call's id said. */
static void manager_call_answer(manager_call *mc)
{
	Strand__ManagerReply reply = STRAND__MANAGER_REPLY__INIT;
	hub_slot *s = mc->slot;
	engine_apply_answer ans;
	char detail[256] = "", sha[CM_SHA256_HEX + 1], read[CM_SHA256_HEX + 1], take[CM_SHA256_HEX + 1];
	char grant[3 * CM_SHA256_HEX + 3], *named = grant;
	int err = engine_apply_finish(mc->call, &ans, detail, sizeof(detail));

	reply.call = ans.id;
	if (err == CM_ENOENT) {
		snprintf(detail, sizeof(detail), "no such manager %s (it was shut down, or never was)", mc->manager);
		reply.error = detail;
	} else if (err != CM_OK) {
		reply.error = detail[0] ? detail : (char *)cm_strerror(err);
	} else if (!ans.item) {
		snprintf(detail, sizeof(detail),
		         "call %s of manager %s has no result: the manager ended or the gateway stopped first", ans.id,
		         mc->manager);
		reply.error = detail;
	} else {
		reply.ok = 1;
		reply.item = (ProtobufCBinaryData){.data = (uint8_t *)ans.item, .len = ans.item_len};
		if (call_names_value(ans.item, ans.item_len, sha)) {
			value_grant(s->hub, s->worker, sha, read);
			grant_for(s->hub, "take", s->worker, sha, take);
			snprintf(grant, sizeof(grant), "%s %s %s", sha, read, take);
			reply.value_grants = &named;
			reply.n_value_grants = 1;
		}
	}
	send_message(s, PROTO_MANAGER_REPLY, &reply.base);
	free(ans.job);
	free(ans.item);
	free(mc->spec.function);
	free((char *)mc->spec.args.text);
	free(mc);
}

static void manager_call_done(void *ctx)
{
	manager_call *mc = ctx;

	if (atomic_fetch_add(&mc->halves, 1) == 1)
		manager_call_answer(mc);
}

/* Checks the call (the JSON body POST .../calls takes, and a grant for a
 * value its argument names) and hands it to the engine. */
static void manager_call_start(hub_slot *s, const Strand__ManagerCall *c)
{
	hub *h = s->hub;
	manager_call *mc = calloc(1, sizeof(*mc));
	char detail[256] = "", sha[CM_SHA256_HEX + 1], *arg = NULL;
	int vouched = 1;

	if (!mc) {
		slot_release(s);
		refuse(s, "the gateway is out of memory");
		return;
	}
	if (spec_call_parse((const char *)c->call.data, c->call.len, &arg, detail, sizeof(detail)) == CM_OK &&
	    call_names_value(arg, strlen(arg), sha))
		vouched = grant_given(s, sha, c->value_grants, c->n_value_grants);
	snprintf(mc->manager, sizeof(mc->manager), "%s", c->manager);
	/* A manager's id, as /v1/managers takes: a call is no way to queue
	 * tasks on a pool. */
	int a_manager = strncmp(mc->manager, "m-", 2) == 0;
	int64_t wait_ms = c->wait_ms;
	slot_release(s); /* what it needs of the frame is copied */
	if (!arg || !vouched || !a_manager || !(mc->spec.function = strdup("manager"))) {
		refuse(s, !arg         ? (detail[0] ? detail : "the call is not a manager call")
		          : !vouched   ? "the call names a value its sender was given no grant to read"
		          : !a_manager ? "a ManagerCall names a manager (m-...)"
		                       : "the gateway is out of memory");
		free(arg);
		free(mc);
		return;
	}
	mc->slot = s;
	mc->offs[1] = strlen(arg);
	mc->spec.args = (spec_args){.text = arg, .offs = mc->offs, .n = 1};
	mc->spec.total = 1;
	mc->spec.chunksize = 1;
	mc->spec.max_attempts = 1;
	pthread_mutex_lock(&h->mu);
	if (h->refusing) {
		pthread_mutex_unlock(&h->mu);
		refuse(s, "the gateway is stopping");
		free(mc->spec.function);
		free(arg);
		free(mc);
		return;
	}
	h->in_engine++;
	pthread_mutex_unlock(&h->mu);
	s->state = SLOT_WAIT;
	mc->call = engine_apply_start(h->engine, mc->manager, &mc->spec, NULL, wait_ms, manager_call_done, mc);
	if (!mc->call) {
		refuse(s, "the gateway is out of memory");
		free(mc->spec.function);
		free(arg);
		free(mc);
	} else if (atomic_fetch_add(&mc->halves, 1) == 1) {
		manager_call_answer(mc);
	}
	pthread_mutex_lock(&h->mu);
	if (--h->in_engine == 0)
		pthread_cond_broadcast(&h->idle);
	pthread_mutex_unlock(&h->mu);
}

/* A piece of the code package a worker's pool runs (and no other), or of
 * a value one of its tasks names (by the grant its batch carried), read on
 * this thread without the engine: a MiB at most, mostly from the page
 * cache, once per worker and blob (a worker caches what it fetched). */
static void serve_blob(hub_slot *s, const Strand__BlobFetch *f)
{
	Strand__BlobPart part = STRAND__BLOB_PART__INIT;
	int value = f->value_grant && f->value_grant[0];
	blob_store *from = value ? s->hub->values : s->hub->code;
	uint8_t *buf = NULL;
	size_t got = 0;
	int64_t size = 0;
	int err;

	if (!value && (!s->code[0] || strcmp(f->sha256, s->code) != 0))
		part.error = "the worker's pool runs no such code package";
	else if (value && !grant_valid(s->hub, f->take ? "take" : "read", s->worker, f->sha256, f->value_grant))
		part.error = f->take ? "no queue item given to this worker names that value (or the gateway restarted "
		                       "since)"
		                     : "no task given to this worker names that value (or the gateway restarted since)";
	else if (f->take) /* read once: gone (ENOENT too: a retry whose answer was lost) */
		part.ok = (err = blob_store_remove(from, f->sha256)) == CM_OK || err == CM_ENOENT;
	else if (!(buf = malloc(BLOB_PIECE)))
		part.error = "the gateway is out of memory";
	else if ((err = blob_store_read(from, f->sha256, f->offset, buf, BLOB_PIECE, &got, &size)) != CM_OK)
		part.error = err != CM_ENOENT ? "the gateway cannot read it"
		             : value ? "the gateway holds no such value (it was never uploaded, or was deleted)"
		                     : "the gateway no longer holds the code package (its --code-dir lost it)";
	else {
		part.ok = 1;
		part.size = (uint64_t)size;
		part.data = (ProtobufCBinaryData){.data = buf, .len = got};
	}
	slot_release(s);
	send_message(s, PROTO_BLOB_PART, &part.base);
	free(buf);
}

/* A piece of a value a task of this worker returned (BlobPut), stored on
 * this thread without the engine, as an upload over HTTP is: to a file,
 * kept only once whole and of its name, within --max-value-bytes and
 * --max-values-total. A value stored already has its pieces acknowledged
 * and dropped. */
static void store_piece(hub_slot *s, const Strand__BlobPut *p)
{
	Strand__BlobPart part = STRAND__BLOB_PART__INIT;
	char detail[256] = "";
	int64_t size = 0;
	int err = CM_OK;

	if (p->offset == 0) {
		blob_upload_abort(s->upload);
		s->upload = NULL;
		s->put_at = 0;
		snprintf(s->put_sha, sizeof(s->put_sha), "%s", p->sha256);
		s->put_exists = blob_store_stat(s->hub->values, p->sha256, &size) == CM_OK;
		if (!s->put_exists)
			err = blob_upload_begin(s->hub->values, p->sha256, -1, &s->upload, detail, sizeof(detail));
	} else if (strcmp(p->sha256, s->put_sha) != 0 || p->offset != s->put_at || (!s->upload && !s->put_exists)) {
		snprintf(detail, sizeof(detail), "a piece of a value out of its order");
		err = CM_EINVAL;
	}
	if (err == CM_OK && s->upload)
		err = blob_upload_write(s->upload, p->data.data, p->data.len, detail, sizeof(detail));
	s->put_at += p->data.len;
	if (err == CM_OK && p->last && s->upload) {
		err = blob_upload_finish(s->upload, &size, detail, sizeof(detail));
		s->upload = NULL;
	} else if (err == CM_OK && p->last)
		blob_store_stat(s->hub->values, p->sha256, &size);
	if (err != CM_OK) {
		blob_upload_abort(s->upload);
		s->upload = NULL;
		s->put_exists = 0;
		part.error = detail;
	} else {
		part.ok = 1;
		part.size = (uint64_t)size;
	}
	char grant[CM_SHA256_HEX + 1];
	if (part.ok && p->last) { /* its sender may name it in a queue item */
		value_grant(s->hub, s->worker, p->sha256, grant);
		part.value_grant = grant;
	}
	slot_release(s);
	send_message(s, PROTO_BLOB_PART, &part.base);
}

/* Whether the decoded message names the worker the header authenticated,
 * and that worker's pool. */
static int names_sender(const proto_header *h, const char *pool, const char *worker_id, const char *pool_id)
{
	return worker_id && pool_id && strlen(worker_id) == h->worker_id_len &&
	       memcmp(worker_id, h->worker_id, h->worker_id_len) == 0 && strcmp(pool_id, pool) == 0;
}

/* The whole frame is in: decoded (its sender was checked from its header
 * before it was allocated), checked against what the body says, and handed
 * to the engine. */
static void on_frame(hub_slot *s)
{
	ProtobufCMessage *m = NULL;
	char detail[256];
	proto_header h;
	int named;

	proto_frame_header(s->frame, s->frame_len, &h, detail, sizeof(detail)); /* read in on_head */
	if (proto_frame_decode_in(&s->arena, h.type, s->frame, s->frame_len, &m, detail, sizeof(detail)) != CM_OK) {
		cm_log_limited(&s->hub->refused_log, CM_LOG_WARN, "hub: refused a frame of worker %.*s: %s",
		               (int)h.worker_id_len, h.worker_id, detail);
		slot_release(s);
		refuse(s, detail);
		return;
	}
	if (h.type == PROTO_QUEUE_CALL)
		named = names_sender(&h, s->pool, ((Strand__QueueCall *)m)->worker_id,
		                     ((Strand__QueueCall *)m)->pool_id);
	else if (h.type == PROTO_BLOB_FETCH)
		named = names_sender(&h, s->pool, ((Strand__BlobFetch *)m)->worker_id,
		                     ((Strand__BlobFetch *)m)->pool_id);
	else if (h.type == PROTO_BLOB_PUT)
		named = names_sender(&h, s->pool, ((Strand__BlobPut *)m)->worker_id, ((Strand__BlobPut *)m)->pool_id);
	else if (h.type == PROTO_MANAGER_CALL)
		named = names_sender(&h, s->pool, ((Strand__ManagerCall *)m)->worker_id,
		                     ((Strand__ManagerCall *)m)->pool_id);
	else
		named = names_sender(&h, s->pool, ((Strand__Pull *)m)->worker_id, ((Strand__Pull *)m)->pool_id);
	free(s->frame); /* h pointed into it; the message lives in the arena */
	s->frame = NULL;
	if (!named) {
		slot_release(s);
		refuse(s, "the frame's body names another worker or pool than its sender");
		return;
	}
	if (h.type == PROTO_BLOB_FETCH)
		serve_blob(s, (Strand__BlobFetch *)m);
	else if (h.type == PROTO_BLOB_PUT)
		store_piece(s, (Strand__BlobPut *)m);
	else if (h.type == PROTO_MANAGER_CALL)
		manager_call_start(s, (Strand__ManagerCall *)m);
	else
		to_engine(s, h.type, m);
}

/* The header is in: the sender is checked before the frame's body is read
 * into memory, which is bounded for all connections together. */
static void on_head(hub_slot *s)
{
	const uint8_t *start = s->head + WIRE_PREFIX;
	size_t got = s->head_got - WIRE_PREFIX;
	size_t held = 2 * s->frame_len; /* the frame, and what it decodes to */
	char detail[256];
	proto_header h;
	int room;

	if (proto_frame_header(start, got, &h, detail, sizeof(detail)) != CM_OK) {
		refuse_and_close(s, detail);
		return;
	}
	if (h.type != PROTO_PULL && h.type != PROTO_QUEUE_CALL && h.type != PROTO_BLOB_FETCH &&
	    h.type != PROTO_BLOB_PUT && h.type != PROTO_MANAGER_CALL) {
		refuse_and_close(s, "the hub takes Pull, QueueCall, BlobFetch, BlobPut and ManagerCall frames only");
		return;
	}
	if (!credentials_check(s->hub->creds, h.worker_id, h.worker_id_len, h.secret, h.secret_len, s->pool, s->code)) {
		refuse_and_close(s, "unknown worker or wrong secret");
		return;
	}
	s->authenticated = 1;
	snprintf(s->worker, sizeof(s->worker), "%.*s", (int)h.worker_id_len, h.worker_id);
	pthread_mutex_lock(&s->hub->mu);
	s->stranger = 0;
	if ((room = s->hub->held + held <= HELD_BYTES_MAX))
		s->hub->held += held;
	pthread_mutex_unlock(&s->hub->mu);
	if (!room) {
		cm_warn("hub: %zu bytes of frames held; closing a connection of worker %.*s, which asks again",
		        (size_t)HELD_BYTES_MAX, (int)h.worker_id_len, h.worker_id);
		slot_close(s);
		return;
	}
	s->held = held;
	if (!(s->frame = malloc(s->frame_len))) {
		slot_close(s);
		return;
	}
	memcpy(s->frame, start, got);
	s->frame_got = got;
	if (got == s->frame_len) {
		on_frame(s);
	} else {
		s->state = SLOT_BODY;
		s->deadline = cm_now_ms() + FRAME_MS;
		read_more(s, s->frame + got, s->frame_len - got);
	}
}

/* Bytes came in HEAD: its length checked once known; on_head once the
 * header is in, however the stream cut it. */
static void on_head_bytes(hub_slot *s, size_t n)
{
	char detail[96];
	int first = s->head_got < WIRE_PREFIX;

	if (s->head_got == 0 && s->authenticated)
		s->deadline = cm_now_ms() + FRAME_MS; /* a frame's time runs from its first byte */
	s->head_got += n;
	if (s->head_got < WIRE_PREFIX) {
		read_head(s);
		return;
	}
	if (first) {
		s->frame_len = wire_prefix_get(s->head);
		if (s->frame_len > PROTO_FRAME_MAX) {
			snprintf(detail, sizeof(detail), "frame of %zu bytes is over the %u byte cap", s->frame_len,
			         PROTO_FRAME_MAX);
			refuse_and_close(s, detail);
			return;
		}
		if (s->frame_len < PROTO_MAGIC_LEN) {
			refuse_and_close(s, "not a strand frame (bad magic or truncated header)");
			return;
		}
		if (s->head_got > WIRE_PREFIX + s->frame_len) {
			refuse_and_close(s, "one frame at a time: the next after the hub's answer");
			return;
		}
	}
	/* Its header is in once its first bytes say how long it is, or when
	 * what it says is longer than the frame (refused as truncated). */
	size_t got = s->head_got - WIRE_PREFIX, need = proto_frame_header_len(s->head + WIRE_PREFIX, got);
	if (got < s->frame_len && (need == 0 || got < need))
		read_head(s);
	else
		on_head(s);
}

/* n bytes came (0: the peer went). */
static void on_read(hub_slot *s, size_t n)
{
	if (n == 0) {
		slot_close(s);
		return;
	}
	if (s->state == SLOT_HEAD) {
		on_head_bytes(s, n);
	} else if ((s->frame_got += n) < s->frame_len) {
		read_more(s, s->frame + s->frame_got, s->frame_len - s->frame_got);
	} else {
		on_frame(s);
	}
}

/* The TLS handshake, as far as the socket lets it go now. */
static void handshake(hub_slot *s)
{
	char detail[300];
	int r = hub_tls_handshake(s->tls, detail, sizeof(detail));

	if (r == 0) {
		next_frame(s);
	} else if (r == HUB_TLS_WANT_READ || r == HUB_TLS_WANT_WRITE) {
		arm(s, r == HUB_TLS_WANT_WRITE, s->deadline);
	} else {
		/* A worker given another CA says why on its side; this side's
		 * line says which way it failed (a port scan, plain TCP). */
		cm_log_limited(&s->hub->handshake_log, CM_LOG_WARN, "hub: %s", detail);
		slot_close(s);
	}
}

/* The event a connection was armed for, on hub_poll's thread, which holds
 * the connection from here. What it does depends on the state, not on
 * the event: TLS may need to write to read on, or the other way round. */
static void on_ready(void *ctx, void *conn)
{
	hub_slot *s = conn;
	ssize_t n;

	(void)ctx;
	pthread_mutex_lock(&s->mu);
	s->armed_until = 0;
	pthread_mutex_unlock(&s->mu);
	if (s->state == SLOT_SEND) {
		send_more(s);
		return;
	}
	if (s->state == SLOT_HANDSHAKE) {
		handshake(s);
		return;
	}
	if (s->tls) {
		n = hub_tls_read(s->tls, s->want, s->want_len);
		if (n == HUB_TLS_WANT_READ || n == HUB_TLS_WANT_WRITE)
			arm_read(s, n == HUB_TLS_WANT_WRITE);
		else if (n < 0)
			slot_close(s);
		else
			on_read(s, (size_t)n);
		return;
	}
	while ((n = recv(s->fd, s->want, s->want_len, 0)) < 0 && errno == EINTR)
		;
	if (n < 0 && errno == EAGAIN)
		read_more(s, s->want, s->want_len);
	else if (n < 0)
		slot_close(s);
	else
		on_read(s, (size_t)n);
}

static void slot_free(hub_slot *s)
{
	blob_upload_abort(s->upload);
	hub_tls_conn_free(s->tls);
	close(s->fd); /* out of hub_poll's set with it */
	slot_release(s);
	free(s->out);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Ends the connection, on the thread that holds it (hub_poll's, a
 * callback's, or the engine's: a drop): nothing of it runs after. While
 * the hub is being freed, hub_free does it. */
static void slot_close(hub_slot *s)
{
	hub *h = s->hub;

	pthread_mutex_lock(&h->mu);
	if (h->closing) {
		pthread_mutex_unlock(&h->mu);
		return;
	}
	if (s->prev)
		s->prev->next = s->next;
	else
		h->conns = s->next;
	if (s->next)
		s->next->prev = s->prev;
	h->nconns--;
	pthread_mutex_unlock(&h->mu);
	slot_free(s);
}

/* Whether the hub refuses a connection from a (h->mu held): the address
 * opens connections too fast, or holds per_address that have not named a
 * worker yet (saying so, a line a second at most). */
static int refuse_stranger(hub *h, const hub_address *a)
{
	char text[64];
	int strangers = 0;

	if (hub_pace_take(h->pace, a, cm_now_ms())) {
		for (hub_slot *s = h->conns; s && strangers < h->per_address; s = s->next)
			strangers += s->stranger && hub_address_same(&s->addr, a);
		if (strangers < h->per_address)
			return 0;
	}
	hub_address_text(a, text, sizeof(text));
	if (strangers)
		cm_log_limited(&h->stranger_log, CM_LOG_WARN,
		               "hub: %s holds %d connections that have named no worker yet; refusing one more "
		               "(--hub-per-address)",
		               text, strangers);
	else
		cm_log_limited(&h->stranger_log, CM_LOG_WARN,
		               "hub: %s opens connections faster than %d a second; refusing one (--hub-per-address)",
		               text, h->per_address);
	return 1;
}

/* A new connection's slot for fd from addr, in the hub's list: NULL when
 * the hub is full or the address at its limits (saying so), stopping, or
 * out of memory. */
static hub_slot *slot_add(hub *h, int fd, const struct sockaddr_storage *addr, socklen_t len)
{
	hub_slot *s = NULL;
	hub_address from;
	int has_addr = hub_address_of(addr, len, &from);
	int full;

	pthread_mutex_lock(&h->mu);
	full = h->closing || h->nconns >= h->conns_max;
	if (!full && has_addr && refuse_stranger(h, &from)) {
		pthread_mutex_unlock(&h->mu);
		return NULL;
	}
	if (!full && (s = calloc(1, sizeof(*s)))) {
		s->hub = h;
		s->fd = fd;
		s->addr = from;
		s->has_addr = has_addr;
		s->stranger = has_addr;
		pthread_mutex_init(&s->mu, NULL);
		s->next = h->conns;
		if (h->conns)
			h->conns->prev = s;
		h->conns = s;
		h->nconns++;
	}
	pthread_mutex_unlock(&h->mu);
	if (full && !h->closing)
		cm_log_limited(&h->full_log, CM_LOG_WARN, "hub: %d connections open; refusing one more", h->conns_max);
	return s;
}

/* A connection to the listener (hub_poll's thread). */
static void on_accepted(void *ctx, int fd, const struct sockaddr_storage *addr, socklen_t len)
{
	hub *h = ctx;
	hub_slot *s = slot_add(h, fd, addr, len);

	if (!s) {
		close(fd);
		return;
	}
	if (!h->tls) {
		next_frame(s);
		return;
	}
	if (!(s->tls = hub_tls_conn_new(h->tls, fd))) {
		slot_close(s);
		return;
	}
	s->state = SLOT_HANDSHAKE;
	s->deadline = cm_now_ms() + FIRST_FRAME_MS;
	handshake(s);
}

/* About once a second on hub_poll's thread: the connections whose
 * handshake, read or send took too long end (FIRST_FRAME_MS, FRAME_MS), as
 * the socket timeouts end them on the workers' side. Only those armed: the
 * thread may take them. */
static void on_tick(void *ctx)
{
	hub *h = ctx;
	hub_slot *late[64];
	int n = 0;
	int64_t now = cm_now_ms();

	pthread_mutex_lock(&h->mu);
	for (hub_slot *s = h->conns; s && n < 64; s = s->next) {
		pthread_mutex_lock(&s->mu);
		if (s->armed_until && s->armed_until < now)
			late[n++] = s;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_unlock(&h->mu);
	for (int i = 0; i < n; i++)
		slot_close(late[i]);
}

int hub_start(const gw_config *cfg, engine *e, credentials *creds, blob_store *code, blob_store *values, hub **out,
              char *detail, size_t detail_len)
{
	hub *h = calloc(1, sizeof(*h));
	struct rlimit rl;
	int rv;

	if (!h)
		return CM_ENOMEM;
	h->engine = e;
	h->creds = creds;
	h->code = code;
	h->values = values;
	cm_random_hex(h->grant_key, CM_SHA256_HEX / 2);
	h->conns_max = CONNS_MAX;
	h->per_address = cfg->hub_per_address;
	/* A burst of twice the pace: a host's workers all connecting at once
	 * (a new pool, a gateway back from a restart). */
	if (!(h->pace = hub_pace_new((unsigned)cfg->hub_per_address, 2 * (unsigned)cfg->hub_per_address))) {
		free(h);
		return CM_ENOMEM;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < CONNS_MAX)
		h->conns_max = (int)(rl.rlim_cur / 4);
	engine_set_link(e, &(engine_link){.ctx = h, .batch = on_batch, .queue_reply = on_queue_reply, .drop = on_drop});
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->idle, NULL);
	/* A tls+tcp:// hub presents the gateway's certificate (--tls-cert,
	 * --tls-key). */
	int family, tls;
	if (cm_socket_url(cfg->hub, &family, &tls) && tls &&
	    (rv = hub_tls_new(cfg->tls_cert, cfg->tls_key, &h->tls, detail, detail_len)) != CM_OK) {
		hub_free(h);
		return rv;
	}
	hub_poll_calls calls = {.ctx = h, .accepted = on_accepted, .ready = on_ready, .tick = on_tick};
	if ((rv = hub_poll_start(cfg->hub, &calls, &h->poll, detail, detail_len)) != CM_OK) {
		hub_free(h);
		return rv;
	}
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
	/* Every connection the engine held was answered when it stopped. From
	 * here no callback frees a connection or accepts one: hub_poll's
	 * thread ends, then all is freed here. */
	pthread_mutex_lock(&h->mu);
	h->closing = 1;
	pthread_mutex_unlock(&h->mu);
	hub_poll_stop(h->poll);
	while (h->conns) {
		hub_slot *s = h->conns;
		h->conns = s->next;
		slot_free(s);
	}
	hub_tls_free(h->tls);
	hub_pace_free(h->pace);
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* Frame encode/decode; see frame.h. */
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "proto/frame.h"

#define FIELD_MAX 255 /* a length byte */

static const ProtobufCMessageDescriptor *descriptor(proto_type type)
{
	switch (type) {
	case PROTO_PULL: return &strand__pull__descriptor;
	case PROTO_BATCH: return &strand__batch__descriptor;
	case PROTO_QUEUE_CALL: return &strand__queue_call__descriptor;
	case PROTO_QUEUE_REPLY: return &strand__queue_reply__descriptor;
	case PROTO_BLOB_FETCH: return &strand__blob_fetch__descriptor;
	case PROTO_BLOB_PART: return &strand__blob_part__descriptor;
	case PROTO_BLOB_PUT: return &strand__blob_put__descriptor;
	case PROTO_MANAGER_CALL: return &strand__manager_call__descriptor;
	case PROTO_MANAGER_REPLY: return &strand__manager_reply__descriptor;
	}
	return NULL;
}

size_t proto_frame_header_len(const uint8_t *data, size_t len)
{
	size_t id_end = PROTO_MAGIC_LEN + 1 + (len > PROTO_MAGIC_LEN ? data[PROTO_MAGIC_LEN] : 0);

	if (len <= PROTO_MAGIC_LEN || len <= id_end)
		return 0;
	return id_end + 1 + data[id_end];
}

int proto_frame_header(const uint8_t *data, size_t len, proto_header *out, char *detail, size_t detail_len)
{
	size_t at = PROTO_MAGIC_LEN;

	if (len > PROTO_FRAME_MAX) {
		snprintf(detail, detail_len, "frame of %zu bytes is over the %u byte cap", len, PROTO_FRAME_MAX);
		return CM_ETOOBIG;
	}
	if (len < PROTO_MAGIC_LEN || data[0] != 'S' || data[1] != 'T') {
		snprintf(detail, detail_len, "not a strand frame (bad magic or truncated header)");
		return CM_EINVAL;
	}
	if (data[2] != PROTO_VERSION) {
		snprintf(detail, detail_len, "protocol version %u, this side speaks %u", data[2], PROTO_VERSION);
		return CM_EINVAL;
	}
	if (!descriptor((proto_type)data[3])) {
		snprintf(detail, detail_len, "unknown frame type %u", data[3]);
		return CM_EINVAL;
	}
	out->type = (proto_type)data[3];
	if (at >= len || at + 1 + data[at] > len)
		goto truncated;
	out->worker_id_len = data[at];
	out->worker_id = (const char *)data + at + 1;
	at += 1 + data[at];
	if (at >= len || at + 1 + data[at] > len)
		goto truncated;
	out->secret_len = data[at];
	out->secret = (const char *)data + at + 1;
	out->body = at + 1 + data[at];
	return CM_OK;
truncated:
	snprintf(detail, detail_len, "truncated frame header");
	return CM_EINVAL;
}

int proto_frame_encode(proto_type type, const char *worker_id, const char *secret, const ProtobufCMessage *msg,
                       uint8_t **out, size_t *out_len)
{
	size_t id_len = worker_id ? strlen(worker_id) : 0;
	size_t secret_len = secret ? strlen(secret) : 0;
	size_t head = PROTO_MAGIC_LEN + 2 + id_len + secret_len;
	size_t body = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (msg->descriptor != descriptor(type) || id_len > FIELD_MAX || secret_len > FIELD_MAX)
		return CM_EINVAL;
	if (body + head > PROTO_FRAME_MAX)
		return CM_ETOOBIG;
	buf = malloc(body + head);
	if (!buf)
		return CM_ENOMEM;
	buf[0] = 'S';
	buf[1] = 'T';
	buf[2] = PROTO_VERSION;
	buf[3] = (uint8_t)type;
	buf[4] = (uint8_t)id_len;
	memcpy(buf + 5, worker_id ? worker_id : "", id_len);
	buf[5 + id_len] = (uint8_t)secret_len;
	memcpy(buf + 6 + id_len, secret ? secret : "", secret_len);
	protobuf_c_message_pack(msg, buf + head);
	*out = buf;
	*out_len = body + head;
	return CM_OK;
}

/* protobuf-c allocations while decoding one frame, counted against a budget.
 * Blocks come from malloc, so the message is freed with the default
 * allocator (protobuf_c_message_free_unpacked(msg, NULL)). */
typedef struct budget {
	size_t left;
	int spent;
} budget;

static void *budget_alloc(void *data, size_t size)
{
	budget *b = data;

	if (size > b->left) {
		b->spent = 1;
		return NULL;
	}
	b->left -= size;
	return malloc(size);
}

static void budget_free(void *data, void *p)
{
	(void)data;
	free(p);
}

/* The columns of a Batch's tasks or a Pull's results: each as long as the
 * others, and the texts' lengths adding up to their blob. Returns 0, or -1
 * with the reason. */
static int columns_check(proto_type type, const ProtobufCMessage *msg, char *detail, size_t detail_len)
{
	uint64_t rows = 0, bytes = 0;
	const uint32_t *lens;
	size_t n, blob;

	if (type == PROTO_BATCH) {
		const Strand__Batch *b = (const Strand__Batch *)msg;
		for (size_t i = 0; i < b->n_runs; i++)
			rows += b->runs[i]->count;
		if (rows != b->n_task_ids || b->n_attempts != b->n_task_ids || b->n_arg_lens != b->n_task_ids) {
			snprintf(detail, detail_len,
			         "a batch whose task columns disagree (%zu ids, %zu attempts, %zu "
			         "lengths, %llu tasks in its runs)",
			         b->n_task_ids, b->n_attempts, b->n_arg_lens, (unsigned long long)rows);
			return -1;
		}
		lens = b->arg_lens;
		n = b->n_arg_lens;
		blob = b->args.len;
	} else if (type == PROTO_PULL) {
		const Strand__Pull *p = (const Strand__Pull *)msg;
		if (p->n_outcomes != p->n_result_ids || p->n_run_us != p->n_result_ids ||
		    p->n_attempts != p->n_result_ids || p->n_value_lens != p->n_result_ids ||
		    (p->n_failed_inputs && p->n_failed_inputs != p->n_result_ids)) {
			snprintf(detail, detail_len,
			         "a pull whose result columns disagree (%zu ids, %zu outcomes, %zu "
			         "run times, %zu attempts, %zu lengths, %zu failed inputs)",
			         p->n_result_ids, p->n_outcomes, p->n_run_us, p->n_attempts, p->n_value_lens,
			         p->n_failed_inputs);
			return -1;
		}
		for (size_t i = 0; i < p->n_outcomes; i++)
			if (p->outcomes[i] != STRAND__OUTCOME__FAILED && p->outcomes[i] != STRAND__OUTCOME__OK &&
			    p->outcomes[i] != STRAND__OUTCOME__LOST) {
				snprintf(detail, detail_len, "result %zu has an unknown outcome %d", i,
				         (int)p->outcomes[i]);
				return -1;
			}
		/* Its output's columns too: a line's length and stream each. */
		uint64_t out_bytes = 0;
		for (size_t i = 0; i < p->n_output_lens; i++)
			out_bytes += p->output_lens[i];
		if (p->n_output_streams != p->n_output_lens || out_bytes != p->output.len) {
			snprintf(detail, detail_len,
			         "a pull whose output columns disagree (%zu lengths, %zu streams, %llu bytes of %zu)",
			         p->n_output_lens, p->n_output_streams, (unsigned long long)out_bytes, p->output.len);
			return -1;
		}
		for (size_t i = 0; i < p->n_output_streams; i++)
			if (p->output_streams[i] != 1 && p->output_streams[i] != 2) {
				snprintf(detail, detail_len, "output line %zu has an unknown stream %u", i,
				         (unsigned)p->output_streams[i]);
				return -1;
			}
		lens = p->value_lens;
		n = p->n_value_lens;
		blob = p->values.len;
	} else {
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		bytes += lens[i];
	if (bytes != blob) {
		snprintf(detail, detail_len, "texts of %llu bytes in all where the %s has %zu",
		         (unsigned long long)bytes, type == PROTO_BATCH ? "batch" : "pull", blob);
		return -1;
	}
	return 0;
}

/* Decodes through allocator; *spent tells a budget that ran out. */
static int decode_with(proto_type type, const uint8_t *data, size_t len, ProtobufCAllocator *allocator,
                       const int *spent, ProtobufCMessage **out, char *detail, size_t detail_len)
{
	ProtobufCMessage *msg;
	proto_header h;
	int err;

	if ((err = proto_frame_header(data, len, &h, detail, detail_len)) != CM_OK)
		return err;
	if (h.type != type) {
		snprintf(detail, detail_len, "frame type %u where %u was expected", (unsigned)h.type, (unsigned)type);
		return CM_EINVAL;
	}
	msg = protobuf_c_message_unpack(descriptor(type), allocator, len - h.body, data + h.body);
	if (!msg) {
		if (*spent)
			snprintf(detail, detail_len, "frame of %zu bytes decodes to more than %zu bytes", len,
			         PROTO_DECODE_BUDGET(len));
		else
			snprintf(detail, detail_len, "corrupt or truncated protobuf body");
		return *spent ? CM_ETOOBIG : CM_EINVAL;
	}
	if (columns_check(type, msg, detail, detail_len) != 0) {
		protobuf_c_message_free_unpacked(msg, allocator);
		return CM_EINVAL;
	}
	*out = msg;
	return CM_OK;
}

int proto_frame_decode(proto_type type, const uint8_t *data, size_t len, ProtobufCMessage **out, char *detail,
                       size_t detail_len)
{
	budget b = {.left = PROTO_DECODE_BUDGET(len)};
	ProtobufCAllocator allocator = {.alloc = budget_alloc, .free = budget_free, .allocator_data = &b};

	return decode_with(type, data, len, &allocator, &b.spent, out, detail, detail_len);
}

/* ---- arenas ------------------------------------------------------------- */

/* A piece taken when the arena's block was full. */
struct proto_arena_extra {
	struct proto_arena_extra *next;
	size_t size;
	max_align_t data[];
};

#define ARENA_ALIGN sizeof(max_align_t)

static void *arena_alloc(void *data, size_t size)
{
	proto_arena *a = data;
	struct proto_arena_extra *x;

	if (size > a->left) {
		a->spent = 1;
		return NULL;
	}
	a->left -= size;
	size = (size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
	if (a->cap - a->used >= size) {
		void *p = a->block + a->used;
		a->used += size;
		return p;
	}
	if (!(x = malloc(sizeof(*x) + size)))
		return NULL;
	x->next = a->extra;
	x->size = size;
	a->extra = x;
	return x->data;
}

static void arena_free(void *data, void *p)
{
	(void)data; /* all of it goes at the next decode */
	(void)p;
}

void *proto_arena_alloc(proto_arena *a, size_t size)
{
	return arena_alloc(a, size ? size : 1);
}

void proto_arena_fini(proto_arena *a)
{
	while (a->extra) {
		struct proto_arena_extra *x = a->extra;
		a->extra = x->next;
		free(x);
	}
	free(a->block);
	memset(a, 0, sizeof(*a));
}

int proto_frame_decode_in(proto_arena *a, proto_type type, const uint8_t *data, size_t len, ProtobufCMessage **out,
                          char *detail, size_t detail_len)
{
	ProtobufCAllocator allocator = {.alloc = arena_alloc, .free = arena_free, .allocator_data = a};
	size_t need = a->used, guess = 8 * len + 4096;

	/* What the last decode took, in one block from now on. */
	while (a->extra) {
		struct proto_arena_extra *x = a->extra;
		need += x->size;
		a->extra = x->next;
		free(x);
	}
	/* An empty arena guesses: a frame of small messages decodes to some
	 * times its bytes (pages of the block it does not use cost nothing). */
	if (!a->cap && need < guess)
		need = guess < PROTO_DECODE_BUDGET(len) ? guess : PROTO_DECODE_BUDGET(len);
	if (need > a->cap) {
		uint8_t *block = malloc(need + need / 2);
		if (block) {
			free(a->block);
			a->block = block;
			a->cap = need + need / 2;
		}
	}
	a->used = 0;
	a->left = PROTO_DECODE_BUDGET(len);
	a->spent = 0;
	return decode_with(type, data, len, &allocator, &a->spent, out, detail, detail_len);
}

/* proto: frames round-trip with their sender's credentials in the header;
 * corrupt, truncated, foreign, oversized and expanding frames are refused
 * with a reason. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"
#include "proto/frame.h"
#include "proto/wire.h"

/* A pull of two results: 7 ok with [1,2], 9 failed with "boom" (unless
 * pull says otherwise: its outcomes, how many, its values). */
static void encode_pull_with(Strand__Pull *pull, uint8_t **out, size_t *len)
{
	static uint64_t ids[] = {7, 9};
	static Strand__Outcome outcomes[] = {STRAND__OUTCOME__OK, STRAND__OUTCOME__FAILED};
	static uint32_t run_us[] = {120, 5}, attempts[] = {1, 2}, lens[] = {5, 4};

	pull->worker_id = "w-1";
	pull->pool_id = "p-1";
	pull->want = 64;
	pull->in_hand = 2;
	pull->result_ids = ids;
	pull->n_result_ids = 2;
	pull->outcomes = pull->outcomes ? pull->outcomes : outcomes;
	pull->n_outcomes = pull->n_outcomes ? pull->n_outcomes : 2;
	pull->run_us = run_us;
	pull->n_run_us = 2;
	pull->attempts = attempts;
	pull->n_attempts = 2;
	pull->value_lens = lens;
	pull->n_value_lens = 2;
	if (!pull->values.data) {
		pull->values.data = (uint8_t *)"[1,2]boom";
		pull->values.len = 9;
	}
	assert_int_equal(proto_frame_encode(PROTO_PULL, "w-1", "s3cret", &pull->base, out, len), CM_OK);
}

static void encode_pull(uint8_t **out, size_t *len)
{
	Strand__Pull pull = STRAND__PULL__INIT;

	encode_pull_with(&pull, out, len);
}

static void test_roundtrip(void **state)
{
	uint8_t *buf;
	size_t len;
	ProtobufCMessage *msg = NULL;
	char detail[256];
	Strand__Pull *p;

	(void)state;
	proto_header h;

	encode_pull(&buf, &len);
	assert_memory_equal(buf, "ST\x03\x01\x03w-1\x06s3cret", 15);
	/* The header alone tells who speaks, before any decoding. */
	assert_int_equal(proto_frame_header(buf, len, &h, detail, sizeof(detail)), CM_OK);
	assert_int_equal(h.type, PROTO_PULL);
	assert_int_equal(h.worker_id_len, 3);
	assert_memory_equal(h.worker_id, "w-1", 3);
	assert_int_equal(h.secret_len, 6);
	assert_memory_equal(h.secret, "s3cret", 6);
	assert_int_equal(h.body, 15);
	assert_int_equal(proto_frame_decode(PROTO_PULL, buf, len, &msg, detail, sizeof(detail)), CM_OK);
	p = (Strand__Pull *)msg;
	assert_string_equal(p->worker_id, "w-1");
	assert_int_equal(p->want, 64);
	assert_int_equal(p->n_result_ids, 2);
	assert_int_equal(p->result_ids[0], 7);
	assert_int_equal(p->result_ids[1], 9);
	assert_int_equal(p->outcomes[0], STRAND__OUTCOME__OK);
	assert_int_equal(p->outcomes[1], STRAND__OUTCOME__FAILED);
	assert_int_equal(p->run_us[0], 120);
	assert_int_equal(p->attempts[1], 2);
	assert_int_equal(p->value_lens[0], 5);
	assert_int_equal(p->values.len, 9);
	assert_memory_equal(p->values.data, "[1,2]boom", 9);
	protobuf_c_message_free_unpacked(msg, NULL);
	free(buf);
}

/* Columns that do not agree are a corrupt frame, refused before anyone
 * reads a text past its blob or a result without an outcome. */
static void test_columns_that_disagree_are_refused(void **state)
{
	static const Strand__Outcome unknown[] = {STRAND__OUTCOME__OK, (Strand__Outcome)7};
	ProtobufCMessage *msg = NULL;
	char detail[256];
	uint8_t *buf;
	size_t len;

	(void)state;
	Strand__Pull short_outcomes = STRAND__PULL__INIT;
	short_outcomes.n_outcomes = 1;
	encode_pull_with(&short_outcomes, &buf, &len);
	assert_int_equal(proto_frame_decode(PROTO_PULL, buf, len, &msg, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "a pull whose result columns disagree (2 ids, 1 outcomes, 2 run times, 2 attempts, "
	                            "2 lengths, 0 failed inputs)");
	free(buf);

	/* The failed inputs' column is absent (none failed in part) or whole. */
	static uint32_t one_count[] = {3};
	Strand__Pull short_counts = STRAND__PULL__INIT;
	short_counts.failed_inputs = one_count;
	short_counts.n_failed_inputs = 1;
	encode_pull_with(&short_counts, &buf, &len);
	assert_int_equal(proto_frame_decode(PROTO_PULL, buf, len, &msg, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "a pull whose result columns disagree (2 ids, 2 outcomes, 2 run times, 2 attempts, "
	                            "2 lengths, 1 failed inputs)");
	free(buf);
	static uint32_t two_counts[] = {0, 3};
	Strand__Pull whole_counts = STRAND__PULL__INIT;
	whole_counts.failed_inputs = two_counts;
	whole_counts.n_failed_inputs = 2;
	encode_pull_with(&whole_counts, &buf, &len);
	assert_int_equal(proto_frame_decode(PROTO_PULL, buf, len, &msg, detail, sizeof(detail)), CM_OK);
	assert_int_equal(((Strand__Pull *)msg)->failed_inputs[1], 3);
	protobuf_c_message_free_unpacked(msg, NULL);
	msg = NULL;
	free(buf);

	Strand__Pull short_values = STRAND__PULL__INIT;
	short_values.values.data = (uint8_t *)"[1,2]boo";
	short_values.values.len = 8;
	encode_pull_with(&short_values, &buf, &len);
	assert_int_equal(proto_frame_decode(PROTO_PULL, buf, len, &msg, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "texts of 9 bytes in all where the pull has 8");
	free(buf);

	Strand__Pull strange = STRAND__PULL__INIT;
	strange.outcomes = (Strand__Outcome *)unknown;
	encode_pull_with(&strange, &buf, &len);
	assert_int_equal(proto_frame_decode(PROTO_PULL, buf, len, &msg, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "result 1 has an unknown outcome 7");
	free(buf);

	Strand__Batch b = STRAND__BATCH__INIT;
	Strand__TaskRun run = STRAND__TASK_RUN__INIT, *runs[] = {&run};
	uint64_t ids[] = {1, 2};
	uint32_t attempts[] = {1, 1}, lens[] = {1, 1};
	run.function = "echo";
	run.count = 3;
	b.runs = runs;
	b.n_runs = 1;
	b.task_ids = ids;
	b.n_task_ids = 2;
	b.attempts = attempts;
	b.n_attempts = 2;
	b.arg_lens = lens;
	b.n_arg_lens = 2;
	b.args.data = (uint8_t *)"12";
	b.args.len = 2;
	assert_int_equal(proto_frame_encode(PROTO_BATCH, NULL, NULL, &b.base, &buf, &len), CM_OK);
	assert_int_equal(proto_frame_decode(PROTO_BATCH, buf, len, &msg, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "a batch whose task columns disagree (2 ids, 2 attempts, 2 lengths, 3 tasks in its "
	                            "runs)");
	free(buf);
	run.count = 2;
	b.args.len = 3;
	b.args.data = (uint8_t *)"123";
	assert_int_equal(proto_frame_encode(PROTO_BATCH, NULL, NULL, &b.base, &buf, &len), CM_OK);
	assert_int_equal(proto_frame_decode(PROTO_BATCH, buf, len, &msg, detail, sizeof(detail)), CM_EINVAL);
	assert_string_equal(detail, "texts of 2 bytes in all where the batch has 3");
	free(buf);
	b.args.len = 2;
	assert_int_equal(proto_frame_encode(PROTO_BATCH, NULL, NULL, &b.base, &buf, &len), CM_OK);
	assert_int_equal(proto_frame_decode(PROTO_BATCH, buf, len, &msg, detail, sizeof(detail)), CM_OK);
	protobuf_c_message_free_unpacked(msg, NULL);
	free(buf);
}

/* A frame's first bytes say how long its header is once both lengths are
 * in (the hub reads no further before it knows who speaks). */
static void test_header_length_from_first_bytes(void **state)
{
	static const uint8_t head[] = "ST\x03\x01\x03w-1\x06s3cret";

	(void)state;
	for (size_t len = 0; len <= 8; len++)
		assert_int_equal(proto_frame_header_len(head, len), 0);
	for (size_t len = 9; len <= 15; len++)
		assert_int_equal(proto_frame_header_len(head, len), 15);
}

/* A frame's 4-byte little-endian length, and the bytes of a send that a
 * socket took dropped from the front of its pieces. */
static void test_wire_prefix_and_pieces(void **state)
{
	uint8_t prefix[WIRE_PREFIX], body[10];
	struct iovec iov[2] = {{.iov_base = prefix, .iov_len = WIRE_PREFIX},
	                       {.iov_base = body, .iov_len = sizeof(body)}};
	unsigned n = 2;

	(void)state;
	wire_prefix_put(prefix, 0x01020304);
	assert_memory_equal(prefix, "\x04\x03\x02\x01", WIRE_PREFIX);
	assert_int_equal(wire_prefix_get(prefix), 0x01020304);
	wire_iov_advance(iov, &n, 3); /* within the prefix */
	assert_int_equal(n, 2);
	assert_ptr_equal(iov[0].iov_base, prefix + 3);
	assert_int_equal(iov[0].iov_len, 1);
	wire_iov_advance(iov, &n, 5); /* past it, into the body */
	assert_int_equal(n, 1);
	assert_ptr_equal(iov[0].iov_base, body + 4);
	assert_int_equal(iov[0].iov_len, 6);
	wire_iov_advance(iov, &n, 6);
	assert_int_equal(n, 0);
}

/* What goes to TLS next: a prefix joined with what follows, up to one
 * record; a long piece as it is. */
static void test_wire_next_write(void **state)
{
	static uint8_t big[WIRE_RECORD_MAX + 100], joined[WIRE_RECORD_MAX];
	uint8_t prefix[WIRE_PREFIX] = {1, 2, 3, 4}, small[3] = {5, 6, 7};
	struct iovec two[2] = {{.iov_base = prefix, .iov_len = WIRE_PREFIX}, {.iov_base = small, .iov_len = 3}};
	size_t len = 0;

	(void)state;
	assert_ptr_equal(wire_next_write(two, 2, joined, &len), joined);
	assert_int_equal(len, WIRE_PREFIX + 3);
	assert_memory_equal(joined, "\x01\x02\x03\x04\x05\x06\x07", 7);
	two[1] = (struct iovec){.iov_base = big, .iov_len = sizeof(big)};
	big[0] = 9;
	assert_ptr_equal(wire_next_write(two, 2, joined, &len), joined);
	assert_int_equal(len, WIRE_RECORD_MAX);
	assert_int_equal(joined[WIRE_PREFIX], 9);
	assert_ptr_equal(wire_next_write(&two[1], 1, joined, &len), big); /* one piece: as it is */
	assert_int_equal(len, sizeof(big));
}

static void expect_refused(const uint8_t *buf, size_t len, proto_type type, const char *part)
{
	ProtobufCMessage *msg = NULL;
	char detail[256] = "";

	assert_int_not_equal(proto_frame_decode(type, buf, len, &msg, detail, sizeof(detail)), CM_OK);
	assert_null(msg);
	if (!strstr(detail, part))
		fail_msg("detail '%s' lacks '%s'", detail, part);
}

static void test_refusals(void **state)
{
	uint8_t *buf;
	size_t len;

	(void)state;
	encode_pull(&buf, &len);
	expect_refused(buf, 0, PROTO_PULL, "truncated header");
	expect_refused(buf, 3, PROTO_PULL, "truncated header");
	expect_refused(buf, len, PROTO_BATCH, "frame type 1");
	expect_refused(buf, 8, PROTO_PULL, "truncated frame header"); /* inside the worker id */
	buf[2] = 9;
	expect_refused(buf, len, PROTO_PULL, "protocol version 9");
	buf[2] = PROTO_VERSION;
	buf[0] = 'X';
	expect_refused(buf, len, PROTO_PULL, "bad magic");
	buf[0] = 'S';
	/* Truncated bodies at every length must be refused or decode cleanly,
	 * never crash; the full body minus its last byte cuts a field. */
	expect_refused(buf, len - 1, PROTO_PULL, "corrupt");
	for (size_t cut = 0; cut < len; cut++) {
		ProtobufCMessage *msg = NULL;
		char detail[256];
		if (proto_frame_decode(PROTO_PULL, buf, cut, &msg, detail, sizeof(detail)) == CM_OK)
			protobuf_c_message_free_unpacked(msg, NULL);
	}
	expect_refused(buf, PROTO_FRAME_MAX + 1u, PROTO_PULL, "cap");
	free(buf);
}

/* 16 MiB of empty task runs, two bytes each, would unpack into 8 million
 * structures (about 500 MiB): decoding stops at its budget instead. */
static void test_expanding_frame_is_refused_within_budget(void **state)
{
	size_t n = 16u << 20;
	uint8_t *buf = malloc(n);
	ProtobufCMessage *msg = NULL;
	char detail[256] = "";

	(void)state;
	assert_non_null(buf);
	memcpy(buf, "ST\x03\x02\x00\x00", 6);
	for (size_t i = 6; i + 1 < n; i += 2) {
		buf[i] = 0x3a; /* field 7 (runs), length-delimited */
		buf[i + 1] = 0x00; /* an empty TaskRun */
	}
	assert_int_equal(proto_frame_decode(PROTO_BATCH, buf, n, &msg, detail, sizeof(detail)), CM_ETOOBIG);
	assert_null(msg);
	assert_non_null(strstr(detail, "decodes to more than"));
	free(buf);
}

/* Batches of n tasks each ("echo", argument i), encoded: one run. */
static void encode_batch(int n, uint8_t **out, size_t *len)
{
	Strand__Batch b = STRAND__BATCH__INIT;
	Strand__TaskRun run = STRAND__TASK_RUN__INIT, *runs[] = {&run};
	uint64_t *ids = calloc((size_t)n, sizeof(*ids));
	uint32_t *attempts = calloc((size_t)n, sizeof(*attempts)), *lens = calloc((size_t)n, sizeof(*lens));
	char *args = calloc((size_t)n, 16);
	size_t at = 0;

	for (int i = 0; i < n; i++) {
		ids[i] = (uint64_t)i + 1;
		attempts[i] = 1;
		lens[i] = (uint32_t)sprintf(args + at, "%d", i);
		at += lens[i];
	}
	run.function = "echo";
	run.count = (uint32_t)n;
	b.runs = runs;
	b.n_runs = 1;
	b.task_ids = ids;
	b.n_task_ids = (size_t)n;
	b.attempts = attempts;
	b.n_attempts = (size_t)n;
	b.arg_lens = lens;
	b.n_arg_lens = (size_t)n;
	b.args.data = (uint8_t *)args;
	b.args.len = at;
	assert_int_equal(proto_frame_encode(PROTO_BATCH, NULL, NULL, &b.base, out, len), CM_OK);
	free(ids);
	free(attempts);
	free(lens);
	free(args);
}

/* Decoding into an arena: each batch exact (what the one before held is
 * gone, its room reused); after a batch larger than the arena held, the
 * next decode of that size fits in its one block; a frame over its budget
 * is refused as without one. */
static void test_arena_decodes_one_batch_after_another(void **state)
{
	static const int sizes[] = {3, 1000, 10, 1000, 1000};
	proto_arena a = {0};
	char detail[256] = "";

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint8_t *buf;
		size_t len;
		ProtobufCMessage *msg = NULL;
		encode_batch(sizes[k], &buf, &len);
		assert_int_equal(proto_frame_decode_in(&a, PROTO_BATCH, buf, len, &msg, detail, sizeof(detail)), CM_OK);
		Strand__Batch *b = (Strand__Batch *)msg;
		assert_int_equal(b->n_runs, 1);
		assert_string_equal(b->runs[0]->function, "echo");
		assert_int_equal(b->runs[0]->count, sizes[k]);
		assert_int_equal(b->n_task_ids, sizes[k]);
		size_t at = 0;
		for (int i = 0; i < sizes[k]; i++) {
			char want[16];
			snprintf(want, sizeof(want), "%d", i);
			assert_int_equal(b->task_ids[i], (uint64_t)i + 1);
			assert_int_equal(b->arg_lens[i], strlen(want));
			assert_memory_equal(b->args.data + at, want, strlen(want));
			at += b->arg_lens[i];
		}
		if (k >= 3) /* the second decode of 1,000 on: one block holds it */
			assert_null(a.extra);
		free(buf);
	}
	size_t n = 16u << 20;
	uint8_t *big = malloc(n);
	ProtobufCMessage *msg = NULL;
	memcpy(big, "ST\x03\x02\x00\x00", 6);
	for (size_t i = 6; i + 1 < n; i += 2) {
		big[i] = 0x3a;
		big[i + 1] = 0x00;
	}
	assert_int_equal(proto_frame_decode_in(&a, PROTO_BATCH, big, n, &msg, detail, sizeof(detail)), CM_ETOOBIG);
	assert_non_null(strstr(detail, "decodes to more than"));
	free(big);
	proto_arena_fini(&a);
}

static void test_encode_checks_type(void **state)
{
	Strand__Batch b = STRAND__BATCH__INIT;
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(proto_frame_encode(PROTO_PULL, NULL, NULL, &b.base, &buf, &len), CM_EINVAL);
	assert_null(buf);
	assert_int_equal(proto_frame_encode(PROTO_BATCH, NULL, NULL, &b.base, &buf, &len), CM_OK);
	assert_int_equal(buf[3], PROTO_BATCH);
	assert_int_equal(buf[4], 0); /* the gateway's frames carry no credentials */
	assert_int_equal(buf[5], 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_roundtrip),
	        cmocka_unit_test(test_header_length_from_first_bytes),
	        cmocka_unit_test(test_columns_that_disagree_are_refused),
	        cmocka_unit_test(test_wire_prefix_and_pieces),
	        cmocka_unit_test(test_wire_next_write),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_encode_checks_type),
	        cmocka_unit_test(test_expanding_frame_is_refused_within_budget),
	        cmocka_unit_test(test_arena_decodes_one_batch_after_another),
	};
	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}

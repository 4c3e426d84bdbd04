/* proto: frames round-trip; corrupt, truncated, foreign and oversized frames
 * are refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"
#include "proto/frame.h"

static void encode_pull(uint8_t **out, size_t *len)
{
	Strand__Pull pull = STRAND__PULL__INIT;
	Strand__Result r1 = STRAND__RESULT__INIT, r2 = STRAND__RESULT__INIT;
	Strand__Result *rs[] = {&r1, &r2};

	pull.worker_id = "w-1";
	pull.pool_id = "p-1";
	pull.secret = "s3cret";
	pull.want = 64;
	pull.in_hand = 2;
	r1.task_id = 7;
	r1.ok = 1;
	r1.value.data = (uint8_t *)"[1,2]";
	r1.value.len = 5;
	r2.task_id = 9;
	r2.value.data = (uint8_t *)"boom";
	r2.value.len = 4;
	pull.results = rs;
	pull.n_results = 2;
	assert_int_equal(proto_frame_encode(PROTO_PULL, &pull.base, out, len), CM_OK);
}

static void test_roundtrip(void **state)
{
	uint8_t *buf;
	size_t len;
	ProtobufCMessage *msg = NULL;
	char detail[256];
	Strand__Pull *p;

	(void)state;
	encode_pull(&buf, &len);
	assert_memory_equal(buf, "ST\x01\x01", 4);
	assert_int_equal(proto_frame_decode(PROTO_PULL, buf, len, &msg, detail, sizeof(detail)), CM_OK);
	p = (Strand__Pull *)msg;
	assert_string_equal(p->worker_id, "w-1");
	assert_string_equal(p->secret, "s3cret");
	assert_int_equal(p->want, 64);
	assert_int_equal(p->n_results, 2);
	assert_int_equal(p->results[0]->task_id, 7);
	assert_true(p->results[0]->ok);
	assert_memory_equal(p->results[0]->value.data, "[1,2]", 5);
	assert_false(p->results[1]->ok);
	protobuf_c_message_free_unpacked(msg, NULL);
	free(buf);
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
	buf[2] = 9;
	expect_refused(buf, len, PROTO_PULL, "protocol version 9");
	buf[2] = PROTO_VERSION;
	buf[0] = 'X';
	expect_refused(buf, len, PROTO_PULL, "bad magic");
	buf[0] = 'S';
	/* Truncated bodies at every length must be refused or decode cleanly,
	 * never crash; the full body minus its last byte cuts a field. */
	expect_refused(buf, len - 1, PROTO_PULL, "corrupt");
	for (size_t cut = PROTO_HEADER_LEN; cut < len; cut++) {
		ProtobufCMessage *msg = NULL;
		char detail[256];
		if (proto_frame_decode(PROTO_PULL, buf, cut, &msg, detail, sizeof(detail)) == CM_OK)
			protobuf_c_message_free_unpacked(msg, NULL);
	}
	expect_refused(buf, PROTO_FRAME_MAX + 1u, PROTO_PULL, "cap");
	free(buf);
}

static void test_encode_checks_type(void **state)
{
	Strand__Batch b = STRAND__BATCH__INIT;
	uint8_t *buf = NULL;
	size_t len;

	(void)state;
	assert_int_equal(proto_frame_encode(PROTO_PULL, &b.base, &buf, &len), CM_EINVAL);
	assert_null(buf);
	assert_int_equal(proto_frame_encode(PROTO_BATCH, &b.base, &buf, &len), CM_OK);
	assert_int_equal(buf[3], PROTO_BATCH);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_roundtrip),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_encode_checks_type),
	};
	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}

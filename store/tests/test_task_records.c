/*
 * A chunk's task records as bytes (store/task_records.c): what is written
 * as runs reads back exactly, for the shapes a chunk takes and for records
 * of no shape at all; a chunk done or handed out in one go is a few bytes;
 * the fixed records of schema 6 read as they were written; bytes that are
 * not n records are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/store.h"
#include "store/task_records.h"

#define N 1024

/* t written as runs, read back into a fresh array: the same records. */
static size_t round_trip(const trec *t, int n)
{
	trec back[N];
	cm_buf b;

	cm_buf_init(&b);
	memset(back, 0xab, sizeof(back));
	assert_int_equal(task_records_encode(t, n, &b), CM_OK);
	assert_int_equal(task_records_decode(back, n, b.data, b.len), CM_OK);
	for (int i = 0; i < n; i++) {
		assert_int_equal(back[i].state, t[i].state);
		assert_int_equal(back[i].ok, t[i].ok);
		assert_int_equal(back[i].attempts, t[i].attempts);
		assert_int_equal(back[i].x, t[i].x);
	}
	size_t len = b.len;
	cm_buf_fini(&b);
	return len;
}

static void test_a_chunk_in_one_go_is_a_few_bytes(void **state)
{
	trec t[N];

	(void)state;
	memset(t, 0, sizeof(t)); /* all queued */
	assert_true(round_trip(t, N) <= 6);
	for (int i = 0; i < N; i++) /* handed to one worker */
		t[i] = (trec){.state = STORE_PENDING, .attempts = 1, .x = 7};
	assert_true(round_trip(t, N) <= 6);
	for (int i = 0; i < N; i++) /* done in one pull: seqs one after another */
		t[i] = (trec){.state = STORE_DONE, .ok = 1, .attempts = 1, .x = 5000000 + i};
	assert_true(round_trip(t, N) <= 10);
}

static void test_mixed_chunks_read_back(void **state)
{
	trec t[N];
	uint64_t s = 0x9E3779B97F4A7C15ull;

	(void)state;
	/* Half done in two pulls of two workers, a failure, a retried task,
	 * the rest held or queued. */
	for (int i = 0; i < N; i++) {
		if (i < 300)
			t[i] = (trec){.state = STORE_DONE, .ok = 1, .attempts = 1, .x = 1 + i};
		else if (i < 512)
			t[i] = (trec){.state = STORE_DONE, .ok = i != 400, .attempts = i == 450 ? 3 : 1, .x = 9000 + i};
		else if (i < 800)
			t[i] = (trec){.state = STORE_PENDING, .attempts = i % 2 ? 1 : 2, .x = i < 700 ? 2 : 3};
		else
			t[i] = (trec){0};
	}
	round_trip(t, N);
	round_trip(t, 1);
	round_trip(t + 511, 2);
	/* Records of no shape: each its own run. */
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < N; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			t[i] = (trec){.state = (uint8_t)(s % 3),
			              .ok = (uint8_t)(s >> 8 & 1),
			              .attempts = (uint16_t)(s >> 16),
			              .x = (int64_t)(s >> 20) % 4 ? (int64_t)(s >> 1) : INT64_MAX};
		}
		round_trip(t, N);
	}
	/* A run that ends at the largest x. */
	t[0] = (trec){.state = STORE_DONE, .ok = 1, .attempts = 1, .x = INT64_MAX - 1};
	t[1] = (trec){.state = STORE_DONE, .ok = 1, .attempts = 1, .x = INT64_MAX};
	assert_true(round_trip(t, 2) <= 14);
}

static void test_fixed_records_of_schema_6(void **state)
{
	uint8_t blob[3 * RECORDS_FIXED_BYTES] = {
	        /* done, ok, 1 attempt, seq 258 */
	        2,
	        1,
	        1,
	        0,
	        2,
	        1,
	        0,
	        0,
	        0,
	        0,
	        0,
	        0,
	        /* held by ref 5, 2 attempts */
	        1,
	        0,
	        2,
	        0,
	        5,
	        0,
	        0,
	        0,
	        0,
	        0,
	        0,
	        0,
	        /* done, failed, 300 attempts, seq 2^40 */
	        2,
	        0,
	        0x2c,
	        1,
	        0,
	        0,
	        0,
	        0,
	        0,
	        1,
	        0,
	        0,
	};
	trec t[3];

	(void)state;
	assert_int_equal(task_records_decode(t, 3, blob, sizeof(blob)), CM_OK);
	assert_true(t[0].state == STORE_DONE && t[0].ok == 1 && t[0].attempts == 1 && t[0].x == 258);
	assert_true(t[1].state == STORE_PENDING && t[1].ok == 0 && t[1].attempts == 2 && t[1].x == 5);
	assert_true(t[2].state == STORE_DONE && t[2].ok == 0 && t[2].attempts == 300 && t[2].x == 1ll << 40);
	assert_int_equal(task_records_decode(t, 2, blob, sizeof(blob)), CM_EIO);
	assert_int_equal(task_records_decode(t, 3, blob, sizeof(blob) - 1), CM_EIO);
	/* No blob: every task queued, never run. */
	t[0].state = STORE_DONE;
	assert_int_equal(task_records_decode(t, 3, NULL, 0), CM_OK);
	assert_true(t[0].state == STORE_QUEUED && t[0].attempts == 0 && t[2].x == 0);
}

static void test_bytes_that_are_not_the_records(void **state)
{
	static const struct {
		uint8_t bytes[16];
		size_t len;
		int n;
	} bad[] = {
	        {{RECORDS_RUNS, 3, 0, 0, 0}, 5, 2}, /* a run past n */
	        {{RECORDS_RUNS, 1, 0, 0, 0}, 5, 2}, /* short of n */
	        {{RECORDS_RUNS, 0, 0, 0, 0, 2, 0, 0, 0}, 9, 2}, /* an empty run */
	        {{RECORDS_RUNS, 2, 3, 0, 0}, 5, 2}, /* state 3 */
	        {{RECORDS_RUNS, 2, 0x10, 0, 0}, 5, 2}, /* a flag no record has */
	        {{RECORDS_RUNS, 2, 0, 0x80, 0x80, 0x04, 0}, 7, 2}, /* 65,536 attempts */
	        {{RECORDS_RUNS, 2, 0x0a, 1, 0x80}, 5, 2}, /* a varint cut short */
	        /* x = INT64_MAX, then one past it */
	        {{RECORDS_RUNS, 2, 0x0a, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 13, 2},
	        /* a varint of 11 bytes */
	        {{RECORDS_RUNS, 1, 2, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 15, 1},
	        {{RECORDS_RUNS}, 1, 1}, /* no runs */
	        {{0}, 0, 1},
	};
	trec t[4];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (task_records_decode(t, bad[i].n, bad[i].bytes, bad[i].len) != CM_EIO)
			fail_msg("case %zu was read", i);
	/* And what is right beside them is read: x = 2^62, then 2^62 + 1. */
	static const uint8_t good[] = {RECORDS_RUNS, 2, 0x0a, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40};
	assert_int_equal(task_records_decode(t, 2, good, sizeof(good)), CM_OK);
	assert_true(t[0].state == STORE_DONE && t[0].ok == 0 && t[0].attempts == 1);
	assert_true(t[0].x == 1ll << 62 && t[1].x == (1ll << 62) + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_chunk_in_one_go_is_a_few_bytes),
	        cmocka_unit_test(test_mixed_chunks_read_back),
	        cmocka_unit_test(test_fixed_records_of_schema_6),
	        cmocka_unit_test(test_bytes_that_are_not_the_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

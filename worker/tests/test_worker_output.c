/*
 * What tasks print, kept for the gateway: cut into lines (a newline ends
 * one, WORKER_OUTPUT_LINE_MAX bytes cut one), each on its stream, an
 * unfinished line sent as it is, the lines numbered across sends, a
 * flood beyond the room dropped with one line saying how many, and the
 * marks that hold a result until the lines before it are sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "worker/output.h"

/* Line i of l, as a string (static buffer). */
static const char *line(const worker_output_lines *l, size_t i)
{
	static char text[WORKER_OUTPUT_LINE_MAX + 1];
	size_t at = 0;

	for (size_t k = 0; k < i; k++)
		at += l->lens[k];
	memcpy(text, l->text.data + at, l->lens[i]);
	text[l->lens[i]] = '\0';
	return text;
}

static void test_lines_streams_and_numbers(void **state)
{
	worker_output_lines l = {0};
	char long_line[WORKER_OUTPUT_LINE_MAX + 10];

	(void)state;
	worker_output_capture();
	assert_false(worker_output_due(cm_now_ms() + 1000)); /* nothing waits */
	worker_output_write(WORKER_OUTPUT_STDOUT, "hello ", 6);
	worker_output_write(WORKER_OUTPUT_STDERR, "oops\n", 5);
	worker_output_write(WORKER_OUTPUT_STDOUT, "world\nand a bar", 15);
	assert_false(worker_output_due(0)); /* at no time before it came */
	assert_true(worker_output_due(cm_now_ms() + 1000));
	assert_int_equal(worker_output_peek(&l, 1 << 20, 1 << 20), CM_OK);
	assert_int_equal(l.first, 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(line(&l, 0), "oops");
	assert_int_equal(l.streams[0], WORKER_OUTPUT_STDERR);
	assert_string_equal(line(&l, 1), "hello world");
	assert_int_equal(l.streams[1], WORKER_OUTPUT_STDOUT);
	assert_string_equal(line(&l, 2), "and a bar"); /* unfinished: sent as it is */
	/* Not acknowledged: the same lines again. */
	assert_int_equal(worker_output_peek(&l, 1 << 20, 1 << 20), CM_OK);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.first, 0);
	worker_output_sent(3);
	assert_false(worker_output_due(cm_now_ms() + 1000));

	/* A long line is cut; numbering goes on; a small budget sends some. */
	memset(long_line, 'x', sizeof(long_line));
	long_line[sizeof(long_line) - 1] = '\n';
	worker_output_write(WORKER_OUTPUT_STDOUT, long_line, sizeof(long_line));
	assert_int_equal(worker_output_peek(&l, 100, 1 << 20), CM_OK);
	assert_int_equal(l.first, 3);
	assert_int_equal(l.n, 1); /* the first goes even past the budget */
	assert_int_equal(l.lens[0], WORKER_OUTPUT_LINE_MAX);
	worker_output_sent(1);
	assert_int_equal(worker_output_peek(&l, 1 << 20, 1 << 20), CM_OK);
	assert_int_equal(l.first, 4);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.lens[0], sizeof(long_line) - 1 - WORKER_OUTPUT_LINE_MAX);
	worker_output_sent(1);
	/* A line budget holds too. */
	worker_output_write(WORKER_OUTPUT_STDOUT, "a\nb\nc\n", 6);
	assert_int_equal(worker_output_peek(&l, 1 << 20, 2), CM_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(line(&l, 1), "b");
	worker_output_sent(2);
	assert_int_equal(worker_output_peek(&l, 1 << 20, 2), CM_OK);
	assert_int_equal(l.first, 7);
	assert_string_equal(line(&l, 0), "c");
	worker_output_sent(1);
	worker_output_lines_fini(&l);
}

static void test_flood_dropped_with_a_count(void **state)
{
	worker_output_lines l = {0};
	char text[1001];
	size_t kept = 0;

	(void)state;
	worker_output_capture();
	memset(text, 'y', 1000);
	text[1000] = '\n';
	for (int i = 0; i < 2000; i++) /* 2 MB of lines: twice the room */
		worker_output_write(WORKER_OUTPUT_STDOUT, text, sizeof(text));
	worker_output_write(WORKER_OUTPUT_STDOUT, "after\n", 6);
	assert_int_equal(worker_output_peek(&l, 1 << 30, 1 << 20), CM_OK);
	for (size_t i = 0; i < l.n; i++)
		kept += l.lens[i] == 1000;
	assert_true(kept > 900 && kept < 1100);
	/* The first line that fits again comes after one saying how many
	 * went. */
	char expected[160];
	snprintf(expected, sizeof(expected),
	         "[strand: %zu lines dropped: they came faster than the worker could send them]", (size_t)2000 - kept);
	assert_int_equal(l.n, kept + 2);
	assert_string_equal(line(&l, l.n - 2), expected);
	assert_int_equal(l.streams[l.n - 2], WORKER_OUTPUT_STDERR);
	assert_string_equal(line(&l, l.n - 1), "after");
	worker_output_sent(l.n);
	worker_output_write(WORKER_OUTPUT_STDOUT, "next\n", 5);
	assert_int_equal(worker_output_peek(&l, 1 << 30, 1 << 20), CM_OK);
	assert_int_equal(l.n, 1);
	assert_string_equal(line(&l, 0), "next");
	worker_output_sent(1);
	worker_output_lines_fini(&l);
}

static void test_marks_count_the_lines_a_result_waits_for(void **state)
{
	worker_output_lines l = {0};
	char text[1001];

	(void)state;
	worker_output_capture();
	uint64_t start = worker_output_mark();
	worker_output_write(WORKER_OUTPUT_STDOUT, "one\ntwo\nthr", 11);
	assert_int_equal(worker_output_mark(), start + 3); /* the unfinished line counts */
	assert_int_equal(worker_output_peek(&l, 1 << 20, 2), CM_OK);
	assert_int_equal(l.first, start);
	assert_int_equal(l.n, 2);
	assert_true(l.more); /* one did not fit */
	worker_output_sent(2);
	assert_int_equal(worker_output_peek(&l, 1 << 20, 2), CM_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.lens[0], 3);
	assert_string_equal(line(&l, 0), "thr");
	assert_false(l.more);
	worker_output_sent(1);
	assert_int_equal(worker_output_mark(), start + 3);

	/* A flood with no line after it: the line that says how many went
	 * comes all the same, and the mark counts it. */
	memset(text, 'z', 1000);
	text[1000] = '\n';
	for (int i = 0; i < 2000; i++)
		worker_output_write(WORKER_OUTPUT_STDOUT, text, sizeof(text));
	uint64_t mark = worker_output_mark();
	assert_int_equal(worker_output_peek(&l, 1 << 30, 1 << 20), CM_OK);
	assert_int_equal(l.first + l.n, mark);
	assert_false(l.more);
	char expected[160];
	snprintf(expected, sizeof(expected),
	         "[strand: %zu lines dropped: they came faster than the worker could send them]",
	         (size_t)2000 - (l.n - 1));
	assert_string_equal(line(&l, l.n - 1), expected);
	worker_output_sent(l.n);
	assert_int_equal(worker_output_mark(), mark);
	worker_output_lines_fini(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_lines_streams_and_numbers),
	        cmocka_unit_test(test_flood_dropped_with_a_count),
	        cmocka_unit_test(test_marks_count_the_lines_a_result_waits_for),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

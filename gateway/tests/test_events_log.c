/*
 * The event log (gateway/events.c) alone: frames and ids, the ring's two
 * bounds (events and bytes), a reader that fell behind, resuming by
 * Last-Event-ID, a pool's events only, and the cap on readers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/events.h"

/* Publishes n events of type "job" for pool, each {"n": i} padded with
 * pad bytes. */
static void publish(events *ev, int n, const char *pool, size_t pad)
{
	events_batch b;
	char *fill = calloc(pad + 1, 1);

	memset(fill, 'x', pad);
	events_batch_init(&b);
	for (int i = 0; i < n; i++)
		events_batch_add(&b, "job", pool, json_pack("{s:i, s:s}", "n", i, "pad", fill));
	assert_int_equal(events_publish(ev, &b), (size_t)n);
	assert_int_equal(b.n, 0); /* cleared */
	events_batch_fini(&b);
	free(fill);
}

/* The id line of the frame at text (NUL-terminated copy in out). */
static void first_id(const char *text, char *out, size_t len)
{
	const char *id = strstr(text, "id: ");
	assert_non_null(id);
	snprintf(out, len, "%.*s", (int)strcspn(id + 4, "\n"), id + 4);
}

static void frames_carry_id_type_and_data(void **state)
{
	events *ev;
	uint64_t cursor;
	int reset;
	cm_buf out;

	(void)state;
	assert_int_equal(events_new(&ev), CM_OK);
	assert_int_equal(events_subscribe(ev, NULL, &cursor, &reset), CM_OK);
	assert_false(reset);
	cm_buf_init(&out);
	assert_int_equal(events_read(ev, &cursor, NULL, &out, 65536), EVENTS_NONE);
	publish(ev, 2, "p-1", 0);
	assert_int_equal(events_read(ev, &cursor, NULL, &out, 65536), EVENTS_SOME);
	const char *dash = strchr(out.data + 4, '-');
	static const char frame[] = "-1\nevent: job\ndata: {\"n\":0,\"pad\":\"\"}\n\nid: ";
	assert_non_null(dash);
	assert_memory_equal(dash, frame, sizeof(frame) - 1);
	assert_non_null(strstr(out.data, "-2\nevent: job\ndata: {\"n\":1,\"pad\":\"\"}\n\n"));
	cm_buf_fini(&out);
	events_unsubscribe(ev);
	events_free(ev);
}

static void the_ring_keeps_the_last_events_and_bytes(void **state)
{
	events *ev;
	uint64_t cursor, behind;
	int reset;
	cm_buf out;
	char id[64], first[64];

	(void)state;
	assert_int_equal(events_new(&ev), CM_OK);
	assert_int_equal(events_subscribe(ev, NULL, &behind, &reset), CM_OK);
	cm_buf_init(&out);
	publish(ev, 10, "p-1", 0);
	assert_int_equal(events_read(ev, &behind, NULL, &out, 65536), EVENTS_SOME);
	first_id(out.data, first, sizeof(first)); /* event 1 */
	out.len = 0;
	/* 5,000 more: the first 914 go (4,096 kept). */
	publish(ev, 5000, "p-1", 0);
	assert_int_equal(events_read(ev, &behind, NULL, &out, 65536), EVENTS_GAP);
	assert_int_equal(events_subscribe(ev, first, &cursor, &reset), CM_OK);
	assert_true(reset); /* that id is no longer kept */
	assert_int_equal(cursor, 5010);
	events_unsubscribe(ev);
	/* An id still kept resumes right after it. */
	snprintf(id, sizeof(id), "%.*s4999", (int)(strchr(first, '-') - first + 1), first);
	assert_int_equal(events_subscribe(ev, id, &cursor, &reset), CM_OK);
	assert_false(reset);
	assert_int_equal(cursor, 4999);
	assert_int_equal(events_read(ev, &cursor, NULL, &out, 1 << 20), EVENTS_SOME);
	first_id(out.data, id, sizeof(id));
	assert_string_equal(strchr(id, '-'), "-5000");
	assert_int_equal(cursor, 5010);
	events_unsubscribe(ev);
	/* Bytes bound it too: 60 events of 100 KB keep under 4 MiB. */
	publish(ev, 60, "p-1", 100000);
	assert_int_equal(events_subscribe(ev, id, &cursor, &reset), CM_OK);
	assert_true(reset);
	out.len = 0;
	/* The 41 newest are kept: 41 x 100 KB <= 4 MiB < 42 x 100 KB. */
	uint64_t from = cursor - 42;
	assert_int_equal(events_read(ev, &from, NULL, &out, 1u << 30), EVENTS_GAP);
	from = cursor - 41;
	assert_int_equal(events_read(ev, &from, NULL, &out, 1u << 30), EVENTS_SOME);
	assert_int_equal(from, cursor);
	assert_true(out.len <= EVENTS_BYTES);
	int frames = 0;
	for (const char *p = out.data; (p = strstr(p, "event: job")); p++)
		frames++;
	assert_int_equal(frames, 41);
	events_unsubscribe(ev);
	events_unsubscribe(ev);
	cm_buf_fini(&out);
	events_free(ev);
}

static void a_reader_of_one_pool_and_the_readers_cap(void **state)
{
	events *ev;
	uint64_t cursor, other;
	int reset;
	cm_buf out;

	(void)state;
	assert_int_equal(events_new(&ev), CM_OK);
	assert_int_equal(events_subscribe(ev, NULL, &cursor, &reset), CM_OK);
	publish(ev, 3, "p-a", 0);
	publish(ev, 2, "p-b", 0);
	publish(ev, 1, "p-a", 0);
	cm_buf_init(&out);
	assert_int_equal(events_read(ev, &cursor, "p-b", &out, 65536), EVENTS_SOME);
	assert_int_equal(cursor, 6); /* past the others too */
	int frames = 0;
	for (const char *p = out.data; (p = strstr(p, "event: job")); p++)
		frames++;
	assert_int_equal(frames, 2);
	assert_false(events_subscribed(ev) == 0);
	for (int i = 1; i < EVENTS_STREAMS_MAX; i++)
		assert_int_equal(events_subscribe(ev, NULL, &other, &reset), CM_OK);
	assert_int_equal(events_subscribe(ev, NULL, &other, &reset), CM_EUNAVAIL);
	for (int i = 0; i < EVENTS_STREAMS_MAX; i++)
		events_unsubscribe(ev);
	assert_false(events_subscribed(ev));
	cm_buf_fini(&out);
	events_free(ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(frames_carry_id_type_and_data),
	        cmocka_unit_test(the_ring_keeps_the_last_events_and_bytes),
	        cmocka_unit_test(a_reader_of_one_pool_and_the_readers_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

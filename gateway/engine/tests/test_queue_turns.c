/* A queue dealt in turns: each reader's exact share, however the readers
 * take; the cap on a share that waits; a reader's share dealt on when it
 * ends; items no reader had; the cap on readers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "gateway/engine/engine_int.h"

/* Takes everything reader may take; returns how many. */
static int64_t take_all(queue_turns *t, const char *reader)
{
	int64_t n = turns_allowance(t, reader);

	turns_took(t, reader, n);
	return n;
}

static void shares_are_exact_however_readers_take(void **state)
{
	queue_turns *t = turns_new();
	const char *names[] = {"a", "b", "c", "d"};
	int64_t got[4] = {0};

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(turns_join(t, names[i]), CM_OK);
	/* 2,400 items put in batches of 7 while the readers take at their own
	 * paces: a takes all it may after every batch, b every third, c one
	 * at a time, d only at the end. */
	for (int batch = 0; batch * 7 < 2400; batch++) {
		int64_t n = 2400 - batch * 7 < 7 ? 2400 - batch * 7 : 7;
		turns_deal(t, n);
		got[0] += take_all(t, "a");
		if (batch % 3 == 0)
			got[1] += take_all(t, "b");
		if (turns_allowance(t, "c") > 0) {
			turns_took(t, "c", 1);
			got[2]++;
		}
	}
	for (int i = 0; i < 4; i++)
		got[i] += take_all(t, names[i]);
	for (int i = 0; i < 4; i++)
		assert_int_equal(got[i], 600);
	assert_int_equal(t->undealt, 0);
	turns_free(t);
}

static void a_share_waits_up_to_its_cap(void **state)
{
	queue_turns *t = turns_new();

	(void)state;
	assert_int_equal(turns_join(t, "idle"), CM_OK);
	assert_int_equal(turns_join(t, "busy"), CM_OK);
	/* Both shares full: the rest is anyone's. */
	turns_deal(t, 3 * TURNS_DEALT_MAX);
	assert_int_equal(t->undealt, TURNS_DEALT_MAX);
	assert_int_equal(turns_allowance(t, "idle"), 2 * TURNS_DEALT_MAX);
	assert_int_equal(turns_allowance(t, "busy"), 2 * TURNS_DEALT_MAX);
	assert_int_equal(take_all(t, "busy"), 2 * TURNS_DEALT_MAX);
	assert_int_equal(turns_allowance(t, "busy"), 0);
	assert_int_equal(turns_allowance(t, "idle"), TURNS_DEALT_MAX);
	/* idle never takes: past its cap the turn skips it. */
	turns_deal(t, 10);
	assert_int_equal(turns_allowance(t, "busy"), 10);
	assert_int_equal(turns_allowance(t, "idle"), TURNS_DEALT_MAX);
	turns_free(t);
}

static void a_share_goes_on_when_its_reader_ends(void **state)
{
	queue_turns *t = turns_new();

	(void)state;
	assert_int_equal(turns_join(t, "a"), CM_OK);
	assert_int_equal(turns_join(t, "b"), CM_OK);
	assert_int_equal(turns_join(t, "c"), CM_OK);
	turns_deal(t, 9);
	assert_int_equal(turns_allowance(t, "b"), 3);
	assert_int_equal(turns_leave(t, "b"), 1);
	assert_int_equal(turns_leave(t, "b"), 0);
	/* b's three, dealt on in turn: 3 + 2 to one, 3 + 1 to the other. */
	assert_int_equal(turns_allowance(t, "a") + turns_allowance(t, "c"), 9);
	assert_true(turns_allowance(t, "a") >= 4 && turns_allowance(t, "c") >= 4);
	assert_int_equal(turns_allowance(t, "b"), 0);
	/* The last reader gone: what it had is anyone's. */
	assert_int_equal(turns_leave(t, "a"), 1);
	assert_int_equal(turns_leave(t, "c"), 1);
	assert_int_equal(t->undealt, 9);
	assert_int_equal(turns_allowance(t, "someone"), 9);
	turns_free(t);
}

static void items_before_any_reader_are_anyones(void **state)
{
	queue_turns *t = turns_new();

	(void)state;
	turns_deal(t, 10);
	assert_int_equal(t->undealt, 10);
	assert_int_equal(turns_join(t, "first"), CM_OK);
	assert_int_equal(turns_join(t, "second"), CM_OK);
	assert_int_equal(turns_allowance(t, "first"), 10);
	assert_int_equal(turns_allowance(t, "second"), 10);
	/* From then on, in turn; the first takes its own before anyone's. */
	turns_deal(t, 4);
	assert_int_equal(turns_allowance(t, "first"), 12);
	turns_took(t, "first", 3);
	assert_int_equal(turns_allowance(t, "first"), 9);
	assert_int_equal(turns_allowance(t, "second"), 11);
	assert_int_equal(t->undealt, 9);
	turns_free(t);
}

static void readers_are_capped(void **state)
{
	queue_turns *t = turns_new();
	char name[16];

	(void)state;
	for (int i = 0; i < TURNS_READERS_MAX; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		assert_int_equal(turns_join(t, name), CM_OK);
	}
	assert_int_equal(turns_join(t, "r0"), CM_OK); /* known: no new one */
	assert_int_equal(turns_join(t, "one-more"), CM_EQUOTA);
	assert_int_equal(turns_leave(t, "r7"), 1);
	assert_int_equal(turns_join(t, "one-more"), CM_OK);
	/* Every other reader is still found by its id (it moved): none new. */
	for (int i = 0; i < TURNS_READERS_MAX; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		assert_int_equal(turns_join(t, name), i == 7 ? CM_EQUOTA : CM_OK);
	}
	assert_int_equal(t->n, TURNS_READERS_MAX);
	turns_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(shares_are_exact_however_readers_take),
	        cmocka_unit_test(a_share_waits_up_to_its_cap),
	        cmocka_unit_test(a_share_goes_on_when_its_reader_ends),
	        cmocka_unit_test(items_before_any_reader_are_anyones),
	        cmocka_unit_test(readers_are_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

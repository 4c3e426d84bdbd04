/* The hub's limits by address: what counts as one address, and the pace
 * of new connections an address, on a clock the test sets. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include <cmocka.h>

#include "gateway/hub/address_limits.h"

static hub_address address(const char *text)
{
	struct sockaddr_storage sa = {0};
	hub_address a;
	socklen_t len;

	if (strchr(text, ':')) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
		in6->sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, text, &in6->sin6_addr), 1);
		len = sizeof(*in6);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&sa;
		in->sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, text, &in->sin_addr), 1);
		len = sizeof(*in);
	}
	assert_int_equal(hub_address_of(&sa, len, &a), 1);
	return a;
}

static void assert_text(const char *text, const char *expected)
{
	hub_address a = address(text);
	char buf[64];

	hub_address_text(&a, buf, sizeof(buf));
	assert_string_equal(buf, expected);
}

/* An IPv4 address is itself, also mapped into IPv6; an IPv6 address counts
 * as its /64; a Unix socket's peer has no address. */
static void test_what_one_address_is(void **state)
{
	(void)state;
	assert_text("10.1.2.3", "10.1.2.3");
	assert_text("::ffff:10.1.2.3", "10.1.2.3");
	assert_text("2001:db8:1:2::5", "2001:db8:1:2::/64");

	hub_address v4 = address("10.1.2.3"), mapped = address("::ffff:10.1.2.3");
	assert_true(hub_address_same(&v4, &mapped));
	hub_address other = address("10.1.2.4");
	assert_false(hub_address_same(&v4, &other));
	hub_address a = address("2001:db8:1:2::5"), b = address("2001:db8:1:2:ffff::9"), c = address("2001:db8:1:3::5");
	assert_true(hub_address_same(&a, &b));
	assert_false(hub_address_same(&a, &c));

	struct sockaddr_storage unix_peer = {.ss_family = AF_UNIX};
	hub_address none;
	assert_int_equal(hub_address_of(&unix_peer, sizeof(struct sockaddr_un), &none), 0);
	struct sockaddr_storage short_v4 = {.ss_family = AF_INET};
	assert_int_equal(hub_address_of(&short_v4, 2, &none), 0);
}

/* 10 a second, 20 at once: the 21st at once is refused, one more comes
 * each 100 ms, and a quiet address is back to 20, no more. */
static void test_pace_of_one_address(void **state)
{
	hub_pace *p = hub_pace_new(10, 20);
	hub_address a = address("10.0.0.1"), b = address("2001:db8::1");

	(void)state;
	assert_non_null(p);
	for (int i = 0; i < 20; i++)
		assert_true(hub_pace_take(p, &a, 1000));
	assert_false(hub_pace_take(p, &a, 1000));
	assert_false(hub_pace_take(p, &a, 1050)); /* half a connection's worth came */
	assert_true(hub_pace_take(p, &a, 1100));
	assert_false(hub_pace_take(p, &a, 1100));
	/* Another address has its own (or, on the same entry, a full one). */
	for (int i = 0; i < 20; i++)
		assert_true(hub_pace_take(p, &b, 1100));
	assert_false(hub_pace_take(p, &b, 1100));

	/* An hour quiet: 20 again, not 36,000. */
	int taken = 0;
	while (taken < 100 && hub_pace_take(p, &b, 3601100))
		taken++;
	assert_int_equal(taken, 20);
	hub_pace_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_what_one_address_is),
	        cmocka_unit_test(test_pace_of_one_address),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

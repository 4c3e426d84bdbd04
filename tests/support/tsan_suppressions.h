/*
 * Included once by each test that uses nng streams (it defines a function;
 * test_rogue_worker, which dials the hub as a stranger would): under
 * ThreadSanitizer, the suppressions a program carries itself, so that they
 * hold without TSAN_OPTIONS. The gateway and the worker use nng's streams
 * no more.
 *
 * libnng (Debian's, not built with ThreadSanitizer) frees a dialer or a
 * stream on its reaper thread after synchronization TSan does not see: the
 * free is reported as a race with the last use, in nng's own code, of the
 * mutex inside it.
 */
#ifndef TESTS_SUPPORT_TSAN_SUPPRESSIONS_H
#define TESTS_SUPPORT_TSAN_SUPPRESSIONS_H

#ifdef __SANITIZE_THREAD__
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:libnng.so.1\n";
}
#endif

#endif

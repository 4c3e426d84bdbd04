/*
 * Included once by each program that uses nng streams (it defines a
 * function; the gateway's and the worker's main.c, test_rogue_worker): under
 * ThreadSanitizer, the suppressions a program carries itself, so that they
 * hold wherever it runs (a worker in a container or a pod included, whose
 * environment has no TSAN_OPTIONS).
 *
 * libnng (Debian's, not built with ThreadSanitizer) frees a dialer or a
 * stream on its reaper thread after synchronization TSan does not see: the
 * free is reported as a race with the last use, in nng's own code, of the
 * mutex inside it (seen at a worker's exit and in test_rogue_worker).
 */
#ifndef COMMON_TSAN_SUPPRESSIONS_H
#define COMMON_TSAN_SUPPRESSIONS_H

#ifdef __SANITIZE_THREAD__
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "race:libnng.so.1\n";
}
#endif

#endif

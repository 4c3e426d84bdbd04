/*
 * What a worker reports is checked before it is recorded: a result must be
 * one JSON value in UTF-8 (no NUL, no \u0000, which most JSON readers
 * refuse) within the value cap (spec_value_max), and an error message UTF-8
 * text, because result pages are put
 * together from the stored bytes as they are. Anything else becomes a failed
 * task whose error says why, so a page is always readable. Pure; thread-safe:
 * the hub runs it on nng's threads, off the engine.
 */
#ifndef GATEWAY_RESULT_CHECK_H
#define GATEWAY_RESULT_CHECK_H

#include <stddef.h>

/* Returns 1 when value[0..len) is acceptable as a result (ok) or an error
 * message (!ok); else 0, with "invalid result: REASON" in why. */
int result_check(int ok, const void *value, size_t len, char *why, size_t why_len);

#endif

/*
 * A strict JSON scanner that builds nothing: it finds where a value ends in
 * text and checks it on the way (RFC 8259: strings of valid UTF-8 with valid
 * escapes, no raw control characters, no \u0000 and no lone surrogates;
 * numbers by the grammar; nesting at most JSON_SCAN_DEPTH).
 *
 * Why: a map's arguments are stored and handed to workers as their JSON
 * text. Building a jansson value per argument and printing it back cost
 * more than everything else a task does (two allocations a value, some 100
 * bytes each, and a json_dumps). Scanning takes each argument's bytes where
 * they lie. Duplicate object keys are the one thing a scan does not see:
 * JSON_SCAN_OBJECT tells the caller to have jansson look at that value.
 * Thread-safe, no state.
 */
#ifndef GATEWAY_JSON_SCAN_H
#define GATEWAY_JSON_SCAN_H

#include <stddef.h>

#define JSON_SCAN_DEPTH 2048 /* as jansson's parser */

/* What a scanned value holds, for its caller. */
#define JSON_SCAN_OBJECT 1u /* an object somewhere in it */
#define JSON_SCAN_SPACE 2u /* whitespace between its tokens */

/* Index of the first byte at or after i that is not JSON whitespace. */
size_t json_scan_space(const char *s, size_t len, size_t i);

/* Scans the value that starts at s[i] (no whitespace before it): *end gets
 * the index just past it and *flags what it holds. Returns 0, or -1 with
 * the reason and the byte it was found at in why. */
int json_scan_value(const char *s, size_t len, size_t i, size_t *end, unsigned *flags, char *why, size_t why_len);

/* Copies the scanned value s[0..len) to out (len bytes at least) without
 * its whitespace between tokens; returns the bytes written. */
size_t json_scan_compact(const char *s, size_t len, char *out);

#endif

/*
 * The body of one part of a map: its head's members and a slice of its
 * arguments, written as compact JSON text straight from the caller's
 * array. Building a copy of the slice and handing it to json_dumps cost a
 * reference a value and a printf an integer; a map's parts are megabytes.
 * Inside libstrand only.
 */
#ifndef CLIENT_ARGS_BODY_H
#define CLIENT_ARGS_BODY_H

#include <jansson.h>
#include <stddef.h>

/* A growable text, its room kept from body to body. */
typedef struct body_text {
	char *data;
	size_t len, cap;
} body_text;

/* Writes {head's members, "args": [args[lo], ..., args[lo + n - 1]]} into
 * out (emptied first). head is an object without "args". Returns 0, or -1
 * when memory ran out or a value cannot be written as JSON. */
int args_body(body_text *out, const json_t *head, const json_t *args, size_t lo, size_t n);

#endif

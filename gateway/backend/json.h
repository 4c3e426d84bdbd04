/*
 * What the container backends (docker, kubernetes) share in talking to
 * their daemons: the JSON they build from a run spec (argv-like lists and
 * "name=value" pairs), and the answers' bodies, collected.
 */
#ifndef GATEWAY_BACKEND_JSON_H
#define GATEWAY_BACKEND_JSON_H

#include <jansson.h>
#include <stddef.h>

#define BACKEND_REPLY_MAX (16u << 20) /* a daemon's answer bigger than this is refused */

/* ["v0", "v1", ...] */
json_t *backend_json_strings(char *const *v, size_t n);
/* {"name": "value", ...} from "name=value" strings (those without '=' skipped). */
json_t *backend_json_pairs(char *const *pairs, size_t n);
/* A libcurl write callback appending to the cm_buf ctx, up to
 * BACKEND_REPLY_MAX (beyond, it returns 0 and the transfer fails). */
size_t backend_reply_collect(char *p, size_t size, size_t n, void *ctx);

#endif

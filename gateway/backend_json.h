/*
 * JSON the container backends (docker, kubernetes) both build from a run
 * spec: argv-like lists and "name=value" pairs.
 */
#ifndef GATEWAY_BACKEND_JSON_H
#define GATEWAY_BACKEND_JSON_H

#include <jansson.h>
#include <stddef.h>

/* ["v0", "v1", ...] */
json_t *backend_json_strings(char *const *v, size_t n);
/* {"name": "value", ...} from "name=value" strings (those without '=' skipped). */
json_t *backend_json_pairs(char *const *pairs, size_t n);

#endif

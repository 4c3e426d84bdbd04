/*
 * api: the REST surface over libmicrohttpd. Parses requests (spec.h), asks
 * the engine, and answers JSON, or RFC 9457 problem+json on error. Result
 * pages are read straight from the store through read-only connections: what
 * they see is committed, so nothing is served that a crash could take back.
 */
#ifndef GATEWAY_HTTP_API_H
#define GATEWAY_HTTP_API_H

#include "gateway/blob_store.h"
#include "gateway/config.h"
#include "gateway/engine/engine.h"

/* Request bodies over this are refused with 413: a map of up to a million
 * arguments (SPEC_MAX_VALUES) of some 64 bytes each. */
#define API_BODY_MAX (64u << 20)
#define API_SESSION_BODY_MAX 4096u /* POST /v1/session, the one route without a token */
#define API_WAIT_MAX_S 300
#define API_URL_MAX 2048 /* longer URLs: 414 */
/* A connection's buffer: a request line and headers up to about this get
 * the gateway's own answers (414 and 400 as problem+json); a head past it
 * gets libmicrohttpd's, and its connection closed. Pages are mapped as
 * they are used. */
#define API_HEAD_MEMORY (128u << 10)
#define API_CONNECTIONS_MAX 8192u /* HTTP connections at most, whatever the open-file limit */
#define API_FD_RESERVE 512 /* open files kept for the store and spawning workers (and the hub's quarter) */
#define API_PAGE_MAX 100000 /* results a page holds at most ... */
#define API_PAGE_BYTES (16u << 20) /* ... and bytes: a page ends early there, with its next_cursor */

typedef struct api api;

/* Serves cfg->http; code and values: the packages and values clients
 * upload (borrowed, outlive the API). */
int api_start(const gw_config *cfg, engine *e, blob_store *code, blob_store *values, api **out, char *detail,
              size_t detail_len);
void api_stop(api *a);

#endif

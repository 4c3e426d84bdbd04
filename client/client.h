/*
 * libstrand: a C client for the strand REST API, shaped like Python's
 * multiprocessing.Pool (create, map, imap/imap_unordered, terminate).
 * It speaks HTTP with libcurl and JSON with jansson; one strand_client per
 * thread. Functions return 0 on success and -1 on failure, with the reason
 * (the server's problem+json detail when there is one) in
 * strand_client_error().
 */
#ifndef CLIENT_CLIENT_H
#define CLIENT_CLIENT_H

#include <jansson.h>

typedef struct strand_client strand_client;

/* url NULL: $STRAND_URL, else http://127.0.0.1:8080. Returns a new client. */
strand_client *strand_client_new(const char *url);
void strand_client_free(strand_client *c);
/* The last error, borrowed; valid until the next call. */
const char *strand_client_error(const strand_client *c);

/* One request. body is borrowed (may be NULL); *reply is a new reference
 * (may be NULL when the body is not JSON). Returns the HTTP status, 0 when
 * no answer came. */
long strand_request(strand_client *c, const char *method, const char *path, json_t *body, json_t **reply);

/* The same, for a body that is not JSON (logs): *text is new (free() it),
 * NUL-terminated, *len long. */
long strand_request_raw(strand_client *c, const char *method, const char *path, char **text, size_t *len);

/* Pool(processes): spec is borrowed and may be NULL (defaults), id holds 32. */
int strand_pool_create(strand_client *c, int processes, json_t *spec, char id[32]);
/* Waits until the pool has `processes` connected workers (up to timeout_s). */
int strand_pool_wait_ready(strand_client *c, const char *pool, int processes, int timeout_s);
/* pool.terminate(): returns once every worker is gone. */
int strand_pool_terminate(strand_client *c, const char *pool);

/* map_async: args is borrowed; job holds 32. */
int strand_map(strand_client *c, const char *pool, const char *function, json_t *args, int chunksize, char job[32]);

/* imap (unordered = 0) or imap_unordered (1): calls fn for every result as
 * it arrives, pages of up to page results, until all are delivered. value
 * is the result, or the error text as a JSON string when ok is 0
 * (borrowed for the call). A non-zero return from fn stops early. */
typedef int (*strand_result_fn)(void *ctx, json_int_t index, int ok, json_t *value);
int strand_imap(strand_client *c, const char *job, int unordered, int page, strand_result_fn fn, void *ctx);

/* AsyncManager: a manager hosting one object of type (dict, list, queue,
 * counter, sleeper, LIB.so:TYPE); spec is borrowed, may be NULL; id holds 32. */
int strand_manager_create(strand_client *c, const char *type, json_t *spec, char id[32]);
/* Calls method with args (borrowed JSON array, may be NULL) and returns at
 * once with the call's handle in call (32). */
int strand_manager_call(strand_client *c, const char *manager, const char *method, json_t *args, char call[32]);
/* The call's result (*result new), waiting for it up to wait_s. Returns 0,
 * or -1 with the call's error (or the gateway's) in strand_client_error. */
int strand_manager_get(strand_client *c, const char *manager, const char *call, int wait_s, json_t **result);
int strand_manager_shutdown(strand_client *c, const char *manager);

#endif

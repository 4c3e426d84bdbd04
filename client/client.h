/*
 * libstrand: a C client for the strand REST API, shaped like Python's
 * multiprocessing: Pool (map, imap, imap_unordered, apply, apply_async and
 * its get, close, join, terminate), Process (start, join, terminate),
 * SimpleQueue (put, get), Pipe (send, recv) and AsyncManager (call, get).
 * #include <strand/client.h>; pkg-config --cflags --libs strand (shared)
 * or --static (libstrand.a).
 * It speaks HTTP/1.1 itself to an http:// gateway (one keep-alive
 * connection) and through libcurl to an https:// one, and JSON with
 * jansson; one strand_client per thread. Functions return 0 on success and -1 on failure, with the reason
 * (the server's problem+json detail when there is one) in
 * strand_client_error().
 */
#ifndef CLIENT_CLIENT_H
#define CLIENT_CLIENT_H

#include <jansson.h>

/* What this header declares is libstrand.so's interface; the rest of the
 * library is hidden (see client/CMakeLists.txt). */
#pragma GCC visibility push(default)

typedef struct strand_client strand_client;

/* url NULL: $STRAND_URL, else http://127.0.0.1:8080. Every request carries
 * the API token: $STRAND_TOKEN, else the first line of $STRAND_TOKEN_FILE,
 * else of ./strand.token. For an https:// gateway whose certificate is not
 * signed by a system CA, $STRAND_CA_FILE names the CA (or the certificate
 * itself) to trust. Returns a new client. */
strand_client *strand_client_new(const char *url);
void strand_client_free(strand_client *c);
/* From now on, the pools, managers and processes c makes end with it, and
 * its queues and pipes are deleted then, as a Python program's are: a lease of lease_s seconds (0: 10) that a thread
 * of its own renews four times a lease, deleted by strand_client_free
 * (which ends them at once), and run out lease_s after the program dies
 * (kill -9). A spec naming its own "lease" keeps it. Without a hold, what
 * a client makes stays until it is deleted (a command-line tool's way).
 * Returns 0, or -1. */
int strand_client_hold(strand_client *c, int lease_s);
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
/* Resizes a pool to processes workers: extra ones finish what they hold,
 * then go. Refused (-1) on a pool that autoscales. */
int strand_pool_resize(strand_client *c, const char *pool, int processes);
/* Lets the gateway size the pool between min and max workers from its
 * backlog (drained within target_s, a worker idle idle_s goes; 0: the
 * gateway's defaults, 10 and 30 s); max 0 turns autoscale off, keeping the
 * size the pool has (at least 1). */
int strand_pool_autoscale(strand_client *c, const char *pool, int min, int max, int target_s, int idle_s);
/* pool.terminate(): returns once every worker is gone. */
int strand_pool_terminate(strand_client *c, const char *pool);

/* map_async: args is borrowed; job holds 32. chunksize 0: about four
 * chunks per worker of the pool, as multiprocessing does. A large args goes
 * in parts (100,000 arguments at most each, fewer where the body would be
 * over the gateway's cap); it returns once all are in. */
#define STRAND_CHUNKSIZE_MAX 1000000
int strand_map(strand_client *c, const char *pool, const char *function, json_t *args, int chunksize, char job[32]);

/* The same with the map's other fields in spec (borrowed): function or
 * command, chunksize (0 or absent: auto), timeout_s, max_attempts,
 * retry_errors, context. */
int strand_map_with(strand_client *c, const char *pool, json_t *spec, json_t *args, char job[32]);

/* map(): strand_map, then every result into *values (a new array, in
 * input order). -1 when a task failed, with the first failed index and
 * its error in strand_client_error (as map raises the first error). */
int strand_map_values(strand_client *c, const char *pool, const char *function, json_t *args, int chunksize,
                      json_t **values);
/* The same for a job made before (strand_map, strand_apply_async). */
int strand_job_values(strand_client *c, const char *job, json_t **values);
/* Cancels a running job (its tasks without a result fail "cancelled"), or
 * removes an ended one. */
int strand_job_cancel(strand_client *c, const char *job);

/* imap (unordered = 0) or imap_unordered (1): calls fn for every result as
 * it arrives, pages of up to page results, until all are delivered. value
 * is the result, or the error text as a JSON string when ok is 0
 * (borrowed for the call); NULL for a result jansson cannot hold (an
 * integer past 64 bits). A non-zero return from fn stops early. */
typedef int (*strand_result_fn)(void *ctx, json_int_t index, int ok, json_t *value);
int strand_imap(strand_client *c, const char *job, int unordered, int page, strand_result_fn fn, void *ctx);

/* apply_async: one call of function on arg (borrowed); job holds 32. */
int strand_apply_async(strand_client *c, const char *pool, const char *function, json_t *arg, char job[32]);
/* AsyncResult.get(timeout): waits up to timeout_s for that call's result
 * (*result new); -1 with the task's error, or when none came in time. */
int strand_async_get(strand_client *c, const char *job, int timeout_s, json_t **result);
/* apply: waits up to wait_s for the result (*result new); -1 with the task's
 * error in strand_client_error when it failed. */
int strand_apply(strand_client *c, const char *pool, const char *function, json_t *arg, int wait_s, json_t **result);
/* pool.close(): no new work. pool.join(): waits (up to timeout_s) until the
 * work is done and the workers have stopped. */
int strand_pool_close(strand_client *c, const char *pool);
int strand_pool_join(strand_client *c, const char *pool, int timeout_s);

/* Process(target).start(): a program (argv, NULL-terminated) or, with argv
 * NULL, function(arg). spec (borrowed, may be NULL) adds backend, image,
 * resources, env, volumes. id holds 32. */
int strand_process_start(strand_client *c, char *const *argv, const char *function, json_t *arg, json_t *spec,
                         char id[32]);
/* join(): waits up to timeout_s; *exit_code once it ended (-1 if it never
 * started). Returns -1 if it still runs. */
int strand_process_join(strand_client *c, const char *id, int timeout_s, int *exit_code);
int strand_process_terminate(strand_client *c, const char *id);

/* SimpleQueue: create (id holds 32), put one item (borrowed), get one
 * (*item new; -1 if none came within wait_s). */
int strand_queue_create(strand_client *c, char id[32]);
int strand_queue_put(strand_client *c, const char *queue, json_t *item);
int strand_queue_get(strand_client *c, const char *queue, int wait_s, json_t **item);

/* Pipe(duplex): two ends, 0 and 1 (id holds 32). A duplex pipe's end
 * receives what the other end sent; a simplex pipe's end 0 sends and end 1
 * receives. recv waits up to wait_s for one item (*item new). */
int strand_pipe_create(strand_client *c, int duplex, char id[32]);
int strand_pipe_send(strand_client *c, const char *pipe, int end, json_t *item);
int strand_pipe_recv(strand_client *c, const char *pipe, int end, int wait_s, json_t **item);

/* AsyncManager: a manager hosting one object of type (dict, list, queue,
 * counter, sleeper, LIB.so:TYPE); spec is borrowed, may be NULL; id holds 32. */
int strand_manager_create(strand_client *c, const char *type, json_t *spec, char id[32]);
/* Calls method with args (borrowed JSON array, may be NULL) and returns at
 * once with the call's handle in call (32). */
int strand_manager_call(strand_client *c, const char *manager, const char *method, json_t *args, char call[32]);
/* The call's result (*result new), waiting for it up to wait_s. Returns 0,
 * or -1 with the call's error (or the gateway's) in strand_client_error. */
int strand_manager_get(strand_client *c, const char *manager, const char *call, int wait_s, json_t **result);
/* strand_manager_call and strand_manager_get in one request (POST
 * .../calls?wait=): the result (*result new) if it comes within wait_s.
 * Returns 0, or -1 with the call's error, the gateway's, or that the wait
 * ran out (the call goes on) in strand_client_error. */
int strand_manager_call_wait(strand_client *c, const char *manager, const char *method, json_t *args, int wait_s,
                             json_t **result);
int strand_manager_shutdown(strand_client *c, const char *manager);

/* ---- values: what is too large to travel inline (over 8 MiB), or what
 * many tasks share, as its bytes (docs/tasks.md, "Large values by
 * reference") -------------------------------------------------------- */
/* Uploads len bytes as a value (PUT /v1/values/{sha256}), stored once
 * however often it is put; its name into sha256. Returns 0, or -1. */
int strand_value_put(strand_client *c, const void *data, size_t len, char sha256[65]);
/* What a task's argument is to name the value: {"$value": sha256} (new).
 * A task's result too large to travel inline comes as one too. */
json_t *strand_value_ref(const char *sha256);
/* The value's bytes (*data new, with a NUL after them; *len). 0, or -1. */
int strand_value_get(strand_client *c, const char *sha256, char **data, size_t *len);
/* Removes the value (a result read, an argument no task needs). 0, or -1. */
int strand_value_delete(strand_client *c, const char *sha256);

#pragma GCC visibility pop

#endif

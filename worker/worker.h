/*
 * worker: the loop that runs inside every process or container a backend
 * starts. It dials the gateway's hub, pulls task batches, runs them one at a
 * time and sends the results back piggy-backed on its next pull.
 *
 * Two threads take turns talking to the hub and running tasks (worker.c):
 * the one whose pull brought a lone task runs it and sends its result, with
 * no hand-off, and during a long task or a batch the other talks, so the
 * round trip to the gateway (which commits results before it answers)
 * costs no execution time and heartbeats go on. The worker
 * never touches SQLite and keeps finished results until the gateway has
 * answered the pull that carried them.
 */
#ifndef WORKER_WORKER_H
#define WORKER_WORKER_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/common.h"

typedef struct worker_config {
	const char *hub; /* the gateway's hub: tcp://, tls+tcp:// or ipc:// */
	const char *pool_id;
	const char *worker_id;
	const char *secret;
	const char *plugin_path; /* colon-separated folders, may be NULL */
	int gateway_timeout_s; /* exit when the gateway stays away this long */
	const char *manager; /* the type this worker hosts as a manager, or NULL */
	const char *runtime; /* the pool's runtime for rt: tasks (JSON: "python" or an argv), or NULL */
	const char *hub_ca_pem; /* tls+tcp:// hub: the CA to trust (PEM text), or NULL */
	const char *hub_ca_file; /* ... or a file holding it */
	const char *hub_server_name; /* ... and the name its certificate carries; NULL: the URL's host */
	const char *code; /* the SHA-256 of the pool's code package (code.h), or NULL */
} worker_config;

/* The plugin API's connection (plugin_api.c): set before tasks run. */
void worker_api_init(const worker_config *cfg);
/* A put (end -1: on queue; 0 or 1: on that end of pipe queue) whose item
 * names a value with the sender's grant to read it, "SHA256 GRANT" (NULL
 * for none): 0, or -1 (stderr says why). */
int worker_api_put(const char *queue, int end, const char *item, const char *grant);
/* A get: 0 with *item (new), 1 when nothing came within wait_ms, -1 on
 * error; an item naming a value comes with grant "SHA256 GRANT TAKE"
 * (else ""). */
#define WORKER_API_GRANT_LEN (3 * 64 + 2)
int worker_api_get(const char *queue, int end, int wait_ms, char **item, char grant[WORKER_API_GRANT_LEN + 1]);
/* How many items wait in queue (end -1), or for that end of pipe queue to
 * receive: 0 with *size, or -1 (stderr says why). */
int worker_api_size(const char *queue, int end, int64_t *size);
/* A call on a manager's object (call_json: the body POST
 * /v1/managers/{id}/calls takes; value_grant: "SHA256 GRANT" when its
 * argument names a value, else NULL), waiting up to wait_ms for its
 * result: 0 with *item the result (a results page's item, new), or -1
 * with *item why the gateway gave none (new), or NULL when no answer came
 * (stderr says why). grant: "SHA256 GRANT TAKE" when the result names a
 * value, else "". */
int worker_api_manager_call(const char *manager, const char *call_json, const char *value_grant, int wait_ms,
                            char **item, char grant[WORKER_API_GRANT_LEN + 1]);
void worker_api_fini(void);

/* Runs until the gateway says stop, refuses us, stays away too long, or
 * *stop becomes non-zero (set from a signal handler). Returns the process
 * exit code: 0 on a normal stop. */
int worker_run(const worker_config *cfg, atomic_int *stop);

/* Runs one task function (see common.h for names). Appends the result (JSON
 * text) or the error message to out and sets *ok: 1, 0 for an error, or
 * (worker_fns_call only) WORKER_RESULT_FILE for a result past what a pull
 * carries (8 MiB) that a command or plugin returned: out holds the path of
 * the file holding it, which the caller stores as a value and removes.
 * Returns CM_OK, or CM_ENOMEM. The plugin cache lives in fns (caller
 * storage). */
#define WORKER_RESULT_FILE 2
typedef struct worker_fns worker_fns;
worker_fns *worker_fns_new(const char *plugin_path);
/* Hosts a manager object: the task function "manager" calls it. Stolen. */
struct worker_manager;
void worker_fns_host(worker_fns *fns, struct worker_manager *m);
/* The program rt: functions run in (runtime.h): JSON "python" or an argv;
 * CM_EINVAL if it is neither. */
int worker_fns_set_runtime(worker_fns *fns, const char *argv_json);
struct worker_runtime *worker_fns_runtime(worker_fns *fns); /* NULL: none */
void worker_fns_free(worker_fns *fns);
int worker_fns_run(worker_fns *fns, const char *function, const char *arg, size_t arg_len, char *const *command,
                   size_t ncommand, unsigned timeout_ms, uint64_t seed, cm_buf *out, int *ok);

/* A function's name as worker_fns_run reads it, read once for a run of
 * tasks of one function: for a no-op, the name's checks and comparisons
 * (some ten a task) were a tenth of the worker's time. */
typedef enum worker_fn_kind {
	WORKER_FN_REFUSED, /* not a function name: its tasks fail saying why */
	WORKER_FN_EXEC,
	WORKER_FN_RUNTIME,
	WORKER_FN_MANAGER,
	WORKER_FN_PLUGIN,
	WORKER_FN_BUILTIN,
} worker_fn_kind;

typedef struct worker_fn {
	worker_fn_kind kind;
	const char *name; /* the function's (borrowed); a builtin's without "builtin:" */
} worker_fn;

void worker_fn_resolve(const char *function, worker_fn *f);
/* The address of name in a dlopen'd plugin when the plugin itself defines
 * it; NULL for a symbol of one of its dependencies (libc's system). */
void *worker_plugin_symbol(void *handle, const char *name);
/* worker_fns_run of a function resolved before. */
int worker_fns_call(worker_fns *fns, const worker_fn *f, const char *arg, size_t arg_len, char *const *command,
                    size_t ncommand, unsigned timeout_ms, uint64_t seed, cm_buf *out, int *ok);

#endif

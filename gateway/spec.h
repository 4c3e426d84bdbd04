/*
 * Request bodies of the REST API, parsed into plain structs. Strict: an
 * unknown field, a wrong type or an out-of-range value is refused, and the
 * detail names the field, so a typo gets a 400 instead of a silent default.
 * Thread-safe, no state: called on HTTP threads.
 */
#ifndef GATEWAY_SPEC_H
#define GATEWAY_SPEC_H

#include <stddef.h>
#include <stdint.h>

#define SPEC_MAX_PROCESSES 1024
/* JSON values jansson may build for one request body, counted before it is
 * parsed: bounds what parsing it may take (about 100 bytes a value)
 * whatever its bytes. A map's arguments are scanned, not built (json_scan.h). */
#define SPEC_MAX_VALUES 1000000
#define SPEC_MAX_ARGS 1000000 /* arguments one body brings; more come in parts */
#define SPEC_MAX_TASKS 1000000000 /* tasks of one job, its parts together */
/* One value (a task's argument, a job's context, a queue or pipe item, a
 * manager call) is at most the operator's --max-value-bytes
 * (spec_set_value_max; SPEC_VALUE_DEFAULT, 1 GiB, unless set). Inline, as
 * JSON text in a request, it is also at most SPEC_INLINE_MAX: a batch's
 * first task, its argument and context together, must fit one frame to a
 * worker (PROTO_FRAME_MAX, 32 MiB) with room to spare. A larger one is
 * uploaded (PUT /v1/values/{sha256}) and named: {"$value": "SHA256"}. */
#define SPEC_INLINE_MAX (8u << 20)
#define SPEC_VALUE_DEFAULT ((int64_t)1 << 30)
#define SPEC_VALUE_MOST ((int64_t)1 << 40)
/* A process's argument travels in its argv (Linux: 128 KiB a string, in
 * parts), so it has this cap below the value cap. */
#define SPEC_PROCESS_ARG_MAX (1u << 20)
#define SPEC_MAX_VOLUMES 16
#define SPEC_VOLUME_MAX 256 /* a volume, and each of its halves, its NUL included */
#define SPEC_RUNTIME_MAX 500 /* a runtime's argv, as JSON */
#define SPEC_LEASE_ID_MAX 20 /* a client lease's id ("l-" and 16 hex digits), its NUL included */
/* "runtime": "python", kept as this JSON text: the worker runs strand's
 * Python runtime with its own Python ($STRAND_PYTHON, default python3). */
#define SPEC_PYTHON_RUNTIME "\"python\""

/* Sets the value cap (--max-value-bytes), once, before any request is
 * parsed. */
void spec_set_value_max(int64_t bytes);
/* The most a value may be inline: the value cap, at most SPEC_INLINE_MAX. */
size_t spec_value_max(void);
/* Says in detail why a value (what: "argument 3", "field 'context'") of
 * more than spec_value_max() bytes is refused: over the operator's cap,
 * or to be sent by reference. */
void spec_say_too_big(char *detail, size_t detail_len, const char *what);

typedef struct pool_spec {
	int processes; /* its workers; with autoscale, the size the gateway chose last */
	/* autoscale (scale_max > 0): the gateway sizes the pool between
	 * scale_min (0: no worker while there is no work) and scale_max so its
	 * backlog drains within scale_target_s; a worker idle scale_idle_s goes */
	int scale_min, scale_max;
	int scale_target_s, scale_idle_s;
	char backend[32];
	double cpu; /* cores per worker, 0: unset */
	int64_t memory_mb; /* per worker, 0: unset */
	int gpu; /* GPUs per worker */
	int max_attempts; /* runs of a task before it fails for good */
	int retry_errors; /* re-run a task whose function returned an error */
	int timeout_s; /* a task running longer fails, its worker replaced */
	char image[256]; /* docker: the worker image */
	/* "name:/path" (a named volume; on kubernetes a PersistentVolumeClaim),
	 * "emptyDir:/path" (scratch space that goes with the container or pod)
	 * or "/host:/path", each optionally ":ro" */
	char volumes[SPEC_MAX_VOLUMES][SPEC_VOLUME_MAX];
	int nvolumes;
	char manager[300]; /* a manager: the type its one worker hosts; "" for a pool */
	int root; /* containers run as root (only with --allow-root-containers) */
	int host_network; /* kubernetes: pods on the node's network; -1: the gateway's default */
	char runtime[SPEC_RUNTIME_MAX + 1]; /* rt: tasks' program: "python" or a JSON argv, as JSON; "": none */
	/* the code package its workers fetch and run in (blob_store.h): its
	 * SHA-256; "": none */
	char code[65];
	/* the client lease it ends with (POST /v1/leases), "" for none */
	char lease[SPEC_LEASE_ID_MAX];
} pool_spec;

/* Parses POST /v1/pools. default_backend and default_image fill an absent
 * "backend" and "image".
 * Returns CM_OK, CM_EINVAL (malformed: 400) or CM_EUNSUPPORTED (unknown
 * backend: 422), with the reason in detail. */
int spec_pool_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                    pool_spec *out, char *detail, size_t detail_len);
/* PATCH /v1/pools/{id}: {"processes": N} and/or {"autoscale": {min, max,
 * target_s, idle_s} | null}; each field absent is left as it is. */
typedef struct pool_patch {
	int processes; /* -1: absent */
	int autoscale; /* 0: absent, 1: set to the scale_* below, -1: off (null) */
	int scale_min, scale_max, scale_target_s, scale_idle_s;
} pool_patch;
int spec_pool_patch_parse(const char *body, size_t len, pool_patch *out, char *detail, size_t detail_len);
/* POST /v1/leases and POST /v1/leases/{id}/renew: {"lease_s": S} (1 to
 * SPEC_LEASE_MAX_S; absent, or an empty body: SPEC_LEASE_DEFAULT_S). */
#define SPEC_LEASE_DEFAULT_S 10
#define SPEC_LEASE_MAX_S 86400
int spec_lease_parse(const char *body, size_t len, int64_t *lease_ms, char *detail, size_t detail_len);
/* POST /v1/pools/{id}/join {uses, ttl_s}: uses 1 to SPEC_MAX_PROCESSES (0
 * when absent: the pool's processes), ttl_s 1 to a week (default an hour).
 * POST /v1/join {token}: the token, into token. */
#define SPEC_JOIN_TTL_DEFAULT_S 3600
#define SPEC_JOIN_TTL_MAX_S (7 * 86400)
int spec_join_token_parse(const char *body, size_t len, int64_t *uses, int64_t *ttl_s, char *detail, size_t detail_len);
int spec_join_parse(const char *body, size_t len, char *token, size_t token_len, char *detail, size_t detail_len);
/* Parses a spec the gateway stored (spec_pool_json), which may also carry
 * the manager type its worker hosts. */
int spec_pool_load(const char *spec_json, const char *default_image, pool_spec *out, char *detail, size_t detail_len);
/* Parses POST /v1/managers: {type, backend, image, resources, volumes}; a
 * manager is a pool of one worker hosting an object of that type (dict,
 * list, queue, counter, sleeper or LIB.so:TYPE), never retried. */
int spec_manager_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                       pool_spec *out, char *detail, size_t detail_len);
/* The canonical JSON of a pool spec: a new string, free() it. */
char *spec_pool_json(const pool_spec *spec);

/* Arguments as their JSON texts, packed: argument i is text[offs[i] ..
 * offs[i + 1]) (offs holds n + 1 entries; both NULL when n is 0). */
typedef struct spec_args {
	char *text;
	size_t *offs;
	size_t n;
	uint32_t *inputs; /* how many inputs each task carries ("inputs"), or NULL: one each */
} spec_args;
void spec_args_fini(spec_args *args);

#define SPEC_JOB_NAME_MAX 128 /* bytes of a job's name */
#define SPEC_TASK_INPUTS_MAX 1000000 /* inputs one task carries (a map's chunk) */
/* Tasks of a job whose tasks carry several inputs: the engine keeps a
 * count a task (4 bytes each) while it runs. */
#define SPEC_MAX_INPUT_TASKS 10000000

typedef struct map_spec {
	char *function; /* builtin, LIB.so:SYMBOL or "exec" */
	char **command; /* argv for exec */
	size_t ncommand;
	spec_args args;
	int64_t total; /* the job's tasks: args.n, or more that come in parts */
	char *context; /* rt: functions: JSON text given to the runtime with every task, or NULL */
	size_t context_len;
	int chunksize;
	unsigned timeout_ms; /* 0: the pool's */
	int max_attempts; /* 0: the pool's */
	int retry_errors; /* -1: the pool's */
	char name[SPEC_JOB_NAME_MAX + 1]; /* what people call the job, "" for none */
	int64_t inputs_total; /* tasks of several inputs (args.inputs): the job's inputs; 0: one a task */
} map_spec;

/* Parses POST /v1/pools/{id}/map ({function|command, args, chunksize,
 * context, total, name, inputs, input_total}) or, with single set, POST /v1/pools/{id}/apply
 * ({function|command, arg, context, name}). Arguments are taken as the JSON text
 * they are given in, whitespace between tokens left out; at most
 * SPEC_MAX_ARGS of them.
 * On success out owns new copies (spec_map_fini frees them). Returns CM_OK,
 * CM_EINVAL, CM_ETOOBIG or CM_EUNSUPPORTED (bad function name: 422). */
int spec_map_parse(const char *body, size_t len, int single, map_spec *out, char *detail, size_t detail_len);
void spec_map_fini(map_spec *spec);
/* Parses POST /v1/jobs/{id}/args: {"offset": N, "args": [...], "inputs":
 * [...]}, the next part of a job's arguments. */
int spec_part_parse(const char *body, size_t len, int64_t *offset, spec_args *out, char *detail, size_t detail_len);

#define SPEC_MAX_ENV 256 /* a process's own environment entries */

/* POST /v1/processes: {function, arg} or {command: [...]}, with backend,
 * image, resources, volumes, runtime as for a pool, and env {NAME:
 * "value"} (not the names strand-worker reads: STRAND_HUB…). On
 * success out owns new strings (spec_process_fini frees them). */
typedef struct process_spec {
	pool_spec run; /* backend, image, resources, volumes */
	char *function; /* or NULL when command is given */
	char *arg; /* JSON text */
	char **command;
	size_t ncommand;
	char **env; /* "NAME=value" */
	size_t nenv;
	char *json; /* the request, compact, for the record */
} process_spec;
int spec_process_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                       process_spec *out, char *detail, size_t detail_len);
void spec_process_fini(process_spec *spec);

/* POST /v1/rings: a process spec plus "size" (members, 1 to 64). */
#define SPEC_MAX_RING 64
int spec_ring_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                    process_spec *out, int *size, char *detail, size_t detail_len);

/* Items for a queue or a pipe: {"item": ANY} or {"items": [ANY, ...]}. On
 * success out owns new JSON texts (spec_items_fini frees them). */
typedef struct items_spec {
	char **items;
	size_t *lens;
	size_t n;
} items_spec;
int spec_items_parse(const char *body, size_t len, items_spec *out, char *detail, size_t detail_len);
void spec_items_fini(items_spec *spec);
/* POST /v1/managers/{id}/calls: {"method": NAME, "args": [...]}. On success
 * *arg is the task argument the hosting worker reads, {"method","args"} as
 * compact JSON (new; free() it). */
int spec_call_parse(const char *body, size_t len, char **arg, char *detail, size_t detail_len);
/* POST /v1/queues: {"kind": "queue" | "turns", "lease": ID} (default
 * "queue"; lease: the client lease it is deleted with, "" for none); *kind
 * is a static string. */
int spec_queue_parse(const char *body, size_t len, const char **kind, char lease[SPEC_LEASE_ID_MAX], char *detail,
                     size_t detail_len);
/* POST /v1/pipes: {"duplex": BOOL, "lease": ID} (duplex by default, as
 * multiprocessing.Pipe; lease as a queue's). */
int spec_pipe_parse(const char *body, size_t len, int *duplex, char lease[SPEC_LEASE_ID_MAX], char *detail,
                    size_t detail_len);

/* A volume's halves ("SOURCE:PATH[:ro]"): its source (a host path,
 * "emptyDir", or a named volume or claim) and its path inside, without
 * ":ro". Returns 1 for a read-only one, 0 for another, -1 for none. */
int spec_volume_split(const char *v, char source[SPEC_VOLUME_MAX], char target[SPEC_VOLUME_MAX]);

#endif

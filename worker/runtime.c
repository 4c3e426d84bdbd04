/* A runtime program fed tasks over pipes: see runtime.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/child.h"
#include "worker/output.h"
#include "worker/runtime.h"
#include "worker/strand_plugin.h"

#define FRAME_HEADER 17
#define FRAME_MAX (64u << 20) /* a result bigger than this is a broken runtime */
#define START_TIMEOUT_MS 30000 /* from exec to its ready frame */
#define SILENCE_LIMIT_MS 10000 /* no frame this long while a task runs: hung */
#define STDERR_KEEP 2048 /* the last bytes of its stderr, for the error that names its end */
#define ARGV_MAX 64

struct worker_runtime {
	char *argv[ARGV_MAX + 1];
	worker_child child; /* pid -1: not running */
	cm_buf rbuf; /* stdout bytes not yet a whole frame */
	cm_buf wbuf; /* frames for its stdin not yet written */
	size_t wsent; /* ... of which written */
	char stderr_tail[STDERR_KEEP];
	size_t stderr_len;
	uint64_t next_id; /* the next task's frame id */
	uint64_t defined[WORKER_RUNTIME_CONTEXTS_KEPT]; /* the contexts it holds: the last texts sent */
	size_t ndefined; /* texts sent since it started (the newest at (ndefined - 1) % KEPT) */
	uint64_t current; /* the context its next task runs with */
	int ready; /* its ready frame came */
	int lost_code; /* how the runtime a task took with it ended (worker_runtime_lost_code), or -1 */
	int strands_python; /* strand's own Python runtime (argv_json "python") */
	worker_values *values; /* where a large queue item goes (worker_runtime_use_values), or NULL */
};

typedef struct frame {
	char type;
	uint64_t id;
	const char *a, *b;
	uint32_t a_len, b_len;
} frame;

worker_runtime *worker_runtime_new(const char *argv_json)
{
	json_t *v = json_loads(argv_json, JSON_DECODE_ANY, NULL), *s;
	worker_runtime *rt = calloc(1, sizeof(*rt));
	size_t i;

	if (rt && json_is_string(v) && strcmp(json_string_value(v), "python") == 0) {
		/* strand's Python runtime, in the worker's Python. */
		const char *python = getenv("STRAND_PYTHON");
		rt->strands_python = 1;
		json_decref(v);
		v = json_pack("[s, s, s]", python && python[0] ? python : "python3", "-m", "strand.runtime");
	}
	if (!rt || !json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > ARGV_MAX)
		goto fail;
	json_array_foreach (v, i, s) {
		if (!json_is_string(s) || !(rt->argv[i] = strdup(json_string_value(s))))
			goto fail;
	}
	json_decref(v);
	rt->child = (worker_child){.pid = -1, .in = -1, .out = -1, .err = -1};
	rt->lost_code = -1;
	cm_buf_init(&rt->rbuf);
	cm_buf_init(&rt->wbuf);
	return rt;
fail:
	json_decref(v);
	worker_runtime_free(rt);
	return NULL;
}

static void keep_stderr(worker_runtime *rt, const char *p, size_t n)
{
	if (n >= STDERR_KEEP) {
		memcpy(rt->stderr_tail, p + n - (STDERR_KEEP - 1), STDERR_KEEP - 1);
		rt->stderr_len = STDERR_KEEP - 1;
		return;
	}
	if (rt->stderr_len + n >= STDERR_KEEP) {
		size_t drop = rt->stderr_len + n - (STDERR_KEEP - 1);
		memmove(rt->stderr_tail, rt->stderr_tail + drop, rt->stderr_len - drop);
		rt->stderr_len -= drop;
	}
	memcpy(rt->stderr_tail + rt->stderr_len, p, n);
	rt->stderr_len += n;
}

/* Its stderr is the tasks' output (output.h), and its tail is kept. */
static void drain_stderr(worker_runtime *rt)
{
	char chunk[4096];
	ssize_t n;

	while (rt->child.err >= 0 && (n = read(rt->child.err, chunk, sizeof(chunk))) > 0) {
		keep_stderr(rt, chunk, (size_t)n);
		worker_output_write(WORKER_OUTPUT_STDERR, chunk, (size_t)n);
	}
}

/* Stops it (hard: SIGKILL now; else closing its stdin asks it to end) and
 * reaps it; returns how it ended as waitpid's status. */
static int stop(worker_runtime *rt, int hard)
{
	pid_t pid = rt->child.pid;
	int status = 0;

	if (pid <= 0)
		return 0;
	close(rt->child.in);
	rt->child.in = -1;
	if (hard)
		kill(pid, SIGKILL);
	for (int i = 0; !hard && i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++)
		usleep(20000);
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	drain_stderr(rt);
	worker_child_close(&rt->child);
	rt->child.pid = -1;
	rt->rbuf.len = 0;
	rt->wbuf.len = rt->wsent = 0;
	rt->ndefined = 0;
	rt->current = 0;
	rt->ready = 0;
	return status;
}

void worker_runtime_free(worker_runtime *rt)
{
	if (!rt)
		return;
	stop(rt, 0);
	for (size_t i = 0; rt->argv[i]; i++)
		free(rt->argv[i]);
	cm_buf_fini(&rt->rbuf);
	cm_buf_fini(&rt->wbuf);
	free(rt);
}

/* glibc's allocator kept as the worker's (cm_malloc_for_bursts), for
 * strand's Python runtime: a map's chunk of 12,500 numbers is unpickled
 * into fresh memory, run and freed, and with glibc's defaults the heap's
 * top went back to the system after each and was faulted in again. The
 * two runtimes' CPU for a map of a list of 100,000 numbers, three runs:
 * 11.1, 12.6 and 9.9 ms before, 8.9, 8.5 and 9.7 after. The runtime takes
 * it out of its own environment (MALLOC_TUNED): what a task starts gets
 * the environment it would have had. A GLIBC_TUNABLES of the worker's is
 * left as it is. */
#define MALLOC_TUNABLES                                                                                                \
	"GLIBC_TUNABLES=glibc.malloc.trim_threshold=67108864"                                                          \
	":glibc.malloc.top_pad=8388608"                                                                                \
	":glibc.malloc.mmap_threshold=33554432"
#define MALLOC_TUNED "STRAND_MALLOC_TUNED=1"

/* Its environment: the worker's, where PYTHONPATH leads first to strand's
 * own modules (the Python package) next to the worker: ../lib/python in a
 * build tree, ../STRAND_PYTHON_INSTALL_DIR installed (where python3 looks
 * anyway under the default prefix; not under another); for strand's
 * Python runtime, MALLOC_TUNABLES. Built before fork: the child of a
 * threaded process may call only async-signal-safe functions. */
static char **runtime_env(const worker_runtime *rt)
{
	extern char **environ;
	char self[1024] = "", *dir = NULL, **env;
	const char *old = getenv("PYTHONPATH");
	size_t n = 0, k = 0;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	while (environ[n])
		n++;
	if (!(env = calloc(n + 4, sizeof(char *))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "PYTHONPATH=", 11) != 0)
			env[k++] = environ[i];
	if (rt->strands_python && !getenv("GLIBC_TUNABLES")) {
		env[k++] = (char *)MALLOC_TUNABLES;
		env[k++] = (char *)MALLOC_TUNED;
	}
	if (len > 0) {
		self[len] = '\0';
		dir = dirname(self);
		if (asprintf(&env[k], "PYTHONPATH=%s/../lib/python:%s/../" STRAND_PYTHON_INSTALL_DIR "%s%s", dir, dir,
		             old && old[0] ? ":" : "", old && old[0] ? old : "") < 0)
			env[k] = NULL;
	}
	return env;
}

static void runtime_env_free(char **env)
{
	for (size_t i = 0; env[i]; i++)
		if (strncmp(env[i], "PYTHONPATH=", 11) == 0) /* ours: the worker's own was left out */
			free(env[i]);
	free(env);
}

static int start(worker_runtime *rt, char *why, size_t why_len)
{
	char **env = runtime_env(rt), detail[128];
	int err;

	if (!env) {
		snprintf(why, why_len, "cannot start the runtime: out of memory");
		return CM_ENOMEM;
	}
	err = worker_child_start(rt->argv, env, &rt->child, detail, sizeof(detail));
	runtime_env_free(env);
	if (err != CM_OK) {
		snprintf(why, why_len, "cannot start the runtime: %s", detail);
		return err;
	}
	fcntl(rt->child.in, F_SETFL, O_NONBLOCK);
	fcntl(rt->child.out, F_SETFL, O_NONBLOCK);
	fcntl(rt->child.err, F_SETFL, O_NONBLOCK);
	rt->stderr_len = 0;
	rt->rbuf.len = 0;
	return CM_OK;
}

static void put_header(unsigned char *h, char type, uint64_t id, uint32_t a_len, uint32_t b_len)
{
	h[0] = (unsigned char)type;
	cm_le64_put(h + 1, id);
	cm_le32_put(h + 9, a_len);
	cm_le32_put(h + 13, b_len);
}

/* A whole frame at the front of rbuf: 1 (f filled), 0 (not yet), -1 (not a
 * frame: too big). */
static int parse(worker_runtime *rt, frame *f)
{
	const unsigned char *p = (const unsigned char *)rt->rbuf.data;

	if (rt->rbuf.len < FRAME_HEADER)
		return 0;
	f->type = (char)p[0];
	f->id = cm_le64_get(p + 1);
	f->a_len = cm_le32_get(p + 9);
	f->b_len = cm_le32_get(p + 13);
	if ((uint64_t)f->a_len + f->b_len > FRAME_MAX)
		return -1;
	if (rt->rbuf.len < FRAME_HEADER + (size_t)f->a_len + f->b_len)
		return 0;
	f->a = rt->rbuf.data + FRAME_HEADER;
	f->b = f->a + f->a_len;
	return 1;
}

static void consume(worker_runtime *rt, const frame *f)
{
	size_t n = FRAME_HEADER + (size_t)f->a_len + f->b_len;

	memmove(rt->rbuf.data, rt->rbuf.data + n, rt->rbuf.len - n);
	rt->rbuf.len -= n;
}

/* Its stderr's tail as text: bytes that are not UTF-8 (what it wrote, or
 * a character the tail's start cut) become '?', so its words reach the job
 * as an error the hub accepts, not as "not UTF-8 text". */
static const char *last_words(worker_runtime *rt)
{
	while (rt->stderr_len && (rt->stderr_tail[rt->stderr_len - 1] == '\n'))
		rt->stderr_len--;
	rt->stderr_tail[rt->stderr_len] = '\0';
	cm_utf8_sanitize(rt->stderr_tail);
	return rt->stderr_tail;
}

/* Queues a frame for its stdin. */
static int queue_frame(worker_runtime *rt, char type, uint64_t id, const char *a, size_t a_len, const char *b,
                       size_t b_len)
{
	unsigned char header[FRAME_HEADER];

	put_header(header, type, id, (uint32_t)a_len, (uint32_t)b_len);
	if (cm_buf_append(&rt->wbuf, header, sizeof(header)) != CM_OK || cm_buf_append(&rt->wbuf, a, a_len) != CM_OK ||
	    cm_buf_append(&rt->wbuf, b, b_len) != CM_OK)
		return CM_ENOMEM;
	return CM_OK;
}

static int holds_context(const worker_runtime *rt, uint64_t key)
{
	size_t n = rt->ndefined < WORKER_RUNTIME_CONTEXTS_KEPT ? rt->ndefined : WORKER_RUNTIME_CONTEXTS_KEPT;

	for (size_t i = 0; i < n; i++)
		if (rt->defined[i] == key)
			return 1;
	return 0;
}

/* Queues task t's frames: a 'C' first when it runs with another context
 * than the task before it (with the text if the runtime lacks it). */
static int queue_task(worker_runtime *rt, const worker_runtime_task *t)
{
	if (t->context_key != rt->current) {
		int send_text = t->context_key && !holds_context(rt, t->context_key);
		if (queue_frame(rt, 'C', t->context_key, "", 0, send_text ? t->context : "",
		                send_text ? t->context_len : 0) != CM_OK)
			return CM_ENOMEM;
		if (send_text)
			rt->defined[rt->ndefined++ % WORKER_RUNTIME_CONTEXTS_KEPT] = t->context_key;
		rt->current = t->context_key;
	}
	return queue_frame(rt, 'T', ++rt->next_id, t->function, strlen(t->function), t->arg, t->arg_len);
}

void worker_runtime_use_values(worker_runtime *rt, worker_values *values)
{
	rt->values = values;
}

worker_values *worker_runtime_values(const worker_runtime *rt)
{
	return rt->values;
}

/* An item to put that the runtime wrote to a file ({"$value_file":"PATH"}:
 * past what goes inline), stored as a value and replaced by the item that
 * names it ({"$value":"SHA256"}), with the grant to read it that vouches
 * for it ("SHA256 GRANT" into grant). Whether the item stands (any other
 * does); else why says why. */
static int item_stored(worker_runtime *rt, json_t *item, char **text, char grant[2 * CM_SHA256_HEX + 2], char *why,
                       size_t why_len)
{
	const char *path = json_string_value(json_object_get(item, "$value_file"));
	char sha[CM_SHA256_HEX + 1], mac[CM_SHA256_HEX + 1];

	if (!path || json_object_size(item) != 1)
		return 1;
	if (!rt->values) {
		snprintf(why, why_len, "a queue item past 1 MiB cannot be stored from here");
		unlink(path);
		return 0;
	}
	if (worker_values_store(rt->values, path, sha, why, why_len) != CM_OK)
		return 0;
	if (!worker_values_grant_of(rt->values, sha, mac)) {
		snprintf(why, why_len, "the gateway gave no grant for the value stored");
		return 0;
	}
	snprintf(grant, 2 * CM_SHA256_HEX + 2, "%s %s", sha, mac);
	free(*text);
	json_t *ref = json_pack("{s:s}", "$value", sha);
	*text = ref ? json_dumps(ref, JSON_COMPACT) : NULL;
	json_decref(ref);
	snprintf(why, why_len, "out of memory");
	return *text != NULL;
}

/* An item got that names a value ({"$value":"SHA256"}), with its grant
 * "SHA256 GRANT TAKE": the value fetched (cached on this host), removed
 * from the gateway (read once), and the item replaced by its file's
 * ({"$value_file":"PATH"}). Whether the item stands (any other does). */
static int item_fetched(worker_runtime *rt, char **got, const char *grant, char *why, size_t why_len)
{
	char sha[CM_SHA256_HEX + 1], read[2 * CM_SHA256_HEX + 2], path[1200];
	char *one = read;

	if (strlen(*got) != CM_VALUE_REF_LEN || !cm_value_ref(*got, CM_VALUE_REF_LEN, sha))
		return 1;
	if (!rt->values || strlen(grant) != 3 * CM_SHA256_HEX + 2 || strncmp(grant, sha, CM_SHA256_HEX) != 0) {
		snprintf(why, why_len, "the item names value %s, which cannot be fetched from here", sha);
		return 0;
	}
	snprintf(read, sizeof(read), "%.*s", 2 * CM_SHA256_HEX + 1, grant);
	worker_values_grant(rt->values, &one, 1);
	if (worker_values_path(rt->values, sha, path, sizeof(path), why, why_len) != CM_OK ||
	    worker_values_take(rt->values, sha, grant + 2 * CM_SHA256_HEX + 2, why, why_len) != CM_OK)
		return 0;
	json_t *file = json_pack("{s:s}", "$value_file", path);
	free(*got);
	*got = file ? json_dumps(file, JSON_COMPACT) : NULL;
	json_decref(file);
	snprintf(why, why_len, "out of memory");
	return *got != NULL;
}

/* A manager call's result item got (a results page's), whose result names
 * a value: fetched and removed as item_fetched does, and named by its
 * file in the item. Whether the item stands (any other does). */
static int result_fetched(worker_runtime *rt, char **got, const char *grant, char *why, size_t why_len)
{
	json_t *item = json_loads(*got, 0, NULL), *value = json_object_get(item, "value");
	char *result = json_object_get(value, "result")
	                       ? json_dumps(json_object_get(value, "result"), JSON_COMPACT | JSON_ENCODE_ANY)
	                       : NULL;
	int stands = 1;

	if (result && grant[0]) {
		json_t *file = NULL;
		stands = item_fetched(rt, &result, grant, why, why_len) && (file = json_loads(result, 0, NULL)) &&
		         json_object_set_new(value, "result", file) == 0;
		char *text = stands ? json_dumps(item, JSON_COMPACT) : NULL;
		if (text) {
			free(*got);
			*got = text;
		}
		stands = stands && text;
	}
	free(result);
	json_decref(item);
	return stands;
}

/* A task's call on a manager's object ('Q' frame "manager": b {"manager":
 * ID, "arg": ARG, "wait_ms": N}), as POST /v1/managers/{id}/calls makes
 * {"method": "pickle", "args": [ARG]}; ARG past what goes inline is a
 * value, stored here. 0 with *got the result item, or -1. */
static int manager_call(worker_runtime *rt, json_t *args, char **got, char got_grant[WORKER_API_GRANT_LEN + 1],
                        char *why, size_t why_len)
{
	const char *manager = json_string_value(json_object_get(args, "manager"));
	json_t *arg = json_object_get(args, "arg");
	char *arg_text = arg ? json_dumps(arg, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	char put_grant[2 * CM_SHA256_HEX + 2] = "";
	int rc = -1;

	snprintf(why, why_len, "a manager call names a manager and its argument");
	if (manager && arg_text && item_stored(rt, arg, &arg_text, put_grant, why, why_len)) {
		json_t *stored = json_loads(arg_text, JSON_DECODE_ANY, NULL);
		json_t *call = stored ? json_pack("{s:s, s:[o]}", "method", "pickle", "args", stored) : NULL;
		char *call_text = call ? json_dumps(call, JSON_COMPACT) : NULL;
		int wait_ms = (int)json_integer_value(json_object_get(args, "wait_ms"));
		if (call_text)
			rc = worker_api_manager_call(manager, call_text, put_grant[0] ? put_grant : NULL, wait_ms, got,
			                             got_grant);
		if (rc != 0) /* the gateway's words, or none came (the worker's log says why) */
			snprintf(why, why_len, "%s",
			         *got ? *got : "the call did not go through (see the worker's log)");
		free(call_text);
		json_decref(call);
	}
	free(arg_text);
	return rc;
}

/* A task's call on a queue or pipe ('Q' frame: a the operation, b its JSON
 * arguments), made through the worker's own connection to the gateway
 * (plugin_api.c) and answered with an 'A' frame: a "ok" (b: the item, for
 * get and recv; the number of items waiting, for size), "empty" (nothing
 * came within wait_ms) or "error". An item past what goes inline travels
 * as a value, both ways. A call on a manager goes the same way
 * (manager_call), its result as the item. */
static int relay(worker_runtime *rt, const frame *f)
{
	char op[16];
	json_t *args = json_loadb(f->b, f->b_len, 0, NULL);
	const char *queue = json_string_value(json_object_get(args, "queue"));
	const char *pipe = json_string_value(json_object_get(args, "pipe"));
	int end = (int)json_integer_value(json_object_get(args, "end"));
	int wait_ms = (int)json_integer_value(json_object_get(args, "wait_ms"));
	char *item_text = json_object_get(args, "item")
	                          ? json_dumps(json_object_get(args, "item"), JSON_COMPACT | JSON_ENCODE_ANY)
	                          : NULL;
	char *got = NULL;
	char why[256], put_grant[2 * CM_SHA256_HEX + 2] = "", got_grant[WORKER_API_GRANT_LEN + 1] = "";
	int rc = -1;

	snprintf(op, sizeof(op), "%.*s", (int)(f->a_len < sizeof(op) ? f->a_len : sizeof(op) - 1), f->a);
	if (strcmp(op, "manager") == 0) {
		if ((rc = manager_call(rt, args, &got, got_grant, why, sizeof(why))) == 0 &&
		    !result_fetched(rt, &got, got_grant, why, sizeof(why)))
			rc = -1;
		if (rc != 0) { /* the task is told why */
			free(got);
			got = strdup(why);
		}
		got_grant[0] = '\0'; /* fetched already */
	} else if (item_text &&
	           !item_stored(rt, json_object_get(args, "item"), &item_text, put_grant, why, sizeof(why)))
		fprintf(stderr, "strand: the item to %s could not be stored: %s\n", op, why);
	else if (strcmp(op, "put") == 0 && queue && item_text)
		rc = worker_api_put(queue, -1, item_text, put_grant[0] ? put_grant : NULL);
	else if (strcmp(op, "get") == 0 && queue)
		rc = worker_api_get(queue, -1, wait_ms, &got, got_grant);
	else if (strcmp(op, "send") == 0 && pipe && item_text)
		rc = worker_api_put(pipe, end, item_text, put_grant[0] ? put_grant : NULL);
	else if (strcmp(op, "recv") == 0 && pipe)
		rc = worker_api_get(pipe, end, wait_ms, &got, got_grant);
	else if (strcmp(op, "size") == 0 && (queue || pipe)) {
		int64_t size = 0;
		if ((rc = worker_api_size(queue ? queue : pipe, queue ? -1 : end, &size)) == 0 &&
		    asprintf(&got, "%" PRId64, size) < 0) {
			got = NULL;
			rc = -1;
		}
	} else
		fprintf(stderr, "strand: the runtime asked for '%s', which is not a queue or pipe call\n", op);
	if (rc == 0 && got && !item_fetched(rt, &got, got_grant, why, sizeof(why))) {
		fprintf(stderr, "strand: the item got could not be read: %s\n", why);
		rc = -1;
	}
	const char *status = rc == 0 ? "ok" : rc == 1 ? "empty" : "error";
	int err = queue_frame(rt, 'A', f->id, status, strlen(status), got ? got : "", got ? strlen(got) : 0);
	free(got);
	free(item_text);
	json_decref(args);
	return err;
}

/* How an exchange ended. */
typedef enum exchanged {
	EX_FRAME, /* f holds a result, error or ready frame */
	EX_GONE, /* the runtime exited or went silent: it took its task with it */
	EX_TIMEOUT, /* the deadline passed */
	EX_BROKEN, /* it sent what is not a frame, or the worker ran short (why says) */
} exchanged;

/* Writes what is queued for it while reading, until a result, error or
 * ready frame arrives, or the runtime ends, goes silent or the deadline
 * passes (the reason in why). Heartbeats and queue calls are handled on
 * the way. */
static exchanged exchange(worker_runtime *rt, int64_t deadline_ms, int silence_ms, frame *f, char *why, size_t why_len)
{
	int64_t heard = cm_now_ms();

	for (;;) {
		int r = parse(rt, f);
		if (r < 0) {
			snprintf(why, why_len, "the runtime sent a frame that is not one (over %u bytes)", FRAME_MAX);
			return EX_BROKEN;
		}
		if (r > 0) {
			if (f->type == 'O') { /* what a task printed, through the frames: in order with its result */
				worker_output_write(f->id == WORKER_OUTPUT_STDERR ? WORKER_OUTPUT_STDERR
				                                                  : WORKER_OUTPUT_STDOUT,
				                    f->b, f->b_len);
				consume(rt, f);
				continue;
			}
			if (f->type != 'H' && f->type != 'Q')
				return EX_FRAME;
			if (f->type == 'Q' && relay(rt, f) != CM_OK) {
				snprintf(why, why_len, "out of memory");
				return EX_BROKEN;
			}
			consume(rt, f);
			heard = cm_now_ms(); /* a queue call may have waited */
			continue;
		}
		int64_t now = cm_now_ms();
		if (deadline_ms && now >= deadline_ms) {
			snprintf(why, why_len, "timed out");
			return EX_TIMEOUT;
		}
		if (now - heard >= silence_ms) {
			snprintf(why, why_len, "the runtime stopped answering (no heartbeat for %d s)",
			         silence_ms / 1000);
			return EX_GONE;
		}
		int writing = rt->wsent < rt->wbuf.len;
		struct pollfd p[3] = {{rt->child.out, POLLIN, 0},
		                      {rt->child.err, POLLIN, 0},
		                      {writing ? rt->child.in : -1, POLLOUT, 0}};
		int64_t wait = silence_ms - (now - heard);
		if (deadline_ms && deadline_ms - now < wait)
			wait = deadline_ms - now;
		if (poll(p, 3, (int)wait) < 0 && errno != EINTR) {
			snprintf(why, why_len, "poll: %s", strerror(errno));
			return EX_BROKEN;
		}
		if (p[1].revents)
			drain_stderr(rt);
		if (p[2].revents & POLLOUT) {
			ssize_t n = write(rt->child.in, rt->wbuf.data + rt->wsent, rt->wbuf.len - rt->wsent);
			if (n > 0 && (rt->wsent += (size_t)n) == rt->wbuf.len)
				rt->wbuf.len = rt->wsent = 0;
		} else if (p[2].revents & (POLLERR | POLLHUP)) {
			snprintf(why, why_len, "the runtime closed its input");
			return EX_GONE;
		}
		if (p[0].revents) {
			char chunk[65536];
			ssize_t n = read(rt->child.out, chunk, sizeof(chunk));
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				snprintf(why, why_len, "the runtime exited");
				return EX_GONE;
			}
			if (n > 0) {
				if (cm_buf_append(&rt->rbuf, chunk, (size_t)n) != CM_OK) {
					snprintf(why, why_len, "out of memory");
					return EX_BROKEN;
				}
				heard = cm_now_ms();
			}
		}
	}
}

/* How it ended, in words: "exited with code 3", "killed by signal 9". */
static void ended(int status, char *out, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(out, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(out, len, "exited with code %d", WEXITSTATUS(status));
}

/* The runtime is done for (why): it is stopped, and the task it was on ends
 * saying so with its last words. The next task starts a new one. *status:
 * how it ended, as waitpid's (one that exited by itself keeps its code: a
 * zombie outlives SIGKILL). */
static int fail_task(worker_runtime *rt, const char *why, cm_buf *out, int *status_out)
{
	char how[64], msg[512];

	int status = stop(rt, 1);
	if (status_out)
		*status_out = status;
	ended(status, how, sizeof(how));
	snprintf(msg, sizeof(msg), "runtime %s: %s (%s; it is started again for the next task)", rt->argv[0], why, how);
	const char *words = last_words(rt);
	if (cm_buf_puts(out, msg) != CM_OK)
		return CM_ENOMEM;
	if (words[0] && (cm_buf_puts(out, "; its last words:\n") != CM_OK || cm_buf_puts(out, words) != CM_OK))
		return CM_ENOMEM;
	return CM_OK;
}

int worker_runtime_running(const worker_runtime *rt)
{
	return rt->child.pid > 0;
}

/* Waits for the ready frame of the runtime that runs; on failure it is
 * stopped and out says why. */
static int await_ready(worker_runtime *rt, cm_buf *out)
{
	char why[256];
	frame f;

	if (exchange(rt, cm_now_ms() + START_TIMEOUT_MS, START_TIMEOUT_MS, &f, why, sizeof(why)) != EX_FRAME)
		return fail_task(rt, "did not start", out, NULL) == CM_OK ? CM_EUNAVAIL : CM_ENOMEM;
	if (f.type != 'S')
		return fail_task(rt, "did not start with a ready frame", out, NULL) == CM_OK ? CM_EUNAVAIL : CM_ENOMEM;
	consume(rt, &f);
	rt->ready = 1;
	return CM_OK;
}

int worker_runtime_start(worker_runtime *rt, char *why, size_t why_len)
{
	return rt->child.pid > 0 ? CM_OK : start(rt, why, why_len);
}

int worker_runtime_await_start(worker_runtime *rt, unsigned wait_ms)
{
	char why[256];
	frame f;

	if (rt->child.pid <= 0 || rt->ready)
		return CM_OK;
	/* The deadline comes no later than the silence, so EX_GONE is an
	 * exit, not a wait too short for a heartbeat. */
	exchanged ex = exchange(rt, cm_now_ms() + wait_ms, (int)wait_ms, &f, why, sizeof(why));
	if (ex == EX_TIMEOUT)
		return CM_ETIMEDOUT;
	if (ex != EX_FRAME || f.type != 'S')
		return CM_EUNAVAIL; /* left as it is, for the first task's await_ready */
	consume(rt, &f);
	rt->ready = 1;
	return CM_OK;
}

/* Makes it ready for a task: the one started ahead (worker_runtime_start)
 * once its ready frame comes, else a new one. One started ahead that did
 * not come up is started once more, as if it never was: its trouble is the
 * first task's only if a new start has it too. On failure out says why. */
static int start_ready(worker_runtime *rt, cm_buf *out)
{
	char why[256];

	if (rt->child.pid > 0) {
		cm_buf ahead;
		cm_buf_init(&ahead);
		int err = await_ready(rt, &ahead);
		cm_buf_fini(&ahead);
		if (err != CM_EUNAVAIL)
			return err;
	}
	if (start(rt, why, sizeof(why)) != CM_OK)
		return cm_buf_puts(out, why) == CM_OK ? CM_EUNAVAIL : CM_ENOMEM;
	return await_ready(rt, out);
}

/* The answer frame f to a task, as its outcome and out's text
 * (*failed_inputs: a 'P''s count). */
static worker_runtime_outcome answer(const frame *f, cm_buf *out, uint32_t *failed_inputs, int *err)
{
	*failed_inputs = 0;
	if (f->type == 'P') {
		char count[12] = "";
		char *end = count;
		unsigned long n = 0;
		if (f->a_len && f->a_len < sizeof(count)) {
			memcpy(count, f->a, f->a_len);
			n = strtoul(count, &end, 10);
		}
		if (n < 1 || n > UINT32_MAX || *end) {
			*err = cm_buf_puts(out, "the runtime's count of failed inputs is not a number");
			return RT_ERROR;
		}
		*failed_inputs = (uint32_t)n;
		*err = cm_buf_append(out, f->b, f->b_len);
		return RT_ERROR;
	}
	if (f->type == 'R') {
		/* As it came: the gateway checks every result it is sent
		 * (result_check.c, a scan that builds nothing) and fails a task
		 * whose result is not one JSON value, saying so. Parsed here
		 * too, into a value thrown away, it was a quarter of this
		 * process's CPU in an imap of no-ops. */
		*err = cm_buf_append(out, f->b, f->b_len);
		return RT_OK;
	}
	*err = cm_buf_append(out, f->a, f->a_len);
	if (*err == CM_OK)
		*err = cm_buf_puts(out, ": ");
	if (*err == CM_OK)
		*err = cm_buf_append(out, f->b, f->b_len);
	return RT_ERROR;
}

/* Stopped short (out of memory, or done said stop): the runtime may hold
 * tasks it was sent, so it goes and the next call starts a new one. */
static int abandon(worker_runtime *rt, int err)
{
	stop(rt, 1);
	return err;
}

int worker_runtime_run_many(worker_runtime *rt, const worker_runtime_task *tasks, size_t n, worker_runtime_done done,
                            void *ctx)
{
	size_t next = 0; /* the first task not answered */

	rt->lost_code = -1;
	while (next < n) {
		cm_buf out;
		int err;

		cm_buf_init(&out);
		if (!rt->ready && (err = start_ready(rt, &out)) != CM_OK) {
			/* Each task tries a start of its own: it may be a moment's trouble. */
			if (err == CM_ENOMEM) {
				cm_buf_fini(&out);
				return err;
			}
			if ((err = done(ctx, next++, RT_ERROR, 0, &out)) != CM_OK)
				return err; /* no runtime runs */
			continue;
		}
		/* All at once: the runtime runs them in order and answers each. */
		size_t first = next;
		uint64_t first_id = rt->next_id + 1;
		for (size_t i = next; i < n; i++)
			if (queue_task(rt, &tasks[i]) != CM_OK)
				return abandon(rt, CM_ENOMEM);
		while (next < n) {
			int64_t began = cm_now_ms();
			char why[256];
			frame f;
			worker_runtime_outcome how;

			exchanged ex =
			        exchange(rt, tasks[next].timeout_ms ? began + (int64_t)tasks[next].timeout_ms : 0,
			                 SILENCE_LIMIT_MS, &f, why, sizeof(why));
			int answered = ex == EX_FRAME && (f.type == 'R' || f.type == 'E' || f.type == 'P') &&
			               f.id == first_id + (next - first);
			uint32_t failed_inputs = 0;
			if (!answered) {
				/* Its end is this task's; the ones after it have not run and
				 * go to the next runtime. A task that took the runtime's
				 * process with it (or hung it) lost an attempt, as on a
				 * crashed worker; a timeout or a wrong frame is an error. */
				if (ex == EX_TIMEOUT)
					snprintf(why, sizeof(why), "timed out after %u ms", tasks[next].timeout_ms);
				else if (ex == EX_FRAME)
					snprintf(why, sizeof(why), "answered with a frame it should not send");
				how = ex == EX_GONE ? RT_LOST : RT_ERROR;
				int status = 0;
				if (fail_task(rt, why, &out, &status) != CM_OK) {
					cm_buf_fini(&out);
					return CM_ENOMEM; /* fail_task stopped it */
				}
				if (how == RT_LOST)
					rt->lost_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
				if ((err = done(ctx, next++, how, 0, &out)) != CM_OK)
					return err;
				break;
			}
			how = answer(&f, &out, &failed_inputs, &err);
			consume(rt, &f);
			if (err != CM_OK) {
				cm_buf_fini(&out);
				return abandon(rt, err);
			}
			if ((err = done(ctx, next++, how, failed_inputs, &out)) != CM_OK)
				return next < n ? abandon(rt, err) : err;
			cm_buf_init(&out);
		}
	}
	return CM_OK;
}

typedef struct one_result {
	cm_buf *out;
	int *ok;
} one_result;

static int keep_one(void *ctx, size_t i, worker_runtime_outcome how, uint32_t failed_inputs, cm_buf *out)
{
	one_result *r = ctx;

	(void)i;
	(void)failed_inputs;
	*r->ok = how == RT_OK;
	int err = cm_buf_append(r->out, out->data, out->len);
	cm_buf_fini(out);
	return err;
}

int worker_runtime_run(worker_runtime *rt, const char *function, const char *arg, size_t arg_len, unsigned timeout_ms,
                       cm_buf *out, int *ok)
{
	worker_runtime_task t = {.function = function, .arg = arg, .arg_len = arg_len, .timeout_ms = timeout_ms};
	one_result r = {out, ok};

	*ok = 0;
	return worker_runtime_run_many(rt, &t, 1, keep_one, &r);
}

int worker_runtime_lost_code(const worker_runtime *rt)
{
	return rt->lost_code;
}

int worker_runtime_finish(worker_runtime *rt)
{
	frame f;
	char why[256];

	if (rt->child.pid <= 0)
		return 0; /* it answered, and went */
	if (queue_frame(rt, 'X', 0, "", 0, "", 0) != CM_OK)
		return 1;
	/* No heartbeat comes now: only its exit ends the wait, as a
	 * multiprocessing parent waits for its children. */
	while (exchange(rt, 0, INT32_MAX, &f, why, sizeof(why)) == EX_FRAME)
		consume(rt, &f); /* nothing else is asked of it now */
	int status = stop(rt, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

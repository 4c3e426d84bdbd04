/*
 * Task functions inside the worker: builtins, dlopen'd plugins, exec, and
 * the pool's runtime (runtime.h).
 * Runs one task at a time, on whichever of the worker's two threads runs it.
 *
 * Every failure of a task (bad argument, missing plugin, non-zero exit,
 * output that is not JSON, a timeout) becomes an error result; only "crash"
 * ends the worker, on purpose, so that crash handling can be exercised.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "worker/child.h"
#include "worker/manager.h"
#include "worker/output.h"
#include "worker/runtime.h"
#include "worker/strand_plugin.h"
#include "worker/worker.h"

/* One task's result inline: the most any gateway takes (its
 * SPEC_INLINE_MAX), so that a result frame fits; past it, a result goes to
 * a file and is stored as a value (WORKER_RESULT_FILE). The gateway checks
 * its operator's own cap (--max-value-bytes) on every result, whatever
 * made it. */
#define RESULT_MAX (8u << 20)
#define STDERR_TAIL 2048 /* what an exec error keeps of stderr */
#define PLUGIN_CACHE 32

typedef struct plugin_entry {
	char *name; /* "LIB.so:SYMBOL" */
	strand_plugin_fn *fn;
} plugin_entry;

struct worker_fns {
	char *plugin_path;
	worker_manager *manager;
	worker_runtime *runtime; /* the pool's, for rt: functions; NULL: none */
	plugin_entry cache[PLUGIN_CACHE];
	size_t ncache;
};

worker_fns *worker_fns_new(const char *plugin_path)
{
	worker_fns *fns = calloc(1, sizeof(*fns));

	if (fns && plugin_path && !(fns->plugin_path = strdup(plugin_path))) {
		free(fns);
		return NULL;
	}
	return fns;
}

void worker_fns_host(worker_fns *fns, worker_manager *m)
{
	worker_manager_free(fns->manager);
	fns->manager = m;
}

int worker_fns_set_runtime(worker_fns *fns, const char *argv_json)
{
	worker_runtime_free(fns->runtime);
	fns->runtime = worker_runtime_new(argv_json);
	return fns->runtime ? CM_OK : CM_EINVAL;
}

worker_runtime *worker_fns_runtime(worker_fns *fns)
{
	return fns->runtime;
}

void worker_fns_free(worker_fns *fns)
{
	if (!fns)
		return;
	worker_manager_free(fns->manager);
	worker_runtime_free(fns->runtime);
	/* Libraries stay loaded until exit: a plugin may have started threads
	 * or registered destructors that dlclose would pull out from under. */
	for (size_t i = 0; i < fns->ncache; i++)
		free(fns->cache[i].name);
	free(fns->plugin_path);
	free(fns);
}

static int set_error(cm_buf *out, int *ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_error(cm_buf *out, int *ok, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*ok = 0;
	return cm_buf_puts(out, msg);
}

/* A result past RESULT_MAX: a file of this process's (in TMPDIR, else
 * /tmp), its path into path. The open file, or -1 with errno. */
static int spill_open(char *path, size_t path_len)
{
	const char *dir = getenv("TMPDIR");

	snprintf(path, path_len, "%s/strand-result-XXXXXX", dir && dir[0] ? dir : "/tmp");
	return mkostemp(path, O_CLOEXEC);
}

/* A result in the file at path: *ok WORKER_RESULT_FILE and out its path
 * (the worker stores the file as a value, worker.c). */
static int result_in_file(cm_buf *out, int *ok, const char *path)
{
	*ok = WORKER_RESULT_FILE;
	return cm_buf_puts(out, path);
}

/* A builtin's or plugin's result past RESULT_MAX, out's bytes from at on,
 * moved to a file: a value of its own, as a command's large stdout. */
static int spill_result(cm_buf *out, size_t at, int *ok)
{
	char path[4096];
	size_t len = out->len - at;
	int fd = spill_open(path, sizeof(path));

	if (fd >= 0 && cm_write_all(fd, out->data + at, len) == 0) {
		close(fd);
		out->len = at;
		return result_in_file(out, ok, path);
	}
	int e = errno;
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	out->len = at;
	return set_error(out, ok, "cannot keep a result of %zu bytes: %s", len, strerror(e));
}

/* Checks that text is one JSON value, as the REST surface promises. */
static int is_json(const char *text, size_t len)
{
	json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	if (!v)
		return 0;
	json_decref(v);
	return 1;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static int run_builtin(const char *name, const char *arg, size_t arg_len, uint64_t seed, cm_buf *out, int *ok)
{
	json_error_t jerr;
	json_t *v;
	int err = CM_OK;

	*ok = 1;
	if (strcmp(name, "noop") == 0)
		return cm_buf_puts(out, "null");
	if (strcmp(name, "echo") == 0)
		return cm_buf_append(out, arg, arg_len);
	if (strcmp(name, "crash") == 0) {
		/* Dies the way a worker dies when the machine takes it away. */
		raise(SIGKILL);
	}
	v = json_loadb(arg, arg_len, JSON_DECODE_ANY, &jerr);
	if (!v)
		return set_error(out, ok, "%s: argument is not JSON: %s", name, jerr.text);
	if (strcmp(name, "fail") == 0) {
		if (json_is_string(v))
			err = set_error(out, ok, "%s", json_string_value(v));
		else
			err = set_error(out, ok, "fail called");
	} else if (strcmp(name, "sleep") == 0) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400000.0) {
			err = set_error(out, ok, "sleep: argument must be milliseconds (0 to 86400000)");
		} else {
			double ms = json_number_value(v);
			struct timespec ts = {(time_t)(ms / 1000),
			                      (long)((ms - 1000.0 * (double)(time_t)(ms / 1000)) * 1e6)};
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
				;
			err = cm_buf_append(out, arg, arg_len);
		}
	} else if (strcmp(name, "pi") == 0) {
		/* Monte Carlo: how many of N random points in the unit square fall
		 * inside the quarter circle. */
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000000000LL) {
			err = set_error(out, ok, "pi: argument must be a sample count (0 to 1e12)");
		} else {
			uint64_t s = seed | 1;
			json_int_t n = json_integer_value(v);
			json_int_t hits = 0;
			for (json_int_t i = 0; i < n; i++) {
				double x = (double)(xorshift(&s) >> 11) / 9007199254740992.0;
				double y = (double)(xorshift(&s) >> 11) / 9007199254740992.0;
				hits += x * x + y * y < 1.0;
			}
			err = cm_buf_printf(out, "%lld", (long long)hits);
		}
	} else {
		err = set_error(out, ok, "unknown builtin function '%s'", name);
	}
	json_decref(v);
	return err;
}

void *worker_plugin_symbol(void *handle, const char *name)
{
	struct link_map *plugin = NULL;
	void *sym = dlsym(handle, name);
	Dl_info where;

	/* dlsym looks in the plugin's dependencies too: "pi.so:system" found
	 * libc's system. Only what the plugin defines itself is a function
	 * of it. */
	if (!sym || dlinfo(handle, RTLD_DI_LINKMAP, &plugin) != 0 || !dladdr(sym, &where) || !where.dli_fname ||
	    strcmp(where.dli_fname, plugin->l_name) != 0)
		return NULL;
	return sym;
}

static strand_plugin_fn *plugin_lookup(worker_fns *fns, const char *name, cm_buf *out, int *ok, int *err)
{
	const char *colon = strchr(name, ':');
	char lib[256];
	char path[4096];
	char *dirs;
	char *save = NULL;
	void *handle = NULL;
	strand_plugin_fn *fn;

	for (size_t i = 0; i < fns->ncache; i++)
		if (strcmp(fns->cache[i].name, name) == 0)
			return fns->cache[i].fn;
	snprintf(lib, sizeof(lib), "%.*s", (int)(colon - name), name);
	if (strchr(lib, '/')) {
		*err = set_error(out, ok, "plugin name '%s' must be a file name, not a path", lib);
		return NULL;
	}
	if (!fns->plugin_path) {
		*err = set_error(out, ok, "plugin %s: no plugin path is set (STRAND_PLUGIN_PATH)", lib);
		return NULL;
	}
	dirs = strdup(fns->plugin_path);
	if (!dirs) {
		*err = CM_ENOMEM;
		return NULL;
	}
	for (char *d = strtok_r(dirs, ":", &save); d && !handle; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/%s", d, lib);
		if (access(path, R_OK) == 0) {
			handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			if (!handle) {
				*err = set_error(out, ok, "plugin %s: %s", path, dlerror());
				free(dirs);
				return NULL;
			}
		}
	}
	free(dirs);
	if (!handle) {
		*err = set_error(out, ok, "plugin %s not found on plugin path %s", lib, fns->plugin_path);
		return NULL;
	}
	*(void **)&fn = worker_plugin_symbol(handle, colon + 1);
	if (!fn) {
		*err = set_error(out, ok, "plugin %s defines no function %s", lib, colon + 1);
		return NULL;
	}
	if (fns->ncache < PLUGIN_CACHE) {
		char *copy = strdup(name);
		if (copy) {
			fns->cache[fns->ncache].name = copy;
			fns->cache[fns->ncache++].fn = fn;
		}
	}
	return fn;
}

static int run_plugin(worker_fns *fns, const char *name, const char *arg, size_t arg_len, cm_buf *out, int *ok)
{
	int err = CM_OK;
	strand_plugin_fn *fn = plugin_lookup(fns, name, out, ok, &err);
	char *result = NULL;
	int rc;

	if (!fn)
		return err;
	rc = fn(arg, arg_len, &result);
	if (rc != 0) {
		err = set_error(out, ok, "%s: %s", name, result ? result : "failed");
	} else if (!result) {
		err = set_error(out, ok, "%s returned no result", name);
	} else if (!is_json(result, strlen(result))) {
		err = set_error(out, ok, "%s: result is not JSON", name);
	} else {
		*ok = 1;
		err = cm_buf_puts(out, result);
	}
	free(result);
	return err;
}

static int64_t mono_ms(void)
{
	return cm_now_ms();
}

/* exec: one process per task. The argument goes to stdin, stdout is the
 * result, stderr's tail explains a failure. One poll loop serves all three
 * pipes so that a child writing a lot before reading cannot deadlock us. */
static int run_exec(char *const *command, size_t ncommand, const char *arg, size_t arg_len, unsigned timeout_ms,
                    cm_buf *out, int *ok)
{
	worker_child ch;
	char **argv = NULL, why[128];
	char spill_path[4096] = ""; /* stdout past RESULT_MAX goes to this file */
	int spill = -1;
	cm_buf so, se;
	size_t written = 0;
	int status = 0;
	int timed_out = 0;
	int err = CM_OK;
	int64_t deadline = timeout_ms ? mono_ms() + timeout_ms : 0;

	cm_buf_init(&so);
	cm_buf_init(&se);
	if (ncommand == 0)
		return set_error(out, ok, "exec: the job has no command");
	argv = calloc(ncommand + 1, sizeof(*argv));
	if (!argv)
		return CM_ENOMEM;
	for (size_t i = 0; i < ncommand; i++)
		argv[i] = command[i];
	if (worker_child_start(argv, NULL, &ch, why, sizeof(why)) != CM_OK) {
		free(argv);
		return set_error(out, ok, "exec: %s", why);
	}
	fcntl(ch.in, F_SETFL, O_NONBLOCK);
	signal(SIGPIPE, SIG_IGN);
	if (arg_len == 0) {
		close(ch.in);
		ch.in = -1;
	}
	while (ch.out >= 0 || ch.err >= 0) {
		struct pollfd p[3] = {{ch.out, POLLIN, 0}, {ch.err, POLLIN, 0}, {ch.in, POLLOUT, 0}};
		int wait_ms = -1;
		char chunk[65536];
		if (deadline) {
			int64_t left = deadline - mono_ms();
			if (left <= 0) {
				kill(ch.pid, SIGKILL);
				timed_out = 1;
				break;
			}
			wait_ms = (int)left;
		}
		if (poll(p, 3, wait_ms) < 0 && errno != EINTR)
			break;
		if (p[2].revents) {
			ssize_t n = write(ch.in, arg + written, arg_len - written);
			if (n > 0)
				written += (size_t)n;
			if (n < 0 || written == arg_len) {
				close(ch.in);
				ch.in = -1;
			}
		}
		for (int i = 0; i < 2; i++) {
			int *fd = i == 0 ? &ch.out : &ch.err;
			cm_buf *b = i == 0 ? &so : &se;
			ssize_t n;
			if (!p[i].revents)
				continue;
			n = read(*fd, chunk, sizeof(chunk));
			if (n <= 0) {
				close(*fd);
				*fd = -1;
				continue;
			}
			if (i == 1) /* what the command says: output, and its tail for its error */
				worker_output_write(WORKER_OUTPUT_STDERR, chunk, (size_t)n);
			if (i == 1 && se.len > STDERR_TAIL) {
				/* keep only the tail of stderr */
				memmove(se.data, se.data + se.len - STDERR_TAIL / 2, STDERR_TAIL / 2);
				se.len = STDERR_TAIL / 2;
			}
			if (i == 0 && spill < 0 && so.len + (size_t)n > RESULT_MAX) {
				/* Past what a pull carries: its stdout goes to a file, a
				 * value of its own once stored. */
				if ((spill = spill_open(spill_path, sizeof(spill_path))) < 0 ||
				    cm_write_all(spill, so.data, so.len) != 0) {
					kill(ch.pid, SIGKILL);
					err = set_error(out, ok, "exec: cannot keep stdout past %u bytes: %s",
					                RESULT_MAX, strerror(errno));
					waitpid(ch.pid, &status, 0);
					goto out;
				}
				so.len = 0;
			}
			if (i == 0 && spill >= 0) {
				if (cm_write_all(spill, chunk, (size_t)n) != 0) {
					kill(ch.pid, SIGKILL);
					err = set_error(out, ok, "exec: cannot keep its stdout: %s", strerror(errno));
					waitpid(ch.pid, &status, 0);
					goto out;
				}
				continue;
			}
			if (cm_buf_append(b, chunk, (size_t)n) != CM_OK) {
				kill(ch.pid, SIGKILL);
				waitpid(ch.pid, &status, 0);
				err = CM_ENOMEM;
				goto out;
			}
		}
	}
	while (waitpid(ch.pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out) {
		err = set_error(out, ok, "exec: timed out after %u ms", timeout_ms);
	} else if (WIFSIGNALED(status)) {
		err = set_error(out, ok, "exec: %s killed by signal %d: %.*s", argv[0], WTERMSIG(status), (int)se.len,
		                se.data ? se.data : "");
	} else if (WEXITSTATUS(status) != 0) {
		err = set_error(out, ok, "exec: %s exited with status %d: %.*s", argv[0], WEXITSTATUS(status),
		                (int)se.len, se.data ? se.data : "");
	} else if (spill >= 0) { /* its bytes as written: a value is not read as JSON */
		err = result_in_file(out, ok, spill_path);
		spill_path[0] = '\0'; /* the worker's now */
	} else if (!is_json(so.data ? so.data : "", so.len)) {
		err = set_error(out, ok, "exec: %s wrote no JSON value on stdout", argv[0]);
	} else {
		*ok = 1;
		err = cm_buf_append(out, so.data, so.len);
	}
out:
	if (spill >= 0)
		close(spill);
	if (spill_path[0])
		unlink(spill_path);
	worker_child_close(&ch);
	cm_buf_fini(&so);
	cm_buf_fini(&se);
	free(argv);
	return err;
}

void worker_fn_resolve(const char *function, worker_fn *f)
{
	char detail[256];

	*f = (worker_fn){.kind = WORKER_FN_REFUSED, .name = function};
	if (cm_function_check(function, detail, sizeof(detail)) != CM_OK)
		return;
	if (strcmp(function, "exec") == 0)
		f->kind = WORKER_FN_EXEC;
	else if (strncmp(function, "rt:", 3) == 0)
		f->kind = WORKER_FN_RUNTIME;
	else if (strcmp(function, "manager") == 0)
		f->kind = WORKER_FN_MANAGER;
	else if (strchr(function, ':') && strncmp(function, "builtin:", 8) != 0)
		f->kind = WORKER_FN_PLUGIN;
	else
		*f = (worker_fn){.kind = WORKER_FN_BUILTIN, .name = cm_function_builtin_name(function)};
}

int worker_fns_call(worker_fns *fns, const worker_fn *f, const char *arg, size_t arg_len, char *const *command,
                    size_t ncommand, unsigned timeout_ms, uint64_t seed, cm_buf *out, int *ok)
{
	char detail[256];

	switch (f->kind) {
	case WORKER_FN_REFUSED:
		cm_function_check(f->name, detail, sizeof(detail));
		return set_error(out, ok, "%s", detail);
	case WORKER_FN_EXEC: return run_exec(command, ncommand, arg, arg_len, timeout_ms, out, ok);
	case WORKER_FN_RUNTIME:
		if (!fns->runtime)
			return set_error(out, ok, "%s: this pool has no runtime (give the pool one: \"runtime\")",
			                 f->name);
		return worker_runtime_run(fns->runtime, f->name + 3, arg, arg_len, timeout_ms, out, ok);
	case WORKER_FN_MANAGER:
		if (!fns->manager)
			return set_error(out, ok, "this worker hosts no manager");
		return worker_manager_call(fns->manager, arg, arg_len, out, ok);
	case WORKER_FN_PLUGIN:
	case WORKER_FN_BUILTIN: break;
	}
	size_t at = out->len;
	int err = f->kind == WORKER_FN_PLUGIN ? run_plugin(fns, f->name, arg, arg_len, out, ok)
	                                      : run_builtin(f->name, arg, arg_len, seed, out, ok);
	return err == CM_OK && *ok && out->len - at > RESULT_MAX ? spill_result(out, at, ok) : err;
}

int worker_fns_run(worker_fns *fns, const char *function, const char *arg, size_t arg_len, char *const *command,
                   size_t ncommand, unsigned timeout_ms, uint64_t seed, cm_buf *out, int *ok)
{
	worker_fn f;

	worker_fn_resolve(function, &f);
	int err = worker_fns_call(fns, &f, arg, arg_len, command, ncommand, timeout_ms, seed, out, ok);
	if (err == CM_OK && *ok == WORKER_RESULT_FILE) { /* a Process's result is what it prints: inline only */
		unlink(out->data);
		out->len = 0;
		err = set_error(out, ok, "%s: a result over %u bytes cannot be a Process's", function, RESULT_MAX);
	}
	return err;
}

/*
 * The object a manager worker hosts (STRAND_MANAGER_TYPE), called through
 * the reserved task function "manager" with {"method": M, "args": [...]}.
 * Builtin types keep their state in jansson values; plugin types
 * (LIB.so:TYPE) in whatever TYPE_new returned; type "runtime" in the
 * worker's runtime process, between its tasks. Called by the worker's
 * running task, one call at a time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker/manager.h"
#include "worker/runtime.h"
#include "worker/worker.h"
#include "worker/strand_plugin.h"

struct worker_manager {
	char type[300];
	json_t *state; /* builtin types */
	void *self; /* plugin types */
	strand_manager_call_fn *call;
	strand_manager_free_fn *destroy;
	worker_runtime *rt; /* type runtime */
	int rt_started; /* a call ran in it: a runtime started afresh holds nothing */
};

static int fail(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(err, fmt, ap) < 0)
		*err = NULL;
	va_end(ap);
	return CM_EINVAL;
}

int worker_manager_new(const char *type, const char *plugin_path, worker_runtime *rt, worker_manager **out, char **err)
{
	worker_manager *m = calloc(1, sizeof(*m));

	if (!m)
		return CM_ENOMEM;
	snprintf(m->type, sizeof(m->type), "%s", type);
	if (strcmp(type, "dict") == 0)
		m->state = json_object();
	else if (strcmp(type, "list") == 0 || strcmp(type, "queue") == 0)
		m->state = json_array();
	else if (strcmp(type, "counter") == 0 || strcmp(type, "sleeper") == 0)
		m->state = json_integer(0);
	else if (strcmp(type, "runtime") == 0) {
		if (!rt) {
			free(m);
			return fail(err, "a manager of type runtime needs a runtime (STRAND_RUNTIME)");
		}
		m->rt = rt;
	} else {
		const char *colon = strchr(type, ':');
		char lib[256], sym[200], path[4096];
		void *h = NULL;
		strand_manager_new_fn *make;
		if (!colon || !plugin_path) {
			free(m);
			return fail(err,
			            "unknown manager type '%s' (dict, list, queue, counter, sleeper, runtime or "
			            "LIB.so:TYPE)",
			            type);
		}
		snprintf(lib, sizeof(lib), "%.*s", (int)(colon - type), type);
		char *dirs = strdup(plugin_path), *save = NULL;
		for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && !h; d = strtok_r(NULL, ":", &save)) {
			snprintf(path, sizeof(path), "%s/%s", d, lib);
			if (access(path, R_OK) == 0)
				h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		}
		free(dirs);
		snprintf(sym, sizeof(sym), "%s_new", colon + 1);
		*(void **)&make = h ? worker_plugin_symbol(h, sym) : NULL;
		snprintf(sym, sizeof(sym), "%s_call", colon + 1);
		*(void **)&m->call = h ? worker_plugin_symbol(h, sym) : NULL;
		snprintf(sym, sizeof(sym), "%s_free", colon + 1);
		*(void **)&m->destroy = h ? worker_plugin_symbol(h, sym) : NULL;
		if (!make || !m->call || !m->destroy || !(m->self = make())) {
			free(m);
			return fail(err, "manager type %s: %s", type,
			            !h ? "library not found on the plugin path"
			               : "no TYPE_new, TYPE_call and TYPE_free");
		}
	}
	*out = m;
	return CM_OK;
}

void worker_manager_free(worker_manager *m)
{
	if (!m)
		return;
	if (m->self)
		m->destroy(m->self);
	json_decref(m->state);
	free(m);
}

static json_t *arg(json_t *args, size_t i)
{
	return json_array_get(args, i);
}

/* Builtin types. Returns the result (new reference) or NULL with *err set. */
static json_t *builtin(worker_manager *m, const char *method, json_t *args, char **err)
{
	json_t *s = m->state;

	if (strcmp(m->type, "dict") == 0) {
		const char *k = json_string_value(arg(args, 0));
		if (strcmp(method, "len") == 0)
			return json_integer((json_int_t)json_object_size(s));
		if (strcmp(method, "keys") == 0 || strcmp(method, "items") == 0) {
			json_t *out = json_array(), *v;
			const char *key;
			json_object_foreach (s, key, v)
				json_array_append_new(out,
				                      method[0] == 'k' ? json_string(key) : json_pack("[sO]", key, v));
			return out;
		}
		if (strcmp(method, "update") == 0 && json_is_object(arg(args, 0))) {
			json_object_update(s, arg(args, 0));
			return json_null();
		}
		if (!k && (!strcmp(method, "set") || !strcmp(method, "get") || !strcmp(method, "del"))) {
			fail(err, "dict.%s: the first argument must be a string key", method);
			return NULL;
		}
		if (strcmp(method, "set") == 0 && arg(args, 1)) {
			json_object_set(s, k, arg(args, 1));
			return json_null();
		}
		if (strcmp(method, "get") == 0) {
			json_t *v = json_object_get(s, k);
			if (v)
				return json_incref(v);
			if (arg(args, 1))
				return json_incref(arg(args, 1));
			fail(err, "KeyError: %s", k);
			return NULL;
		}
		if (strcmp(method, "del") == 0) {
			if (json_object_del(s, k) != 0) {
				fail(err, "KeyError: %s", k);
				return NULL;
			}
			return json_null();
		}
	} else if (strcmp(m->type, "list") == 0 || strcmp(m->type, "queue") == 0) {
		size_t n = json_array_size(s);
		if (strcmp(method, "len") == 0 || strcmp(method, "size") == 0 || strcmp(method, "qsize") == 0)
			return json_integer((json_int_t)n);
		if (strcmp(method, "empty") == 0)
			return json_boolean(n == 0);
		if ((strcmp(method, "append") == 0 || strcmp(method, "put") == 0) && arg(args, 0)) {
			json_array_append(s, arg(args, 0));
			return json_null();
		}
		if (strcmp(method, "extend") == 0 && json_is_array(arg(args, 0))) {
			json_array_extend(s, arg(args, 0));
			return json_null();
		}
		if (strcmp(method, "items") == 0)
			return json_deep_copy(s);
		if (strcmp(method, "get") == 0 && strcmp(m->type, "list") == 0) {
			json_int_t i = json_integer_value(arg(args, 0));
			if (i < 0)
				i += (json_int_t)n;
			if (i < 0 || (size_t)i >= n) {
				fail(err, "IndexError: list index out of range");
				return NULL;
			}
			return json_incref(json_array_get(s, (size_t)i));
		}
		if (strcmp(method, "pop") == 0 || strcmp(method, "get") == 0) {
			/* list.pop() takes from the end, queue.get() from the front */
			size_t i = strcmp(m->type, "queue") == 0 ? 0 : n - 1;
			json_t *v;
			if (n == 0) {
				fail(err, "%s",
				     strcmp(m->type, "queue") == 0 ? "Empty: the queue is empty"
				                                   : "IndexError: pop from empty list");
				return NULL;
			}
			v = json_incref(json_array_get(s, i));
			json_array_remove(s, i);
			return v;
		}
	} else if (strcmp(m->type, "counter") == 0) {
		json_int_t v = json_integer_value(s);
		if (strcmp(method, "get") == 0)
			return json_integer(v);
		if (strcmp(method, "add") == 0 || strcmp(method, "increment") == 0) {
			v += arg(args, 0) ? json_integer_value(arg(args, 0)) : 1;
			json_integer_set(s, v);
			return json_integer(v);
		}
		if (strcmp(method, "set") == 0 && json_is_integer(arg(args, 0))) {
			json_integer_set(s, json_integer_value(arg(args, 0)));
			return json_null();
		}
	} else if (strcmp(m->type, "sleeper") == 0 && strcmp(method, "sleep") == 0) {
		/* For demos and tests: a call that takes a known time. */
		double ms = json_number_value(arg(args, 0));
		struct timespec ts = {(time_t)(ms / 1000), (long)((ms - 1000.0 * (double)(time_t)(ms / 1000)) * 1e6)};
		while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		return json_real(ms);
	}
	fail(err, "%s has no method %s with these arguments", m->type, method);
	return NULL;
}

/* A call on the object in the runtime: method is the runtime function,
 * args[0] its argument. Sets *text (the result) or *err. */
/* A call's argument that names a value ({"$value":"SHA256"}: too large to
 * go inline) as the runtime takes it, its file: {"$value_file":"PATH"},
 * fetched unless cached (by the grant the call's batch carried). Whether
 * *arg_text stands; else *err says why and *arg_text is freed. */
static int value_as_file(worker_manager *m, char **arg_text, char **err)
{
	char sha[CM_SHA256_HEX + 1], path[1200], why[512];
	worker_values *values = worker_runtime_values(m->rt);
	size_t len = strlen(*arg_text);

	if (len != CM_VALUE_REF_LEN || !cm_value_ref(*arg_text, len, sha))
		return 1;
	free(*arg_text);
	*arg_text = NULL;
	if (!values) {
		fail(err, "the call names a value, which this manager cannot fetch");
		return 0;
	}
	if (worker_values_path(values, sha, path, sizeof(path), why, sizeof(why)) != CM_OK) {
		fail(err, "%s", why);
		return 0;
	}
	json_t *file = json_pack("{s:s}", "$value_file", path);
	*arg_text = file ? json_dumps(file, JSON_COMPACT) : NULL;
	json_decref(file);
	return 1; /* out of memory: NULL, which the caller reports */
}

/* A result the runtime wrote to a file ({"$value_file":"PATH"}: too large
 * to go inline), stored as a value: *text becomes the result that names
 * it, {"$value":"SHA256"}, or NULL with *err saying why. */
static void result_as_value(worker_manager *m, char **text, char **err)
{
	static const char head[] = "{\"$value_file\":";
	worker_values *values = worker_runtime_values(m->rt);
	char sha[CM_SHA256_HEX + 1], why[512];
	json_t *j;

	if (strncmp(*text, head, sizeof(head) - 1) != 0 || !(j = json_loads(*text, 0, NULL)))
		return;
	const char *path = json_string_value(json_object_get(j, "$value_file"));
	free(*text);
	*text = NULL;
	if (!path || !values)
		fail(err, "the result could not be stored: %s", path ? "this manager cannot store values" : "no file");
	else if (worker_values_store(values, path, sha, why, sizeof(why)) != CM_OK)
		fail(err, "the result could not be stored: %s", why);
	else if (asprintf(text, "{\"$value\":\"%s\"}", sha) < 0)
		*text = NULL;
	if (path && !*text)
		unlink(path);
	json_decref(j);
}

static void in_runtime(worker_manager *m, const char *method, json_t *args, char **text, char **err)
{
	char *arg_text;
	cm_buf out;
	int ok = 0;

	if (json_array_size(args) > 1) {
		fail(err, "a call to a runtime manager takes one argument (args: [ARG])");
		return;
	}
	if (m->rt_started && !worker_runtime_running(m->rt)) {
		fail(err, "the manager's runtime has exited: the object it held is gone");
		return;
	}
	arg_text = json_dumps(json_array_size(args) ? json_array_get(args, 0) : json_null(),
	                      JSON_COMPACT | JSON_ENCODE_ANY);
	if (arg_text && !value_as_file(m, &arg_text, err))
		return;
	cm_buf_init(&out);
	if (!arg_text || worker_runtime_run(m->rt, method, arg_text, strlen(arg_text), 0, &out, &ok) != CM_OK ||
	    !out.data) {
		*err = NULL; /* out of memory */
	} else if (ok) {
		if ((*text = strndup(out.data, out.len)))
			result_as_value(m, text, err);
	} else {
		*err = strndup(out.data, out.len);
	}
	m->rt_started |= worker_runtime_running(m->rt);
	cm_buf_fini(&out);
	free(arg_text);
}

int worker_manager_call(worker_manager *m, const char *arg_json, size_t len, cm_buf *out, int *ok)
{
	json_t *call = json_loadb(arg_json, len, 0, NULL);
	const char *method = json_string_value(json_object_get(call, "method"));
	json_t *args = json_object_get(call, "args");
	json_t *none = json_array(); /* for a call without args */
	struct timespec t0, t1;
	char *err = NULL;
	char *text = NULL;
	int rc = CM_OK;

	*ok = 0;
	clock_gettime(CLOCK_REALTIME, &t0);
	if (!method || (args && !json_is_array(args))) {
		fail(&err, "a call is {\"method\": NAME, \"args\": [...]}");
	} else if (m->rt) {
		in_runtime(m, method, args, &text, &err);
	} else if (m->self) {
		char *args_text = json_dumps(args ? args : none, JSON_COMPACT);
		char *res = NULL;
		if (m->call(m->self, method, args_text ? args_text : "[]", &res) == 0 && res) {
			json_t *v = json_loads(res, JSON_DECODE_ANY, NULL);
			if (v) {
				text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
				json_decref(v);
			} else {
				fail(&err, "%s.%s: result is not JSON", m->type, method);
			}
			free(res);
		} else {
			err = res ? res : strdup("failed");
		}
		free(args_text);
	} else {
		json_t *v = builtin(m, method, args ? args : none, &err);
		if (v) {
			text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			json_decref(v);
		}
	}
	clock_gettime(CLOCK_REALTIME, &t1);
	if (text) {
		/* The call's own start and end: AsyncManager callers see overlap. */
		*ok = 1;
		rc = cm_buf_printf(out, "{\"result\":%s,\"started_ms\":%lld,\"ended_ms\":%lld}", text,
		                   (long long)t0.tv_sec * 1000 + t0.tv_nsec / 1000000,
		                   (long long)t1.tv_sec * 1000 + t1.tv_nsec / 1000000);
	} else {
		rc = cm_buf_puts(out, err ? err : "out of memory");
	}
	free(text);
	free(err);
	json_decref(none);
	json_decref(call);
	return rc;
}

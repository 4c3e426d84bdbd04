/* Request body parsing; see spec.h. */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "common/sha256.h"
#include "gateway/json_scan.h"
#include "gateway/spec.h"

/* Reads a non-empty argv array (at most 256 strings) into new copies. */
/* Set once at start (spec_set_value_max), read by every parser after: the
 * operator's cap and the inline one it makes. */
static int64_t value_cap = SPEC_VALUE_DEFAULT;
static size_t value_max = SPEC_INLINE_MAX;

void spec_set_value_max(int64_t bytes)
{
	value_cap = bytes;
	value_max = bytes < SPEC_INLINE_MAX ? (size_t)bytes : SPEC_INLINE_MAX;
}

size_t spec_value_max(void)
{
	return value_max;
}

void spec_say_too_big(char *detail, size_t detail_len, const char *what)
{
	if (value_cap <= (int64_t)value_max)
		snprintf(detail, detail_len, "%s is over the %zu byte cap (--max-value-bytes)", what, value_max);
	else
		snprintf(detail, detail_len,
		         "%s is over the %zu bytes a value may be inline: upload it (PUT /v1/values/{sha256}, up to "
		         "%lld bytes: --max-value-bytes) and pass {\"$value\": \"SHA256\"}",
		         what, value_max, (long long)value_cap);
}

static int get_argv(json_t *cmd, char ***out, size_t *n, char *detail, size_t detail_len)
{
	char **argv;
	size_t i;
	json_t *a;

	if (!json_is_array(cmd) || json_array_size(cmd) == 0 || json_array_size(cmd) > 256) {
		snprintf(detail, detail_len, "field 'command' must be a non-empty array of strings (argv)");
		return CM_EINVAL;
	}
	if (!(argv = calloc(json_array_size(cmd), sizeof(char *))))
		return CM_ENOMEM;
	*out = argv;
	*n = 0;
	json_array_foreach (cmd, i, a) {
		if (!json_is_string(a)) {
			snprintf(detail, detail_len, "field 'command[%zu]' must be a string", i);
			return CM_EINVAL;
		}
		if (!(argv[i] = strdup(json_string_value(a))))
			return CM_ENOMEM;
		*n = i + 1;
	}
	return CM_OK;
}

/* "external": a pool whose workers join by themselves, from any host. */
static const char *const backends[] = {"local", "docker", "kubernetes", "slurm", "external", NULL};

/* Counts the JSON values in text without building any, stopping past max:
 * a parsed value costs jansson some 100 bytes, whatever its text's length,
 * so the count bounds the memory a body can take before anything is built.
 * Strings (keys too) are skipped whole, escapes included; malformed text is
 * left for the parser to refuse. */
static size_t count_values(const char *s, size_t len, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n <= max; i++) {
		char c = s[i];
		if (c == '"') {
			n++;
			for (i++; i < len && s[i] != '"'; i++)
				i += s[i] == '\\';
		} else if (c == '{' || c == '[') {
			n++;
		} else if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
			n++;
			while (i + 1 < len && s[i + 1] && strchr("0123456789+-.eEtruefalsn", s[i + 1]))
				i++;
		}
	}
	return n;
}

static int load(const char *body, size_t len, json_t **out, char *detail, size_t detail_len)
{
	json_error_t jerr;
	json_t *root;

	if (count_values(body, len, SPEC_MAX_VALUES) > SPEC_MAX_VALUES) {
		snprintf(detail, detail_len,
		         "the body holds over %d JSON values; split it (several maps, or chunks of inputs as one "
		         "argument each)",
		         SPEC_MAX_VALUES);
		return CM_ETOOBIG;
	}
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);

	if (!root) {
		snprintf(detail, detail_len, "body is not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line,
		         jerr.column);
		return CM_EINVAL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		snprintf(detail, detail_len, "body must be a JSON object");
		return CM_EINVAL;
	}
	*out = root;
	return CM_OK;
}

/* The optional field "lease" of root, a client lease's id, into lease ("" when
 * absent or null). */
static int lease_field(json_t *root, char lease[SPEC_LEASE_ID_MAX], char *detail, size_t detail_len)
{
	json_t *v = json_object_get(root, "lease");

	lease[0] = '\0';
	if (!v || json_is_null(v))
		return CM_OK;
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= SPEC_LEASE_ID_MAX) {
		snprintf(detail, detail_len, "field 'lease' must be a lease's id (POST /v1/leases)");
		return CM_EINVAL;
	}
	snprintf(lease, SPEC_LEASE_ID_MAX, "%s", json_string_value(v));
	return CM_OK;
}

static int check_keys(json_t *obj, const char *const *allowed, const char *where, char *detail, size_t detail_len)
{
	const char *key;
	json_t *v;

	json_object_foreach (obj, key, v) {
		int found = 0;
		for (size_t i = 0; allowed[i] && !found; i++)
			found = strcmp(key, allowed[i]) == 0;
		if (!found) {
			snprintf(detail, detail_len, "unknown field '%s%.64s'", where, key);
			return CM_EINVAL;
		}
	}
	return CM_OK;
}

/* Reads an optional integer field in [lo, hi]. */
static int get_int(json_t *obj, const char *key, const char *where, int64_t lo, int64_t hi, int64_t *out, char *detail,
                   size_t detail_len)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return CM_OK;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(detail, detail_len, "field '%s%s' must be an integer from %lld to %lld", where, key,
		         (long long)lo, (long long)hi);
		return CM_EINVAL;
	}
	*out = json_integer_value(v);
	return CM_OK;
}

/* Reads an optional boolean field. */
static int get_bool(json_t *obj, const char *key, int *out, char *detail, size_t detail_len)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return CM_OK;
	if (!json_is_boolean(v)) {
		snprintf(detail, detail_len, "field '%s' must be true or false", key);
		return CM_EINVAL;
	}
	*out = json_is_true(v);
	return CM_OK;
}

/* "runtime": "python" or a command (argv), kept as JSON text in out. */
static int get_runtime(json_t *root, char out[SPEC_RUNTIME_MAX + 1], char *detail, size_t detail_len)
{
	json_t *v = json_object_get(root, "runtime"), *a;
	size_t i;
	int good;
	char *text;

	if (!v || json_is_null(v))
		return CM_OK;
	if (json_is_string(v) && strcmp(json_string_value(v), "python") == 0) {
		snprintf(out, SPEC_RUNTIME_MAX + 1, "%s", SPEC_PYTHON_RUNTIME);
		return CM_OK;
	}
	good = json_is_array(v) && json_array_size(v) > 0 && json_array_size(v) <= 64;
	json_array_foreach (good ? v : NULL, i, a)
		good &= json_is_string(a) && json_string_length(a) > 0;
	text = good ? json_dumps(v, JSON_COMPACT) : NULL;
	if (!text || strlen(text) > SPEC_RUNTIME_MAX) {
		snprintf(detail, detail_len,
		         "field 'runtime' must be \"python\" or a command: an array of strings, at most %d characters "
		         "as JSON",
		         SPEC_RUNTIME_MAX);
		free(text);
		return CM_EINVAL;
	}
	snprintf(out, SPEC_RUNTIME_MAX + 1, "%s", text);
	free(text);
	return CM_OK;
}

/* Reads "autoscale": {min, max, target_s, idle_s} (v may be NULL or null:
 * a fixed pool) into spec's scale_* fields. */
static int get_autoscale(json_t *v, pool_spec *spec, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"min", "max", "target_s", "idle_s", NULL};
	int64_t lo = 0, hi = -1, target = 10, idle = 30;
	int err;

	if (!v || json_is_null(v))
		return CM_OK;
	if (!json_is_object(v)) {
		snprintf(detail, detail_len,
		         "field 'autoscale' must be an object {min, max, target_s, idle_s} or null");
		return CM_EINVAL;
	}
	if ((err = check_keys(v, keys, "autoscale.", detail, detail_len)) != CM_OK ||
	    (err = get_int(v, "min", "autoscale.", 0, SPEC_MAX_PROCESSES, &lo, detail, detail_len)) != CM_OK ||
	    (err = get_int(v, "max", "autoscale.", 1, SPEC_MAX_PROCESSES, &hi, detail, detail_len)) != CM_OK ||
	    (err = get_int(v, "target_s", "autoscale.", 1, 86400, &target, detail, detail_len)) != CM_OK ||
	    (err = get_int(v, "idle_s", "autoscale.", 1, 86400, &idle, detail, detail_len)) != CM_OK)
		return err;
	if (hi < 0) {
		snprintf(detail, detail_len, "field 'autoscale.max' is required");
		return CM_EINVAL;
	}
	if (lo > hi) {
		snprintf(detail, detail_len, "field 'autoscale.min' (%lld) is above 'autoscale.max' (%lld)",
		         (long long)lo, (long long)hi);
		return CM_EINVAL;
	}
	spec->scale_min = (int)lo;
	spec->scale_max = (int)hi;
	spec->scale_target_s = (int)target;
	spec->scale_idle_s = (int)idle;
	return CM_OK;
}

int spec_volume_split(const char *v, char source[SPEC_VOLUME_MAX], char target[SPEC_VOLUME_MAX])
{
	const char *colon = strchr(v, ':');

	if (!colon)
		return -1;
	snprintf(source, SPEC_VOLUME_MAX, "%.*s", (int)(colon - v), v);
	snprintf(target, SPEC_VOLUME_MAX, "%s", colon + 1);
	char *ro = strstr(target, ":ro");
	if (ro && ro[3] == '\0') {
		*ro = '\0';
		return 1;
	}
	return 0;
}

/* Whether a path ("/", "//", "/a/..") is the root, its ".." steps taken. */
static int is_root(const char *path)
{
	size_t len = strlen(path), depth = 0;

	for (size_t at = 0; at < len;) {
		size_t step = strcspn(path + at, "/");
		if (step == 2 && path[at] == '.' && path[at + 1] == '.')
			depth -= depth > 0;
		else if (step > 0 && !(step == 1 && path[at] == '.'))
			depth++;
		at += step + 1;
	}
	return depth == 0;
}

/* stored: a spec the gateway wrote itself (spec_pool_json), which may name
 * the manager type its worker hosts; a client's request may not. */
static int pool_parse(const char *body, size_t len, const char *default_backend, const char *default_image, int stored,
                      pool_spec *out, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"processes", "backend",   "resources", "max_attempts", "retry_errors",
	                                   "timeout_s", "image",     "volumes",   "root",         "host_network",
	                                   "runtime",   "autoscale", "code",      "lease",        NULL};
	static const char *const stored_keys[] = {
	        "processes", "backend", "resources",    "max_attempts", "retry_errors", "timeout_s", "image", "volumes",
	        "root",      "manager", "host_network", "runtime",      "autoscale",    "code",      "lease", NULL};
	static const char *const rkeys[] = {"cpu", "memory_mb", "gpu", NULL};
	pool_spec spec = {.max_attempts = 3, .host_network = -1};
	json_t *root = NULL;
	json_t *v;
	int64_t n;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int err;

	if (len == 0) {
		body = "{}";
		len = 2;
	}
	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, stored ? stored_keys : keys, "", detail, detail_len)) != CM_OK)
		goto out;
	if ((err = get_autoscale(json_object_get(root, "autoscale"), &spec, detail, detail_len)) != CM_OK)
		goto out;
	/* multiprocessing's default: one worker per CPU; an autoscaled pool
	 * starts at its least. */
	n = spec.scale_max ? spec.scale_min : ncpu > 0 ? ncpu : 1;
	if ((err = get_int(root, "processes", "", spec.scale_max ? spec.scale_min : 1,
	                   spec.scale_max ? spec.scale_max : SPEC_MAX_PROCESSES, &n, detail, detail_len)) != CM_OK)
		goto out;
	spec.processes = (int)n;
	n = spec.max_attempts;
	if ((err = get_int(root, "max_attempts", "", 1, 100, &n, detail, detail_len)) != CM_OK)
		goto out;
	spec.max_attempts = (int)n;
	n = 0;
	if ((err = get_int(root, "timeout_s", "", 0, 7 * 86400, &n, detail, detail_len)) != CM_OK)
		goto out;
	spec.timeout_s = (int)n;
	if ((err = get_bool(root, "retry_errors", &spec.retry_errors, detail, detail_len)) != CM_OK ||
	    (err = get_bool(root, "root", &spec.root, detail, detail_len)) != CM_OK)
		goto out;
	snprintf(spec.backend, sizeof(spec.backend), "%s", default_backend);
	v = json_object_get(root, "backend");
	if (v && !json_is_null(v)) {
		int known = 0;
		if (!json_is_string(v)) {
			snprintf(detail, detail_len, "field 'backend' must be a string");
			err = CM_EINVAL;
			goto out;
		}
		snprintf(spec.backend, sizeof(spec.backend), "%s", json_string_value(v));
		for (size_t i = 0; backends[i]; i++)
			known |= strcmp(spec.backend, backends[i]) == 0;
		if (!known) {
			/* Whether this gateway offers it is the engine's to say. */
			snprintf(detail, detail_len,
			         "unknown backend '%.31s' (known: local, docker, kubernetes, slurm, external)",
			         spec.backend);
			err = CM_EUNSUPPORTED;
			goto out;
		}
	}
	if (strcmp(spec.backend, "external") == 0 && spec.scale_max) {
		snprintf(detail, detail_len,
		         "field 'autoscale' needs a backend that starts workers: an external pool's join (its "
		         "'processes' is how many may)");
		err = CM_EINVAL;
		goto out;
	}
	if ((err = get_bool(root, "host_network", &spec.host_network, detail, detail_len)) != CM_OK)
		goto out;
	if (spec.host_network >= 0 && strcmp(spec.backend, "kubernetes") != 0) {
		snprintf(detail, detail_len,
		         "field 'host_network' is for backend kubernetes (local and docker workers always use the "
		         "host's network)");
		err = CM_EINVAL;
		goto out;
	}
	if ((err = get_runtime(root, spec.runtime, detail, detail_len)) != CM_OK)
		goto out;
	v = json_object_get(root, "code");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) || !cm_sha256_name_valid(json_string_value(v))) {
			snprintf(detail, detail_len,
			         "field 'code' must be the SHA-256 of an uploaded code package (PUT "
			         "/v1/code/{sha256}): 64 "
			         "lowercase hex digits");
			err = CM_EINVAL;
			goto out;
		}
		snprintf(spec.code, sizeof(spec.code), "%s", json_string_value(v));
	}
	if ((err = lease_field(root, spec.lease, detail, detail_len)) != CM_OK)
		goto out;
	v = json_object_get(root, "manager");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) || json_string_length(v) >= sizeof(spec.manager)) {
			snprintf(detail, detail_len, "field 'manager' must be a manager type");
			err = CM_EINVAL;
			goto out;
		}
		snprintf(spec.manager, sizeof(spec.manager), "%s", json_string_value(v));
	}
	snprintf(spec.image, sizeof(spec.image), "%s", default_image);
	v = json_object_get(root, "image");
	if (v && !json_is_null(v)) {
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= sizeof(spec.image)) {
			snprintf(detail, detail_len, "field 'image' must be an image name (1 to 255 characters)");
			err = CM_EINVAL;
			goto out;
		}
		snprintf(spec.image, sizeof(spec.image), "%s", json_string_value(v));
	}
	v = json_object_get(root, "volumes");
	if (v && !json_is_null(v)) {
		size_t i;
		json_t *vol;
		if (!json_is_array(v) || json_array_size(v) > SPEC_MAX_VOLUMES) {
			snprintf(detail, detail_len,
			         "field 'volumes' must be an array of at most %d \"SOURCE:PATH[:ro]\"",
			         SPEC_MAX_VOLUMES);
			err = CM_EINVAL;
			goto out;
		}
		json_array_foreach (v, i, vol) {
			const char *s = json_string_value(vol);
			const char *colon = s ? strchr(s, ':') : NULL;
			if (!s || !colon || colon == s || colon[1] != '/' || strlen(s) >= sizeof(spec.volumes[0])) {
				snprintf(detail, detail_len,
				         "field 'volumes[%zu]' must be \"NAME:/path\" (a claim or named volume), "
				         "\"emptyDir:/path\" or \"/host/path:/path\", optionally \":ro\"",
				         i);
				err = CM_EINVAL;
				goto out;
			}
			/* Mounted over the root, it would hide every program the
			 * worker runs (Docker refuses it too); a stored spec from
			 * before this check still loads, and fails at its start. */
			char source[SPEC_VOLUME_MAX], target[SPEC_VOLUME_MAX];
			if (!stored && spec_volume_split(s, source, target) >= 0 && is_root(target)) {
				snprintf(detail, detail_len,
				         "field 'volumes[%zu]': its path inside cannot be the root, which would hide "
				         "everything the worker runs",
				         i);
				err = CM_EINVAL;
				goto out;
			}
			snprintf(spec.volumes[spec.nvolumes++], sizeof(spec.volumes[0]), "%s", s);
		}
	}
	v = json_object_get(root, "resources");
	if (v && !json_is_null(v)) {
		json_t *cpu;
		if (!json_is_object(v)) {
			snprintf(detail, detail_len, "field 'resources' must be an object");
			err = CM_EINVAL;
			goto out;
		}
		if ((err = check_keys(v, rkeys, "resources.", detail, detail_len)) != CM_OK)
			goto out;
		cpu = json_object_get(v, "cpu");
		if (cpu && !json_is_null(cpu)) {
			if (!json_is_number(cpu) || json_number_value(cpu) <= 0 || json_number_value(cpu) > 1024) {
				snprintf(detail, detail_len,
				         "field 'resources.cpu' must be a number of cores, 0 < cpu <= 1024");
				err = CM_EINVAL;
				goto out;
			}
			spec.cpu = json_number_value(cpu);
		}
		if ((err = get_int(v, "memory_mb", "resources.", 1, 1 << 24, &spec.memory_mb, detail, detail_len)) !=
		    CM_OK)
			goto out;
		n = 0;
		if ((err = get_int(v, "gpu", "resources.", 0, 64, &n, detail, detail_len)) != CM_OK)
			goto out;
		spec.gpu = (int)n;
	}
	*out = spec;
out:
	json_decref(root);
	return err;
}

int spec_pool_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                    pool_spec *out, char *detail, size_t detail_len)
{
	return pool_parse(body, len, default_backend, default_image, 0, out, detail, detail_len);
}

int spec_lease_parse(const char *body, size_t len, int64_t *lease_ms, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"lease_s", NULL};
	json_t *root = NULL;
	int64_t n = SPEC_LEASE_DEFAULT_S;
	int err;

	if (len == 0) {
		body = "{}";
		len = 2;
	}
	if ((err = load(body, len, &root, detail, detail_len)) == CM_OK &&
	    (err = check_keys(root, keys, "", detail, detail_len)) == CM_OK &&
	    (err = get_int(root, "lease_s", "", 1, SPEC_LEASE_MAX_S, &n, detail, detail_len)) == CM_OK)
		*lease_ms = n * 1000;
	json_decref(root);
	return err;
}

int spec_join_token_parse(const char *body, size_t len, int64_t *uses, int64_t *ttl_s, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"uses", "ttl_s", NULL};
	json_t *root = NULL;
	int err;

	*uses = 0;
	*ttl_s = SPEC_JOIN_TTL_DEFAULT_S;
	if (len == 0) {
		body = "{}";
		len = 2;
	}
	if ((err = load(body, len, &root, detail, detail_len)) == CM_OK &&
	    (err = check_keys(root, keys, "", detail, detail_len)) == CM_OK &&
	    (err = get_int(root, "uses", "", 1, SPEC_MAX_PROCESSES, uses, detail, detail_len)) == CM_OK)
		err = get_int(root, "ttl_s", "", 1, SPEC_JOIN_TTL_MAX_S, ttl_s, detail, detail_len);
	json_decref(root);
	return err;
}

int spec_join_parse(const char *body, size_t len, char *token, size_t token_len, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"token", NULL};
	json_t *root = NULL, *v;
	int err;

	if ((err = load(body, len, &root, detail, detail_len)) == CM_OK &&
	    (err = check_keys(root, keys, "", detail, detail_len)) == CM_OK) {
		v = json_object_get(root, "token");
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= token_len) {
			snprintf(detail, detail_len, "field 'token' must be a join token (POST /v1/pools/{id}/join)");
			err = CM_EINVAL;
		} else {
			snprintf(token, token_len, "%s", json_string_value(v));
		}
	}
	json_decref(root);
	return err;
}

int spec_pool_patch_parse(const char *body, size_t len, pool_patch *out, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"processes", "autoscale", NULL};
	pool_patch patch = {.processes = -1};
	pool_spec scale = {0};
	json_t *root = NULL, *v;
	int64_t n = -1;
	int err;

	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, keys, "", detail, detail_len)) != CM_OK ||
	    (err = get_int(root, "processes", "", 0, SPEC_MAX_PROCESSES, &n, detail, detail_len)) != CM_OK)
		goto out;
	patch.processes = (int)n;
	v = json_object_get(root, "autoscale");
	if (v && (err = get_autoscale(v, &scale, detail, detail_len)) != CM_OK)
		goto out;
	if (v) {
		patch.autoscale = json_is_null(v) ? -1 : 1;
		patch.scale_min = scale.scale_min;
		patch.scale_max = scale.scale_max;
		patch.scale_target_s = scale.scale_target_s;
		patch.scale_idle_s = scale.scale_idle_s;
	}
	if (patch.processes < 0 && !patch.autoscale) {
		snprintf(detail, detail_len, "give 'processes' or 'autoscale'");
		err = CM_EINVAL;
		goto out;
	}
	*out = patch;
out:
	json_decref(root);
	return err;
}

int spec_pool_load(const char *spec_json, const char *default_image, pool_spec *out, char *detail, size_t detail_len)
{
	return pool_parse(spec_json, strlen(spec_json), "local", default_image, 1, out, detail, detail_len);
}

char *spec_pool_json(const pool_spec *spec)
{
	/* Unset resources are null, so that the stored spec parses back. */
	json_t *o = json_pack("{s:i, s:s, s:i, s:b, s:i, s:{s:o, s:o, s:i}}", "processes", spec->processes, "backend",
	                      spec->backend, "max_attempts", spec->max_attempts, "retry_errors", spec->retry_errors,
	                      "timeout_s", spec->timeout_s, "resources", "cpu",
	                      spec->cpu > 0 ? json_real(spec->cpu) : json_null(), "memory_mb",
	                      spec->memory_mb > 0 ? json_integer(spec->memory_mb) : json_null(), "gpu", spec->gpu);
	json_t *vols = json_array();
	char *s;

	for (int i = 0; i < spec->nvolumes; i++)
		json_array_append_new(vols, json_string(spec->volumes[i]));
	json_object_set_new(o, "image", json_string(spec->image));
	if (spec->manager[0])
		json_object_set_new(o, "manager", json_string(spec->manager));
	if (spec->root)
		json_object_set_new(o, "root", json_true());
	if (spec->host_network >= 0)
		json_object_set_new(o, "host_network", json_boolean(spec->host_network));
	if (spec->runtime[0])
		json_object_set_new(o, "runtime", json_loads(spec->runtime, JSON_DECODE_ANY, NULL));
	if (spec->code[0])
		json_object_set_new(o, "code", json_string(spec->code));
	if (spec->lease[0])
		json_object_set_new(o, "lease", json_string(spec->lease));
	json_object_set_new(o, "volumes", vols);
	if (spec->scale_max)
		json_object_set_new(o, "autoscale",
		                    json_pack("{s:i, s:i, s:i, s:i}", "min", spec->scale_min, "max", spec->scale_max,
		                              "target_s", spec->scale_target_s, "idle_s", spec->scale_idle_s));
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

void spec_args_fini(spec_args *args)
{
	free(args->text);
	free(args->offs);
	free(args->inputs);
	memset(args, 0, sizeof(*args));
}

void spec_map_fini(map_spec *spec)
{
	free(spec->function);
	for (size_t i = 0; i < spec->ncommand; i++)
		free(spec->command[i]);
	free(spec->command);
	spec_args_fini(&spec->args);
	free(spec->context);
	memset(spec, 0, sizeof(*spec));
}

/* Whether args holds as many arguments as one body may bring. */
static int args_full(const spec_args *args, char *detail, size_t detail_len)
{
	if (args->n < SPEC_MAX_ARGS)
		return 0;
	snprintf(detail, detail_len,
	         "field 'args' has over %d items; send the rest in parts (give 'total', then POST "
	         "/v1/jobs/{id}/args)",
	         SPEC_MAX_ARGS);
	return 1;
}

/* Takes the argument scanned at s[at..end) into args: its bytes as they are
 * (without whitespace between tokens), after the checks a scan leaves out
 * (its size; duplicate keys, by jansson, in an argument with an object).
 * args->text has room: it is as long as the text the arguments come from. */
static int take_arg(spec_args *args, size_t *cap, const char *s, size_t at, size_t end, unsigned flags, char *detail,
                    size_t detail_len)
{
	size_t off = args->offs ? args->offs[args->n] : 0, n;

	if (flags & JSON_SCAN_OBJECT) {
		json_error_t jerr;
		int too_many = count_values(s + at, end - at, SPEC_MAX_VALUES) > SPEC_MAX_VALUES;
		json_t *v =
		        too_many ? NULL : json_loadb(s + at, end - at, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
		if (!v) {
			snprintf(detail, detail_len, "argument %zu is not valid JSON: %s", args->n,
			         too_many ? "too many values" : jerr.text);
			return CM_EINVAL;
		}
		json_decref(v);
	}
	if (args->n + 2 > *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		size_t *o = realloc(args->offs, c * sizeof(*o));
		if (!o)
			return CM_ENOMEM;
		if (!args->offs)
			o[0] = 0;
		args->offs = o;
		*cap = c;
	}
	n = flags & JSON_SCAN_SPACE ? json_scan_compact(s + at, end - at, args->text + off) : end - at;
	if (!(flags & JSON_SCAN_SPACE))
		memcpy(args->text + off, s + at, n);
	if (n > value_max) {
		char what[48];
		snprintf(what, sizeof(what), "argument %zu", args->n);
		spec_say_too_big(detail, detail_len, what);
		return CM_ETOOBIG;
	}
	args->offs[++args->n] = off + n;
	return CM_OK;
}

/* Where a raw member's value goes: "args" (an array: one argument per
 * item) or "arg" (one argument). */
typedef struct raw_member {
	const char *key;
	int array;
	int seen;
	spec_args *args;
} raw_member;

/* The value of raw member r at s[at]: its arguments into r->args; *end
 * just past it. */
static int take_raw(raw_member *r, const char *s, size_t len, size_t at, size_t *end, char *detail, size_t detail_len)
{
	size_t cap = 0, i = at, e;
	unsigned flags;
	char why[96];
	int err;

	if (r->seen++) {
		snprintf(detail, detail_len, "body is not valid JSON: duplicate object key '%s'", r->key);
		return CM_EINVAL;
	}
	if (!(r->args->text = malloc(len - at + 1)))
		return CM_ENOMEM;
	if (!r->array) {
		if (json_scan_value(s, len, i, end, &flags, why, sizeof(why)) != 0)
			goto invalid;
		return take_arg(r->args, &cap, s, i, *end, flags, detail, detail_len);
	}
	if (s[i] != '[') {
		snprintf(detail, detail_len, "field 'args' is required: an array of arguments, one per task");
		return CM_EINVAL;
	}
	i = json_scan_space(s, len, i + 1);
	if (i < len && s[i] == ']') {
		*end = i + 1;
		return CM_OK;
	}
	for (;;) {
		if (args_full(r->args, detail, detail_len))
			return CM_ETOOBIG;
		if (json_scan_value(s, len, i, &e, &flags, why, sizeof(why)) != 0)
			goto invalid;
		if ((err = take_arg(r->args, &cap, s, i, e, flags, detail, detail_len)) != CM_OK)
			return err;
		i = json_scan_space(s, len, e);
		if (i < len && s[i] == ']') {
			*end = i + 1;
			return CM_OK;
		}
		if (i >= len || s[i] != ',') {
			snprintf(why, sizeof(why), "an unexpected %s at byte %zu", i >= len ? "end" : "character", i);
			goto invalid;
		}
		i = json_scan_space(s, len, i + 1);
	}
invalid:
	snprintf(detail, detail_len, "body is not valid JSON: %s", why);
	return CM_EINVAL;
}

/* Parses a body that must be a JSON object: every member by jansson into
 * *out, except raw's, taken by take_raw. A body that does not start as an
 * object goes to jansson whole, which says what is wrong with it. */
static int load_with_raw(const char *s, size_t len, raw_member *raw, json_t **out, char *detail, size_t detail_len)
{
	size_t i = json_scan_space(s, len, 0), end, values = 0;
	json_t *root;
	char why[200];
	int err = CM_OK;

	if (i >= len || s[i] != '{')
		return load(s, len, out, detail, detail_len);
	if (!(root = json_object()))
		return CM_ENOMEM;
	i = json_scan_space(s, len, i + 1);
	if (i < len && s[i] == '}') {
		i++;
		goto tail;
	}
	for (;;) {
		json_error_t jerr;
		json_t *key, *v;
		unsigned flags;
		size_t key_at = i;
		if (i >= len || s[i] != '"' || json_scan_value(s, len, i, &end, &flags, why, sizeof(why)) != 0) {
			if (i >= len || s[i] != '"')
				snprintf(why, sizeof(why), "a missing object key at byte %zu", i);
			goto invalid;
		}
		if (!(key = json_loadb(s + key_at, end - key_at, JSON_DECODE_ANY, &jerr))) {
			snprintf(why, sizeof(why), "%.100s at byte %zu", jerr.text, key_at);
			goto invalid;
		}
		i = json_scan_space(s, len, end);
		if (i >= len || s[i] != ':') {
			json_decref(key);
			snprintf(why, sizeof(why), "a missing ':' at byte %zu", i);
			goto invalid;
		}
		i = json_scan_space(s, len, i + 1);
		if (i < len && strcmp(json_string_value(key), raw->key) == 0) {
			json_decref(key);
			if ((err = take_raw(raw, s, len, i, &end, detail, detail_len)) != CM_OK)
				goto out;
		} else {
			if (json_scan_value(s, len, i, &end, &flags, why, sizeof(why)) != 0) {
				json_decref(key);
				goto invalid;
			}
			/* Counted over every member built, so that many fields
			 * (unknown ones are refused only once built) cannot add
			 * up to more than one body's worth. */
			values += count_values(s + i, end - i, SPEC_MAX_VALUES);
			if (values > SPEC_MAX_VALUES) {
				json_decref(key);
				snprintf(detail, detail_len, "the body holds over %d JSON values", SPEC_MAX_VALUES);
				err = CM_ETOOBIG;
				goto out;
			}
			v = json_loadb(s + i, end - i, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
			if (!v || json_object_get(root, json_string_value(key))) {
				snprintf(why, sizeof(why), "%.100s (field '%.64s')",
				         v ? "duplicate object key" : jerr.text, json_string_value(key));
				json_decref(v);
				json_decref(key);
				goto invalid;
			}
			json_object_set_new(root, json_string_value(key), v);
			json_decref(key);
		}
		i = json_scan_space(s, len, end);
		if (i < len && s[i] == '}') {
			i++;
			break;
		}
		if (i >= len || s[i] != ',') {
			snprintf(why, sizeof(why), "an unexpected %s at byte %zu", i >= len ? "end" : "character", i);
			goto invalid;
		}
		i = json_scan_space(s, len, i + 1);
	}
tail:
	if (json_scan_space(s, len, i) != len) {
		snprintf(why, sizeof(why), "text after the object at byte %zu", i);
		goto invalid;
	}
	*out = root;
	return CM_OK;
invalid:
	snprintf(detail, detail_len, "body is not valid JSON: %s", why);
	err = CM_EINVAL;
out:
	json_decref(root);
	return err;
}

/* "context": any JSON value, for a runtime's (rt:) function only. */
static int get_context(json_t *root, map_spec *spec, char *detail, size_t detail_len)
{
	json_t *v = json_object_get(root, "context");

	if (!v)
		return CM_OK;
	if (strncmp(spec->function, "rt:", 3) != 0) {
		snprintf(detail, detail_len, "field 'context' is given to a runtime: it needs an rt: function");
		return CM_EINVAL;
	}
	if (!(spec->context = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)))
		return CM_ENOMEM;
	spec->context_len = strlen(spec->context);
	if (spec->context_len > value_max) {
		spec_say_too_big(detail, detail_len, "field 'context'");
		return CM_ETOOBIG;
	}
	return CM_OK;
}

/* "name": what people call a job (shown with it, listed by it): 1 to
 * SPEC_JOB_NAME_MAX bytes of UTF-8 text without control characters. */
static int get_job_name(json_t *root, char out[SPEC_JOB_NAME_MAX + 1], char *detail, size_t detail_len)
{
	json_t *v = json_object_get(root, "name");
	const char *s = json_string_value(v);
	size_t n = s ? json_string_length(v) : 0;

	out[0] = '\0';
	if (!v || json_is_null(v))
		return CM_OK;
	if (!s || n == 0 || n > SPEC_JOB_NAME_MAX || strlen(s) != n) {
		snprintf(detail, detail_len, "field 'name' must be a string of 1 to %d bytes", SPEC_JOB_NAME_MAX);
		return CM_EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			snprintf(detail, detail_len, "field 'name' holds a control character");
			return CM_EINVAL;
		}
	}
	memcpy(out, s, n + 1);
	return CM_OK;
}

/* "inputs": how many inputs each argument's task carries (a chunk of a
 * map's), one count per argument, into args->inputs; *sum: their sum.
 * Absent: one input a task (args->inputs stays NULL). */
static int get_inputs(json_t *root, spec_args *args, int64_t *sum, char *detail, size_t detail_len)
{
	json_t *a = json_object_get(root, "inputs");
	json_t *v;
	size_t i;

	*sum = 0;
	if (!a || json_is_null(a))
		return CM_OK;
	if (!json_is_array(a) || json_array_size(a) != args->n || !args->n) {
		snprintf(detail, detail_len,
		         "field 'inputs' must be an array of %zu counts, one per argument: how many inputs its task "
		         "carries",
		         args->n);
		return CM_EINVAL;
	}
	if (!(args->inputs = malloc(args->n * sizeof(*args->inputs))))
		return CM_ENOMEM;
	json_array_foreach (a, i, v) {
		json_int_t n = json_is_integer(v) ? json_integer_value(v) : 0;
		if (n < 1 || n > SPEC_TASK_INPUTS_MAX) {
			snprintf(detail, detail_len, "field 'inputs[%zu]' must be an integer from 1 to %d", i,
			         SPEC_TASK_INPUTS_MAX);
			return CM_EINVAL;
		}
		args->inputs[i] = (uint32_t)n;
		*sum += n;
	}
	return CM_OK;
}

/* A map's inputs: "inputs" by task, and "input_total" when more tasks come
 * in parts (each carries one input at least); 0 for one input a task. */
static int get_input_total(json_t *root, map_spec *spec, char *detail, size_t detail_len)
{
	int64_t sum, rest = spec->total - (int64_t)spec->args.n;
	int err = get_inputs(root, &spec->args, &sum, detail, detail_len);

	if (err != CM_OK)
		return err;
	if (!spec->args.inputs) {
		if (json_object_get(root, "input_total")) {
			snprintf(detail, detail_len, "field 'input_total' needs 'inputs'");
			return CM_EINVAL;
		}
		return CM_OK;
	}
	spec->inputs_total = sum;
	if (spec->total > SPEC_MAX_INPUT_TASKS) {
		snprintf(detail, detail_len, "a job whose tasks carry several inputs has at most %d tasks ('total')",
		         SPEC_MAX_INPUT_TASKS);
		return CM_ETOOBIG;
	}
	if (rest > 0 && !json_object_get(root, "input_total")) {
		snprintf(detail, detail_len,
		         "field 'input_total' is required when tasks of several inputs come in parts: the inputs "
		         "of all %lld tasks",
		         (long long)spec->total);
		return CM_EINVAL;
	}
	if ((err = get_int(root, "input_total", "", sum + rest,
	                   rest ? SPEC_MAX_TASKS * (int64_t)SPEC_TASK_INPUTS_MAX : sum, &spec->inputs_total, detail,
	                   detail_len)) != CM_OK)
		return err;
	return CM_OK;
}

int spec_map_parse(const char *body, size_t len, int single, map_spec *out, char *detail, size_t detail_len)
{
	static const char *const map_keys[] = {"function",     "command",      "args",    "chunksize", "timeout_s",
	                                       "max_attempts", "retry_errors", "context", "total",     "name",
	                                       "inputs",       "input_total",  NULL};
	static const char *const apply_keys[] = {"function",     "command", "arg",  "timeout_s", "max_attempts",
	                                         "retry_errors", "context", "name", NULL};
	map_spec spec = {.chunksize = 1, .retry_errors = -1};
	raw_member raw = {.key = single ? "arg" : "args", .array = !single, .args = &spec.args};
	json_t *root = NULL;
	json_t *fn, *cmd;
	int64_t n;
	int err;

	if ((err = load_with_raw(body, len, &raw, &root, detail, detail_len)) != CM_OK) {
		spec_map_fini(&spec);
		return err;
	}
	if ((err = check_keys(root, single ? apply_keys : map_keys, "", detail, detail_len)) != CM_OK)
		goto out;
	fn = json_object_get(root, "function");
	cmd = json_object_get(root, "command");
	if (cmd && !json_is_null(cmd)) {
		if (fn && !json_is_null(fn) && !(json_is_string(fn) && strcmp(json_string_value(fn), "exec") == 0)) {
			snprintf(detail, detail_len, "give either 'function' or 'command', not both");
			err = CM_EINVAL;
			goto out;
		}
		if ((err = get_argv(cmd, &spec.command, &spec.ncommand, detail, detail_len)) != CM_OK)
			goto out;
		spec.function = strdup("exec");
	} else {
		if (!fn || !json_is_string(fn) || json_string_length(fn) == 0 || json_string_length(fn) > 256) {
			snprintf(detail, detail_len,
			         "field 'function' is required: a string such as \"echo\" or \"LIB.so:SYMBOL\" (or "
			         "give 'command')");
			err = CM_EINVAL;
			goto out;
		}
		if (strcmp(json_string_value(fn), "exec") == 0) {
			snprintf(detail, detail_len, "function 'exec' needs a 'command' array");
			err = CM_EINVAL;
			goto out;
		}
		if ((err = cm_function_check_request(json_string_value(fn), detail, detail_len)) != CM_OK)
			goto out;
		spec.function = strdup(json_string_value(fn));
	}
	if (!spec.function) {
		err = CM_ENOMEM;
		goto out;
	}
	n = 1;
	if (!single && (err = get_int(root, "chunksize", "", 1, 1000000, &n, detail, detail_len)) != CM_OK)
		goto out;
	spec.chunksize = (int)n;
	n = 0;
	if ((err = get_int(root, "timeout_s", "", 0, 7 * 86400, &n, detail, detail_len)) != CM_OK)
		goto out;
	spec.timeout_ms = (unsigned)n * 1000u;
	n = 0;
	if ((err = get_int(root, "max_attempts", "", 1, 100, &n, detail, detail_len)) != CM_OK)
		goto out;
	spec.max_attempts = (int)n;
	if ((err = get_bool(root, "retry_errors", &spec.retry_errors, detail, detail_len)) != CM_OK)
		goto out;
	if ((err = get_context(root, &spec, detail, detail_len)) != CM_OK ||
	    (err = get_job_name(root, spec.name, detail, detail_len)) != CM_OK)
		goto out;
	if (!raw.seen) {
		snprintf(detail, detail_len,
		         single ? "field 'arg' is required (any JSON value; null is fine)"
		                : "field 'args' is required: an array of arguments, one per task");
		err = CM_EINVAL;
		goto out;
	}
	spec.total = (int64_t)spec.args.n;
	if (!single && ((err = get_int(root, "total", "", (int64_t)spec.args.n, SPEC_MAX_TASKS, &spec.total, detail,
	                               detail_len)) != CM_OK ||
	                (err = get_input_total(root, &spec, detail, detail_len)) != CM_OK))
		goto out;
	*out = spec;
	memset(&spec, 0, sizeof(spec));
out:
	spec_map_fini(&spec);
	json_decref(root);
	return err;
}

int spec_part_parse(const char *body, size_t len, int64_t *offset, spec_args *out, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"offset", "args", "inputs", NULL};
	int64_t sum;
	spec_args args = {0};
	raw_member raw = {.key = "args", .array = 1, .args = &args};
	json_t *root = NULL;
	int err;

	*offset = -1;
	if ((err = load_with_raw(body, len, &raw, &root, detail, detail_len)) != CM_OK ||
	    (err = check_keys(root, keys, "", detail, detail_len)) != CM_OK ||
	    (err = get_int(root, "offset", "", 0, SPEC_MAX_TASKS, offset, detail, detail_len)) != CM_OK)
		goto out;
	if (*offset < 0 || !raw.seen) {
		snprintf(detail, detail_len,
		         "fields 'offset' (the index of this part's first argument in the job) and 'args' are "
		         "required");
		err = CM_EINVAL;
		goto out;
	}
	if ((err = get_inputs(root, &args, &sum, detail, detail_len)) != CM_OK)
		goto out;
	*out = args;
	memset(&args, 0, sizeof(args));
out:
	spec_args_fini(&args);
	json_decref(root);
	return err;
}

void spec_items_fini(items_spec *spec)
{
	for (size_t i = 0; i < spec->n; i++)
		free(spec->items[i]);
	free(spec->items);
	free(spec->lens);
	memset(spec, 0, sizeof(*spec));
}

int spec_items_parse(const char *body, size_t len, items_spec *out, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"item", "items", NULL};
	items_spec spec = {0};
	json_t *root = NULL;
	json_t *one, *many, *list;
	size_t i;
	json_t *v;
	int err;

	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, keys, "", detail, detail_len)) != CM_OK)
		goto out;
	one = json_object_get(root, "item");
	many = json_object_get(root, "items");
	if ((one != NULL) == (many != NULL) || (many && !json_is_array(many))) {
		snprintf(detail, detail_len, "give either 'item' (any JSON value) or 'items' (an array of them)");
		err = CM_EINVAL;
		goto out;
	}
	list = many ? json_incref(many) : json_pack("[O]", one);
	if (json_array_size(list) > SPEC_MAX_ARGS) {
		json_decref(list);
		snprintf(detail, detail_len, "field 'items' has over %d items", SPEC_MAX_ARGS);
		err = CM_ETOOBIG;
		goto out;
	}
	spec.items = calloc(json_array_size(list) + 1, sizeof(char *));
	spec.lens = calloc(json_array_size(list) + 1, sizeof(size_t));
	if (!spec.items || !spec.lens)
		err = CM_ENOMEM;
	json_array_foreach (list, i, v) {
		if (err != CM_OK)
			break;
		char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text) {
			err = CM_ENOMEM;
		} else if (strlen(text) > value_max) {
			char what[48];
			free(text);
			snprintf(what, sizeof(what), "item %zu", i);
			spec_say_too_big(detail, detail_len, what);
			err = CM_ETOOBIG;
		} else {
			spec.lens[spec.n] = strlen(text);
			spec.items[spec.n++] = text;
		}
	}
	json_decref(list);
	if (err == CM_OK) {
		*out = spec;
		memset(&spec, 0, sizeof(spec));
	}
out:
	spec_items_fini(&spec);
	json_decref(root);
	return err;
}

int spec_pipe_parse(const char *body, size_t len, int *duplex, char lease[SPEC_LEASE_ID_MAX], char *detail,
                    size_t detail_len)
{
	static const char *const keys[] = {"duplex", "lease", NULL};
	json_t *root = NULL;
	int d = 1;
	int err;

	*duplex = 1;
	lease[0] = '\0';
	if (len == 0)
		return CM_OK;
	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, keys, "", detail, detail_len)) == CM_OK &&
	    (err = get_bool(root, "duplex", &d, detail, detail_len)) == CM_OK &&
	    (err = lease_field(root, lease, detail, detail_len)) == CM_OK)
		*duplex = d;
	json_decref(root);
	return err;
}

int spec_queue_parse(const char *body, size_t len, const char **kind, char lease[SPEC_LEASE_ID_MAX], char *detail,
                     size_t detail_len)
{
	static const char *const keys[] = {"kind", "lease", NULL};
	json_t *root = NULL, *k;
	int err;

	*kind = "queue";
	lease[0] = '\0';
	if (len == 0)
		return CM_OK;
	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, keys, "", detail, detail_len)) == CM_OK)
		err = lease_field(root, lease, detail, detail_len);
	if (err == CM_OK && (k = json_object_get(root, "kind"))) {
		const char *v = json_string_value(k);
		if (v && strcmp(v, "turns") == 0)
			*kind = "turns";
		else if (!v || strcmp(v, "queue") != 0) {
			snprintf(
			        detail, detail_len,
			        "field 'kind' must be \"queue\" (each item to the reader that asks first) or \"turns\" "
			        "(items dealt to the readers in turn)");
			err = CM_EINVAL;
		}
	}
	json_decref(root);
	return err;
}

void spec_process_fini(process_spec *spec)
{
	free(spec->function);
	free(spec->arg);
	for (size_t i = 0; i < spec->ncommand; i++)
		free(spec->command[i]);
	free(spec->command);
	for (size_t i = 0; i < spec->nenv; i++)
		free(spec->env[i]);
	free(spec->env);
	free(spec->json);
	memset(spec, 0, sizeof(*spec));
}

static char *strdup_or_fail(const char *s, int *err)
{
	char *c = strdup(s);

	if (!c)
		*err = CM_ENOMEM;
	return c;
}

/* The names strand-worker reads: a process's own env may not set them (a
 * function would then dial another hub, or lose its identity). */
static int reserved_env(const char *name)
{
	static const char *const names[] = {"STRAND_HUB",
	                                    "STRAND_HUB_CA",
	                                    "STRAND_HUB_CA_PEM",
	                                    "STRAND_HUB_SERVER_NAME",
	                                    "STRAND_POOL_ID",
	                                    "STRAND_WORKER_ID",
	                                    "STRAND_SECRET",
	                                    "STRAND_RUNTIME",
	                                    "STRAND_PLUGIN_PATH",
	                                    "STRAND_MANAGER_TYPE",
	                                    NULL};

	for (int i = 0; names[i]; i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	return 0;
}

int spec_process_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                       process_spec *out, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"function",  "arg",     "command", "backend", "image",
	                                   "resources", "volumes", "env",     "root",    "host_network",
	                                   "runtime",   "code",    "lease",   NULL};
	static const char *const run_keys[] = {"backend",      "image",   "resources", "volumes", "root",
	                                       "host_network", "runtime", "code",      "lease",   NULL};
	process_spec spec = {0};
	json_t *root = NULL, *run = NULL;
	json_t *fn, *cmd, *env, *v;
	const char *key;
	char *run_text = NULL;
	int err;

	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, keys, "", detail, detail_len)) != CM_OK)
		goto out;
	/* Where and with what it runs: the same fields, and rules, as a pool. */
	run = json_object();
	for (int i = 0; run_keys[i]; i++)
		if ((v = json_object_get(root, run_keys[i])))
			json_object_set(run, run_keys[i], v);
	json_object_set_new(run, "processes", json_integer(1));
	run_text = json_dumps(run, JSON_COMPACT);
	if (!run_text || (err = spec_pool_parse(run_text, strlen(run_text), default_backend, default_image, &spec.run,
	                                        detail, detail_len)) != CM_OK) {
		err = err ? err : CM_ENOMEM;
		goto out;
	}
	if (strcmp(spec.run.backend, "external") == 0) {
		snprintf(detail, detail_len,
		         "backend 'external' is for pools, whose workers join: a process is started");
		err = CM_EUNSUPPORTED;
		goto out;
	}
	fn = json_object_get(root, "function");
	cmd = json_object_get(root, "command");
	if ((fn != NULL) == (cmd != NULL)) {
		snprintf(detail, detail_len, "give either 'function' (with 'arg') or 'command' (an argv array)");
		err = CM_EINVAL;
		goto out;
	}
	if (cmd) {
		if ((err = get_argv(cmd, &spec.command, &spec.ncommand, detail, detail_len)) != CM_OK)
			goto out;
		if (spec.run.runtime[0]) {
			snprintf(detail, detail_len,
			         "field 'runtime' goes with a 'function' (rt:NAME), not a 'command'");
			err = CM_EINVAL;
			goto out;
		}
		if (spec.run.code[0]) {
			snprintf(detail, detail_len,
			         "field 'code' goes with a 'function' (a program is run as it is, in the image or on "
			         "the host)");
			err = CM_EINVAL;
			goto out;
		}
	} else {
		if (!json_is_string(fn) || strcmp(json_string_value(fn), "exec") == 0) {
			snprintf(detail, detail_len,
			         "field 'function' must be a function name (for a program, give 'command')");
			err = CM_EINVAL;
			goto out;
		}
		if ((err = cm_function_check_request(json_string_value(fn), detail, detail_len)) != CM_OK)
			goto out;
		v = json_object_get(root, "arg");
		spec.arg = json_dumps(v ? v : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
		if (!(spec.function = strdup_or_fail(json_string_value(fn), &err)) || !spec.arg) {
			err = CM_ENOMEM;
			goto out;
		}
		if (strlen(spec.arg) > (value_max < SPEC_PROCESS_ARG_MAX ? value_max : SPEC_PROCESS_ARG_MAX)) {
			snprintf(detail, detail_len,
			         "field 'arg' is over the %zu byte cap of a process's argument (--max-value-bytes, and "
			         "%u at most: it travels in the process's argv)",
			         value_max < SPEC_PROCESS_ARG_MAX ? value_max : SPEC_PROCESS_ARG_MAX,
			         SPEC_PROCESS_ARG_MAX);
			err = CM_ETOOBIG;
			goto out;
		}
	}
	env = json_object_get(root, "env");
	if (env && !json_is_null(env)) {
		if (!json_is_object(env) || json_object_size(env) > SPEC_MAX_ENV) {
			snprintf(detail, detail_len, "field 'env' must be an object of strings (at most %d)",
			         SPEC_MAX_ENV);
			err = CM_EINVAL;
			goto out;
		}
		spec.env = calloc(json_object_size(env) + 1, sizeof(char *));
		if (!spec.env) {
			err = CM_ENOMEM;
			goto out;
		}
		json_object_foreach (env, key, v) {
			if (!json_is_string(v) || !key[0] || strchr(key, '=')) {
				snprintf(detail, detail_len, "field 'env.%.64s' must be a string, its name without '='",
				         key);
				err = CM_EINVAL;
				goto out;
			}
			if (reserved_env(key)) {
				snprintf(detail, detail_len,
				         "field 'env.%.64s': strand sets it (how a process reaches the hub)", key);
				err = CM_EINVAL;
				goto out;
			}
			if (asprintf(&spec.env[spec.nenv], "%s=%s", key, json_string_value(v)) < 0) {
				err = CM_ENOMEM;
				goto out;
			}
			spec.nenv++;
		}
	}
	if (!(spec.json = json_dumps(root, JSON_COMPACT))) {
		err = CM_ENOMEM;
		goto out;
	}
	*out = spec;
	memset(&spec, 0, sizeof(spec));
out:
	free(run_text);
	json_decref(run);
	spec_process_fini(&spec);
	json_decref(root);
	return err;
}

int spec_manager_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                       pool_spec *out, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"type",         "backend", "image", "resources", "volumes", "root",
	                                   "host_network", "runtime", "code",  "lease",     NULL};
	static const char *const builtin[] = {"dict", "list", "queue", "counter", "sleeper", NULL};
	json_t *root = NULL, *type;
	char *text = NULL;
	int err, known = 0;

	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, keys, "", detail, detail_len)) != CM_OK)
		goto out;
	type = json_object_get(root, "type");
	if (!json_is_string(type)) {
		snprintf(detail, detail_len,
		         "field 'type' is required: dict, list, queue, counter, sleeper, runtime or LIB.so:TYPE");
		err = CM_EINVAL;
		goto out;
	}
	for (int i = 0; builtin[i]; i++)
		known |= strcmp(json_string_value(type), builtin[i]) == 0;
	/* "runtime": the object lives in the manager's runtime, each call one
	 * of its functions. */
	if (strcmp(json_string_value(type), "runtime") == 0) {
		if (!json_object_get(root, "runtime")) {
			snprintf(detail, detail_len, "a manager of type 'runtime' needs field 'runtime'");
			err = CM_EINVAL;
			goto out;
		}
		known = 1;
	}
	if (!known && (!strchr(json_string_value(type), ':') ||
	               cm_function_check(json_string_value(type), detail, detail_len) != CM_OK)) {
		snprintf(detail, detail_len,
		         "unknown manager type '%.100s': dict, list, queue, counter, sleeper, runtime or LIB.so:TYPE",
		         json_string_value(type));
		err = CM_EUNSUPPORTED;
		goto out;
	}
	/* A manager is a pool of one worker, its calls never retried: its
	 * state lives in that one process. */
	json_object_set(root, "manager", type);
	json_object_del(root, "type");
	json_object_set_new(root, "processes", json_integer(1));
	json_object_set_new(root, "max_attempts", json_integer(1));
	if (!(text = json_dumps(root, JSON_COMPACT)))
		err = CM_ENOMEM;
	else
		err = pool_parse(text, strlen(text), default_backend, default_image, 1, out, detail, detail_len);
	if (err == CM_OK && strcmp(out->backend, "external") == 0) {
		snprintf(detail, detail_len,
		         "backend 'external' is for pools, whose workers join: a manager is started");
		err = CM_EUNSUPPORTED;
	}
out:
	free(text);
	json_decref(root);
	return err;
}

int spec_call_parse(const char *body, size_t len, char **arg, char *detail, size_t detail_len)
{
	static const char *const keys[] = {"method", "args", NULL};
	json_t *root = NULL, *method, *args, *call;
	int err;

	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = check_keys(root, keys, "", detail, detail_len)) != CM_OK)
		goto out;
	method = json_object_get(root, "method");
	args = json_object_get(root, "args");
	if (!json_is_string(method) || json_string_length(method) == 0 || json_string_length(method) > 128 ||
	    (args && !json_is_array(args))) {
		snprintf(detail, detail_len, "a call is {\"method\": NAME, \"args\": [...]}");
		err = CM_EINVAL;
		goto out;
	}
	call = json_pack("{s:O, s:o}", "method", method, "args", args ? json_incref(args) : json_array());
	*arg = call ? json_dumps(call, JSON_COMPACT) : NULL;
	json_decref(call);
	err = *arg ? CM_OK : CM_ENOMEM;
	/* The call is the task its manager runs: one value. */
	if (*arg && strlen(*arg) > value_max) {
		spec_say_too_big(detail, detail_len, "the call (its arguments)");
		free(*arg);
		*arg = NULL;
		err = CM_ETOOBIG;
	}
out:
	json_decref(root);
	return err;
}

int spec_ring_parse(const char *body, size_t len, const char *default_backend, const char *default_image,
                    process_spec *out, int *size, char *detail, size_t detail_len)
{
	json_t *root = NULL;
	char *rest = NULL;
	int64_t n = 0;
	int err;

	if ((err = load(body, len, &root, detail, detail_len)) != CM_OK)
		return err;
	if ((err = get_int(root, "size", "", 1, SPEC_MAX_RING, &n, detail, detail_len)) != CM_OK)
		goto out;
	if (n == 0) {
		snprintf(detail, detail_len, "field 'size' is required: how many members (1 to %d)", SPEC_MAX_RING);
		err = CM_EINVAL;
		goto out;
	}
	/* The rest is what each member runs: a process spec. */
	json_object_del(root, "size");
	if (!(rest = json_dumps(root, JSON_COMPACT)))
		err = CM_ENOMEM;
	else if ((err = spec_process_parse(rest, strlen(rest), default_backend, default_image, out, detail,
	                                   detail_len)) == CM_OK)
		*size = (int)n;
out:
	free(rest);
	json_decref(root);
	return err;
}

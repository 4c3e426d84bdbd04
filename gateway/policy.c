/* Operator policy; see policy.h. */
#include <fnmatch.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "gateway/policy.h"

/* Normalizes an absolute path in place: no "//", ".", ".." or trailing
 * slash. Returns 0 when it is not absolute or climbs above the root. */
static int normalize(char *path)
{
	char *out = path;
	const char *in = path;

	if (path[0] != '/')
		return 0;
	while (*in) {
		const char *seg;
		size_t n;
		while (*in == '/')
			in++;
		seg = in;
		while (*in && *in != '/')
			in++;
		n = (size_t)(in - seg);
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			if (out == path)
				return 0;
			while (out > path && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, n);
		out += n;
	}
	if (out == path)
		*out++ = '/';
	*out = '\0';
	return 1;
}

int policy_path_allowed(const char *path, const char *prefixes)
{
	char p[1024], pre[1024];

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p) || !normalize(p))
		return 0;
	for (const char *s = prefixes; s && *s;) {
		const char *colon = strchr(s, ':');
		size_t n = colon ? (size_t)(colon - s) : strlen(s);
		if (n && n < sizeof(pre)) {
			memcpy(pre, s, n);
			pre[n] = '\0';
			if (normalize(pre)) {
				size_t m = strlen(pre);
				if (strcmp(pre, "/") == 0 || (strncmp(p, pre, m) == 0 && (p[m] == '\0' || p[m] == '/')))
					return 1;
			}
		}
		s = colon ? colon + 1 : s + n;
	}
	return 0;
}

/* A runtime's name: "python", or its command's program. */
static void runtime_name(const char *runtime_json, char *out, size_t out_len)
{
	json_t *v = json_loads(runtime_json, JSON_DECODE_ANY, NULL);
	const char *name = json_is_string(v) ? json_string_value(v) : json_string_value(json_array_get(v, 0));

	snprintf(out, out_len, "%s", name ? name : "");
	json_decref(v);
}

/* Whether name is one of list's comma-separated names. */
static int name_listed(const char *name, const char *list)
{
	size_t n = strlen(name);

	for (const char *p = list; n && *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && strncmp(p, name, n) == 0)
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

/* Whether name matches one of list's comma-separated globs. */
static int glob_listed(const char *name, const char *list)
{
	char pattern[512];

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len && len < sizeof(pattern)) {
			memcpy(pattern, p, len);
			pattern[len] = '\0';
			if (fnmatch(pattern, name, 0) == 0)
				return 1;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

int policy_image_allowed(const gw_config *cfg, const char *image)
{
	return cfg->allow_images[0] ? glob_listed(image, cfg->allow_images) : strcmp(image, cfg->image) == 0;
}

int policy_check_run(const gw_config *cfg, const pool_spec *run, char *detail, size_t detail_len)
{
	int containers = strcmp(run->backend, "docker") == 0 || strcmp(run->backend, "kubernetes") == 0;

	/* An image is a program of the client's choosing, run with the
	 * backend's reach (Docker's socket, the cluster's pull secrets). */
	if (containers && !policy_image_allowed(cfg, run->image)) {
		snprintf(detail, detail_len,
		         "field 'image': image '%.200s' is not one the operator allowed (--allow-images; by default "
		         "only the gateway's --image, %.200s)",
		         run->image, cfg->image);
		return CM_EPERM;
	}
	for (int i = 0; i < run->nvolumes; i++) {
		char source[SPEC_VOLUME_MAX], target[SPEC_VOLUME_MAX];
		if (spec_volume_split(run->volumes[i], source, target) < 0 || strcmp(source, "emptyDir") == 0)
			continue; /* scratch space of its own */
		if (source[0] != '/') {
			/* A named volume or claim: another pool's data, or the
			 * gateway's own database and token. */
			if (!glob_listed(source, cfg->allow_volumes)) {
				snprintf(detail, detail_len,
				         "field 'volumes[%d]': named volume '%.200s' is not one the operator allowed "
				         "(--allow-volumes)",
				         i, source);
				return CM_EPERM;
			}
			continue;
		}
		if (!policy_path_allowed(source, cfg->allow_host_paths)) {
			snprintf(detail, detail_len,
			         "field 'volumes[%d]': host path '%.200s' is not under a prefix the operator allowed "
			         "(--allow-host-paths)",
			         i, source);
			return CM_EPERM;
		}
	}
	/* A worker that could never start is refused now, not failed later. */
	if (strcmp(run->backend, "local") == 0 && run->gpu > cfg->gpus) {
		snprintf(detail, detail_len,
		         "field 'resources.gpu': each needs %d GPU%s; the local backend of this host has %d (--gpus)",
		         run->gpu, run->gpu == 1 ? "" : "s", cfg->gpus);
		return CM_EUNSUPPORTED;
	}
	/* The node's network reaches what listens on its loopback: only where
	 * the operator made it the way pods work here. */
	if (run->host_network == 1 && !cfg->k8s.host_network) {
		snprintf(detail, detail_len,
		         "field 'host_network': pods use the cluster's pod network on this gateway "
		         "(--k8s-host-network allows the node's)");
		return CM_EPERM;
	}
	/* A runtime runs whatever code it is given (Python's os.system too):
	 * a command like any other, unless the operator names it. */
	if (run->runtime[0] && cfg->no_commands) {
		char name[128];
		runtime_name(run->runtime, name, sizeof(name));
		if (!name_listed(name, cfg->allow_runtime)) {
			snprintf(
			        detail, detail_len,
			        "field 'runtime': runtime '%.100s' runs any code it is given, and this gateway runs no "
			        "commands (--no-commands) unless the operator allows it (--allow-runtime %.100s)",
			        name, name);
			return CM_EPERM;
		}
	}
	if (run->root && !cfg->allow_root_containers) {
		snprintf(detail, detail_len,
		         "field 'root': containers run as an unprivileged user on this gateway "
		         "(--allow-root-containers allows root)");
		return CM_EPERM;
	}
	return CM_OK;
}

int policy_check_process(const gw_config *cfg, const process_spec *spec, char *detail, size_t detail_len)
{
	int err = policy_check_run(cfg, &spec->run, detail, detail_len);

	return err != CM_OK ? err : policy_check_command(cfg, spec->command != NULL, detail, detail_len);
}

int policy_check_command(const gw_config *cfg, int has_command, char *detail, size_t detail_len)
{
	if (has_command && cfg->no_commands) {
		snprintf(detail, detail_len,
		         "field 'command': commands are switched off on this gateway (--no-commands)");
		return CM_EPERM;
	}
	return CM_OK;
}

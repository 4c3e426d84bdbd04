/*
 * The docker backend: one container per worker, through the Docker Engine
 * API on its unix socket (libcurl), never the docker CLI. Runs on its
 * executor's thread only (executor.h): a slow daemon stalls no one
 * else.
 *
 *   run     POST /containers/create  {Image, Cmd|Entrypoint, Env, Labels, HostConfig}
 *           POST /containers/{id}/start        (removed again if it fails)
 *   poll    GET  /containers/json?all=1&filters={"label":["strand"]}
 *           one list serves every worker for POLL_MS; a container that has
 *           exited is gone, its exit code read from the list and its last
 *           log lines (GET /containers/{id}/logs) kept as the reason
 *   logs    GET  /containers/{id}/logs (demultiplexed)
 *   stop    POST /containers/{id}/kill?signal=SIGTERM|SIGKILL
 *   release DELETE /containers/{id}?force=true
 *
 * Containers run with host networking (workers dial the hub on loopback)
 * and carry the label strand, with strand.pool and strand.worker (or
 * strand.process), which is how a
 * restarted gateway finds and adopts them. Resources map to HostConfig:
 * cpu -> NanoCpus, memory_mb -> Memory, gpu -> DeviceRequests (nvidia),
 * volumes -> Binds ("name:/path" for a named volume, "/host:/path[:ro]"),
 *            Mounts (an anonymous volume for "emptyDir:/path").
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "gateway/backend/json.h"
#include "gateway/backend/backend.h"

#define DOCKER_UNPRIVILEGED_USER "65534:65534"

#define API "http://docker/v1.41"
#define POLL_MS 200

typedef struct docker {
	backend base; /* first: the engine holds a backend * */
	char socket[256];
	long timeout_s;
	CURL *curl;
	json_t *list; /* the last container list, or NULL */
	int64_t list_at;
	json_t *own_volumes; /* the gateway's own container's volumes' names, learned at the first run */
} docker;

/* One call. body is borrowed (may be NULL); *reply is the body as it came.
 * Returns the HTTP status, or 0 with the reason in detail when the daemon
 * could not be reached. For statuses >= 300 detail holds its message. */
static long call(docker *d, const char *method, const char *path, json_t *body, cm_buf *reply, char *detail,
                 size_t detail_len)
{
	char url[1024];
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	long status = 0;
	CURLcode rc;

	cm_buf_init(reply);
	snprintf(url, sizeof(url), API "%s", path);
	curl_easy_reset(d->curl);
	curl_easy_setopt(d->curl, CURLOPT_UNIX_SOCKET_PATH, d->socket);
	curl_easy_setopt(d->curl, CURLOPT_URL, url);
	curl_easy_setopt(d->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(d->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(d->curl, CURLOPT_WRITEFUNCTION, backend_reply_collect);
	curl_easy_setopt(d->curl, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(d->curl, CURLOPT_TIMEOUT, d->timeout_s);
	curl_easy_setopt(d->curl, CURLOPT_NOSIGNAL, 1L);
	if (text)
		curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, text);
	else if (strcmp(method, "POST") == 0)
		curl_easy_setopt(d->curl, CURLOPT_POSTFIELDS, "");
	rc = curl_easy_perform(d->curl);
	if (rc != CURLE_OK) {
		snprintf(detail, detail_len, "cannot reach the Docker daemon at %s: %s", d->socket,
		         curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 300) {
			json_t *j = json_loadb(reply->data ? reply->data : "", reply->len, 0, NULL);
			const char *msg = json_string_value(json_object_get(j, "message"));
			snprintf(detail, detail_len, "Docker daemon: %s", msg ? msg : (reply->data ? reply->data : ""));
			json_decref(j);
		}
	}
	curl_slist_free_all(h);
	free(text);
	return status;
}

static json_t *run_body(const backend_run_spec *r)
{
	const pool_spec *s = r->spec;
	/* No capabilities, and none to gain through a setuid program: what a
	 * task could do to the host from a container is what a plain user
	 * process could, root container or not. */
	json_t *host = json_pack("{s:s, s:[s], s:[s]}", "NetworkMode", "host", "SecurityOpt", "no-new-privileges",
	                         "CapDrop", "ALL");
	json_t *labels = backend_json_pairs(r->labels, r->nlabels);
	json_t *body;

	if (s->cpu > 0)
		json_object_set_new(host, "NanoCpus", json_integer((json_int_t)(s->cpu * 1e9)));
	if (s->memory_mb > 0)
		json_object_set_new(host, "Memory", json_integer((json_int_t)s->memory_mb << 20));
	if (s->gpu > 0)
		json_object_set_new(
		        host, "DeviceRequests",
		        json_pack("[{s:s, s:i, s:[[s]]}]", "Driver", "nvidia", "Count", s->gpu, "Capabilities", "gpu"));
	if (s->nvolumes > 0) {
		json_t *binds = json_array(), *mounts = json_array();
		for (int i = 0; i < s->nvolumes; i++) {
			/* emptyDir: an anonymous volume, removed with its container. */
			if (strncmp(s->volumes[i], "emptyDir:", 9) == 0) {
				char target[256];
				snprintf(target, sizeof(target), "%s", s->volumes[i] + 9);
				char *mode = strchr(target, ':');
				if (mode)
					*mode = '\0';
				json_array_append_new(mounts,
				                      json_pack("{s:s, s:s, s:b}", "Type", "volume", "Target", target,
				                                "ReadOnly", mode && strcmp(mode + 1, "ro") == 0));
			} else {
				json_array_append_new(binds, json_string(s->volumes[i]));
			}
		}
		json_object_set_new(host, "Binds", binds);
		json_object_set_new(host, "Mounts", mounts);
	}
	json_object_set_new(labels, "strand", json_string("1"));
	body = json_pack("{s:s, s:o, s:o, s:o}", "Image", s->image, "Env", backend_json_strings(r->env, r->nenv),
	                 "Labels", labels, "HostConfig", host);
	if (r->argc)
		json_object_set_new(body, r->entrypoint ? "Entrypoint" : "Cmd", backend_json_strings(r->argv, r->argc));
	/* Not root unless the pool asked and the operator allowed it (the
	 * gateway checked): a task breaking out of a root container owns the
	 * host. nobody:nogroup needs no passwd file in a FROM scratch image. */
	if (!s->root)
		json_object_set_new(body, "User", json_string(DOCKER_UNPRIVILEGED_USER));
	return body;
}

/* The id of the container this gateway runs in, from the bind mounts
 * Docker makes for it (/var/lib/docker/containers/ID/hostname, ...); 0
 * outside a container. */
static int own_container_id(char id[65])
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		const char *at = strstr(line, "/containers/");
		if (at && strspn(at + 12, "0123456789abcdef") == 64 && at[76] == '/') {
			memcpy(id, at + 12, 64);
			id[64] = '\0';
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* The gateway's own volumes (compose's strand-data: its database and
 * token), asked of the daemon once: no pool may mount them, whatever
 * --allow-volumes allows. */
static void own_volumes_learn(docker *d)
{
	char id[65], path[128], detail[256];
	json_t *c, *m;
	cm_buf reply;
	size_t i;

	d->own_volumes = json_array();
	if (!own_container_id(id))
		return;
	snprintf(path, sizeof(path), "/containers/%s/json", id);
	if (call(d, "GET", path, NULL, &reply, detail, sizeof(detail)) == 200 &&
	    (c = json_loadb(reply.data, reply.len, 0, NULL))) {
		json_array_foreach (json_object_get(c, "Mounts"), i, m)
			if (json_is_string(json_object_get(m, "Name")))
				json_array_append(d->own_volumes, json_object_get(m, "Name"));
		json_decref(c);
	}
	cm_buf_fini(&reply);
}

/* Whether the run mounts one of the gateway's own volumes: detail says. */
static int mounts_own_volume(docker *d, const pool_spec *s, char *detail, size_t detail_len)
{
	json_t *v;
	size_t i;

	if (!d->own_volumes)
		own_volumes_learn(d);
	for (int k = 0; k < s->nvolumes; k++) {
		size_t len = strcspn(s->volumes[k], ":");
		json_array_foreach (d->own_volumes, i, v) {
			if (strlen(json_string_value(v)) == len &&
			    strncmp(s->volumes[k], json_string_value(v), len) == 0) {
				snprintf(detail, detail_len,
				         "volume %s holds this gateway's own data: no pool may mount it",
				         json_string_value(v));
				return 1;
			}
		}
	}
	return 0;
}

static int docker_run(backend *b, const backend_run_spec *r, char handle[BACKEND_HANDLE_MAX], char *detail,
                      size_t detail_len)
{
	docker *d = (docker *)b;
	json_t *body;
	char path[256];
	cm_buf reply;
	long status;
	json_t *created;
	const char *id;

	if (mounts_own_volume(d, r->spec, detail, detail_len))
		return CM_EPERM;
	body = run_body(r);

	/* Named (a worker: strand-<pool>-<n>), the name is its handle; one
	 * taken already (a container a crash left) gets a random suffix. */
	char name[BACKEND_HANDLE_MAX] = "", create[160] = "/containers/create";
	if (r->name) {
		snprintf(name, sizeof(name), "%.70s", r->name);
		snprintf(create, sizeof(create), "/containers/create?name=%s", name);
	}
	status = call(d, "POST", create, body, &reply, detail, detail_len);
	if (status == 409 && name[0]) {
		char suffix[5];
		cm_random_hex(suffix, 2);
		snprintf(name, sizeof(name), "%.70s-%s", r->name, suffix);
		snprintf(create, sizeof(create), "/containers/create?name=%s", name);
		cm_buf_fini(&reply);
		status = call(d, "POST", create, body, &reply, detail, detail_len);
	}
	json_decref(body);
	if (status != 201) {
		if (status == 404) {
			char why[256];
			snprintf(why, sizeof(why), "%s", detail);
			snprintf(detail, detail_len, "image %s is not on this Docker host (%s)", r->spec->image, why);
		}
		cm_buf_fini(&reply);
		return CM_EUNAVAIL;
	}
	created = json_loadb(reply.data, reply.len, 0, NULL);
	cm_buf_fini(&reply);
	id = json_string_value(json_object_get(created, "Id"));
	if (!id || strlen(id) >= BACKEND_HANDLE_MAX) {
		snprintf(detail, detail_len, "Docker daemon: no container id in its answer");
		json_decref(created);
		return CM_EUNAVAIL;
	}
	snprintf(handle, BACKEND_HANDLE_MAX, "%s", name[0] ? name : id);
	json_decref(created);
	snprintf(path, sizeof(path), "/containers/%s/start", handle);
	status = call(d, "POST", path, NULL, &reply, detail, detail_len);
	cm_buf_fini(&reply);
	if (status != 204 && status != 304) {
		/* Refused (a device it has no driver for, a bad bind): leave nothing. */
		char gone[160];
		snprintf(gone, sizeof(gone), "/containers/%s?force=true", handle);
		call(d, "DELETE", gone, NULL, &reply, path, sizeof(path));
		cm_buf_fini(&reply);
		return CM_EUNAVAIL;
	}
	d->list_at = 0; /* the list is out of date now */
	return CM_OK;
}

/* Container output: the logs endpoint multiplexes stdout and stderr in
 * frames of an 8-byte header (stream, 0, 0, 0, big-endian size). */
static void demux(const cm_buf *raw, size_t max, cm_buf *out)
{
	const unsigned char *p = (const unsigned char *)raw->data;
	size_t i = 0;

	while (p && i + 8 <= raw->len) {
		size_t n = (size_t)p[i + 4] << 24 | (size_t)p[i + 5] << 16 | (size_t)p[i + 6] << 8 | p[i + 7];
		i += 8;
		if (n > raw->len - i)
			n = raw->len - i;
		cm_buf_append(out, p + i, n);
		i += n;
	}
	if (out->len > max) {
		memmove(out->data, out->data + out->len - max, max);
		out->len = max;
		out->data[max] = '\0';
	}
}

static int docker_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out)
{
	docker *d = (docker *)b;
	char path[200], detail[128];
	cm_buf raw;
	size_t before = out->len;

	(void)log_path;
	snprintf(path, sizeof(path), "/containers/%s/logs?stdout=1&stderr=1", handle);
	if (call(d, "GET", path, NULL, &raw, detail, sizeof(detail)) != 200) {
		cm_buf_fini(&raw);
		return CM_EUNAVAIL;
	}
	demux(&raw, max + before, out);
	cm_buf_fini(&raw);
	return CM_OK;
}

/* Refreshes the container list if it is older than POLL_MS. */
static int refresh(docker *d)
{
	/* {"label":["strand"]}: every container strand made, workers and processes. */
	static const char path[] = "/containers/json?all=1&filters=%7B%22label%22%3A%5B%22strand%22%5D%7D";
	char detail[256];
	cm_buf reply;
	json_t *list;

	if (d->list && cm_now_ms() - d->list_at < POLL_MS)
		return CM_OK;
	if (call(d, "GET", path, NULL, &reply, detail, sizeof(detail)) != 200 ||
	    !(list = json_loadb(reply.data, reply.len, 0, NULL)) || !json_is_array(list)) {
		cm_buf_fini(&reply);
		return CM_EUNAVAIL;
	}
	cm_buf_fini(&reply);
	json_decref(d->list);
	d->list = list;
	d->list_at = cm_now_ms();
	return CM_OK;
}

/* The last lines a container wrote, on one line: why it ended. */
static void last_words(docker *d, const char *id, char *out, size_t out_len)
{
	cm_buf text;

	cm_buf_init(&text);
	out[0] = '\0';
	if (docker_logs(&d->base, id, NULL, out_len - 1, &text) == CM_OK && text.data) {
		for (size_t i = 0; i < text.len; i++)
			if (text.data[i] == '\n')
				text.data[i] = ' ';
		snprintf(out, out_len, "%s", text.data);
	}
	cm_buf_fini(&text);
}

/* Whether container c (of the list) is handle: its id, or its name. */
static int is_handle(json_t *c, const char *handle)
{
	json_t *name;
	size_t i;

	if (strcmp(json_string_value(json_object_get(c, "Id")) ?: "", handle) == 0)
		return 1;
	json_array_foreach (json_object_get(c, "Names"), i, name)
		if (strcmp(json_string_value(name) ?: "", handle) == 0 ||
		    (json_string_value(name) && json_string_value(name)[0] == '/' &&
		     strcmp(json_string_value(name) + 1, handle) == 0))
			return 1;
	return 0;
}

static int docker_poll(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len)
{
	docker *d = (docker *)b;
	json_t *c;
	size_t i;

	if (detail_len)
		detail[0] = '\0';
	if (refresh(d) != CM_OK)
		return 0; /* the daemon cannot say: assume nothing */
	json_array_foreach (d->list, i, c) {
		const char *state, *status;
		if (!is_handle(c, handle))
			continue;
		state = json_string_value(json_object_get(c, "State")) ?: "";
		if (strcmp(state, "exited") != 0 && strcmp(state, "dead") != 0)
			return 0;
		status = json_string_value(json_object_get(c, "Status")) ?: "";
		/* "Exited (137) 2 seconds ago" */
		*exit_code = strchr(status, '(') ? atoi(strchr(status, '(') + 1) : -1;
		if (detail_len)
			last_words(d, handle, detail, detail_len);
		return 1;
	}
	*exit_code = -1;
	snprintf(detail, detail_len, "container %.12s is gone", handle);
	return 1;
}

static void docker_stop(backend *b, const char *handle, int hard)
{
	docker *d = (docker *)b;
	char path[160], detail[128];
	cm_buf reply;

	snprintf(path, sizeof(path), "/containers/%s/kill?signal=%s", handle, hard ? "SIGKILL" : "SIGTERM");
	call(d, "POST", path, NULL, &reply, detail, sizeof(detail));
	cm_buf_fini(&reply);
	d->list_at = 0;
}

static void docker_release(backend *b, const char *handle)
{
	docker *d = (docker *)b;
	char path[160], detail[128];
	cm_buf reply;

	/* v=true: the anonymous volumes it made go too (named ones stay). */
	snprintf(path, sizeof(path), "/containers/%s?force=true&v=true", handle);
	call(d, "DELETE", path, NULL, &reply, detail, sizeof(detail));
	cm_buf_fini(&reply);
}

static void docker_free(backend *b)
{
	docker *d = (docker *)b;

	json_decref(d->list);
	json_decref(d->own_volumes);
	curl_easy_cleanup(d->curl);
	free(d);
}

static const backend_ops docker_ops = {
        .name = "docker",
        .run = docker_run,
        .logs = docker_logs,
        .poll = docker_poll,
        .stop = docker_stop,
        .release = docker_release,
        .free = docker_free,
};

backend *backend_docker_new(const char *socket, int timeout_s)
{
	docker *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->curl = curl_easy_init();
	if (!d->curl) {
		free(d);
		return NULL;
	}
	snprintf(d->socket, sizeof(d->socket), "%s", socket);
	d->timeout_s = timeout_s;
	d->base.ops = &docker_ops;
	return &d->base;
}

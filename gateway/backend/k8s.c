/*
 * The kubernetes backend: one Pod per worker (or Process), through the
 * Kubernetes REST API with libcurl (a bearer token, the cluster's CA),
 * never kubectl. Runs on its executor's thread (executor.h), but for
 * the watch, which has a thread of its own.
 *
 *   run     POST /api/v1/namespaces/NS/secrets   the environment (hub address,
 *                                                worker secret): never in the pod spec
 *           POST /api/v1/namespaces/NS/pods      strand-<pool>-<worker> or strand-<process>,
 *                                                envFrom that Secret, restartPolicy Never
 *   poll    from memory: a watch on labelSelector=strand (a list, then
 *           ?watch=1 windows, each resumed from the last resourceVersion;
 *           listed again after a break or 410 Gone) keeps every pod's
 *           phase, exit code and why
 *   logs    GET  .../pods/NAME/log
 *   stop    DELETE .../pods/NAME (gracePeriodSeconds 0 when hard)
 *   release DELETE .../pods/NAME and .../secrets/NAME
 *
 * A pod that cannot be scheduled, whose image cannot be had, or whose
 * container cannot be created for start_grace_s is reported as never
 * started (BACKEND_NEVER_STARTED) with the scheduler's or kubelet's words.
 * Resources map to requests and limits (cpu, memory, nvidia.com/gpu);
 * volumes "claim:/path[:ro]" to a PersistentVolumeClaim, "emptyDir:/path"
 * to an emptyDir, "/host:/path[:ro]" to a hostPath (the gateway's policy
 * allowed it).
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/backend/backend.h"
#include "gateway/backend/json.h"

#define NAME_MAX_LEN 64
#define UNPRIVILEGED_UID 65534
/* A pod this gateway just created is known before the watch reports it,
 * and a list taken meanwhile does not drop it for this long. */
#define FRESH_MS 30000
#define WATCH_WINDOW_S 60 /* a watch request lasts this long, then resumes */

typedef struct pod_state {
	char name[NAME_MAX_LEN];
	int ended; /* Succeeded or Failed */
	int exit_code;
	int64_t stuck_since; /* unschedulable, no image, cannot create: since when (0: not) */
	int64_t created_ms; /* made by this gateway's run just now: a list may not show it yet */
	char why[400];
	struct pod_state *next;
} pod_state;

typedef struct k8s {
	backend base; /* first: the engine holds a backend * */
	k8s_config cfg;
	char auth[4200]; /* "Authorization: Bearer ..." (never logged); "": a client certificate */
	long timeout_s;
	CURL *curl; /* the executor's */
	/* the watch */
	pthread_t watcher;
	int watching;
	pthread_mutex_t mu; /* guards what follows */
	int stop;
	int listed; /* the cache reflects a list (poll can tell gone from unknown) */
	pod_state *pods;
} k8s;

/* ---- HTTP ------------------------------------------------------------------ */

/* The server's certificate is checked against the configured CA (a file
 * or PEM bytes); a client certificate signs in where the kubeconfig gave one.
 * Only https: the token must not travel in clear. */
static void set_tls(k8s *k, CURL *c)
{
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	if (k->cfg.ca_pem[0]) {
		struct curl_blob ca = {k->cfg.ca_pem, strlen(k->cfg.ca_pem), CURL_BLOB_NOCOPY};
		curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
	} else if (k->cfg.ca_file[0]) {
		curl_easy_setopt(c, CURLOPT_CAINFO, k->cfg.ca_file);
	}
	if (k->cfg.cert_pem[0]) {
		struct curl_blob cert = {k->cfg.cert_pem, strlen(k->cfg.cert_pem), CURL_BLOB_NOCOPY};
		struct curl_blob key = {k->cfg.key_pem, strlen(k->cfg.key_pem), CURL_BLOB_NOCOPY};
		curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
		curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
	}
}

/* One call; *reply is the body. Returns the HTTP status, or 0 with the
 * reason in detail; for statuses >= 300 detail holds the API's message. */
static long call_with(k8s *k, CURL *c, const char *method, const char *path, json_t *body, cm_buf *reply, char *detail,
                      size_t detail_len)
{
	char url[1024];
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	long status = 0;
	CURLcode rc;

	if (k->auth[0])
		h = curl_slist_append(h, k->auth);
	cm_buf_init(reply);
	snprintf(url, sizeof(url), "%s%s", k->cfg.server, path);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, backend_reply_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, k->timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	set_tls(k, c);
	if (text)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
	rc = curl_easy_perform(c);
	if (rc != CURLE_OK) {
		snprintf(detail, detail_len, "cannot reach the Kubernetes API server at %s: %s", k->cfg.server,
		         curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 300) {
			json_t *j = json_loadb(reply->data ? reply->data : "", reply->len, 0, NULL);
			const char *msg = json_string_value(json_object_get(j, "message"));
			snprintf(detail, detail_len, "Kubernetes API (%ld): %s", status,
			         msg                             ? msg
			         : status == 401                 ? "the token was refused"
			         : reply->data && reply->data[0] ? reply->data
			                                         : "no message");
			json_decref(j);
		}
	}
	curl_slist_free_all(h);
	free(text);
	return status;
}

static long call(k8s *k, const char *method, const char *path, json_t *body, cm_buf *reply, char *detail,
                 size_t detail_len)
{
	return call_with(k, k->curl, method, path, body, reply, detail, detail_len);
}

/* ---- what a pod says ---------------------------------------------------------- */

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Reads a pod object into s (name set by the caller). */
static void pod_read(json_t *pod, pod_state *s, int64_t now)
{
	json_t *status = json_object_get(pod, "status");
	const char *phase = str(status, "phase") ?: "";
	json_t *cs = json_array_get(json_object_get(status, "containerStatuses"), 0);
	json_t *state = json_object_get(cs, "state");
	json_t *cond;
	size_t i;
	const char *stuck = NULL, *stuck_msg = NULL;

	s->ended = strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0;
	if (s->ended) {
		json_t *t = json_object_get(state, "terminated");
		s->exit_code = t ? (int)json_integer_value(json_object_get(t, "exitCode")) : -1;
		snprintf(s->why, sizeof(s->why), "%s%s%s", str(t, "reason") ?: str(status, "reason") ?: phase,
		         str(t, "message") || str(status, "message") ? ": " : "",
		         str(t, "message") ?: str(status, "message") ?: "");
		return;
	}
	json_array_foreach (json_object_get(status, "conditions"), i, cond)
		if (strcmp(str(cond, "type") ?: "", "PodScheduled") == 0 &&
		    strcmp(str(cond, "status") ?: "", "False") == 0 &&
		    strcmp(str(cond, "reason") ?: "", "Unschedulable") == 0) {
			stuck = "Unschedulable";
			stuck_msg = str(cond, "message");
		}
	json_t *waiting = json_object_get(state, "waiting");
	const char *wr = str(waiting, "reason");
	if (wr && (strcmp(wr, "ErrImageNeverPull") == 0 || strcmp(wr, "ImagePullBackOff") == 0 ||
	           strcmp(wr, "ErrImagePull") == 0 || strcmp(wr, "InvalidImageName") == 0 ||
	           strcmp(wr, "CreateContainerConfigError") == 0 || strcmp(wr, "CreateContainerError") == 0)) {
		stuck = wr;
		stuck_msg = str(waiting, "message");
	}
	if (stuck) {
		if (!s->stuck_since)
			s->stuck_since = now;
		snprintf(s->why, sizeof(s->why), "%s: %s", stuck, stuck_msg ?: "");
	} else {
		s->stuck_since = 0;
	}
}

static pod_state *cache_find(k8s *k, const char *name)
{
	for (pod_state *s = k->pods; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

/* Applies one pod (an event's, or a list's item); deleted: it is gone. */
static void cache_apply(k8s *k, json_t *pod, int deleted)
{
	const char *name = str(json_object_get(pod, "metadata"), "name");
	pod_state *s;

	if (!name || strlen(name) >= NAME_MAX_LEN)
		return;
	s = cache_find(k, name);
	if (deleted) {
		for (pod_state **pp = &k->pods; *pp; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				free(s);
				break;
			}
		return;
	}
	if (!s) {
		if (!(s = calloc(1, sizeof(*s))))
			return;
		snprintf(s->name, sizeof(s->name), "%s", name);
		s->next = k->pods;
		k->pods = s;
	}
	pod_read(pod, s, cm_now_ms());
}

/* ---- the watch ----------------------------------------------------------------- */

typedef struct watch_ctx {
	k8s *k;
	cm_buf line;
	char rv[64]; /* the last version seen: the next watch resumes from it */
	int relist; /* the next window lists first: a break lost events, or rv is too old (410 Gone) */
} watch_ctx;

static void watch_event(watch_ctx *w, const char *text, size_t len)
{
	json_t *ev = json_loadb(text, len, 0, NULL);
	const char *type = str(ev, "type");
	json_t *obj = json_object_get(ev, "object");
	const char *rv = str(json_object_get(obj, "metadata"), "resourceVersion");

	if (type && strcmp(type, "ERROR") == 0)
		w->relist = 1; /* 410 Gone: rv is older than the server keeps */
	if (type && strcmp(type, "ERROR") != 0) {
		pthread_mutex_lock(&w->k->mu);
		if (strcmp(type, "BOOKMARK") != 0)
			cache_apply(w->k, obj, strcmp(type, "DELETED") == 0);
		pthread_mutex_unlock(&w->k->mu);
		if (rv)
			snprintf(w->rv, sizeof(w->rv), "%s", rv);
	}
	json_decref(ev);
}

/* The stream: one JSON event per line (a line over BACKEND_REPLY_MAX
 * fails the watch, which then lists again). */
static size_t on_watch_data(char *p, size_t size, size_t n, void *ctx)
{
	watch_ctx *w = ctx;
	size_t len = size * n, at = 0;

	while (at < len) {
		const char *nl = memchr(p + at, '\n', len - at);
		size_t span = nl ? (size_t)(nl - (p + at)) : len - at;
		if (w->line.len + span > BACKEND_REPLY_MAX || cm_buf_append(&w->line, p + at, span) != CM_OK)
			return 0;
		at += span;
		if (!nl)
			break;
		at++; /* the newline */
		if (w->line.len)
			watch_event(w, w->line.data, w->line.len);
		w->line.len = 0;
	}
	return len;
}

static int on_watch_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	watch_ctx *w = ctx;
	int stop;

	(void)a;
	(void)b;
	(void)c;
	(void)d;
	pthread_mutex_lock(&w->k->mu);
	stop = w->k->stop;
	pthread_mutex_unlock(&w->k->mu);
	return stop; /* non-zero aborts the transfer */
}

/* Lists the pods, replacing the cache; writes the list's resourceVersion. */
static int relist(k8s *k, CURL *c, char rv[64])
{
	char path[256], detail[256];
	cm_buf reply;
	json_t *list, *item;
	size_t i;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=strand", k->cfg.ns);
	if (call_with(k, c, "GET", path, NULL, &reply, detail, sizeof(detail)) != 200 ||
	    !(list = json_loadb(reply.data, reply.len, 0, NULL))) {
		cm_buf_fini(&reply);
		return CM_EUNAVAIL;
	}
	cm_buf_fini(&reply);
	pthread_mutex_lock(&k->mu);
	/* Keep what was known of each pod (since when it is stuck), drop the rest. */
	pod_state *old = k->pods;
	k->pods = NULL;
	json_array_foreach (json_object_get(list, "items"), i, item) {
		const char *name = str(json_object_get(item, "metadata"), "name");
		for (pod_state **pp = &old; name && *pp; pp = &(*pp)->next)
			if (strcmp((*pp)->name, name) == 0) {
				pod_state *s = *pp;
				*pp = s->next;
				s->next = k->pods;
				k->pods = s;
				break;
			}
		cache_apply(k, item, 0);
	}
	while (old) {
		pod_state *s = old;
		old = s->next;
		if (s->created_ms && cm_now_ms() - s->created_ms < FRESH_MS) { /* younger than the list, maybe */
			s->next = k->pods;
			k->pods = s;
		} else {
			free(s);
		}
	}
	k->listed = 1;
	pthread_mutex_unlock(&k->mu);
	snprintf(rv, 64, "%s", str(json_object_get(list, "metadata"), "resourceVersion") ?: "");
	json_decref(list);
	return CM_OK;
}

static void *watch_main(void *arg)
{
	k8s *k = arg;
	CURL *c = curl_easy_init();
	watch_ctx w = {.k = k};

	pthread_setname_np(pthread_self(), "k8s-watch");

	cm_buf_init(&w.line);
	for (;;) {
		char path[640];
		pthread_mutex_lock(&k->mu);
		int stop = k->stop;
		pthread_mutex_unlock(&k->mu);
		if (stop || !c)
			break;
		/* A window that ended on time resumes from the last version seen;
		 * after a break or a 410 the pods are listed again (as client-go's
		 * reflector does), so no event is lost for good. */
		if (w.relist || !w.rv[0]) {
			if (relist(k, c, w.rv) != CM_OK) {
				usleep(500000); /* the server cannot answer now: again soon */
				continue;
			}
			w.relist = 0;
		}
		struct curl_slist *h = k->auth[0] ? curl_slist_append(NULL, k->auth) : NULL;
		snprintf(path, sizeof(path),
		         "%s/api/v1/namespaces/%s/pods?labelSelector=strand&watch=1&allowWatchBookmarks=true"
		         "&timeoutSeconds=%d&resourceVersion=%s",
		         k->cfg.server, k->cfg.ns, WATCH_WINDOW_S, w.rv);
		curl_easy_reset(c);
		curl_easy_setopt(c, CURLOPT_URL, path);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_watch_data);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
		curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_watch_progress);
		curl_easy_setopt(c, CURLOPT_XFERINFODATA, &w);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, k->timeout_s);
		/* A server that went silent (a half-open connection) ends it too. */
		curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)WATCH_WINDOW_S + k->timeout_s);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		set_tls(k, c);
		w.line.len = 0;
		CURLcode rc = curl_easy_perform(c);
		long status = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		curl_slist_free_all(h);
		if ((rc != CURLE_OK && rc != CURLE_ABORTED_BY_CALLBACK) || status != 200) {
			w.relist = 1;
			usleep(200000); /* not a watch that ran its window: not at once again */
		}
	}
	cm_buf_fini(&w.line);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* ---- the ops ------------------------------------------------------------------- */

/* The pod's name: the one asked for (a worker's, strand-<pool>-<n>), or
 * from its labels: strand-<pool>-<worker hex> or strand-<process>. */
static int pod_name(const backend_run_spec *r, char out[NAME_MAX_LEN])
{
	const char *pool = NULL, *worker = NULL, *process = NULL;

	for (size_t i = 0; i < r->nlabels; i++) {
		if (strncmp(r->labels[i], "strand.pool=", 12) == 0)
			pool = r->labels[i] + 12;
		else if (strncmp(r->labels[i], "strand.worker=", 14) == 0)
			worker = r->labels[i] + 14;
		else if (strncmp(r->labels[i], "strand.process=", 15) == 0)
			process = r->labels[i] + 15;
	}
	if (r->name)
		snprintf(out, NAME_MAX_LEN, "%s", r->name);
	else if (pool && worker)
		snprintf(out, NAME_MAX_LEN, "strand-%s-%s", pool, strncmp(worker, "w-", 2) == 0 ? worker + 2 : worker);
	else if (process)
		snprintf(out, NAME_MAX_LEN, "strand-%s", process);
	else
		return CM_EINVAL;
	/* DNS-1123: lowercase letters, digits and '-' (ids are hex already). */
	for (char *p = out; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		else if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
			*p = '-';
	return CM_OK;
}

static json_t *labels_of(const backend_run_spec *r)
{
	json_t *labels = backend_json_pairs(r->labels, r->nlabels);

	json_object_set_new(labels, "strand", json_string("1"));
	return labels;
}

static json_t *secret_body(const char *name, const backend_run_spec *r)
{
	json_t *data = backend_json_pairs(r->env, r->nenv);

	return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:s, s:o}", "apiVersion", "v1", "kind", "Secret", "metadata",
	                 "name", name, "labels", "strand", "1", "type", "Opaque", "stringData", data);
}

/* The pool's volumes as pod volumes and the container's mounts. A claim or
 * host path mounted twice (read-write here, read-only there) is one pod
 * volume with two mounts: the kubelet waits forever on a pod naming one
 * claim in two volumes. */
static void pod_volumes(const pool_spec *s, json_t *volumes, json_t *mounts)
{
	char sources[SPEC_MAX_VOLUMES][256];

	for (int i = 0; i < s->nvolumes; i++) {
		char path[256], vname[16];
		const char *v = s->volumes[i], *colon = strchr(v, ':');
		int ro = 0, same = -1;
		sources[i][0] = '\0';
		if (!colon)
			continue;
		snprintf(sources[i], sizeof(sources[i]), "%.*s", (int)(colon - v), v);
		snprintf(path, sizeof(path), "%s", colon + 1);
		char *mode = strchr(path, ':');
		if (mode) {
			ro = strcmp(mode + 1, "ro") == 0;
			*mode = '\0';
		}
		/* emptyDir is not a claim (claims are lowercase): each is its own. */
		int empty = strcmp(sources[i], "emptyDir") == 0;
		for (int j = 0; j < i && !empty && same < 0; j++)
			if (strcmp(sources[j], sources[i]) == 0)
				same = j;
		snprintf(vname, sizeof(vname), "v%d", same >= 0 ? same : i);
		json_array_append_new(mounts,
		                      json_pack("{s:s, s:s, s:b}", "name", vname, "mountPath", path, "readOnly", ro));
		if (same >= 0) {
			/* Read-only at the source only if every mount of it is. */
			json_t *claim = NULL, *vol;
			size_t k;
			json_array_foreach (volumes, k, vol)
				if (strcmp(json_string_value(json_object_get(vol, "name")), vname) == 0)
					claim = json_object_get(vol, "persistentVolumeClaim");
			if (claim && !ro)
				json_object_set_new(claim, "readOnly", json_false());
		} else if (sources[i][0] == '/') {
			json_array_append_new(
			        volumes, json_pack("{s:s, s:{s:s}}", "name", vname, "hostPath", "path", sources[i]));
		} else if (empty) {
			json_array_append_new(volumes, json_pack("{s:s, s:{}}", "name", vname, "emptyDir"));
		} else {
			json_array_append_new(volumes,
			                      json_pack("{s:s, s:{s:s, s:b}}", "name", vname, "persistentVolumeClaim",
			                                "claimName", sources[i], "readOnly", ro));
		}
	}
}

static json_t *pod_body(k8s *k, const char *name, const backend_run_spec *r)
{
	const pool_spec *s = r->spec;
	json_t *limits = json_object(), *mounts = json_array(), *volumes = json_array();
	json_t *container, *spec;

	if (s->cpu > 0) {
		char cpu[32];
		snprintf(cpu, sizeof(cpu), "%dm", (int)(s->cpu * 1000 + 0.5));
		json_object_set_new(limits, "cpu", json_string(cpu));
	}
	if (s->memory_mb > 0) {
		char mem[32];
		snprintf(mem, sizeof(mem), "%lldMi", (long long)s->memory_mb);
		json_object_set_new(limits, "memory", json_string(mem));
	}
	if (s->gpu > 0)
		json_object_set_new(limits, "nvidia.com/gpu", json_integer(s->gpu));
	pod_volumes(s, volumes, mounts);
	container = json_pack("{s:s, s:s, s:s, s:[{s:{s:s}}], s:{s:O, s:O}, s:o}", "name", "main", "image", s->image,
	                      "imagePullPolicy", k->cfg.pull_policy, "envFrom", "secretRef", "name", name, "resources",
	                      "requests", limits, "limits", limits, "volumeMounts", mounts);
	json_decref(limits);
	/* No capabilities, and none to gain through a setuid program, root
	 * pod or not, as the docker backend's containers. */
	json_object_set_new(
	        container, "securityContext",
	        json_pack("{s:b, s:{s:[s]}}", "allowPrivilegeEscalation", 0, "capabilities", "drop", "ALL"));
	if (r->argc)
		json_object_set_new(container, r->entrypoint ? "command" : "args",
		                    backend_json_strings(r->argv, r->argc));
	spec = json_pack("{s:s, s:b, s:b, s:[o], s:o}", "restartPolicy", "Never", "hostNetwork",
	                 s->host_network >= 0 ? s->host_network : k->cfg.host_network, "automountServiceAccountToken",
	                 0, "containers", container, "volumes", volumes);
	/* Not root unless the pool asked and the operator allowed it. */
	if (!s->root)
		json_object_set_new(spec, "securityContext",
		                    json_pack("{s:i, s:i, s:b}", "runAsUser", UNPRIVILEGED_UID, "runAsGroup",
		                              UNPRIVILEGED_UID, "runAsNonRoot", 1));
	return json_pack("{s:s, s:s, s:{s:s, s:o}, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", "name", name,
	                 "labels", labels_of(r), "spec", spec);
}

static void delete_named(k8s *k, const char *kind, const char *name, int grace)
{
	char path[256], detail[256];
	cm_buf reply;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/%s/%s%s", k->cfg.ns, kind, name,
	         grace == 0 ? "?gracePeriodSeconds=0" : "");
	call(k, "DELETE", path, NULL, &reply, detail, sizeof(detail));
	cm_buf_fini(&reply);
}

static int k8s_run(backend *b, const backend_run_spec *r, char handle[BACKEND_HANDLE_MAX], char *detail,
                   size_t detail_len)
{
	k8s *k = (k8s *)b;
	char name[NAME_MAX_LEN], path[256];
	cm_buf reply;
	json_t *body;
	long status;

	if (pod_name(r, name) != CM_OK) {
		snprintf(detail, detail_len, "kubernetes backend: nothing names this pod");
		return CM_EINVAL;
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets", k->cfg.ns);
	body = secret_body(name, r);
	status = call(k, "POST", path, body, &reply, detail, detail_len);
	json_decref(body);
	cm_buf_fini(&reply);
	if (status == 409 && r->name) {
		/* The name is taken (what a crash left): a random suffix. */
		char suffix[5];
		cm_random_hex(suffix, 2);
		size_t len = strlen(name);
		snprintf(name + (len > NAME_MAX_LEN - 6 ? NAME_MAX_LEN - 6 : len), 6, "-%s", suffix);
		body = secret_body(name, r);
		status = call(k, "POST", path, body, &reply, detail, detail_len);
		json_decref(body);
		cm_buf_fini(&reply);
	}
	if (status != 201)
		return CM_EUNAVAIL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", k->cfg.ns);
	body = pod_body(k, name, r);
	status = call(k, "POST", path, body, &reply, detail, detail_len);
	json_decref(body);
	if (status != 201) {
		cm_buf_fini(&reply);
		delete_named(k, "secrets", name, 0); /* leave nothing */
		return CM_EUNAVAIL;
	}
	json_t *created = json_loadb(reply.data, reply.len, 0, NULL);
	cm_buf_fini(&reply);
	pthread_mutex_lock(&k->mu);
	/* The watch may have told of the pod already, and of what came after
	 * its creation (unschedulable, say: a state the scheduler does not
	 * report again): the creation's answer is older than any of that. */
	if (created && !cache_find(k, name))
		cache_apply(k, created, 0);
	pod_state *s = cache_find(k, name);
	if (s)
		s->created_ms = cm_now_ms();
	pthread_mutex_unlock(&k->mu);
	json_decref(created);
	snprintf(handle, BACKEND_HANDLE_MAX, "%s", name);
	return CM_OK;
}

static int k8s_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out)
{
	k8s *k = (k8s *)b;
	char path[320], detail[128];
	cm_buf raw;

	(void)log_path;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/log?tailLines=100000", k->cfg.ns, handle);
	if (call(k, "GET", path, NULL, &raw, detail, sizeof(detail)) != 200) {
		cm_buf_fini(&raw);
		return CM_EUNAVAIL;
	}
	size_t from = raw.len > max ? raw.len - max : 0;
	int err = raw.len ? cm_buf_append(out, raw.data + from, raw.len - from) : CM_OK;
	cm_buf_fini(&raw);
	return err;
}

static int k8s_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out);

/* Appends to detail what pod handle last wrote, on one line: its end's
 * reason is said already, its output is what tells why (a worker's own
 * last words). The pod still exists: it ended, and is released after. */
static void append_last_lines(backend *b, const char *handle, char *detail, size_t detail_len)
{
	size_t used = strlen(detail);
	cm_buf text;

	if (used + 8 >= detail_len)
		return;
	cm_buf_init(&text);
	if (k8s_logs(b, handle, NULL, detail_len - used - 4, &text) == CM_OK && text.len) {
		for (size_t i = 0; i < text.len; i++)
			if (text.data[i] == '\n')
				text.data[i] = ' ';
		snprintf(detail + used, detail_len - used, "%s%s", used ? "; " : "", text.data);
	}
	cm_buf_fini(&text);
}

static int k8s_poll(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len)
{
	k8s *k = (k8s *)b;
	int gone = 0, ended = 0;

	if (detail_len)
		detail[0] = '\0';
	pthread_mutex_lock(&k->mu);
	pod_state *s = k->listed ? cache_find(k, handle) : NULL;
	if (!k->listed) {
		gone = 0; /* the watch has not listed yet: it cannot tell */
	} else if (!s) {
		gone = 1;
		*exit_code = -1;
		snprintf(detail, detail_len, "pod %s was deleted", handle);
	} else if (s->ended) {
		gone = ended = 1;
		*exit_code = s->exit_code;
		snprintf(detail, detail_len, "%s", s->why);
	} else if (s->stuck_since && cm_now_ms() - s->stuck_since >= (int64_t)k->cfg.start_grace_s * 1000) {
		gone = 1;
		*exit_code = BACKEND_NEVER_STARTED;
		snprintf(detail, detail_len, "pod %s: %s", handle, s->why);
	}
	pthread_mutex_unlock(&k->mu);
	if (ended && detail_len) /* a call to the API server: not under the lock */
		append_last_lines(b, handle, detail, detail_len);
	return gone;
}

static void k8s_stop(backend *b, const char *handle, int hard)
{
	delete_named((k8s *)b, "pods", handle, hard ? 0 : -1);
}

static void k8s_release(backend *b, const char *handle)
{
	k8s *k = (k8s *)b;

	delete_named(k, "pods", handle, 0);
	delete_named(k, "secrets", handle, 0);
}

static void k8s_free(backend *b)
{
	k8s *k = (k8s *)b;

	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_mutex_unlock(&k->mu);
	if (k->watching)
		pthread_join(k->watcher, NULL);
	while (k->pods) {
		pod_state *s = k->pods;
		k->pods = s->next;
		free(s);
	}
	explicit_bzero(k->auth, sizeof(k->auth));
	explicit_bzero(&k->cfg, sizeof(k->cfg));
	curl_easy_cleanup(k->curl);
	pthread_mutex_destroy(&k->mu);
	free(k);
}

static const backend_ops k8s_ops = {
        .name = "kubernetes",
        .run = k8s_run,
        .logs = k8s_logs,
        .poll = k8s_poll,
        .stop = k8s_stop,
        .release = k8s_release,
        .free = k8s_free,
};

backend *backend_k8s_new(const k8s_config *cfg, int timeout_s, char *detail, size_t detail_len)
{
	k8s *k = calloc(1, sizeof(*k));
	cm_buf token, reply;
	char path[256];
	long status;

	if (!k) {
		snprintf(detail, detail_len, "out of memory");
		return NULL;
	}
	k->base.ops = &k8s_ops;
	k->cfg = *cfg;
	k->timeout_s = timeout_s;
	pthread_mutex_init(&k->mu, NULL);
	cm_buf_init(&token);
	if (cfg->token[0]) {
		cm_buf_append(&token, cfg->token, strlen(cfg->token));
	} else if (cfg->token_file[0] && (cm_read_tail(cfg->token_file, 4096, &token) != CM_OK || !token.len)) {
		snprintf(detail, detail_len, "kubernetes: cannot read the token file %s", cfg->token_file);
		cm_buf_fini(&token);
		k8s_free(&k->base);
		return NULL;
	}
	while (token.len && (token.data[token.len - 1] == '\n' || token.data[token.len - 1] == '\r'))
		token.len--;
	if (token.len)
		snprintf(k->auth, sizeof(k->auth), "Authorization: Bearer %.*s", (int)token.len, token.data);
	if (token.data)
		explicit_bzero(token.data, token.len);
	cm_buf_fini(&token);
	if (!(k->curl = curl_easy_init())) {
		snprintf(detail, detail_len, "out of memory");
		k8s_free(&k->base);
		return NULL;
	}
	/* Checked at start: an unreachable server, a refused token or a role
	 * that may not list pods is the operator's to fix now. */
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=strand&limit=1", cfg->ns);
	status = call(k, "GET", path, NULL, &reply, detail, detail_len);
	cm_buf_fini(&reply);
	if (status != 200) {
		if (status == 401)
			snprintf(detail, detail_len, "kubernetes: the API server at %s refused the %s (401)",
			         cfg->server, k->auth[0] ? "token" : "client certificate");
		else if (status == 403)
			snprintf(detail + strlen(detail), detail_len - strlen(detail),
			         " (the token's role may not list pods in namespace %s)", cfg->ns);
		k8s_free(&k->base);
		return NULL;
	}
	if (pthread_create(&k->watcher, NULL, watch_main, k) != 0) {
		snprintf(detail, detail_len, "kubernetes: cannot start the watch");
		k8s_free(&k->base);
		return NULL;
	}
	k->watching = 1;
	return &k->base;
}

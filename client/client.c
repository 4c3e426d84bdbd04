/* libstrand; see client.h. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/args_body.h"
#include "client/client.h"
#include "client/http_conn.h"
#include "client/lease.h"
#include "client/results_page.h"

struct strand_client {
	http_conn *plain; /* an http:// gateway: without libcurl (http_conn.h) */
	CURL *curl; /* any other (https://): libcurl */
	char url[512];
	char auth[300]; /* "Authorization: Bearer TOKEN", or "" */
	char ca_file[512]; /* $STRAND_CA_FILE: trust this CA for https:// (a self-signed gateway) */
	char error[512];
	client_lease *lease; /* strand_client_hold's, or NULL */
	char lease_id[32];
};

/* libcurl's body writer: bounded as http_reply bounds a plain gateway's. */
static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	http_body *b = ctx;

	if (size * n > HTTP_REPLY_BODY_MAX - b->len)
		return 0; /* libcurl fails the request: a write error */
	return http_body_append(b, p, size * n) == 0 ? size * n : 0;
}

/* The gateway's API token: $STRAND_TOKEN, else the first line of
 * $STRAND_TOKEN_FILE, else of ./strand.token (where the quickstart's gateway
 * keeps it, next to ./strand.db). None found: requests go without, and a
 * gateway that asks for one answers 401. */
static void load_token(strand_client *c)
{
	const char *token = getenv("STRAND_TOKEN");
	const char *path = getenv("STRAND_TOKEN_FILE");
	char line[260] = "";
	FILE *f;

	if (!token || !token[0]) {
		f = fopen(path && path[0] ? path : "strand.token", "re");
		if (f && fgets(line, sizeof(line), f))
			line[strcspn(line, "\r\n")] = '\0';
		if (f)
			fclose(f);
		token = line;
	}
	if (token[0])
		snprintf(c->auth, sizeof(c->auth), "Authorization: Bearer %.256s", token);
}

strand_client *strand_client_new(const char *url)
{
	strand_client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!url)
		url = getenv("STRAND_URL") && getenv("STRAND_URL")[0] ? getenv("STRAND_URL") : "http://127.0.0.1:8080";
	snprintf(c->url, sizeof(c->url), "%s", url);
	if (c->url[0] && c->url[strlen(c->url) - 1] == '/')
		c->url[strlen(c->url) - 1] = '\0';
	load_token(c);
	if (getenv("STRAND_CA_FILE"))
		snprintf(c->ca_file, sizeof(c->ca_file), "%s", getenv("STRAND_CA_FILE"));
	if (!(c->plain = http_conn_new(c->url))) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		c->curl = curl_easy_init();
	}
	if (!c->plain && !c->curl) {
		free(c);
		return NULL;
	}
	return c;
}

void strand_client_free(strand_client *c)
{
	if (!c)
		return;
	client_lease_end(c->lease); /* what it held ends now */
	http_conn_free(c->plain);
	if (c->curl)
		curl_easy_cleanup(c->curl);
	explicit_bzero(c->auth, sizeof(c->auth));
	free(c);
}

int strand_client_hold(strand_client *c, int lease_s)
{
	if (c->lease) {
		snprintf(c->error, sizeof(c->error), "this client holds a lease already (%s)", c->lease_id);
		return -1;
	}
	if (client_lease_start(c, c->url, lease_s > 0 ? lease_s : 10, &c->lease, c->lease_id) != 0) {
		if (!c->error[0])
			snprintf(c->error, sizeof(c->error), "cannot make a lease");
		return -1;
	}
	return 0;
}

/* A request that makes a pool, manager, process, queue or pipe: held by
 * the client's lease, if it holds one and the spec names none. */
static void held(const strand_client *c, json_t *body)
{
	if (c->lease && !json_object_get(body, "lease"))
		json_object_set_new(body, "lease", json_string(c->lease_id));
}

const char *strand_client_error(const strand_client *c)
{
	return c->error;
}

/* perform's request through libcurl (an https:// gateway). */
static long perform_curl(strand_client *c, const char *method, const char *path, const char *type, const char *text,
                         size_t len, http_body *s)
{
	char url[2048], content_type[128];
	snprintf(content_type, sizeof(content_type), "Content-Type: %s", type ? type : "application/json");
	struct curl_slist *h = curl_slist_append(NULL, content_type);
	long status = 0;
	CURLcode rc;

	h = curl_slist_append(h, "Expect:");
	if (c->auth[0])
		h = curl_slist_append(h, c->auth);
	snprintf(url, sizeof(url), "%s%s", c->url, path);
	curl_easy_reset(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c->curl, CURLOPT_NOPROXY, "*");
	/* Without it libcurl sets and restores SIGPIPE's handler around each
	 * call, ten system calls an apply; its sends (plain and TLS, through
	 * its own OpenSSL BIO) pass MSG_NOSIGNAL, and its resolver is threaded,
	 * so it needs no signal, and a threaded caller's are left alone. */
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	if (c->ca_file[0])
		curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->ca_file);
	if (text) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, text);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	rc = curl_easy_perform(c->curl);
	if (rc != CURLE_OK)
		snprintf(c->error, sizeof(c->error), "%s %.300s: %s", method, url, curl_easy_strerror(rc));
	else
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	return status;
}

/* One request with text[0..len) as its body (none if NULL) of Content-Type
 * type (NULL: JSON); the reply's body goes into s as it is
 * (NUL-terminated). */
static long perform_typed(strand_client *c, const char *method, const char *path, const char *type, const char *text,
                          size_t len, http_body *s)
{
	char why[300];
	long status;

	if (c->plain) {
		status = http_conn_request(c->plain, method, path, c->auth, type, text, len, s, why, sizeof(why));
		if (!status)
			snprintf(c->error, sizeof(c->error), "%.16s %.150s%.150s: %.180s", method, c->url, path, why);
	} else {
		status = perform_curl(c, method, path, type, text, len, s);
	}
	if (status >= 300) {
		json_t *j = json_loadb(s->data ? s->data : "", s->len, 0, NULL);
		const char *detail = json_string_value(json_object_get(j, "detail"));
		snprintf(c->error, sizeof(c->error), "%s %.200s: HTTP %ld: %.200s", method, path, status,
		         detail ? detail : (s->data ? s->data : ""));
		json_decref(j);
	}
	return status;
}

static long perform(strand_client *c, const char *method, const char *path, const char *text, size_t len, http_body *s)
{
	return perform_typed(c, method, path, NULL, text, len, s);
}

long strand_request(strand_client *c, const char *method, const char *path, json_t *body, json_t **reply)
{
	http_body s = {0};
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	long status = perform(c, method, path, text, text ? strlen(text) : 0, &s);

	*reply = status ? json_loadb(s.data ? s.data : "", s.len, 0, NULL) : NULL;
	free(s.data);
	free(text);
	return status;
}

long strand_request_raw(strand_client *c, const char *method, const char *path, char **text, size_t *len)
{
	http_body s = {0};
	long status = perform(c, method, path, NULL, 0, &s);

	*text = s.data ? s.data : strdup("");
	*len = s.len;
	return status;
}

/* Runs a request expecting `want`; copies reply.id into id when given. */
static int expect(strand_client *c, const char *method, const char *path, json_t *body, long want, char id[32],
                  json_t **reply_out)
{
	json_t *reply;
	long status = strand_request(c, method, path, body, &reply);

	if (status != want) {
		json_decref(reply);
		return -1;
	}
	if (id)
		snprintf(id, 32, "%s", json_string_value(json_object_get(reply, "id")) ?: "");
	if (reply_out)
		*reply_out = reply;
	else
		json_decref(reply);
	return 0;
}

int strand_pool_create(strand_client *c, int processes, json_t *spec, char id[32])
{
	json_t *body = spec ? json_deep_copy(spec) : json_object();
	int rc;

	json_object_set_new(body, "processes", json_integer(processes));
	held(c, body);
	rc = expect(c, "POST", "/v1/pools", body, 201, id, NULL);
	json_decref(body);
	return rc;
}

int strand_pool_wait_ready(strand_client *c, const char *pool, int processes, int timeout_s)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	for (int i = 0; i < timeout_s * 50; i++) {
		json_t *reply, *w;
		size_t k;
		int connected = 0;
		if (expect(c, "GET", path, NULL, 200, NULL, &reply) != 0)
			return -1;
		json_array_foreach (json_object_get(reply, "workers"), k, w)
			connected += strcmp(json_string_value(json_object_get(w, "state")), "connected") == 0;
		json_decref(reply);
		if (connected >= processes)
			return 0;
		usleep(20000);
	}
	snprintf(c->error, sizeof(c->error), "pool %s: workers not connected after %d s", pool, timeout_s);
	return -1;
}

int strand_pool_resize(strand_client *c, const char *pool, int processes)
{
	char path[128];
	json_t *body = json_pack("{s:i}", "processes", processes);
	int rc;

	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	rc = expect(c, "PATCH", path, body, 200, NULL, NULL);
	json_decref(body);
	return rc;
}

int strand_pool_autoscale(strand_client *c, const char *pool, int min, int max, int target_s, int idle_s)
{
	char path[128];
	json_t *scale = max > 0 ? json_pack("{s:i, s:i}", "min", min, "max", max) : json_null();
	json_t *body;
	int rc;

	if (max > 0 && target_s > 0)
		json_object_set_new(scale, "target_s", json_integer(target_s));
	if (max > 0 && idle_s > 0)
		json_object_set_new(scale, "idle_s", json_integer(idle_s));
	body = json_pack("{s:o}", "autoscale", scale);
	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	rc = expect(c, "PATCH", path, body, 200, NULL, NULL);
	json_decref(body);
	return rc;
}

int strand_pool_terminate(strand_client *c, const char *pool)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	return expect(c, "DELETE", path, NULL, 200, NULL, NULL);
}

/* A request brings at most PART_ARGS arguments; a larger map goes in
 * parts: the first with the map and its 'total', the rest to POST
 * /v1/jobs/{id}/args, one after the other (the gateway takes a job's parts
 * in order, at offset 'received'). A part the gateway finds too large
 * (413: its body over the cap) goes again as two halves. */
#define PART_ARGS 100000

/* POSTs head (borrowed) with "args": args[lo ..], PART_ARGS of them at
 * most, halved while the gateway answers 413; *n: how many went. The body
 * is written into text, kept from part to part. Returns 0 on the status
 * want, with the reply's id in id when given. */
static int post_part(strand_client *c, const char *path, json_t *head, json_t *args, size_t lo, size_t *n, long want,
                     char id[32], body_text *text)
{
	size_t left = json_array_size(args) - lo;

	*n = left < PART_ARGS ? left : PART_ARGS;
	for (;;) {
		http_body s = {0};
		json_t *reply;
		long status;
		if (args_body(text, head, args, lo, *n) != 0) {
			snprintf(c->error, sizeof(c->error), "POST %.200s: the arguments cannot be written as JSON",
			         path);
			return -1;
		}
		status = perform(c, "POST", path, text->data, text->len, &s);
		reply = status ? json_loadb(s.data ? s.data : "", s.len, 0, NULL) : NULL;
		free(s.data);
		if (status == 413 && *n > 1) {
			json_decref(reply);
			*n /= 2;
			continue;
		}
		if (status == want && id)
			snprintf(id, 32, "%s", json_string_value(json_object_get(reply, "id")) ?: "");
		json_decref(reply);
		return status == want ? 0 : -1;
	}
}

/* multiprocessing's default chunksize: about four chunks per worker. */
static int auto_chunksize(strand_client *c, const char *pool, size_t total, int *chunksize)
{
	char path[128];
	json_t *reply = NULL;
	size_t workers, size;

	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	if (expect(c, "GET", path, NULL, 200, NULL, &reply) != 0)
		return -1;
	workers = (size_t)json_integer_value(json_object_get(reply, "processes"));
	json_decref(reply);
	size = workers ? (total + 4 * workers - 1) / (4 * workers) : 1;
	*chunksize = size < 1 ? 1 : size > STRAND_CHUNKSIZE_MAX ? STRAND_CHUNKSIZE_MAX : (int)size;
	return 0;
}

int strand_map(strand_client *c, const char *pool, const char *function, json_t *args, int chunksize, char job[32])
{
	json_t *spec = json_pack("{s:s, s:i}", "function", function, "chunksize", chunksize);
	int rc = spec ? strand_map_with(c, pool, spec, args, job) : -1;

	json_decref(spec);
	return rc;
}

int strand_map_with(strand_client *c, const char *pool, json_t *spec, json_t *args, char job[32])
{
	char path[128];
	size_t total = json_array_size(args), sent = 0, n;
	json_t *head = json_deep_copy(spec);
	body_text text = {0};
	int chunksize = (int)json_integer_value(json_object_get(spec, "chunksize"));
	int rc;

	if (!head) {
		snprintf(c->error, sizeof(c->error), "out of memory");
		return -1;
	}
	if (chunksize == 0 && auto_chunksize(c, pool, total, &chunksize) != 0) {
		json_decref(head);
		return -1;
	}
	json_object_set_new(head, "chunksize", json_integer(chunksize));
	json_object_set_new(head, "total", json_integer((json_int_t)total));
	json_object_del(head, "args"); /* the parts bring them */

	snprintf(path, sizeof(path), "/v1/pools/%s/map", pool);
	rc = post_part(c, path, head, args, 0, &n, 202, job, &text);
	json_decref(head);
	snprintf(path, sizeof(path), "/v1/jobs/%s/args", job);
	for (sent = n; rc == 0 && sent < total; sent += n) {
		head = json_pack("{s:I}", "offset", (json_int_t)sent);
		rc = post_part(c, path, head, args, sent, &n, 200, NULL, &text);
		json_decref(head);
	}
	free(text.data);
	return rc;
}

int strand_imap(strand_client *c, const char *job, int unordered, int page, strand_result_fn fn, void *ctx)
{
	char path[256];
	char cursor[32] = "0";
	/* Both kept from page to page: a page of a large map is megabytes,
	 * and fresh memory for each cost more in page faults than reading it. */
	http_body text = {0};
	results_page pg = {0};
	int rc = -1;

	for (;;) {
		int complete, stop = 0;
		snprintf(path, sizeof(path), "/v1/jobs/%s/results?order=%s&shape=columns&limit=%d&wait=30&cursor=%s",
		         job, unordered ? "completion" : "input", page, cursor);
		text.len = 0;
		if (text.data)
			text.data[0] = '\0'; /* an error's empty body is not the last page */
		if (perform(c, "GET", path, NULL, 0, &text) != 200)
			break;
		if (results_page_read(text.data ? text.data : "", text.len, &pg) != 0) {
			snprintf(c->error, sizeof(c->error), "GET %.200s: not a results page", path);
			break;
		}
		for (size_t i = 0; i < pg.n && !stop; i++) {
			json_t *value = results_page_value(&pg, i);
			stop = fn(ctx, pg.items[i].index, pg.items[i].ok, value) != 0;
			json_decref(value);
		}
		snprintf(cursor, sizeof(cursor), "%s", pg.next_cursor);
		complete = pg.complete;
		if (stop || complete) {
			rc = 0;
			break;
		}
	}
	results_page_fini(&pg);
	free(text.data);
	return rc;
}

/* Takes an outcome {"ok": true, key: V} or {"ok": false, "error": E}
 * (reply stolen): *result is V (new), or -1 with E as the error. */
static int outcome(strand_client *c, json_t *reply, const char *key, json_t **result)
{
	int ok = json_is_true(json_object_get(reply, "ok"));

	if (ok)
		*result = json_incref(json_object_get(reply, key));
	else
		snprintf(c->error, sizeof(c->error), "%s",
		         json_string_value(json_object_get(reply, "error")) ?: "failed");
	json_decref(reply);
	return ok ? 0 : -1;
}

/* Collects a job's results into an array at their indexes; the first
 * failure (by index) is kept for the error. */
typedef struct collect {
	json_t *values;
	json_int_t failed_index;
	char failed[200];
} collect;

static int collect_one(void *ctx, json_int_t index, int ok, json_t *value)
{
	collect *k = ctx;

	if (!ok && (k->failed_index < 0 || index < k->failed_index)) {
		k->failed_index = index;
		snprintf(k->failed, sizeof(k->failed), "%s", json_string_value(value) ?: "failed");
	}
	return json_array_set(k->values, (size_t)index, ok && value ? value : json_null()) != 0;
}

int strand_job_values(strand_client *c, const char *job, json_t **values)
{
	char path[128];
	json_t *reply = NULL;
	collect k = {.failed_index = -1};
	json_int_t total;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	if (expect(c, "GET", path, NULL, 200, NULL, &reply) != 0)
		return -1;
	/* A result a task: a job whose tasks carry several inputs counts
	 * those in its total, its tasks apart. */
	json_t *tasks = json_object_get(reply, "tasks");
	total = json_integer_value(json_object_get(tasks ? tasks : reply, "total"));
	json_decref(reply);
	k.values = json_array();
	for (json_int_t i = 0; k.values && i < total; i++)
		if (json_array_append(k.values, json_null()) != 0)
			break;
	if (!k.values || (json_int_t)json_array_size(k.values) != total) {
		json_decref(k.values);
		snprintf(c->error, sizeof(c->error), "job %s: out of memory for %lld results", job, (long long)total);
		return -1;
	}
	if (strand_imap(c, job, 1, 10000, collect_one, &k) != 0) {
		json_decref(k.values);
		return -1;
	}
	if (k.failed_index >= 0) {
		snprintf(c->error, sizeof(c->error), "task %lld failed: %s", (long long)k.failed_index, k.failed);
		json_decref(k.values);
		return -1;
	}
	*values = k.values;
	return 0;
}

int strand_map_values(strand_client *c, const char *pool, const char *function, json_t *args, int chunksize,
                      json_t **values)
{
	char job[32];

	return strand_map(c, pool, function, args, chunksize, job) == 0 ? strand_job_values(c, job, values) : -1;
}

int strand_async_get(strand_client *c, const char *job, int timeout_s, json_t **result)
{
	char path[160];
	json_t *reply = NULL, *items;

	snprintf(path, sizeof(path), "/v1/jobs/%s/results?limit=1&wait=%d", job, timeout_s);
	if (expect(c, "GET", path, NULL, 200, NULL, &reply) != 0)
		return -1;
	items = json_object_get(reply, "items");
	if (json_array_size(items) == 0) {
		snprintf(c->error, sizeof(c->error), "job %s: no result within %d s", job, timeout_s);
		json_decref(reply);
		return -1;
	}
	json_t *item = json_incref(json_array_get(items, 0));
	json_decref(reply);
	return outcome(c, item, "value", result);
}

int strand_job_cancel(strand_client *c, const char *job)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	return expect(c, "DELETE", path, NULL, 200, NULL, NULL);
}

int strand_manager_create(strand_client *c, const char *type, json_t *spec, char id[32])
{
	json_t *body = spec ? json_deep_copy(spec) : json_object();
	int rc;

	json_object_set_new(body, "type", json_string(type));
	held(c, body);
	rc = expect(c, "POST", "/v1/managers", body, 201, id, NULL);
	json_decref(body);
	return rc;
}

int strand_manager_call(strand_client *c, const char *manager, const char *method, json_t *args, char call[32])
{
	char path[128];
	json_t *body = json_pack("{s:s, s:o}", "method", method, "args", args ? json_incref(args) : json_array());
	int rc;

	snprintf(path, sizeof(path), "/v1/managers/%s/calls", manager);
	rc = expect(c, "POST", path, body, 202, call, NULL);
	json_decref(body);
	return rc;
}

int strand_manager_get(strand_client *c, const char *manager, const char *call, int wait_s, json_t **result)
{
	char path[160];
	json_t *reply;

	snprintf(path, sizeof(path), "/v1/managers/%s/calls/%s?wait=%d", manager, call, wait_s);
	if (expect(c, "GET", path, NULL, 200, NULL, &reply) != 0)
		return -1;
	if (strcmp(json_string_value(json_object_get(reply, "state")) ?: "", "done") != 0) {
		snprintf(c->error, sizeof(c->error), "call %s: no result after %d s", call, wait_s);
		json_decref(reply);
		return -1;
	}
	return outcome(c, reply, "result", result);
}

int strand_manager_call_wait(strand_client *c, const char *manager, const char *method, json_t *args, int wait_s,
                             json_t **result)
{
	char path[160];
	json_t *body = json_pack("{s:s, s:o}", "method", method, "args", args ? json_incref(args) : json_array());
	json_t *reply = NULL;
	long status;

	snprintf(path, sizeof(path), "/v1/managers/%s/calls?wait=%d", manager, wait_s);
	status = strand_request(c, "POST", path, body, &reply);
	json_decref(body);
	if (status == 202)
		snprintf(c->error, sizeof(c->error), "call %s: no result after %d s (it goes on)",
		         json_string_value(json_object_get(reply, "id")) ?: "", wait_s);
	if (status != 200) {
		json_decref(reply);
		return -1;
	}
	return outcome(c, reply, "result", result);
}

int strand_manager_shutdown(strand_client *c, const char *manager)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/managers/%s", manager);
	return expect(c, "DELETE", path, NULL, 200, NULL, NULL);
}

int strand_apply_async(strand_client *c, const char *pool, const char *function, json_t *arg, char job[32])
{
	char path[128];
	json_t *body = json_pack("{s:s, s:O}", "function", function, "arg", arg);
	int rc;

	snprintf(path, sizeof(path), "/v1/pools/%s/apply", pool);
	rc = expect(c, "POST", path, body, 202, job, NULL);
	json_decref(body);
	return rc;
}

int strand_apply(strand_client *c, const char *pool, const char *function, json_t *arg, int wait_s, json_t **result)
{
	char path[128];
	json_t *body = json_pack("{s:s, s:O}", "function", function, "arg", arg);
	json_t *reply = NULL;
	int rc;

	snprintf(path, sizeof(path), "/v1/pools/%s/apply?wait=%d", pool, wait_s);
	rc = expect(c, "POST", path, body, 200, NULL, &reply);
	json_decref(body);
	if (rc != 0)
		return -1;
	return outcome(c, reply, "value", result);
}

int strand_pool_close(strand_client *c, const char *pool)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/pools/%s/close", pool);
	return expect(c, "POST", path, NULL, 200, NULL, NULL);
}

int strand_pool_join(strand_client *c, const char *pool, int timeout_s)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/pools/%s", pool);
	for (int i = 0; i < timeout_s * 20; i++) {
		json_t *p;
		if (expect(c, "GET", path, NULL, 200, NULL, &p) != 0)
			return -1;
		int open = (int)json_integer_value(json_object_get(json_object_get(p, "counters"), "jobs_open"));
		int live = (int)json_integer_value(json_object_get(p, "live_workers"));
		json_decref(p);
		if (open == 0 && live == 0)
			return 0;
		usleep(50000);
	}
	snprintf(c->error, sizeof(c->error), "pool %s: not finished after %d s", pool, timeout_s);
	return -1;
}

int strand_process_start(strand_client *c, char *const *argv, const char *function, json_t *arg, json_t *spec,
                         char id[32])
{
	json_t *body = spec ? json_deep_copy(spec) : json_object();
	int rc;

	if (argv) {
		json_t *cmd = json_array();
		for (size_t i = 0; argv[i]; i++)
			json_array_append_new(cmd, json_string(argv[i]));
		json_object_set_new(body, "command", cmd);
	} else {
		json_object_set_new(body, "function", json_string(function));
		json_object_set(body, "arg", arg ? arg : json_null());
	}
	held(c, body);
	rc = expect(c, "POST", "/v1/processes", body, 201, id, NULL);
	json_decref(body);
	return rc;
}

int strand_process_join(strand_client *c, const char *id, int timeout_s, int *exit_code)
{
	char path[128];
	json_t *p;
	int rc = -1;

	snprintf(path, sizeof(path), "/v1/processes/%s?wait=%d", id, timeout_s);
	if (expect(c, "GET", path, NULL, 200, NULL, &p) != 0)
		return -1;
	if (strcmp(json_string_value(json_object_get(p, "state")) ?: "", "running") != 0) {
		*exit_code = (int)json_integer_value(json_object_get(p, "exit_code"));
		rc = 0;
	} else {
		snprintf(c->error, sizeof(c->error), "process %s: still running after %d s", id, timeout_s);
	}
	json_decref(p);
	return rc;
}

int strand_process_terminate(strand_client *c, const char *id)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/processes/%s", id);
	return expect(c, "DELETE", path, NULL, 200, NULL, NULL);
}

int strand_queue_create(strand_client *c, char id[32])
{
	json_t *body = json_object();
	int rc;

	held(c, body);
	rc = expect(c, "POST", "/v1/queues", body, 201, id, NULL);
	json_decref(body);
	return rc;
}

/* One item (borrowed) POSTed to path: a queue's items or a pipe end's send. */
static int put_item(strand_client *c, const char *path, json_t *item)
{
	json_t *body = json_pack("{s:O}", "item", item);
	int rc = expect(c, "POST", path, body, 201, NULL, NULL);

	json_decref(body);
	return rc;
}

/* One item from path (a queue's take or a pipe end's recv), waiting up to
 * wait_s; what names the queue or pipe in the error. */
static int get_item(strand_client *c, const char *path, const char *what, int wait_s, json_t **item)
{
	json_t *reply, *items;

	if (expect(c, "POST", path, NULL, 200, NULL, &reply) != 0)
		return -1;
	items = json_object_get(reply, "items");
	if (json_array_size(items) == 0) {
		snprintf(c->error, sizeof(c->error), "%s: nothing within %d s", what, wait_s);
		json_decref(reply);
		return -1;
	}
	*item = json_incref(json_array_get(items, 0));
	json_decref(reply);
	return 0;
}

int strand_queue_put(strand_client *c, const char *queue, json_t *item)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/queues/%s/items", queue);
	return put_item(c, path, item);
}

int strand_queue_get(strand_client *c, const char *queue, int wait_s, json_t **item)
{
	char path[160], what[64];

	snprintf(path, sizeof(path), "/v1/queues/%s/take?max=1&wait=%d", queue, wait_s);
	snprintf(what, sizeof(what), "queue %s", queue);
	return get_item(c, path, what, wait_s, item);
}

int strand_pipe_create(strand_client *c, int duplex, char id[32])
{
	json_t *body = json_pack("{s:b}", "duplex", duplex);
	int rc;

	held(c, body);
	rc = expect(c, "POST", "/v1/pipes", body, 201, id, NULL);

	json_decref(body);
	return rc;
}

int strand_pipe_send(strand_client *c, const char *pipe, int end, json_t *item)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/pipes/%s/ends/%d/send", pipe, end);
	return put_item(c, path, item);
}

int strand_pipe_recv(strand_client *c, const char *pipe, int end, int wait_s, json_t **item)
{
	char path[160], what[64];

	snprintf(path, sizeof(path), "/v1/pipes/%s/ends/%d/recv?max=1&wait=%d", pipe, end, wait_s);
	snprintf(what, sizeof(what), "pipe %s end %d", pipe, end);
	return get_item(c, path, what, wait_s, item);
}

/* ---- values ------------------------------------------------------------- */

/* The lowercase hex SHA-256 of data (a value's name). 0, or -1. */
static int sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char digest[32];
	unsigned int n = 0;

	if (EVP_Digest(data, len, digest, &n, EVP_sha256(), NULL) != 1 || n != sizeof(digest))
		return -1;
	for (size_t i = 0; i < sizeof(digest); i++)
		snprintf(out + 2 * i, 3, "%02x", digest[i]);
	return 0;
}

/* Whether name is a value's name: 64 lowercase hex digits. */
static int value_name(strand_client *c, const char *name)
{
	if (name && strlen(name) == 64 && strspn(name, "0123456789abcdef") == 64)
		return 1;
	snprintf(c->error, sizeof(c->error), "'%.80s' is not a value's name (64 lowercase hex digits)",
	         name ? name : "(null)");
	return 0;
}

int strand_value_put(strand_client *c, const void *data, size_t len, char sha256[65])
{
	char path[96];
	http_body s = {0};

	if (sha256_hex(data, len, sha256) != 0) {
		snprintf(c->error, sizeof(c->error), "cannot hash the value");
		return -1;
	}
	snprintf(path, sizeof(path), "/v1/values/%s", sha256);
	/* 201 stored now, 200 stored already: either way it is there. */
	long status = perform_typed(c, "PUT", path, "application/octet-stream", len ? data : "", len, &s);
	free(s.data);
	return status == 200 || status == 201 ? 0 : -1;
}

int strand_value_get(strand_client *c, const char *sha256, char **data, size_t *len)
{
	char path[96];
	http_body s = {0};

	*data = NULL;
	*len = 0;
	if (!value_name(c, sha256))
		return -1;
	snprintf(path, sizeof(path), "/v1/values/%s", sha256);
	if (perform(c, "GET", path, NULL, 0, &s) != 200) {
		free(s.data);
		return -1;
	}
	*data = s.data ? s.data : strdup("");
	*len = s.len;
	return *data ? 0 : -1;
}

int strand_value_delete(strand_client *c, const char *sha256)
{
	char path[96];

	if (!value_name(c, sha256))
		return -1;
	snprintf(path, sizeof(path), "/v1/values/%s", sha256);
	return expect(c, "DELETE", path, NULL, 200, NULL, NULL);
}

json_t *strand_value_ref(const char *sha256)
{
	return json_pack("{s:s}", "$value", sha256);
}

/* strand-worker --join: a join token traded for a worker's identity. */
#define _GNU_SOURCE
#include "worker/join.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "worker/library.h"

#define ANSWER_MAX (1u << 20) /* an identity with a CA chain: far below */

/* libcurl, loaded by a worker that joins: the workers a backend starts (by
 * the thousand) never join, and start without it and the 26 libraries
 * only it needs (some 5 of the 8.5 ms of CPU strand-worker --help took). */
#define CURL_FUNCTIONS(X)                                                                                              \
	X(curl_, easy_init)                                                                                            \
	X(curl_, easy_setopt)                                                                                          \
	X(curl_, easy_perform)                                                                                         \
	X(curl_, easy_getinfo)                                                                                         \
	X(curl_, easy_cleanup)                                                                                         \
	X(curl_, easy_strerror)                                                                                        \
	X(curl_, slist_append)                                                                                         \
	X(curl_, slist_free_all)

static struct {
	CURL_FUNCTIONS(LIBRARY_MEMBER)
} curl;

/* Loads libcurl's functions into curl, or says why not. */
static int curl_load(char *why, size_t why_len)
{
#define SLOT(prefix, name) (void **)&curl.name,
	static const char *const names[] = {CURL_FUNCTIONS(LIBRARY_NAME)};
	void **const slots[] = {CURL_FUNCTIONS(SLOT)};
#undef SLOT
	char detail[300];

	if (library_load("libcurl.so.4", "libcurl4", names, slots, sizeof(names) / sizeof(*names), detail,
	                 sizeof(detail)) != 0) {
		snprintf(why, why_len, "--join needs libcurl: %s", detail);
		return -1;
	}
	return 0;
}

/* What the gateway answered, kept for the process's life: cfg points here. */
static struct {
	char *worker, *pool, *secret, *hub, *hub_ca_pem, *hub_server_name, *code, *runtime;
} joined;

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	cm_buf *b = ctx;

	if (b->len + size * n > ANSWER_MAX || cm_buf_append(b, p, size * n) != CM_OK)
		return 0;
	return size * n;
}

/* Whether url may carry a token: https, or http to this host. */
static int url_fit(const char *url)
{
	static const char *const local[] = {"http://127.", "http://localhost:", "http://localhost/", "http://[::1]",
	                                    NULL};

	if (strncmp(url, "https://", 8) == 0)
		return 1;
	for (size_t i = 0; local[i]; i++)
		if (strncmp(url, local[i], strlen(local[i])) == 0)
			return 1;
	return 0;
}

/* A string field of the answer, copied (NULL when absent). */
static char *field(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? strdup(v) : NULL;
}

/* Whether a failed post may be tried again: the gateway never took it (no
 * connection, one closed before an answer: a gateway starting, or at its
 * limit of connections from one address while many workers join at once)
 * or said to come back (429, 503). A refusal, a certificate that does not
 * check, or an answer that came are final. */
static int transient(CURLcode rc, long status)
{
	if (rc == CURLE_OK)
		return status == 429 || status == 503;
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR ||
	       rc == CURLE_RECV_ERROR || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_SSL_CONNECT_ERROR;
}

/* One post of text to endpoint: the curl code, the HTTP status and the
 * answer's body into reply. */
static CURLcode post_once(const char *endpoint, const char *text, const char *ca_file, cm_buf *reply, long *status,
                          char curl_error[CURL_ERROR_SIZE])
{
	struct curl_slist *headers = curl.slist_append(NULL, "Content-Type: application/json");
	CURL *c = curl.easy_init();
	CURLcode rc;

	*status = 0;
	curl_error[0] = '\0';
	if (!c || !headers) {
		curl.slist_free_all(headers);
		if (c)
			curl.easy_cleanup(c);
		return CURLE_OUT_OF_MEMORY;
	}
	curl.easy_setopt(c, CURLOPT_URL, endpoint);
	curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
	curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl.easy_setopt(c, CURLOPT_POSTFIELDS, text);
	curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl.easy_setopt(c, CURLOPT_WRITEDATA, reply);
	curl.easy_setopt(c, CURLOPT_ERRORBUFFER, curl_error);
	curl.easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (ca_file)
		curl.easy_setopt(c, CURLOPT_CAINFO, ca_file);
	rc = curl.easy_perform(c);
	curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl.slist_free_all(headers);
	curl.easy_cleanup(c);
	return rc;
}

int worker_join(const char *url, const char *token, const char *ca_file, worker_config *cfg, char *why, size_t why_len)
{
	char endpoint[1100], curl_error[CURL_ERROR_SIZE] = "";
	json_t *body, *answer = NULL;
	char *text;
	cm_buf reply;
	long status = 0;
	CURLcode rc;

	if (!url_fit(url)) {
		snprintf(why, why_len,
		         "--join takes https://HOST:PORT (http:// only to this host: the token must not "
		         "cross a network in clear)");
		return -1;
	}
	if (curl_load(why, why_len) != 0)
		return -1;
	size_t len = strnlen(url, 1000);
	while (len && url[len - 1] == '/')
		len--;
	snprintf(endpoint, sizeof(endpoint), "%.*s/v1/join", (int)len, url);
	body = json_pack("{s:s}", "token", token);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!text) {
		snprintf(why, why_len, "out of memory");
		return -1;
	}
	cm_buf_init(&reply);
	/* Tried again while the failure is transient, for as long as the
	 * worker waits for an absent gateway (--gateway-timeout), 0.1 s apart
	 * at first, then up to 2 s, each wait a random half to one and a half
	 * of that: a thousand workers started together do not come back
	 * together. */
	int64_t give_up = cm_now_ms() + (int64_t)cfg->gateway_timeout_s * 1000;
	unsigned seed = (unsigned)getpid() ^ (unsigned)cm_now_ms();
	double pause_s = 0.1;
	for (int tries = 1;; tries++) {
		reply.len = 0;
		rc = post_once(endpoint, text, ca_file, &reply, &status, curl_error);
		if (!transient(rc, status) || cm_now_ms() >= give_up)
			break;
		if (tries == 1)
			cm_warn("joining at %s: %s; trying again for up to %d s", endpoint,
			        rc != CURLE_OK ? (curl_error[0] ? curl_error : curl.easy_strerror(rc)) : "busy",
			        cfg->gateway_timeout_s);
		usleep((useconds_t)(pause_s * (0.5 + (double)rand_r(&seed) / RAND_MAX) * 1e6));
		pause_s = pause_s * 2 > 2.0 ? 2.0 : pause_s * 2;
	}
	explicit_bzero(text, strlen(text));
	free(text);
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "cannot reach %s: %s", endpoint,
		         curl_error[0] ? curl_error : curl.easy_strerror(rc));
		cm_buf_fini(&reply);
		return -1;
	}
	answer = json_loadb(reply.data ? reply.data : "", reply.len, 0, NULL);
	if (status != 200) {
		const char *detail = json_string_value(json_object_get(answer, "detail"));
		snprintf(why, why_len, "the gateway refused the join (%ld): %s", status,
		         detail ? detail : "no reason given");
		json_decref(answer);
		cm_buf_fini(&reply);
		return -1;
	}
	joined.worker = field(answer, "worker");
	joined.pool = field(answer, "pool");
	joined.secret = field(answer, "secret");
	joined.hub = field(answer, "hub");
	joined.hub_ca_pem = field(answer, "hub_ca_pem");
	joined.hub_server_name = field(answer, "hub_server_name");
	joined.code = field(answer, "code");
	joined.runtime = field(answer, "runtime");
	if (reply.data)
		explicit_bzero(reply.data, reply.len);
	cm_buf_fini(&reply);
	json_decref(answer);
	if (!joined.worker || !joined.pool || !joined.secret || !joined.hub) {
		snprintf(why, why_len, "the gateway's answer lacks the worker's identity");
		return -1;
	}
	cfg->worker_id = joined.worker;
	cfg->pool_id = joined.pool;
	cfg->secret = joined.secret;
	cfg->hub = joined.hub;
	cfg->hub_ca_pem = joined.hub_ca_pem;
	cfg->hub_server_name = joined.hub_server_name;
	cfg->code = joined.code;
	cfg->runtime = joined.runtime;
	return 0;
}

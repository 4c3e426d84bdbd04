/*
 * Who may ask: what can be checked from the request line and headers alone,
 * before any of the body is read, so that an unauthenticated client cannot
 * make the gateway buffer anything (URL length and encoding, conflicting
 * lengths, DNS rebinding, cross-origin requests, the content type, the
 * token or the dashboard's session).
 */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>

#include "gateway/http/http_int.h"

typedef struct header_count {
	int content_length; /* how many Content-Length headers */
	int differ; /* two of them disagree */
	int transfer_encoding;
	const char *encoding; /* the last Transfer-Encoding's value */
	const char *first;
} header_count;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	header_count *h = cls;

	(void)kind;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
		if (h->content_length++ && value && h->first && strcmp(value, h->first) != 0)
			h->differ = 1;
		if (!h->first)
			h->first = value;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
		h->transfer_encoding++;
		h->encoding = value;
	}
	return MHD_YES;
}

static int is_safe_method(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

/* Checks what can be checked from the request line and headers alone, before
 * any of the body is read: returns 0 to go on, or an HTTP status with the
 * reason in detail. */
int http_screen(api *a, struct MHD_Connection *c, const char *url, const char *method, char *detail, size_t detail_len)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
	const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *cookie = http_session_cookie(a, c);
	header_count h = {0};

	if (strlen(url) > API_URL_MAX) {
		snprintf(detail, detail_len, "the URL is over %d bytes", API_URL_MAX);
		return 414;
	}
	if (!cm_utf8_valid(url, strlen(url))) {
		snprintf(detail, detail_len, "the URL is not valid UTF-8 once percent-decoded");
		return 400;
	}
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &h);
	if (h.differ || (h.content_length && h.transfer_encoding)) {
		snprintf(detail, detail_len, "conflicting Content-Length or Transfer-Encoding headers");
		return 400;
	}
	/* libmicrohttpd decodes chunked alone; anything else it would read
	 * to the connection's end as the body. */
	if (h.transfer_encoding > 1 ||
	    (h.transfer_encoding && (!h.encoding || strcasecmp(h.encoding, "chunked") != 0))) {
		snprintf(detail, detail_len,
		         "Transfer-Encoding '%.60s' is not supported: send the body with Content-Length, or chunked "
		         "alone",
		         h.encoding ? h.encoding : "");
		cm_utf8_sanitize(detail);
		return 501;
	}
	/* DNS rebinding: a page on a name that resolves here carries that name. */
	if (!auth_host_allowed(host, a->cfg->public_hosts)) {
		snprintf(detail, detail_len,
		         "Host '%.100s' is not a name of this gateway: use its IP address, localhost or a "
		         "--public-host name",
		         host ? host : "");
		return 421;
	}
	if (strcmp(url, "/healthz") == 0) {
		if (!is_safe_method(method)) {
			snprintf(detail, detail_len, "use GET on /healthz");
			return 405;
		}
		return 0;
	}
	if (strncmp(url, "/v1/", 4) != 0 && strcmp(url, "/v1") != 0 && strcmp(url, "/metrics") != 0)
		return 0; /* the dashboard's files: public; they hold no data */
	if (origin && !auth_origin_same(origin, host)) {
		snprintf(detail, detail_len, "cross-origin request refused (Origin '%.100s')", origin);
		return 403;
	}
	/* A code package is a zip, a value its bytes; every other body is JSON. */
	int put = strcmp(method, "PUT") == 0;
	const char *want = put && strncmp(url, "/v1/code/", 9) == 0      ? "application/zip"
	                   : put && strncmp(url, "/v1/values/", 11) == 0 ? "application/octet-stream"
	                                                                 : "application/json";
	if (!is_safe_method(method) && (h.content_length || h.transfer_encoding) &&
	    !(h.first && strcmp(h.first, "0") == 0) && !auth_content_type_is(type, want)) {
		snprintf(detail, detail_len, "request bodies must be 'Content-Type: %s'", want);
		return 415;
	}
	if (!a->token[0] || strcmp(url, "/v1/session") == 0 || strcmp(url, "/v1/join") == 0)
		return 0; /* --no-auth; or the dashboard's sign-in or a worker's join, which check their token */
	if (auth_token_equal(a->token, auth_bearer(auth)))
		return 0;
	if (!auth && sessions_check(a->sessions, cookie, cm_now_ms())) {
		/* A browser sends the cookie on its own: a change must also come
		 * with this gateway's own Origin (checked above). */
		if (is_safe_method(method) || origin)
			return 0;
		snprintf(detail, detail_len, "a request authenticated by cookie must carry this gateway's Origin");
		return 403;
	}
	snprintf(detail, detail_len,
	         auth ? "the bearer token is not this gateway's"
	              : "authentication required: 'Authorization: Bearer TOKEN' (the token is in the gateway's token "
	                "file, see strand-gateway --help)");
	return 401;
}

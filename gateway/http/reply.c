/*
 * Answers: JSON and text with the headers every answer carries, RFC 9457
 * problem+json for errors, and the query parameters handlers read.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/http/http_int.h"

static int status_of(int err)
{
	switch (err) {
	case CM_EINVAL: return MHD_HTTP_BAD_REQUEST;
	case CM_ENOENT: return MHD_HTTP_NOT_FOUND;
	case CM_ECLOSED: return MHD_HTTP_CONFLICT;
	case CM_ETOOBIG: return MHD_HTTP_CONTENT_TOO_LARGE;
	case CM_EUNSUPPORTED: return MHD_HTTP_UNPROCESSABLE_CONTENT;
	case CM_EUNAVAIL:
	case CM_ESHUTDOWN: return MHD_HTTP_SERVICE_UNAVAILABLE;
	case CM_ETIMEDOUT: return MHD_HTTP_GATEWAY_TIMEOUT;
	case CM_EPERM: return MHD_HTTP_FORBIDDEN;
	case CM_EQUOTA: return MHD_HTTP_TOO_MANY_REQUESTS;
	default: return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

static const char *slug_of(int status)
{
	switch (status) {
	case 400: return "bad-request";
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not-found";
	case 405: return "method-not-allowed";
	case 409: return "conflict";
	case 413: return "content-too-large";
	case 414: return "uri-too-long";
	case 415: return "unsupported-media-type";
	case 421: return "misdirected-request";
	case 422: return "unprocessable";
	case 429: return "too-many";
	case 501: return "not-implemented";
	case 503: return "unavailable";
	default: return "internal";
	}
}

/* Queues text (stolen) as the answer; header_name/value: one extra header
 * (Location, WWW-Authenticate, Set-Cookie), or NULL. */
enum MHD_Result http_send_text_with(struct MHD_Connection *c, int status, char *text, size_t len, const char *type,
                                    const char *header_name, const char *header_value)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (header_name && header_value)
		MHD_add_response_header(r, header_name, header_value);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result http_send_text(struct MHD_Connection *c, int status, char *text, size_t len, const char *type,
                               const char *location)
{
	return http_send_text_with(c, status, text, len, type, MHD_HTTP_HEADER_LOCATION, location);
}

/* Sends and releases j (stolen) as the given content type. */
static enum MHD_Result send_json_as(struct MHD_Connection *c, int status, json_t *j, const char *type,
                                    const char *location)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s)
		return MHD_NO;
	return http_send_text(c, status, s, strlen(s), type, location);
}

enum MHD_Result http_send_json(struct MHD_Connection *c, int status, json_t *j, const char *location)
{
	return send_json_as(c, status, j, "application/json", location);
}

/* A problem+json answer. The URL and the detail may hold bytes a client sent
 * (a field name, an id): they are made valid UTF-8 first, or jansson would
 * refuse them and the client would get no answer at all. */
enum MHD_Result http_problem_with(struct MHD_Connection *c, int status, const char *url, const char *detail,
                                  const char *header_name, const char *header_value)
{
	const char *reason = MHD_get_reason_phrase_for((unsigned)status);
	char type[64], instance[API_URL_MAX + 1], text[512];
	json_t *j;
	char *body;

	snprintf(type, sizeof(type), "urn:strand:problem:%s", slug_of(status));
	snprintf(instance, sizeof(instance), "%s", url ? url : "");
	snprintf(text, sizeof(text), "%s", detail && detail[0] ? detail : reason);
	cm_utf8_sanitize(instance);
	cm_utf8_sanitize(text);
	j = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title", reason, "status", status, "detail", text,
	              "instance", instance);
	body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!body)
		return MHD_NO;
	return http_send_text_with(c, status, body, strlen(body), "application/problem+json", header_name,
	                           header_value);
}

enum MHD_Result http_problem(struct MHD_Connection *c, int status, const char *url, const char *detail)
{
	return http_problem_with(c, status, url, detail, NULL, NULL);
}

enum MHD_Result http_fail(struct MHD_Connection *c, int err, const char *url, const char *detail)
{
	return http_problem(c, status_of(err), url, detail && detail[0] ? detail : cm_strerror(err));
}

int http_query_int(struct MHD_Connection *c, const char *name, int64_t lo, int64_t hi, int64_t *out, char *detail,
                   size_t detail_len)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	if (!v || !v[0])
		return CM_OK;
	if (cm_whole(v, lo, hi, out) != CM_OK) {
		snprintf(detail, detail_len, "query parameter '%s' must be an integer from %lld to %lld", name,
		         (long long)lo, (long long)hi);
		return CM_EINVAL;
	}
	return CM_OK;
}

int http_query_id(struct MHD_Connection *c, const char *name, char *out, size_t len, char *detail, size_t detail_len)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	out[0] = '\0';
	if (!v)
		return CM_OK;
	if (!v[0] || strlen(v) >= len || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(v)) {
		snprintf(detail, detail_len,
		         "query parameter '%s' must be an id (lower-case letters, digits, dots, dashes)", name);
		return CM_EINVAL;
	}
	snprintf(out, len, "%s", v);
	return CM_OK;
}

/* The first path segment of rest (sub: where it ends, or NULL) into id. */
void http_first_segment(const char *rest, const char *sub, char *id, size_t id_len)
{
	snprintf(id, id_len, "%.*s", (int)(sub ? (size_t)(sub - rest) : strlen(rest)), rest);
}

/* GET of a collection the engine lists (queues, pipes). */
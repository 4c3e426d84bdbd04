/*
 * /v1/code: code packages (code_store.h), uploaded once and named by the
 * SHA-256 of their bytes; pools, managers and processes name one in their
 * "code" field and their workers fetch it from the hub.
 *
 *   GET /v1/code              {"max_bytes": N}: the cap on one package
 *   GET /v1/code/{sha256}     {"sha256", "size"}, or 404
 *   PUT /v1/code/{sha256}     the zip itself (Content-Type: application/zip):
 *                             201 once stored, 200 when it already was
 *
 * An upload is not held in memory: its body streams into the store as it
 * comes (code_upload_write), a Content-Length over the cap is refused
 * before any of it is read, and a body that passes the cap, hashes to
 * another name or stops midway leaves nothing stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "gateway/http/http_int.h"

#define PREFIX "/v1/code/"

int http_code_upload_route(const char *url, const char *method)
{
	return strcmp(method, "PUT") == 0 && strncmp(url, PREFIX, strlen(PREFIX)) == 0 &&
	       !strchr(url + strlen(PREFIX), '/');
}

static json_t *package_json(const char *sha256, int64_t size)
{
	return json_pack("{s:s, s:I}", "sha256", sha256, "size", (json_int_t)size);
}

enum MHD_Result http_code_upload_begin(api *a, struct MHD_Connection *c, const char *url, request *rq)
{
	const char *name = url + strlen(PREFIX);
	const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	char detail[256];
	int64_t size;

	rq->code_upload = 1;
	if (length && strtoll(length, NULL, 10) > code_store_max_bytes(a->code)) {
		snprintf(detail, sizeof(detail),
		         "the code package's %s bytes are over the gateway's %lld byte cap (--max-code-bytes)", length,
		         (long long)code_store_max_bytes(a->code));
		rq->refused = 1;
		return http_problem(c, 413, url, detail);
	}
	/* Stored already: its name is its content, so the body is not read. */
	if (code_store_stat(a->code, name, &size) == CM_OK) {
		rq->refused = 1;
		return http_send_json(c, 200, package_json(name, size), NULL);
	}
	if (code_upload_begin(a->code, name, &rq->upload, detail, sizeof(detail)) != CM_OK) {
		rq->refused = 1;
		return http_problem(c, cm_sha256_name_valid(name) ? 500 : 400, url, detail);
	}
	return MHD_YES;
}

void http_code_upload_bytes(request *rq, const char *data, size_t len)
{
	if (rq->upload_err)
		return;
	rq->upload_err = code_upload_write(rq->upload, data, len, rq->upload_detail, sizeof(rq->upload_detail));
	if (rq->upload_err != CM_OK) {
		code_upload_abort(rq->upload);
		rq->upload = NULL;
	}
}

void http_code_upload_forget(request *rq)
{
	code_upload_abort(rq->upload);
	rq->upload = NULL;
}

/* The whole body came: stored under its name, or refused. */
static enum MHD_Result upload_end(struct MHD_Connection *c, const char *url, const char *name, request *rq)
{
	char detail[256];
	int64_t size = 0;
	int err;

	if (rq->upload_err)
		return http_fail(c, rq->upload_err, url, rq->upload_detail);
	err = code_upload_finish(rq->upload, &size, detail, sizeof(detail));
	rq->upload = NULL;
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	cm_info("code package %s stored (%lld bytes)", name, (long long)size);
	return http_send_json(c, 201, package_json(name, size), NULL);
}

enum MHD_Result http_route_code(api *a, struct MHD_Connection *c, const char *url, const char *method, const char *rest,
                                request *rq)
{
	int64_t size;

	if (!rest[0]) {
		if (strcmp(method, "GET") != 0)
			return http_problem(c, 405, url, "use GET on /v1/code");
		return http_send_json(c, 200,
		                      json_pack("{s:I}", "max_bytes", (json_int_t)code_store_max_bytes(a->code)), NULL);
	}
	if (strchr(rest, '/'))
		return http_problem(c, 404, url, "no such resource");
	if (strcmp(method, "PUT") == 0)
		return upload_end(c, url, rest, rq);
	/* A name that is no SHA-256 names nothing stored. */
	if (code_store_stat(a->code, rest, &size) != CM_OK)
		return http_problem(c, 404, url, "no such code package");
	return http_send_json(c, 200, package_json(rest, size), NULL);
}

int http_code_check(api *a, const pool_spec *spec, char *detail, size_t detail_len)
{
	int64_t size;

	if (!spec->code[0] || code_store_stat(a->code, spec->code, &size) == CM_OK)
		return CM_OK;
	snprintf(detail, detail_len, "code package %s was never uploaded (PUT /v1/code/%s first)", spec->code,
	         spec->code);
	return CM_EUNSUPPORTED;
}

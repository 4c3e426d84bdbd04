/*
 * /v1/code: code packages (blob_store.h), uploaded once and named by the
 * SHA-256 of their bytes; pools, managers and processes name one in their
 * "code" field and their workers fetch it from the hub.
 *
 *   GET /v1/code              {"max_bytes": N}: the cap on one package
 *   GET /v1/code/{sha256}     {"sha256", "size"}, or 404
 *   PUT /v1/code/{sha256}     the zip itself (Content-Type: application/zip):
 *                             201 once stored, 200 when it already was;
 *                             streamed into the store (uploads.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "gateway/http/http_int.h"

enum MHD_Result http_route_code(api *a, struct MHD_Connection *c, const char *url, const char *method, const char *rest,
                                request *rq)
{
	int64_t size;

	if (!rest[0]) {
		if (strcmp(method, "GET") != 0)
			return http_problem(c, 405, url, "use GET on /v1/code");
		return http_send_json(c, 200,
		                      json_pack("{s:I}", "max_bytes", (json_int_t)blob_store_max_bytes(a->code)), NULL);
	}
	if (strchr(rest, '/'))
		return http_problem(c, 404, url, "no such resource");
	if (strcmp(method, "PUT") == 0)
		return http_upload_end(c, url, rest, rq);
	/* A name that is no SHA-256 names nothing stored. */
	if (blob_store_stat(a->code, rest, &size) != CM_OK)
		return http_problem(c, 404, url, "no such code package");
	return http_send_json(c, 200, http_blob_json(rest, size), NULL);
}

int http_code_check(api *a, const pool_spec *spec, char *detail, size_t detail_len)
{
	int64_t size;

	if (!spec->code[0] || blob_store_stat(a->code, spec->code, &size) == CM_OK)
		return CM_OK;
	snprintf(detail, detail_len, "code package %s was never uploaded (PUT /v1/code/%s first)", spec->code,
	         spec->code);
	return CM_EUNSUPPORTED;
}

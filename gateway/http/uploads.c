/*
 * PUT /v1/code/{sha256} and PUT /v1/values/{sha256}: a blob's body streams
 * into its store (blob_store.h) as it comes, never held in memory. A
 * Content-Length over a cap is refused before any of it is read, a blob
 * stored already is answered without reading it (its name is its content),
 * and a body that passes a cap, hashes to another name or stops midway
 * leaves nothing stored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/http/http_int.h"

#define CODE_PREFIX "/v1/code/"
#define VALUES_PREFIX "/v1/values/"

blob_store *http_upload_store(api *a, const char *url, const char *method)
{
	const char *name = NULL;
	blob_store *into = NULL;

	if (strcmp(method, "PUT") != 0)
		return NULL;
	if (strncmp(url, CODE_PREFIX, strlen(CODE_PREFIX)) == 0) {
		name = url + strlen(CODE_PREFIX);
		into = a->code;
	} else if (strncmp(url, VALUES_PREFIX, strlen(VALUES_PREFIX)) == 0) {
		name = url + strlen(VALUES_PREFIX);
		into = a->values;
	}
	return name && !strchr(name, '/') ? into : NULL;
}

json_t *http_blob_json(const char *sha256, int64_t size)
{
	return json_pack("{s:s, s:I}", "sha256", sha256, "size", (json_int_t)size);
}

enum MHD_Result http_upload_begin(struct MHD_Connection *c, const char *url, blob_store *into, request *rq)
{
	const char *name = strrchr(url, '/') + 1;
	const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	char detail[256];
	int64_t size;
	int err;

	rq->uploading = 1;
	/* Stored already: its name is its content, so the body is dropped as it
	 * comes (answered before, a client still sending would be reset and
	 * lose the answer). HEAD tells a client so before it sends. */
	if (blob_store_stat(into, name, &size) == CM_OK) {
		rq->stored_already = 1;
		rq->stored_size = size;
		return MHD_YES;
	}
	err = blob_upload_begin(into, name, length ? strtoll(length, NULL, 10) : -1, &rq->upload, detail,
	                        sizeof(detail));
	if (err != CM_OK) {
		rq->refused = 1;
		return http_fail(c, err, url, detail); /* 400, 413, 429 or 500 */
	}
	return MHD_YES;
}

void http_upload_bytes(request *rq, const char *data, size_t len)
{
	if (rq->upload_err || rq->stored_already)
		return;
	rq->upload_err = blob_upload_write(rq->upload, data, len, rq->upload_detail, sizeof(rq->upload_detail));
	if (rq->upload_err != CM_OK) {
		blob_upload_abort(rq->upload);
		rq->upload = NULL;
	}
}

void http_upload_forget(request *rq)
{
	blob_upload_abort(rq->upload);
	rq->upload = NULL;
}

enum MHD_Result http_upload_end(struct MHD_Connection *c, const char *url, const char *name, request *rq)
{
	char detail[256];
	int64_t size = 0;
	int err;

	if (rq->upload_err)
		return http_fail(c, rq->upload_err, url, rq->upload_detail);
	if (rq->stored_already)
		return http_send_json(c, 200, http_blob_json(name, rq->stored_size), NULL);
	err = blob_upload_finish(rq->upload, &size, detail, sizeof(detail));
	rq->upload = NULL;
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	cm_info("%s stored (%lld bytes)", url, (long long)size);
	return http_send_json(c, 201, http_blob_json(name, size), NULL);
}

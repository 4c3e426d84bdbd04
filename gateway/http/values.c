/*
 * /v1/values: values too large to travel inline in JSON (over 8 MiB, or
 * used by many tasks), uploaded once as their bytes and named by their
 * SHA-256 (blob_store.h). A task's argument {"$value": "SHA256"} names one.
 *
 *   GET    /v1/values           {"max_bytes", "inline_max", "total", "max_total"}
 *   PUT    /v1/values/{sha256}  the bytes (application/octet-stream): 201
 *                               once stored, 200 when it already was;
 *                               streamed into the store (uploads.c)
 *   GET    /v1/values/{sha256}  the bytes, streamed from the file (HEAD: whether
 *                               it is stored, and its size)
 *   DELETE /v1/values/{sha256}  {"sha256", "deleted": true}; a task naming
 *                               it later fails, saying so
 *
 * The gateway's memory does not grow with a value: it goes to disk as it
 * comes and back from disk as it is sent.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gateway/http/http_int.h"
#include "gateway/spec.h"

static enum MHD_Result send_value(struct MHD_Connection *c, const char *url, const char *name, api *a)
{
	int fd = -1;
	int64_t size = 0;
	int err = blob_store_open_blob(a->values, name, &fd, &size);

	if (err == CM_ENOENT || err == CM_EINVAL)
		return http_problem(c, 404, url, "no such value");
	if (err != CM_OK)
		return http_problem(c, 500, url, "the value cannot be read");
	struct MHD_Response *r = MHD_create_response_from_fd64((uint64_t)size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	/* Named by its content: the same name is always the same bytes. */
	MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, name);
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result http_route_values(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *rest, request *rq)
{
	if (!rest[0])
		return http_send_json(c, 200,
		                      json_pack("{s:I, s:I, s:I, s:I}", "max_bytes",
		                                (json_int_t)blob_store_max_bytes(a->values), "inline_max",
		                                (json_int_t)spec_value_max(), "total",
		                                (json_int_t)blob_store_total(a->values), "max_total",
		                                (json_int_t)a->cfg->max_values_total),
		                      NULL);
	if (strchr(rest, '/'))
		return http_problem(c, 404, url, "no such resource");
	if (strcmp(method, "PUT") == 0)
		return http_upload_end(c, url, rest, rq);
	if (strcmp(method, "DELETE") == 0) {
		int err = blob_store_remove(a->values, rest);
		if (err == CM_ENOENT || err == CM_EINVAL)
			return http_problem(c, 404, url, "no such value");
		if (err != CM_OK)
			return http_problem(c, 500, url, "the value cannot be removed");
		return http_send_json(c, 200, json_pack("{s:s, s:b}", "sha256", rest, "deleted", 1), NULL);
	}
	return send_value(c, url, rest, a);
}

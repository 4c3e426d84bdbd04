/*
 * /v1/leases: a client's lease on the pools, managers and processes it
 * makes with {"lease": ID}; they are terminated when it is deleted or not
 * renewed in time (client_leases.c in the engine).
 *
 *   POST   /v1/leases {lease_s}            201: a lease (default 10 s)
 *   GET    /v1/leases                      every lease, with what it holds
 *   GET    /v1/leases/{id}                 one
 *   POST   /v1/leases/{id}/renew {lease_s} 200; 404 once it ended
 *   DELETE /v1/leases/{id}                 ends it: 200, what it held terminating
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"

#define NO_LEASE "no such lease: it ended (deleted, or not renewed in time)"

enum MHD_Result http_route_leases(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *rest, const request *rq)
{
	const char *sub = strchr(rest, '/');
	const char *body = rq->body.data ? rq->body.data : "";
	char id[64], location[96], detail[256] = "";
	int64_t lease_ms = 0;
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		if (strcmp(method, "GET") == 0)
			return http_listing(a, c, url, LIST_LEASES);
		if (strcmp(method, "POST") != 0)
			return http_problem(c, 405, url, "use GET or POST on /v1/leases");
		if ((err = spec_lease_parse(body, rq->body.len, &lease_ms, detail, sizeof(detail))) != CM_OK)
			return http_fail(c, err, url, detail);
		if ((err = engine_lease_create(a->engine, lease_ms, &out, detail, sizeof(detail))) != CM_OK)
			return http_fail(c, err, url, detail[0] ? detail : NULL);
		snprintf(location, sizeof(location), "/v1/leases/%s", json_string_value(json_object_get(out, "id")));
		return http_send_json(c, 201, out, location);
	}
	http_first_segment(rest, sub, id, sizeof(id));
	if (!sub || !sub[1]) {
		if (strcmp(method, "GET") == 0)
			err = engine_lease_get(a->engine, id, &out);
		else if (strcmp(method, "DELETE") == 0)
			err = engine_lease_delete(a->engine, id, &out);
		else
			return http_problem(c, 405, url, "use GET or DELETE on a lease");
		if (err != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? NO_LEASE : NULL);
		return http_send_json(c, 200, out, NULL);
	}
	if (strcmp(sub, "/renew") != 0)
		return http_problem(c, 404, url, "no such lease resource (renew)");
	if (strcmp(method, "POST") != 0)
		return http_problem(c, 405, url, "POST to renew a lease");
	/* Without a body the lease keeps its own time. */
	if (rq->body.len && (err = spec_lease_parse(body, rq->body.len, &lease_ms, detail, sizeof(detail))) != CM_OK)
		return http_fail(c, err, url, detail);
	if ((err = engine_lease_renew(a->engine, id, lease_ms, &out, detail, sizeof(detail))) != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? NO_LEASE : NULL);
	return http_send_json(c, 200, out, NULL);
}

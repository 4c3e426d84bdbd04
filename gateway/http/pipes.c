/*
 * /v1/pipes: a pipe is one queue per direction, "<pipe>.0" and (duplex)
 * "<pipe>.1"; which one an end sends to or receives from, the engine
 * decides.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "gateway/http/http_int.h"

/* A pipe is one queue per direction, "<pipe>.0" and (duplex) "<pipe>.1";
 * which one an end sends to or receives from, the engine decides. */
enum MHD_Result http_route_pipes(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], qid[80], detail[256] = "", lease[SPEC_LEASE_ID_MAX];
	json_t *out = NULL, *other = NULL;
	int duplex, end, err;

	if (!rest[0]) {
		char location[96];
		if (strcmp(method, "GET") == 0)
			return http_listing(a, c, url, LIST_PIPES);
		if (strcmp(method, "POST") != 0)
			return http_problem(c, 405, url, "use GET or POST on /v1/pipes");
		err = spec_pipe_parse(rq->body.data ? rq->body.data : "", rq->body.len, &duplex, lease, detail,
		                      sizeof(detail));
		if (err == CM_OK)
			err = engine_queue_create(a->engine, duplex ? "duplex" : "simplex", lease, &out, detail,
			                          sizeof(detail));
		if (err != CM_OK)
			return http_fail(c, err, url, detail);
		const char *pid = json_string_value(json_object_get(out, "id"));
		json_t *ends = json_array();
		for (int i = 0; i < 2; i++) {
			snprintf(location, sizeof(location), "/v1/pipes/%s/ends/%d", pid, i);
			json_array_append_new(ends, json_string(location));
		}
		json_object_set_new(out, "ends", ends);
		snprintf(location, sizeof(location), "/v1/pipes/%s", pid);
		return http_send_json(c, 201, out, location);
	}
	http_first_segment(rest, sub, id, sizeof(id));
	if (sub && strncmp(sub, "/ends/", 6) == 0) {
		/* send and recv: the engine picks the direction's queue */
		if (sscanf(sub, "/ends/%d", &end) != 1 || end < 0 || end > 1)
			return http_problem(c, 404, url, "no such pipe end (ends/0 or ends/1, then send or recv)");
		sub = strchr(sub + 6, '/');
		if (sub && strcmp(sub, "/send") == 0 && strcmp(method, "POST") == 0)
			return http_queue_put(a, c, url, id, end, rq);
		if (sub && strcmp(sub, "/recv") == 0 && strcmp(method, "POST") == 0)
			return http_queue_take(a, c, url, id, end, rq);
		if (sub && strncmp(sub, "/holds/", 7) == 0 && strcmp(method, "DELETE") == 0)
			return http_queue_release(a, c, url, id, end, sub + 7);
		return http_problem(
		        c, 404, url,
		        "use POST .../send or POST .../recv on a pipe end, DELETE .../holds/{hold} to release");
	}
	if (sub && sub[1])
		return http_problem(c, 404, url, "no such pipe resource (ends)");
	if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
		return http_problem(c, 405, url, "use GET or DELETE on a pipe");
	snprintf(qid, sizeof(qid), "%s.0", id);
	if (id[0] != 'x' || engine_queue_info(a->engine, qid, &out) != CM_OK)
		return http_problem(c, 404, url, "no such pipe");
	snprintf(qid, sizeof(qid), "%s.1", id);
	duplex = engine_queue_info(a->engine, qid, &other) == CM_OK;
	if (strcmp(method, "DELETE") == 0) {
		for (int i = 0; i < 1 + duplex; i++) {
			json_t *gone = NULL;
			snprintf(qid, sizeof(qid), "%s.%d", id, i);
			engine_queue_delete(a->engine, qid, &gone);
			json_decref(gone);
		}
	}
	json_t *p = json_pack("{s:s, s:b, s:[o]}", "id", id, "duplex", duplex, "directions", out);
	if (other)
		json_array_append_new(json_object_get(p, "directions"), other);
	if (strcmp(method, "DELETE") == 0)
		json_object_set_new(p, "deleted", json_true());
	return http_send_json(c, 200, p, NULL);
}

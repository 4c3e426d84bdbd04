/*
 * /v1/queues: SimpleQueues. Items are put and taken as JSON texts; a take
 * waits in line in the engine (engine_queue_get_start). Pipes (pipes.c)
 * put and get through the same two handlers.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"

/* POST items to queue qid. */
enum MHD_Result http_queue_put(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                               const request *rq)
{
	char detail[256] = "";
	items_spec items;
	json_t *out = NULL;
	int err;

	err = spec_items_parse(rq->body.data ? rq->body.data : "", rq->body.len, &items, detail, sizeof(detail));
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	err = engine_queue_put(a->engine, qid, end, items.items, items.lens, items.n, &out, detail, sizeof(detail));
	spec_items_fini(&items);
	if (err != CM_OK)
		return http_fail(c, err, url, detail[0] ? detail : err == CM_ENOENT ? "no such queue" : NULL);
	return http_send_json(c, 201, out, NULL);
}

/* Take (pop) items from queue qid: ?max=N (1) and ?wait=S (0). The engine
 * keeps the reader in line and answers when items come or the wait ends.
 * ?lease=L takes them under a hold of that client lease (the answer's
 * "hold"), ?used=H first releases the lease's hold H, all of it used.
 * A POST: taking changes the queue, so a browser's cookie alone, or a
 * link followed, cannot take. */
enum MHD_Result http_queue_take(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                                request *rq)
{
	char detail[256] = "", lease[20], used[48];
	int64_t max = 1, wait_s = 0;

	if (http_query_int(c, "max", 1, 10000, &max, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK ||
	    http_query_id(c, "lease", lease, sizeof(lease), detail, sizeof(detail)) != CM_OK ||
	    http_query_id(c, "used", used, sizeof(used), detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	if (used[0] && !lease[0])
		return http_problem(c, 400, url, "query parameter 'used' names a hold: it needs the hold's 'lease'");
	http_call_hold(a, c, rq, "no such queue");
	return http_call_started(
	        a, c, rq,
	        engine_queue_get_start(a->engine, qid, end, max, wait_s * 1000, lease, used, http_call_done, rq));
}

/* DELETE .../holds/{hold}?used=N: the hold's first N items were used (they
 * go), the others are at the queue's head again. */
enum MHD_Result http_queue_release(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                                   const char *hold)
{
	char detail[256] = "";
	int64_t used = -1;
	json_t *out = NULL;
	int err;

	if (http_query_int(c, "used", 0, INT32_MAX, &used, detail, sizeof(detail)) != CM_OK || used < 0)
		return http_problem(c, 400, url,
		                    detail[0] ? detail
		                              : "query parameter 'used' (how many of the hold's items) is required");
	if (!hold[0] || strlen(hold) >= 48)
		return http_problem(c, 404, url, "no such hold");
	err = engine_queue_release(a->engine, qid, end, hold, used, &out, detail, sizeof(detail));
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	return http_send_json(c, 200, out, NULL);
}

enum MHD_Result http_route_queues(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], location[96];
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		if (strcmp(method, "GET") == 0)
			return http_listing(a, c, url, LIST_QUEUES);
		if (strcmp(method, "POST") != 0)
			return http_problem(c, 405, url, "use GET or POST on /v1/queues");
		char detail[256] = "", lease[SPEC_LEASE_ID_MAX];
		const char *kind;
		if ((err = spec_queue_parse(rq->body.data ? rq->body.data : "", rq->body.len, &kind, lease, detail,
		                            sizeof(detail))) != CM_OK ||
		    (err = engine_queue_create(a->engine, kind, lease, &out, detail, sizeof(detail))) != CM_OK)
			return http_fail(c, err, url, detail[0] ? detail : NULL);
		snprintf(location, sizeof(location), "/v1/queues/%s", json_string_value(json_object_get(out, "id")));
		return http_send_json(c, 201, out, location);
	}
	http_first_segment(rest, sub, id, sizeof(id));
	if (id[0] != 'q')
		return http_problem(c, 404, url, "no such queue");
	if (!sub || !sub[1]) {
		if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
			return http_problem(c, 405, url, "use GET or DELETE on a queue");
		err = (strcmp(method, "GET") == 0 ? engine_queue_info : engine_queue_delete)(a->engine, id, &out);
		if (err != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such queue" : NULL);
		return http_send_json(c, 200, out, NULL);
	}
	if (strcmp(sub, "/items") == 0 && strcmp(method, "POST") == 0)
		return http_queue_put(a, c, url, id, -1, rq);
	if (strcmp(sub, "/take") == 0 && strcmp(method, "POST") == 0)
		return http_queue_take(a, c, url, id, -1, rq);
	if (strncmp(sub, "/holds/", 7) == 0 && strcmp(method, "DELETE") == 0)
		return http_queue_release(a, c, url, id, -1, sub + 7);
	return http_problem(c, 404, url,
	                    "no such queue resource: POST .../items to put, POST .../take to take, DELETE "
	                    ".../holds/{hold} to release");
}

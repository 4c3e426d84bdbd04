/*
 * /v1/managers: AsyncManagers. A manager is a pool of one worker that
 * keeps its state; a call is a one-task job of the reserved function
 * "manager", read back as the call's state and result.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "gateway/http/http_int.h"

static int look_call(api *a, struct MHD_Connection *c, const char *url, request *rq, int final, enum MHD_Result *ret)
{
	char detail[256] = "";
	int waitable = 0, err;
	json_t *page = http_first_result_page(a, rq, &waitable, &err, detail, sizeof(detail));
	json_t *item = json_array_get(json_object_get(page, "items"), 0);
	json_t *out;

	if (err != CM_OK) {
		*ret = http_fail(c, err, url, detail);
		return 1;
	}
	if (!item && !final) {
		json_decref(page);
		return 0;
	}
	if (!item) {
		out = json_pack("{s:s, s:s}", "id", rq->id, "state", "pending");
	} else if (json_is_true(json_object_get(item, "ok"))) {
		json_t *v = json_object_get(item, "value");
		out = json_pack("{s:s, s:s, s:b, s:O?, s:O?, s:O?, s:O?}", "id", rq->id, "state", "done", "ok", 1,
		                "result", json_object_get(v, "result"), "started_ms", json_object_get(v, "started_ms"),
		                "ended_ms", json_object_get(v, "ended_ms"), "output_last",
		                json_object_get(page, "output_last"));
	} else {
		out = json_pack("{s:s, s:s, s:b, s:O?, s:O?}", "id", rq->id, "state", "done", "ok", 0, "error",
		                json_object_get(item, "error"), "output_last", json_object_get(page, "output_last"));
	}
	json_decref(page);
	*ret = http_send_json(c, 200, out, NULL);
	return 1;
}

/* GET a call: its result once there, waiting up to wait_s. */
static enum MHD_Result manager_call_get(api *a, struct MHD_Connection *c, const char *url, const char *manager,
                                        const char *cid, int64_t wait_s, request *rq)
{
	int err;

	/* Only this manager's calls: any other job's result is not a call's. */
	err = engine_job_info(a->engine, cid, &rq->info);
	if (err == CM_OK && strcmp(rq->info.pool, manager) != 0)
		err = CM_ENOENT;
	if (err != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such call" : NULL);
	snprintf(rq->id, sizeof(rq->id), "%s", cid);
	return http_long_poll_start(a, c, url, rq, look_call, wait_s);
}

enum MHD_Result http_route_managers(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                    const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], detail[256] = "", location[128];
	json_t *out = NULL;
	int err;

	if (!rest[0])
		return http_pools_collection(a, c, url, method, rq, 1);
	http_first_segment(rest, sub, id, sizeof(id));
	if (id[0] != 'm')
		return http_problem(c, 404, url, "no such manager");
	if (!sub || !sub[1])
		return http_get_or_delete(a, c, url, method, id, rq, engine_pool_get, engine_pool_delete_start,
		                          "manager", "no such manager", 0);
	if (strcmp(sub, "/calls") == 0 && strcmp(method, "POST") == 0) {
		/* A call is a one-task job of the reserved function "manager". */
		char *arg = NULL;
		if ((err = spec_call_parse(rq->body.data ? rq->body.data : "", rq->body.len, &arg, detail,
		                           sizeof(detail))) != CM_OK)
			return http_fail(c, err, url, detail);
		size_t offs[2] = {0, strlen(arg)};
		char *fn = strdup("manager");
		map_spec spec = {.function = fn,
		                 .args = {.text = arg, .offs = offs, .n = 1},
		                 .total = 1,
		                 .chunksize = 1,
		                 .max_attempts = 1,
		                 .retry_errors = 0};
		err = fn ? engine_map(a->engine, id, &spec, NULL, &out, detail, sizeof(detail)) : CM_ENOMEM;
		free(spec.function);
		free(arg);
		if (err != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such manager" : detail);
		const char *cid = json_string_value(json_object_get(out, "id"));
		snprintf(location, sizeof(location), "/v1/managers/%s/calls/%s", id, cid);
		json_t *handle = json_pack("{s:s, s:s, s:s, s:s}", "id", cid, "manager", id, "state", "pending", "href",
		                           location);
		json_decref(out);
		return http_send_json(c, 202, handle, location);
	}
	if (strcmp(sub, "/logs") == 0 && strcmp(method, "GET") == 0)
		return http_get_pool_logs(a, c, url, id, rq); /* what its methods printed: a manager is a pool of one */
	if (strncmp(sub, "/calls/", 7) == 0 && strcmp(method, "GET") == 0) {
		int64_t wait_s = 0;
		if (http_query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
			return http_problem(c, 400, url, detail);
		return manager_call_get(a, c, url, id, sub + 7, wait_s, rq);
	}
	return http_problem(c, 404, url, "use POST .../calls, GET .../calls/{id}, GET .../logs");
}

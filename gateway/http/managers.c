/*
 * /v1/managers: AsyncManagers. A manager is a pool of one worker that
 * keeps its state; a call is a one-task job of the reserved function
 * "manager", read back as the call's state and result.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "gateway/http/http_int.h"

/* A done call's view, from its job's result item and the number of its
 * manager's last line of output then. */
static json_t *done_view(const char *id, json_t *item, json_t *output_last)
{
	if (json_is_true(json_object_get(item, "ok"))) {
		json_t *v = json_object_get(item, "value");
		return json_pack("{s:s, s:s, s:b, s:O?, s:O?, s:O?, s:O?}", "id", id, "state", "done", "ok", 1,
		                 "result", json_object_get(v, "result"), "started_ms", json_object_get(v, "started_ms"),
		                 "ended_ms", json_object_get(v, "ended_ms"), "output_last", output_last);
	}
	return json_pack("{s:s, s:s, s:b, s:O?, s:O?}", "id", id, "state", "done", "ok", 0, "error",
	                 json_object_get(item, "error"), "output_last", output_last);
}

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
	out = item ? done_view(rq->id, item, json_object_get(page, "output_last"))
	           : json_pack("{s:s, s:s}", "id", rq->id, "state", "pending");
	json_decref(page);
	*ret = http_send_json(c, 200, out, NULL);
	return 1;
}

/* The handle of a call under way (202's body). */
static json_t *pending_handle(const char *manager, const char *cid, const char *location)
{
	return json_pack("{s:s, s:s, s:s, s:s}", "id", cid, "manager", manager, "state", "pending", "href", location);
}

enum MHD_Result http_manager_call_answer(struct MHD_Connection *c, const char *url, request *rq)
{
	engine_apply_answer ans;
	char detail[256] = "";
	json_t *view = NULL;
	int err = http_apply_take(rq, &ans, detail, sizeof(detail));

	if (err != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such manager" : detail);
	free(ans.job); /* a call answers with its own handle */
	snprintf(rq->id, sizeof(rq->id), "%s", ans.id);
	snprintf(rq->location, sizeof(rq->location), "/v1/managers/%.20s/calls/%.20s", rq->manager, rq->id);
	if (ans.item) {
		json_t *item = json_loadb(ans.item, ans.item_len, 0, NULL);
		view = item ? done_view(rq->id, item, json_object_get(item, "output_last")) : NULL;
		json_decref(item);
		free(ans.item);
		if (!view)
			return http_fail(c, CM_ENOMEM, url, NULL);
	} else if (ans.info_ok) { /* the engine had no room for it: the store has it, or the wait ran out */
		int waitable = 0;
		rq->info = ans.info;
		json_t *page = http_first_result_page(rq->api, rq, &waitable, &err, detail, sizeof(detail));
		json_t *item = json_array_get(json_object_get(page, "items"), 0);
		if (item)
			view = done_view(rq->id, item, json_object_get(page, "output_last"));
		json_decref(page);
	}
	if (view)
		return http_send_json(c, 200, view, rq->location);
	return http_send_json(c, 202, pending_handle(rq->manager, rq->id, rq->location), rq->location);
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
		/* A call is a one-task job of the reserved function "manager";
		 * with wait=S, answered with its result (200) when it comes in
		 * time, as an apply that waits is: one round trip. */
		int64_t wait_s = 0;
		char *arg = NULL;
		if (http_query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
			return http_problem(c, 400, url, detail);
		if ((err = spec_call_parse(rq->body.data ? rq->body.data : "", rq->body.len, &arg, detail,
		                           sizeof(detail))) != CM_OK)
			return http_fail(c, err, url, detail);
		size_t *offs = malloc(2 * sizeof(*offs));
		map_spec spec = {.function = strdup("manager"),
		                 .args = {.text = arg, .offs = offs, .n = 1},
		                 .total = 1,
		                 .chunksize = 1,
		                 .max_attempts = 1,
		                 .retry_errors = 0};
		if (!offs || !spec.function) {
			spec_map_fini(&spec);
			return http_fail(c, CM_ENOMEM, url, NULL);
		}
		offs[0] = 0;
		offs[1] = strlen(arg);
		if (wait_s > 0) { /* the request keeps the spec until it completes */
			rq->spec = spec;
			rq->applying = 1;
			snprintf(rq->manager, sizeof(rq->manager), "%.23s", id);
			http_call_hold(a, c, rq, "no such manager");
			return http_call_started(
			        a, c, rq,
			        engine_apply_start(a->engine, id, &rq->spec, NULL, wait_s * 1000, http_call_done, rq));
		}
		err = engine_map(a->engine, id, &spec, NULL, &out, detail, sizeof(detail));
		spec_map_fini(&spec);
		if (err != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such manager" : detail);
		const char *cid = json_string_value(json_object_get(out, "id"));
		snprintf(location, sizeof(location), "/v1/managers/%s/calls/%s", id, cid);
		json_t *handle = pending_handle(id, cid, location);
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

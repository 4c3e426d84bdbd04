/*
 * /v1/pools: create, list, resize, close and delete pools; map and apply
 * on them. An apply with ?wait=S is answered by the engine once its result
 * is committed (engine_apply_start), or with 202 and its job.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"
#include "gateway/policy.h"

/* An apply's one look in the store: its result, or 202 with its job. */
static enum MHD_Result apply_look(api *a, struct MHD_Connection *c, request *rq)
{
	char detail[256] = "";
	int waitable = 0, err;
	json_t *page = http_first_result_page(a, rq, &waitable, &err, detail, sizeof(detail));
	json_t *item = json_array_get(json_object_get(page, "items"), 0);
	enum MHD_Result ret;

	if (item) {
		json_object_set_new(item, "job", json_string(rq->id));
		json_object_set(item, "output_last", json_object_get(page, "output_last")); /* complete: it is there */
		json_incref(item);
		json_decref(page);
		return http_send_json(c, 200, item, rq->location);
	}
	json_decref(page);
	ret = http_send_text(c, 202, rq->accepted, rq->accepted_len, "application/json", rq->location);
	rq->accepted = NULL;
	return ret;
}

/* An apply the engine answered: with its result, or with none, when the
 * store is looked in once (the result, or 202 with the job). */
int http_apply_take(request *rq, engine_apply_answer *ans, char *detail, size_t detail_len)
{
	int err;

	if (!rq->call)
		return CM_ENOMEM;
	err = engine_apply_finish(rq->call, ans, detail, detail_len);
	rq->call = NULL;
	rq->calling = 0;
	return err;
}

enum MHD_Result http_apply_answer(struct MHD_Connection *c, const char *url, request *rq)
{
	engine_apply_answer ans;
	char detail[256] = "";
	enum MHD_Result ret;
	int err = http_apply_take(rq, &ans, detail, sizeof(detail));

	if (err != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
	snprintf(rq->id, sizeof(rq->id), "%s", ans.id);
	snprintf(rq->location, sizeof(rq->location), "/v1/jobs/%.40s", rq->id);
	rq->accepted = ans.job;
	rq->accepted_len = ans.job_len;
	if (ans.item)
		return http_send_text(c, 200, ans.item, ans.item_len, "application/json", rq->location);
	if (!ans.info_ok) { /* the job is gone (an Idempotency-Key naming a job removed since) */
		ret = http_send_text(c, 202, rq->accepted, rq->accepted_len, "application/json", rq->location);
		rq->accepted = NULL;
		return ret;
	}
	rq->info = ans.info;
	return apply_look(rq->api, c, rq);
}

static enum MHD_Result post_map(api *a, struct MHD_Connection *c, const char *url, const char *pool_id, request *rq,
                                int single)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
	char detail[256] = "";
	int64_t wait_s = -1;
	char location[64];
	map_spec spec;
	json_t *out = NULL;
	int err;

	if (key && (strlen(key) == 0 || strlen(key) > 128))
		return http_problem(c, 400, url, "header 'Idempotency-Key' must be 1 to 128 characters");
	if (single && http_query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	err = spec_map_parse(rq->body.data ? rq->body.data : "", rq->body.len, single, &spec, detail, sizeof(detail));
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	if ((err = policy_check_command(a->cfg, spec.command != NULL, detail, sizeof(detail))) != CM_OK) {
		spec_map_fini(&spec);
		return http_fail(c, err, url, detail);
	}
	if (single && wait_s > 0) { /* apply: the engine answers with the one result */
		rq->spec = spec;
		snprintf(rq->idem_key, sizeof(rq->idem_key), "%s", key ? key : "");
		rq->applying = 1;
		http_call_hold(a, c, rq, "no such pool");
		return http_call_started(a, c, rq,
		                         engine_apply_start(a->engine, pool_id, &rq->spec, key ? rq->idem_key : NULL,
		                                            wait_s * 1000, http_call_done, rq));
	}
	err = engine_map(a->engine, pool_id, &spec, key, &out, detail, sizeof(detail));
	spec_map_fini(&spec);
	if (err != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
	snprintf(location, sizeof(location), "/v1/jobs/%s", json_string_value(json_object_get(out, "id")));
	return http_send_json(c, 202, out, location);
}

/* GET or POST on /v1/pools, or with managers on /v1/managers: a manager
 * is made as a pool is, from a spec of its own, and each list holds only
 * its own kind. */
enum MHD_Result http_pools_collection(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                      const request *rq, int managers)
{
	const char *kind = managers ? "managers" : "pools";
	char detail[256] = "", location[96];
	pool_spec spec;
	json_t *out = NULL;
	int err;

	if (strcmp(method, "GET") == 0)
		return http_listing(a, c, url, managers ? LIST_MANAGERS : LIST_POOLS);
	if (strcmp(method, "POST") != 0) {
		snprintf(detail, sizeof(detail), "use GET or POST on /v1/%s", kind);
		return http_problem(c, 405, url, detail);
	}
	err = (managers ? spec_manager_parse : spec_pool_parse)(rq->body.data ? rq->body.data : "", rq->body.len,
	                                                        a->cfg->backend, a->cfg->image, &spec, detail,
	                                                        sizeof(detail));
	if (err == CM_OK)
		err = policy_check_run(a->cfg, &spec, detail, sizeof(detail));
	if (err == CM_OK)
		err = http_run_check(a, &spec, detail, sizeof(detail));
	if (err == CM_OK)
		err = engine_pool_create(a->engine, &spec, &out, detail, sizeof(detail));
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	snprintf(location, sizeof(location), "/v1/%s/%s", kind, json_string_value(json_object_get(out, "id")));
	return http_send_json(c, 201, out, location);
}

enum MHD_Result http_route_pools(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *rest, request *rq)
{
	char detail[256] = "";
	char id[64];
	const char *sub;
	json_t *out = NULL;
	int err;

	if (!rest[0])
		return http_pools_collection(a, c, url, method, rq, 0);
	sub = strchr(rest, '/');
	http_first_segment(rest, sub, id, sizeof(id));
	if (id[0] == 'm') { /* a manager is not a pool: its calls are its only work */
		snprintf(detail, sizeof(detail), "no such pool: %.40s is a manager (/v1/managers/%.40s)", id, id);
		return http_problem(c, 404, url, detail);
	}
	if ((!sub || !sub[1]) && strcmp(method, "PATCH") == 0) {
		pool_patch patch;
		if ((err = spec_pool_patch_parse(rq->body.data ? rq->body.data : "", rq->body.len, &patch, detail,
		                                 sizeof(detail))) == CM_OK)
			err = engine_pool_patch(a->engine, id, &patch, &out, detail, sizeof(detail));
		if (err != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
		return http_send_json(c, 200, out, NULL);
	}
	if ((!sub || !sub[1]) && strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
		return http_problem(c, 405, url, "use GET, PATCH or DELETE on a pool");
	if (!sub || !sub[1])
		return http_get_or_delete(a, c, url, method, id, rq, engine_pool_get, engine_pool_delete_start, "pool",
		                          "no such pool", 0);
	if (strcmp(sub, "/logs") == 0) {
		if (strcmp(method, "GET") != 0)
			return http_problem(c, 405, url, "use GET on a pool's logs");
		return http_get_pool_logs(a, c, url, id, rq);
	}
	if (strcmp(sub, "/jobs") == 0) {
		if (strcmp(method, "GET") != 0)
			return http_problem(c, 405, url, "use GET on a pool's jobs");
		return http_jobs_page(a, c, url, id);
	}
	if (strcmp(method, "POST") != 0)
		return http_problem(c, 405, url, "use POST on pool actions");
	if (strcmp(sub, "/map") == 0)
		return post_map(a, c, url, id, rq, 0);
	if (strcmp(sub, "/apply") == 0)
		return post_map(a, c, url, id, rq, 1);
	if (strcmp(sub, "/close") == 0) {
		if ((err = engine_pool_close(a->engine, id, &out, detail, sizeof(detail))) != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
		return http_send_json(c, 200, out, NULL);
	}
	if (strcmp(sub, "/join") == 0)
		return http_post_join_token(a, c, url, id, rq);
	return http_problem(c, 404, url, "no such pool action (map, apply, close, join)");
}

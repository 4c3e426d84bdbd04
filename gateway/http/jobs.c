/*
 * /v1/jobs: list, read, cancel and remove jobs, the parts of a submitting
 * job's arguments; its results and failures are read in results.c.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"

/* POST /v1/jobs/{id}/args: the next part of a submitting job's arguments. */
static enum MHD_Result post_args(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *job_id, const request *rq)
{
	char detail[256] = "";
	spec_args args;
	int64_t offset;
	json_t *out = NULL;
	int err;

	if (strcmp(method, "POST") != 0)
		return http_problem(c, 405, url, "use POST to send a part of a job's arguments");
	err = spec_part_parse(rq->body.data ? rq->body.data : "", rq->body.len, &offset, &args, detail, sizeof(detail));
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	err = engine_job_args(a->engine, job_id, offset, &args, &out, detail, sizeof(detail));
	spec_args_fini(&args);
	if (err != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such job" : detail);
	return http_send_json(c, 200, out, NULL);
}

/* A page of jobs, newest first: of pool_id (NULL: every pool's), with
 * ?state=&cursor=&limit=. */
enum MHD_Result http_jobs_page(api *a, struct MHD_Connection *c, const char *url, const char *pool_id)
{
	static const char *const states[] = {"submitting", "running", "done", "cancelled", NULL};
	const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	char detail[256] = "";
	int64_t cursor = 0, limit = 100;
	cm_buf page;
	int err, known = 0;

	for (size_t i = 0; state && states[i]; i++)
		known |= strcmp(state, states[i]) == 0;
	if (state && !known)
		return http_problem(c, 400, url, "query 'state' must be submitting, running, done or cancelled");
	if (http_query_int(c, "cursor", 1, INT64_MAX, &cursor, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "limit", 1, 1000, &limit, detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	cm_buf_init(&page);
	if ((err = engine_job_list(a->engine, pool_id, state, cursor, (int)limit, &page)) != CM_OK) {
		cm_buf_fini(&page);
		return http_fail(c, err, url, err == CM_ENOENT ? "no such pool" : NULL);
	}
	return http_send_text(c, 200, page.data, page.len, "application/json", NULL);
}

/* GET /v1/jobs?pool=&state=&cursor=&limit= */
enum MHD_Result http_list_jobs(api *a, struct MHD_Connection *c, const char *url, const char *method)
{
	const char *pool_id = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pool");

	if (strcmp(method, "GET") != 0)
		return http_problem(c, 405, url, "use GET on /v1/jobs (a job is made by a pool's map or apply)");
	/* checked here: a pool's own jobs (/v1/pools/{id}/jobs) name it in the path */
	if (pool_id && (!pool_id[0] || strlen(pool_id) > 40))
		return http_problem(c, 400, url, "query 'pool' must be a pool's id");
	return http_jobs_page(a, c, url, pool_id);
}

enum MHD_Result http_route_jobs(api *a, struct MHD_Connection *c, const char *url, const char *method, const char *rest,
                                request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64];
	json_t *out = NULL;
	int err;

	http_first_segment(rest, sub, id, sizeof(id));
	if (!sub || !sub[1]) {
		if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
			return http_problem(c, 405, url, "use GET or DELETE on a job");
		err = strcmp(method, "GET") == 0 ? engine_job_get(a->engine, id, &out)
		                                 : engine_job_delete(a->engine, id, &out);
		if (err != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such job" : NULL);
		return http_send_json(c, 200, out, NULL);
	}
	if (strcmp(sub, "/args") == 0)
		return post_args(a, c, url, method, id, rq);
	if (strcmp(sub, "/cancel") == 0) {
		char detail[256] = ""; /* POST: the route table answered any other method */
		if ((err = engine_job_cancel(a->engine, id, &out, detail, sizeof(detail))) != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such job" : detail[0] ? detail : NULL);
		return http_send_json(c, 200, out, NULL);
	}
	if (strcmp(method, "GET") != 0)
		return http_problem(c, 405, url, "a job's results are read with GET");
	if (strcmp(sub, "/results") == 0)
		return http_get_results(a, c, url, id, rq);
	if (strcmp(sub, "/failures") == 0)
		return http_get_failures(a, c, url, id);
	return http_problem(c, 404, url, "no such job resource (args, cancel, results, failures)");
}

/*
 * /v1/processes: a program or one function run once on a backend
 * (multiprocessing.Process); GET with ?wait=S joins it, /logs reads what it
 * wrote.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"
#include "gateway/policy.h"

enum MHD_Result http_route_processes(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                     const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], detail[256] = "";
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		if (strcmp(method, "GET") == 0)
			return http_listing(a, c, url, LIST_PROCESSES);
		if (strcmp(method, "POST") == 0) {
			process_spec spec;
			char location[64];
			err = spec_process_parse(rq->body.data ? rq->body.data : "", rq->body.len, a->cfg->backend,
			                         a->cfg->image, &spec, detail, sizeof(detail));
			if (err != CM_OK)
				return http_fail(c, err, url, detail);
			if ((err = policy_check_process(a->cfg, &spec, detail, sizeof(detail))) != CM_OK ||
			    (err = http_run_check(a, &spec.run, detail, sizeof(detail))) != CM_OK) {
				spec_process_fini(&spec);
				return http_fail(c, err, url, detail);
			}
			err = engine_process_start(a->engine, &spec, &out, detail, sizeof(detail));
			spec_process_fini(&spec);
			if (err != CM_OK)
				return http_fail(c, err, url, detail[0] ? detail : NULL);
			snprintf(location, sizeof(location), "/v1/processes/%s",
			         json_string_value(json_object_get(out, "id")));
			return http_send_json(c, 201, out, location);
		}
		return http_problem(c, 405, url, "use GET or POST on /v1/processes");
	}
	http_first_segment(rest, sub, id, sizeof(id));
	if (sub && strcmp(sub, "/logs") == 0 && strcmp(method, "GET") == 0) {
		if ((err = engine_process_logs(a->engine, id, &out)) != CM_OK)
			return http_fail(c, err, url, err == CM_ENOENT ? "no such process" : NULL);
		char *text = strndup(json_string_value(out), json_string_length(out));
		size_t len = json_string_length(out);
		json_decref(out);
		return text ? http_send_text(c, 200, text, len, "text/plain; charset=utf-8", NULL) : MHD_NO;
	}
	if (sub && sub[1])
		return http_problem(c, 404, url, "no such process resource (logs)");
	return http_get_or_delete(a, c, url, method, id, rq, engine_process_get, engine_process_delete_start, "process",
	                          "no such process", 1);
}

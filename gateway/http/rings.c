/*
 * /v1/rings: size processes that know their RANK and WORLD_SIZE; GET with
 * ?wait=S joins them.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"
#include "gateway/policy.h"

enum MHD_Result http_route_rings(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *rest, request *rq)
{
	char detail[256] = "", location[64];
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		process_spec spec;
		int size = 0;
		if (strcmp(method, "GET") == 0)
			return http_listing(a, c, url, LIST_RINGS);
		if (strcmp(method, "POST") != 0)
			return http_problem(c, 405, url, "use GET or POST on /v1/rings");
		err = spec_ring_parse(rq->body.data ? rq->body.data : "", rq->body.len, a->cfg->backend, a->cfg->image,
		                      &spec, &size, detail, sizeof(detail));
		if (err != CM_OK)
			return http_fail(c, err, url, detail);
		if ((err = policy_check_process(a->cfg, &spec, detail, sizeof(detail))) != CM_OK ||
		    (err = http_run_check(a, &spec.run, detail, sizeof(detail))) != CM_OK) {
			spec_process_fini(&spec);
			return http_fail(c, err, url, detail);
		}
		err = engine_ring_start(a->engine, &spec, size, &out, detail, sizeof(detail));
		spec_process_fini(&spec);
		if (err != CM_OK)
			return http_fail(c, err, url, detail);
		snprintf(location, sizeof(location), "/v1/rings/%s", json_string_value(json_object_get(out, "id")));
		return http_send_json(c, 201, out, location);
	}
	if (strchr(rest, '/'))
		return http_problem(c, 404, url, "no such ring resource");
	return http_get_or_delete(a, c, url, method, rest, rq, engine_ring_get, engine_ring_delete_start, "ring",
	                          "no such ring", 1);
}

/*
 * Workers that join an external pool (the engine's join.c):
 *   POST /v1/pools/{id}/join {uses, ttl_s}   201 {token, pool, uses, expires_at}
 *   POST /v1/join {token}                    200, a worker's identity
 * The second is the one route besides the sign-in that carries no API
 * token: the join token is its credential (401 when unknown, used up or
 * expired), and it gives nothing but one worker's identity in that pool.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"

enum MHD_Result http_post_join_token(api *a, struct MHD_Connection *c, const char *url, const char *pool_id,
                                     const request *rq)
{
	char detail[256] = "";
	int64_t uses, ttl_s;
	json_t *out = NULL;
	int err;

	if ((err = spec_join_token_parse(rq->body.data ? rq->body.data : "", rq->body.len, &uses, &ttl_s, detail,
	                                 sizeof(detail))) == CM_OK)
		err = engine_join_token(a->engine, pool_id, uses, ttl_s, &out, detail, sizeof(detail));
	if (err != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
	return http_send_json(c, 201, out, NULL);
}

enum MHD_Result http_post_join(api *a, struct MHD_Connection *c, const char *url, const char *method, const request *rq)
{
	char detail[256] = "", token[128];
	json_t *out = NULL;
	int err;

	if (strcmp(method, "POST") != 0)
		return http_problem(c, 405, url, "use POST on /v1/join");
	if ((err = spec_join_parse(rq->body.data ? rq->body.data : "", rq->body.len, token, sizeof(token), detail,
	                           sizeof(detail))) == CM_OK)
		err = engine_join(a->engine, token, &out, detail, sizeof(detail));
	explicit_bzero(token, sizeof(token));
	if (err == CM_ENOENT)
		return http_problem_with(c, 401, url, detail, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		                         "Bearer realm=\"strand\"");
	if (err != CM_OK)
		return http_fail(c, err, url, detail);
	return http_send_json(c, 200, out, NULL);
}

/*
 * /v1/session: the dashboard's sign-in and sign-out.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"

/* POST /v1/session {"token"}: the dashboard signs in once and the browser
 * keeps the token in an HttpOnly, SameSite=Strict cookie, out of the reach
 * of scripts and of other sites. DELETE signs out. GET says whether the
 * request is signed in (cookie or bearer), with no 401 to log: the
 * dashboard asks before it shows anything. */
enum MHD_Result http_route_session(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const request *rq)
{
	char cookie[AUTH_TOKEN_MAX + 128];
	json_t *body, *token;
	int ok;

	if (strcmp(method, "GET") == 0) {
		const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		const char *held = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, AUTH_COOKIE);
		int in = !a->token[0] || auth_token_equal(a->token, auth ? auth_bearer(auth) : held);
		return http_send_json(c, 200, json_pack("{s:b}", "signed_in", in), NULL);
	}
	if (strcmp(method, "DELETE") == 0) {
		snprintf(cookie, sizeof(cookie), "%s=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", AUTH_COOKIE);
		return http_send_text_with(c, 200, strdup("{}"), 2, "application/json", MHD_HTTP_HEADER_SET_COOKIE,
		                           cookie);
	}
	if (strcmp(method, "POST") != 0)
		return http_problem(c, 405, url, "sign in with POST /v1/session {\"token\": ...}, out with DELETE");
	/* Reached without a token: its body is capped small (on_request). */
	body = json_loadb(rq->body.data ? rq->body.data : "", rq->body.len, 0, NULL);
	token = json_object_get(body, "token");
	if (!json_is_object(body) || !json_is_string(token) || json_object_size(body) != 1) {
		json_decref(body);
		return http_problem(c, 400, url, "a sign-in is {\"token\": \"...\"}");
	}
	ok = !a->token[0] || auth_token_equal(a->token, json_string_value(token));
	json_decref(body);
	if (!ok)
		return http_problem(c, 401, url, "the token is not this gateway's");
	snprintf(cookie, sizeof(cookie), "%s=%s; Path=/; HttpOnly; SameSite=Strict%s", AUTH_COOKIE, a->token,
	         a->cfg->tls_cert[0] ? "; Secure" : "");
	return http_send_text_with(c, 200, strdup("{\"signed_in\":true}"), 18, "application/json",
	                           MHD_HTTP_HEADER_SET_COOKIE, cookie);
}

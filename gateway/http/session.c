/*
 * /v1/session: the dashboard's sign-in and sign-out.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"

/* The session id this request's cookie holds, or NULL. */
const char *http_session_cookie(const api *a, struct MHD_Connection *c)
{
	return MHD_lookup_connection_value(c, MHD_COOKIE_KIND, a->cookie);
}

/* POST /v1/session {"token"}: the dashboard signs in once with the token,
 * and the browser keeps a session id (never the token) in an HttpOnly,
 * SameSite=Strict cookie, out of the reach of scripts and of other sites,
 * named after this gateway's port so that another gateway of the same host
 * neither takes nor overwrites it. DELETE ends the session (the id opens
 * nothing from then on) and clears the cookie. GET says whether the request
 * is signed in (cookie or bearer), with no 401 to log: the dashboard asks
 * before it shows anything. */
enum MHD_Result http_route_session(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const request *rq)
{
	char cookie[SESSION_ID_LEN + 128], id[SESSION_ID_LEN + 1];
	json_t *body, *token;
	int ok;

	if (strcmp(method, "GET") == 0) {
		const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		int in = !a->token[0] || (auth ? auth_token_equal(a->token, auth_bearer(auth))
		                               : sessions_check(a->sessions, http_session_cookie(a, c), cm_now_ms()));
		return http_send_json(c, 200, json_pack("{s:b}", "signed_in", in), NULL);
	}
	if (strcmp(method, "DELETE") == 0) {
		sessions_close(a->sessions, http_session_cookie(a, c));
		snprintf(cookie, sizeof(cookie), "%s=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", a->cookie);
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
	sessions_open(a->sessions, cm_now_ms(), id);
	snprintf(cookie, sizeof(cookie), "%s=%s; Path=/; HttpOnly; SameSite=Strict%s", a->cookie, id,
	         a->cfg->tls_cert[0] ? "; Secure" : "");
	explicit_bzero(id, sizeof(id));
	return http_send_text_with(c, 200, strdup("{\"signed_in\":true}"), 18, "application/json",
	                           MHD_HTTP_HEADER_SET_COOKIE, cookie);
}

/*
 * Who may use the REST API: the operator's bearer token, and the checks that
 * keep a web page the operator visits from using it on their behalf (DNS
 * rebinding through the Host header, cross-site requests through Origin).
 * Pure functions over header values, so that they are unit tested alone;
 * gateway/http/screen.c applies them to each request.
 */
#ifndef GATEWAY_AUTH_H
#define GATEWAY_AUTH_H

#include <stddef.h>

#define AUTH_TOKEN_MIN 16 /* a token given by the operator: at least this long */
#define AUTH_TOKEN_MAX 256

/* The API token: `env_token` when set (STRAND_TOKEN), else the content of
 * the file at path, created 0600 with 32 random bytes (64 hex digits) when
 * it does not exist. A file that others can read, or a token that is shorter
 * than AUTH_TOKEN_MIN or holds characters outside [!-~], is refused.
 * *created says whether the file was made now. */
int auth_token_load(const char *path, const char *env_token, char token[AUTH_TOKEN_MAX], int *created, char *detail,
                    size_t detail_len);

/* Whether presented equals token, in time that depends only on their
 * lengths. presented may be NULL. */
int auth_token_equal(const char *token, const char *presented);

/* The token of an "Authorization: Bearer TOKEN" header value (borrowed
 * pointer into header), or NULL. */
const char *auth_bearer(const char *header);

/* Whether a Host header may reach this gateway: an IP literal (a page cannot
 * make a browser send one other than the address it loaded from), localhost,
 * or one of public_hosts (comma-separated names, as --public-host gives
 * them); any port. A missing or malformed Host is not allowed. */
int auth_host_allowed(const char *host, const char *public_hosts);

/* Whether origin ("http[s]://HOST[:PORT]") is the origin of host, the
 * request's own Host header: a same-origin request. */
int auth_origin_same(const char *origin, const char *host);

/* Whether a Content-Type is type (application/json, application/zip),
 * parameters allowed. Neither is one a browser sends across origins
 * without asking first. */
int auth_content_type_is(const char *content_type, const char *type);

#endif

/*
 * libstrand's keep-alive connection to a plain http:// gateway, without
 * libcurl. An apply's round trip is a few hundred microseconds, and libcurl
 * added some fifty to each request: its easy interface polls the socket
 * four times around the one send and the one receive a request needs (is
 * the connection alive, is there more to read, its own wake-up pipe), and
 * its options are set again each time. Here a request is one sendmsg and,
 * for a small answer, one recv. https:// stays with libcurl (client.c).
 *
 * Like libcurl, a request that finds its reused connection closed before
 * any byte of the answer came (the gateway closed it idle, or restarted)
 * is sent once more on a new one. An answer that comes while the body is
 * still going out (a 413 for a body over the gateway's cap) is read, and
 * the connection closed after it. No time limit: a long poll answers when
 * it is due, as with libcurl's defaults.
 *
 * One thread at a time, as strand_client.
 */
#ifndef CLIENT_HTTP_CONN_H
#define CLIENT_HTTP_CONN_H

#include <stddef.h>

#include "client/http_reply.h"

typedef struct http_conn http_conn;

/* For url "http://HOST[:PORT][/PREFIX]" (HOST a name, an IPv4 address or
 * [an IPv6 one]); a new connection, not yet open. NULL for any other URL
 * (https://, user info, a query), which libcurl takes, or without memory. */
http_conn *http_conn_new(const char *url);
void http_conn_free(http_conn *c);

/* One request: method and path (after the URL's prefix) as given, the
 * header line auth ("Name: value", or "" for none), and text[0..len) as
 * its body when text is not NULL, of Content-Type type (NULL: JSON). The
 * answer's body goes into body (borrowed; emptied first). Returns the HTTP
 * status, or 0 with why filled when no whole answer came or the request
 * could not be made. */
long http_conn_request(http_conn *c, const char *method, const char *path, const char *auth, const char *type,
                       const char *text, size_t len, http_body *body, char *why, size_t why_len);

#endif

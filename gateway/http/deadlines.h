/*
 * Deadlines for a whole request, not reset per byte: libmicrohttpd's
 * timeout restarts with every byte received, so a client sending one byte
 * every few seconds held a connection for ever (256 of them took every
 * connection one address may hold). Here a request's headers (the TLS
 * handshake included) must all arrive within header_ms of the connection's
 * start or of the previous answer, and its body within header_ms plus its
 * length at min_rate bytes a second; past that the connection is shut
 * down. A request being answered (a long poll, an event stream) has no
 * deadline of ours. A thread of its own checks four times a second.
 */
#ifndef GATEWAY_HTTP_DEADLINES_H
#define GATEWAY_HTTP_DEADLINES_H

#include <microhttpd.h>
#include <stdint.h>

typedef struct deadlines deadlines;

int deadlines_start(int64_t header_ms, int64_t min_rate, deadlines **out);
void deadlines_stop(deadlines *d);
/* A connection is being handed to libmicrohttpd: it is owed an answer
 * from now. libmicrohttpd takes a connection added from outside on its own
 * thread, later, and closes those it has not taken yet when it stops; this
 * count lets a stop wait for them. ok 0: the hand-over failed (the
 * connection is closed), it is owed nothing. */
void deadlines_handing_over(deadlines *d);
void deadlines_handed_over(deadlines *d, int ok);
/* MHD_OPTION_NOTIFY_CONNECTION's callback, with d as its closure: a
 * started connection takes over the answer owed since its hand-over. */
void deadlines_on_connection(void *d, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode code);
/* The request's headers are in: its body (body_len bytes; -1 for chunked,
 * which gets the rate's share of cap_bytes) has its deadline, or none is
 * left when it has no body. */
void deadlines_headers_in(deadlines *d, struct MHD_Connection *c, int64_t body_len, int64_t cap_bytes);
/* The body is in: the request is being answered. */
void deadlines_body_in(deadlines *d, struct MHD_Connection *c);
/* Answered: the next request's headers have header_ms from now. */
void deadlines_answered(deadlines *d, struct MHD_Connection *c);
/* Waits at most ms until no connection is owed an answer (one whose
 * request began and is not answered); returns how many still are. For a
 * stop that answers what came before it. */
int deadlines_wait_answered(deadlines *d, int64_t ms);

#endif

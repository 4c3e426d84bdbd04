/*
 * The front door: the gateway accepts its HTTP connections itself and
 * hands each to libmicrohttpd once its first byte shows it begins as HTTP
 * does (a method's capital letter). libmicrohttpd answers a request it
 * cannot parse with its own HTML and no Content-Type; bytes that are not
 * HTTP at all (garbage, a TLS handshake sent to the plain port) get a
 * problem+json 400 here instead, and their connection closed. A
 * connection that sends nothing within idle_ms is closed, and one client
 * address holds at most per_client connections waiting here, as
 * libmicrohttpd's own limits do for those it holds. With TLS the bytes are
 * not readable here: connections go through at once. One thread, epoll.
 */
#ifndef GATEWAY_HTTP_FRONT_DOOR_H
#define GATEWAY_HTTP_FRONT_DOOR_H

#include <microhttpd.h>
#include <stdint.h>
#include <sys/socket.h>

#include "gateway/http/deadlines.h"

typedef struct front_door front_door;

/* Listens on addr (len bytes); detail gets strerror's words when it
 * cannot. */
int front_door_open(const struct sockaddr *addr, socklen_t len, int tls, int64_t idle_ms, int per_client,
                    int max_waiting, front_door **out, char *detail, size_t detail_len);
/* Starts handing connections to daemon (started with
 * MHD_USE_NO_LISTEN_SOCKET and MHD_USE_ITC), each counted in d as owed an
 * answer from its hand-over (d's on_connection is the daemon's). */
int front_door_start(front_door *f, struct MHD_Daemon *daemon, deadlines *d);
/* Stops accepting. Connections accepted or queued before, whose request
 * has begun, go to libmicrohttpd; the rest are closed. */
void front_door_close(front_door *f);

#endif

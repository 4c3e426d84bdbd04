/*
 * The hub's own sockets for a tcp://, tcp4://, tcp6:// or ipc:// hub
 * (hub.c; a tls+tcp:// hub's too, TLS added by tls.c): its listener, and
 * one thread that waits on every connection with epoll and calls hub.c
 * back. Through nng's stream, each frame a worker sent was read by nng's
 * poller thread and handed to one of nng's task threads for its callback,
 * which gave it to the engine: a thread more between the worker and the
 * engine on every exchange.
 *
 * A connection is armed for one event at a time (EPOLLONESHOT): whoever
 * holds it (this thread in a callback, or the engine while it answers)
 * arms it when done with it, and the callback of its event then holds it.
 */
#ifndef GATEWAY_HUB_POLL_H
#define GATEWAY_HUB_POLL_H

#include <stddef.h>
#include <sys/socket.h>

typedef struct hub_poll hub_poll;

typedef struct hub_poll_calls {
	void *ctx;
	/* A new connection (non-blocking, close-on-exec), now the callee's,
	 * from the peer addr (len bytes; a Unix socket's has no address). */
	void (*accepted)(void *ctx, int fd, const struct sockaddr_storage *addr, socklen_t len);
	/* The event conn was armed for. */
	void (*ready)(void *ctx, void *conn);
	/* About once a second, after the events: for deadlines. */
	void (*tick)(void *ctx);
} hub_poll_calls;

/* Listens on url and starts the thread (calls are copied); *out is set
 * before the thread's first call. On failure *out is NULL, the reason is
 * in detail, and returns CM_EUNAVAIL (or CM_EINVAL for a URL it cannot
 * read). */
int hub_poll_start(const char *url, const hub_poll_calls *calls, hub_poll **out, char *detail, size_t detail_len);
/* Arms fd, conn's socket, for one event: readable, or with out writable.
 * *added says whether fd is in the set yet (set here). Returns 0 or errno. */
int hub_poll_arm(hub_poll *p, int fd, void *conn, int out, int *added);
/* Ends the thread (no callback runs after) and closes the listener. */
void hub_poll_stop(hub_poll *p);

#endif

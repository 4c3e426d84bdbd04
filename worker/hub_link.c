/*
 * The worker's connection to the gateway's hub: frames on a socket of its
 * own (hub_socket.h), in plain TCP, a Unix socket or TLS (hub_tls.h),
 * dialed when first used and again after any failure (a restarted gateway
 * gets its workers back at the next exchange).
 */
#include <nng/nng.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "proto/frame.h"
#include "worker/hub_link.h"
#include "worker/hub_socket.h"
#include "worker/hub_tls.h"
#include "worker/worker.h"

struct hub_link {
	const char *url; /* the worker's configuration's */
	hub_socket sock;
	hub_tls *tls; /* a tls+tcp:// hub's */
	int look_first; /* watch_idle: a look at the socket before each exchange */
};

int hub_link_new(const worker_config *cfg, int watch_idle, hub_link **out)
{
	hub_link *l = calloc(1, sizeof(*l));
	char why[300];
	int rv;

	if (!l)
		return NNG_ENOMEM;
	l->url = cfg->hub;
	l->sock.fd = -1;
	/* Its end between exchanges is seen by a look at the socket
	 * (hub_socket_over). */
	l->look_first = watch_idle;
	int family, tls;
	if (!cm_socket_url(cfg->hub, &family, &tls)) { /* a URL hub_socket does not dial */
		free(l);
		return NNG_EADDRINVAL;
	}
	if (tls && (rv = hub_tls_new(cfg, &l->tls, why, sizeof(why))) != 0) {
		cm_error("hub %s: %s", cfg->hub, why);
		free(l);
		return rv;
	}
	*out = l;
	return 0;
}

int hub_link_connect(hub_link *l, int timeout_ms)
{
	if (l->sock.fd >= 0 && l->look_first && hub_socket_over(&l->sock))
		hub_socket_close(&l->sock);
	return l->sock.fd >= 0 ? 0 : hub_socket_dial(&l->sock, l->url, timeout_ms, l->tls);
}

int hub_link_exchange(hub_link *l, const uint8_t *frame, size_t len, int timeout_ms, uint8_t **reply, size_t *reply_len)
{
	int rv;

	if ((rv = hub_link_connect(l, timeout_ms)) != 0)
		return rv;
	if ((rv = hub_socket_send(&l->sock, frame, len, timeout_ms)) == 0)
		rv = hub_socket_recv(&l->sock, PROTO_FRAME_MAX, timeout_ms, reply, reply_len);
	if (rv != 0)
		hub_socket_close(&l->sock); /* a late answer would be taken for the next one's */
	return rv;
}

void hub_link_free(hub_link *l)
{
	if (!l)
		return;
	hub_socket_close(&l->sock);
	hub_tls_free(l->tls);
	free(l);
}

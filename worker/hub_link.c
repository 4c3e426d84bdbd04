/*
 * The worker's connection to the gateway's hub: frames on a stream
 * (proto/wire.h), in plain TCP or TLS, dialed when first used and again
 * after any failure (a restarted gateway gets its workers back at the next
 * exchange). With a tls+tcp:// hub the worker trusts exactly the CA the
 * gateway handed it (STRAND_HUB_CA_PEM, or the file STRAND_HUB_CA for a
 * worker started by hand on another host) and checks the hub's certificate
 * against the server name: the hub URL's host, or STRAND_HUB_SERVER_NAME
 * (mbedtls matches DNS names, not IP addresses).
 */
#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "worker/hub_link.h"
#include "worker/hub_socket.h"
#include "worker/worker.h"

#define DEADLINE_GRACE_MS 2000

struct hub_link {
	const char *url; /* the worker's configuration's */
	/* tcp:// and ipc://: a socket of our own (hub_socket.h) */
	int plain;
	hub_socket sock;
	int look_first; /* watch_idle: a look at the socket before each exchange */
	/* tls+tcp:// (any other scheme): nng's stream */
	nng_stream_dialer *dialer;
	nng_stream *stream; /* NULL until dialed, and after a failure */
	nng_aio *aio; /* no callback: each step waited for */
	/* With watch_idle: a read of one byte posted after each exchange, so a
	 * connection the gateway closed meanwhile (it restarted) is known for
	 * dead before the next exchange goes out on it. It is never cancelled
	 * (cancelling a read on nng's TLS stream closes the connection): the
	 * next exchange's answer ends it, with that answer's first byte. */
	nng_aio *watch;
	uint8_t watch_byte;
	int watching;
	atomic_int dead;
	/* A deadline on each exchange of its own: nng's TLS stream (1.5) can
	 * leave a receive waiting past its aio's timeout, for good, on a
	 * connection whose peer vanished during a cut (its gateway killed, the
	 * link back after): at the deadline the stream is closed, which ends
	 * what waits on it. */
	nng_aio *deadline;
	pthread_mutex_t mu;
	int in_exchange; /* under mu: what the deadline may close */
};

/* The watch ended: with the first byte of the answer to an exchange, or
 * the connection closed or sent what the hub never sends unasked. */
static void on_watch(void *arg)
{
	hub_link *l = arg;

	pthread_mutex_lock(&l->mu);
	int asked = l->in_exchange;
	pthread_mutex_unlock(&l->mu);
	if (nng_aio_result(l->watch) != 0 || !asked)
		atomic_store(&l->dead, 1);
}

/* Forgets the connection (after a failure, or found dead). */
static void drop_stream(hub_link *l)
{
	nng_stream_free(l->stream); /* ends a watch that waits on it */
	l->stream = NULL;
	if (l->watching)
		nng_aio_wait(l->watch);
	l->watching = 0;
	atomic_store(&l->dead, 0);
}

/* The deadline passed (or was cancelled: the exchange ended first). */
static void on_deadline(void *arg)
{
	hub_link *l = arg;

	if (nng_aio_result(l->deadline) != 0)
		return;
	pthread_mutex_lock(&l->mu);
	if (l->in_exchange) {
		cm_warn("hub %s: no answer past the exchange's deadline; closing the connection", l->url);
		nng_stream_close(l->stream);
	}
	pthread_mutex_unlock(&l->mu);
}

static int tls_config(const worker_config *cfg, nng_tls_config **out)
{
	const char *at = strstr(cfg->hub, "://");
	nng_tls_config *t;
	char host[256], port[6];
	int rv;

	/* The URL's host is the name its certificate must carry, unless told. */
	if (!at || cm_host_port(at + 3, strlen(at + 3), host, sizeof(host), port) != CM_OK)
		return NNG_EADDRINVAL;
	if ((rv = nng_tls_config_alloc(&t, NNG_TLS_MODE_CLIENT)) != 0)
		return rv;
	if (cfg->hub_ca_pem && cfg->hub_ca_pem[0])
		rv = nng_tls_config_ca_chain(t, cfg->hub_ca_pem, NULL);
	else if (cfg->hub_ca_file && cfg->hub_ca_file[0])
		rv = nng_tls_config_ca_file(t, cfg->hub_ca_file);
	else
		rv = NNG_EINVAL; /* no CA: the hub could be anyone */
	if (rv == 0)
		rv = nng_tls_config_server_name(
		        t, cfg->hub_server_name && cfg->hub_server_name[0] ? cfg->hub_server_name : host);
	if (rv == 0)
		rv = nng_tls_config_auth_mode(t, NNG_TLS_AUTH_MODE_REQUIRED);
	if (rv != 0) {
		nng_tls_config_free(t);
		return rv;
	}
	*out = t;
	return 0;
}

int hub_link_new(const worker_config *cfg, int watch_idle, hub_link **out)
{
	hub_link *l = calloc(1, sizeof(*l));
	nng_tls_config *t = NULL;
	int rv;

	if (!l)
		return NNG_ENOMEM;
	l->url = cfg->hub;
	l->sock.fd = -1;
	if (hub_socket_takes(cfg->hub)) {
		/* Its end between exchanges is seen by a look at the socket
		 * (hub_socket_over): no watch needed. */
		l->plain = 1;
		l->look_first = watch_idle;
		*out = l;
		return 0;
	}
	if ((rv = nng_stream_dialer_alloc(&l->dialer, cfg->hub)) == 0 && strncmp(cfg->hub, "tls+", 4) == 0 &&
	    (rv = tls_config(cfg, &t)) == 0) {
		rv = nng_stream_dialer_set_ptr(l->dialer, NNG_OPT_TLS_CONFIG, t);
		nng_tls_config_free(t); /* the dialer holds its own reference */
		/* A frame's prefix and body are two TLS records: without this
		 * the body waits for the hub's delayed ACK of the prefix. */
		if (rv == 0)
			rv = nng_stream_dialer_set_bool(l->dialer, NNG_OPT_TCP_NODELAY, true);
	}
	if (rv == 0)
		rv = nng_aio_alloc(&l->aio, NULL, NULL);
	if (rv == 0)
		rv = nng_aio_alloc(&l->deadline, on_deadline, l);
	pthread_mutex_init(&l->mu, NULL);
	if (rv == 0 && watch_idle)
		rv = nng_aio_alloc(&l->watch, on_watch, l);
	if (rv != 0) {
		hub_link_free(l);
		return rv;
	}
	*out = l;
	return 0;
}

int hub_link_connect(hub_link *l, int timeout_ms)
{
	int rv;

	if (l->plain) {
		if (l->sock.fd >= 0 && l->look_first && hub_socket_over(&l->sock))
			hub_socket_close(&l->sock);
		return l->sock.fd >= 0 ? 0 : hub_socket_dial(&l->sock, l->url, timeout_ms);
	}
	if (l->stream && atomic_load(&l->dead))
		drop_stream(l);
	if (l->stream)
		return 0;
	nng_aio_set_timeout(l->aio, timeout_ms);
	nng_stream_dialer_dial(l->dialer, l->aio);
	nng_aio_wait(l->aio);
	if ((rv = nng_aio_result(l->aio)) == 0)
		l->stream = nng_aio_get_output(l->aio, 0);
	return rv;
}

int hub_link_exchange(hub_link *l, const uint8_t *frame, size_t len, int timeout_ms, uint8_t **reply, size_t *reply_len)
{
	int rv;

	if ((rv = hub_link_connect(l, timeout_ms)) != 0)
		return rv;
	if (l->plain) {
		if ((rv = hub_socket_send(&l->sock, frame, len, timeout_ms)) == 0)
			rv = hub_socket_recv(&l->sock, PROTO_FRAME_MAX, timeout_ms, reply, reply_len);
		if (rv != 0)
			hub_socket_close(&l->sock); /* a late answer would be taken for the next one's */
		return rv;
	}
	nng_aio_set_timeout(l->aio, timeout_ms);
	pthread_mutex_lock(&l->mu);
	l->in_exchange = 1;
	pthread_mutex_unlock(&l->mu);
	/* Each step has timeout_ms (the aio's); the whole, a little more. */
	nng_sleep_aio(timeout_ms + DEADLINE_GRACE_MS, l->deadline);
	if ((rv = wire_send(l->stream, l->aio, frame, len)) == 0 && l->watching) {
		/* The watch takes the answer's first byte; the deadline ends it
		 * if none comes. */
		nng_aio_wait(l->watch);
		l->watching = 0;
		if ((rv = atomic_load(&l->dead) ? NNG_ECLOSED : nng_aio_result(l->watch)) == 0)
			rv = wire_recv_after(l->stream, l->aio, PROTO_FRAME_MAX, &l->watch_byte, 1, reply, reply_len);
	} else if (rv == 0) {
		rv = wire_recv(l->stream, l->aio, PROTO_FRAME_MAX, reply, reply_len);
	}
	pthread_mutex_lock(&l->mu);
	l->in_exchange = 0;
	pthread_mutex_unlock(&l->mu);
	nng_aio_cancel(l->deadline);
	nng_aio_wait(l->deadline);
	if (rv != 0) {
		/* A late answer would be taken for the next one's: start over. */
		drop_stream(l);
	} else if (l->watch) {
		nng_iov iov = {.iov_buf = &l->watch_byte, .iov_len = 1};
		nng_aio_set_iov(l->watch, 1, &iov);
		nng_stream_recv(l->stream, l->watch);
		l->watching = 1;
	}
	return rv;
}

void hub_link_free(hub_link *l)
{
	if (!l)
		return;
	hub_socket_close(&l->sock);
	if (l->watch)
		nng_aio_stop(l->watch);
	if (l->stream)
		nng_stream_free(l->stream);
	if (l->watch)
		nng_aio_free(l->watch);
	if (l->deadline)
		nng_aio_free(l->deadline);
	if (l->aio)
		nng_aio_free(l->aio);
	if (!l->plain)
		pthread_mutex_destroy(&l->mu);
	if (l->dialer)
		nng_stream_dialer_free(l->dialer);
	free(l);
}

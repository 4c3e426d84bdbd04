/*
 * The TLS a worker speaks to a tls+tcp:// hub (OpenSSL), on its own socket
 * (hub_socket.c) as to a tcp:// one. It trusts exactly the CA the gateway
 * handed it (STRAND_HUB_CA_PEM, or the file STRAND_HUB_CA for a worker
 * started by hand on another host) and checks the hub's certificate
 * against the server name: STRAND_HUB_SERVER_NAME, or the hub URL's host
 * (a DNS name, or an IP address the certificate must list).
 *
 * Through nng's TLS stream, each answer was read by nng's threads and
 * handed to the waiting one, and a read posted between exchanges could not
 * be cancelled without closing the connection.
 */
#ifndef WORKER_HUB_TLS_H
#define WORKER_HUB_TLS_H

#include <stddef.h>

#include "worker/worker.h"

typedef struct hub_tls hub_tls;
struct ssl_st;

/* What cfg says to trust. Returns 0 or nng's error; why says what was
 * wrong (no CA, a CA that does not read). */
int hub_tls_new(const worker_config *cfg, hub_tls **out, char *why, size_t why_len);
void hub_tls_free(hub_tls *t);
/* The handshake on fd (connected, blocking, its timeouts set); the
 * session in *out. Returns 0 or nng's error (NNG_EPEERAUTH: the hub's
 * certificate is not one to trust, why in the log). */
int hub_tls_start(hub_tls *t, int fd, struct ssl_st **out);

#endif

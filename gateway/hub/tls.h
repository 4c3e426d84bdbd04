/*
 * TLS for a tls+tcp:// hub's connections (OpenSSL), on the hub's own
 * sockets (poll.c) like a tcp:// hub's. Through nng's TLS stream each
 * frame crossed from nng's threads to the engine and back, and the
 * gateway used twice a tcp:// hub's CPU a task (bench/hosts).
 *
 * Every call is non-blocking and made by whoever holds the connection
 * (hub.c's arming hands it from one thread to another), never two at once.
 * A call that cannot go on says which way the socket must become ready;
 * the caller arms it so and calls again with the same arguments.
 */
#ifndef GATEWAY_HUB_TLS_H
#define GATEWAY_HUB_TLS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct hub_tls hub_tls;
typedef struct hub_tls_conn hub_tls_conn;

/* What a call that moved nothing returns. */
enum { HUB_TLS_FAILED = -1, HUB_TLS_WANT_READ = -2, HUB_TLS_WANT_WRITE = -3 };

/* The server's side: the certificate chain and key in cert_file and
 * key_file (PEM), TLS 1.2 or later. On failure the reason is in detail. */
int hub_tls_new(const char *cert_file, const char *key_file, hub_tls **out, char *detail, size_t detail_len);
void hub_tls_free(hub_tls *t);

/* A session on fd (accepted, non-blocking), which stays the caller's to
 * close after hub_tls_conn_free; NULL when out of memory. */
hub_tls_conn *hub_tls_conn_new(hub_tls *t, int fd);
/* Says goodbye (close_notify, if the socket takes it now) and frees it. */
void hub_tls_conn_free(hub_tls_conn *c);

/* The handshake: 0 once done, or one of the codes above; after
 * HUB_TLS_FAILED, why is in detail. */
int hub_tls_handshake(hub_tls_conn *c, char *detail, size_t detail_len);
/* At most len bytes: how many came (0: the peer closed), or a code. */
ssize_t hub_tls_read(hub_tls_conn *c, void *into, size_t len);
/* What came through the socket and is decrypted already, which no poll of
 * the socket tells of: a read takes it at once. */
int hub_tls_pending(const hub_tls_conn *c);
/* From the front of iov[n]: how many bytes went, or a code. A frame's
 * prefix goes in one record with what follows it. */
ssize_t hub_tls_writev(hub_tls_conn *c, const struct iovec *iov, unsigned n);

#endif

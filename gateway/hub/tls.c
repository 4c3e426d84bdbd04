/*
 * TLS for the hub's own sockets (tls.h).
 */
#include "gateway/hub/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/common.h"
#include "proto/wire.h"

struct hub_tls {
	SSL_CTX *ctx;
};

struct hub_tls_conn {
	SSL *ssl;
	int handshaken;
	int failed; /* after which OpenSSL says no shutdown may be tried */
};

/* OpenSSL's first queued error (the one that says why), then none. */
static void error_text(const char *what, char *detail, size_t detail_len)
{
	unsigned long e = ERR_peek_error();
	char text[256] = "no reason given";

	if (e)
		ERR_error_string_n(e, text, sizeof(text));
	ERR_clear_error();
	snprintf(detail, detail_len, "%s: %s", what, text);
}

int hub_tls_new(const char *cert_file, const char *key_file, hub_tls **out, char *detail, size_t detail_len)
{
	hub_tls *t = calloc(1, sizeof(*t));
	char what[600];

	*out = NULL;
	if (!t)
		return CM_ENOMEM;
	ERR_clear_error();
	if (!(t->ctx = SSL_CTX_new(TLS_server_method()))) {
		error_text("hub TLS", detail, detail_len);
		free(t);
		return CM_EUNAVAIL;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	/* A write may be cut at a record (the socket is non-blocking), and is
	 * called again with the same bytes from wherever hub.c rebuilds them;
	 * an idle connection keeps no buffers (thousands of workers). */
	SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                                 SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION);
	/* Workers dial once and keep their connection: tickets to resume a
	 * session would be bytes sent for nothing. */
	SSL_CTX_set_num_tickets(t->ctx, 0);
	if (SSL_CTX_use_certificate_chain_file(t->ctx, cert_file) != 1) {
		snprintf(what, sizeof(what), "hub TLS with %s", cert_file);
		error_text(what, detail, detail_len);
	} else if (SSL_CTX_use_PrivateKey_file(t->ctx, key_file, SSL_FILETYPE_PEM) != 1 ||
	           SSL_CTX_check_private_key(t->ctx) != 1) {
		snprintf(what, sizeof(what), "hub TLS with %s and %s", cert_file, key_file);
		error_text(what, detail, detail_len);
	} else {
		*out = t;
		return CM_OK;
	}
	hub_tls_free(t);
	return CM_EINVAL;
}

void hub_tls_free(hub_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

hub_tls_conn *hub_tls_conn_new(hub_tls *t, int fd)
{
	hub_tls_conn *c = calloc(1, sizeof(*c));

	if (c && (!(c->ssl = SSL_new(t->ctx)) || SSL_set_fd(c->ssl, fd) != 1)) {
		SSL_free(c->ssl);
		free(c);
		c = NULL;
	}
	ERR_clear_error();
	return c;
}

void hub_tls_conn_free(hub_tls_conn *c)
{
	if (!c)
		return;
	if (c->handshaken && !c->failed)
		SSL_shutdown(c->ssl); /* once: a peer that does not read it misses nothing */
	SSL_free(c->ssl);
	ERR_clear_error();
	free(c);
}

/* What the last call's result r means. */
static int result_code(hub_tls_conn *c, int r)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ: return HUB_TLS_WANT_READ;
	case SSL_ERROR_WANT_WRITE: return HUB_TLS_WANT_WRITE;
	case SSL_ERROR_ZERO_RETURN: return 0; /* close_notify */
	default: c->failed = 1; return HUB_TLS_FAILED;
	}
}

int hub_tls_handshake(hub_tls_conn *c, char *detail, size_t detail_len)
{
	ERR_clear_error();
	int r = SSL_accept(c->ssl);
	if (r == 1) {
		c->handshaken = 1;
		return 0;
	}
	int code = result_code(c, r);
	if (code == 0) { /* a close in the handshake */
		c->failed = 1;
		code = HUB_TLS_FAILED;
	}
	if (code == HUB_TLS_FAILED)
		error_text("TLS handshake", detail, detail_len);
	return code;
}

ssize_t hub_tls_read(hub_tls_conn *c, void *into, size_t len)
{
	size_t n = 0;

	ERR_clear_error();
	int r = SSL_read_ex(c->ssl, into, len, &n);
	if (r == 1)
		return (ssize_t)n;
	int code = result_code(c, r); /* a peer gone without close_notify: failed */
	ERR_clear_error();
	return code;
}

int hub_tls_pending(const hub_tls_conn *c)
{
	return SSL_has_pending(c->ssl);
}

ssize_t hub_tls_writev(hub_tls_conn *c, const struct iovec *iov, unsigned n)
{
	uint8_t joined[WIRE_RECORD_MAX];
	size_t len = 0, wrote = 0;
	const void *from = n ? wire_next_write(iov, n, joined, &len) : NULL;

	if (!len)
		return 0;
	ERR_clear_error();
	int r = SSL_write_ex(c->ssl, from, len, &wrote);
	if (r == 1)
		return (ssize_t)wrote;
	int code = result_code(c, r);
	ERR_clear_error();
	return code ? code : HUB_TLS_FAILED; /* a close_notify came: no more answers go */
}

/*
 * TLS to the hub (hub_tls.h).
 */
#include "worker/hub_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nng/nng.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

struct hub_tls {
	SSL_CTX *ctx;
	char server_name[256];
	int server_is_ip; /* no SNI for an address */
	cm_log_limit untrusted_log; /* a line a second at most: dialed again and again */
};

/* Every certificate of the PEM text, trusted. */
static int trust_pem(SSL_CTX *ctx, const char *pem)
{
	BIO *bio = BIO_new_mem_buf(pem, -1);
	STACK_OF(X509_INFO) *infos = bio ? PEM_X509_INFO_read_bio(bio, NULL, NULL, NULL) : NULL;
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	int added = 0;

	for (int i = 0; infos && i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *info = sk_X509_INFO_value(infos, i);
		if (info->x509 && X509_STORE_add_cert(store, info->x509) == 1)
			added++;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	BIO_free(bio);
	return added > 0;
}

int hub_tls_new(const worker_config *cfg, hub_tls **out, char *why, size_t why_len)
{
	const char *at = strstr(cfg->hub, "://");
	char host[256], port[6];
	unsigned char ip[16];
	hub_tls *t;

	*out = NULL;
	/* The URL's host is the name its certificate must carry, unless told. */
	if (!at || cm_host_port(at + 3, strlen(at + 3), host, sizeof(host), port) != CM_OK) {
		snprintf(why, why_len, "hub %s: not a HOST:PORT", cfg->hub);
		return NNG_EADDRINVAL;
	}
	if (!(t = calloc(1, sizeof(*t))))
		return NNG_ENOMEM;
	snprintf(t->server_name, sizeof(t->server_name), "%s",
	         cfg->hub_server_name && cfg->hub_server_name[0] ? cfg->hub_server_name : host);
	t->server_is_ip = inet_pton(AF_INET, t->server_name, ip) == 1 || inet_pton(AF_INET6, t->server_name, ip) == 1;
	if (!(t->ctx = SSL_CTX_new(TLS_client_method()))) {
		free(t);
		return NNG_ENOMEM;
	}
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	const char *pem = cfg->hub_ca_pem && cfg->hub_ca_pem[0] ? cfg->hub_ca_pem : NULL;
	const char *file = cfg->hub_ca_file && cfg->hub_ca_file[0] ? cfg->hub_ca_file : NULL;
	const char *wrong = NULL;
	if (!pem && !file)
		wrong = "a tls+tcp:// hub needs its CA (STRAND_HUB_CA_PEM or STRAND_HUB_CA): without one the hub "
		        "could be anyone";
	else if (pem ? !trust_pem(t->ctx, pem) : SSL_CTX_load_verify_locations(t->ctx, file, NULL) != 1)
		wrong = "the hub's CA holds no certificate that reads";
	ERR_clear_error();
	if (wrong) {
		snprintf(why, why_len, "%s%s%s", wrong, file && !pem ? ": " : "", file && !pem ? file : "");
		hub_tls_free(t);
		return NNG_EINVAL;
	}
	*out = t;
	return 0;
}

void hub_tls_free(hub_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

int hub_tls_start(hub_tls *t, int fd, SSL **out)
{
	SSL *ssl = SSL_new(t->ctx);
	int rv = 0;

	*out = NULL;
	ERR_clear_error();
	if (!ssl)
		return NNG_ENOMEM;
	/* The name checked in the certificate (OpenSSL takes an address as
	 * one); SNI only for a name. */
	if (SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, t->server_name) != 1 ||
	    (!t->server_is_ip && SSL_set_tlsext_host_name(ssl, t->server_name) != 1)) {
		rv = NNG_ENOMEM;
	} else if (SSL_connect(ssl) != 1) {
		int err = errno;
		long verified = SSL_get_verify_result(ssl);
		if (verified != X509_V_OK) {
			cm_log_limited(&t->untrusted_log, CM_LOG_WARN,
			               "hub: its certificate is not one to trust for %s: %s", t->server_name,
			               X509_verify_cert_error_string(verified));
			rv = NNG_EPEERAUTH;
		} else {
			/* The hub went, or a timeout (the socket's): dialed again. */
			rv = err == EAGAIN || err == EWOULDBLOCK ? NNG_ETIMEDOUT : NNG_ECONNSHUT;
		}
	}
	ERR_clear_error();
	if (rv) {
		SSL_free(ssl);
		return rv;
	}
	*out = ssl;
	return 0;
}

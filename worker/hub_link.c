/*
 * Dialing the gateway's hub, in plain TCP or TLS. With a tls+tcp:// hub the
 * worker trusts exactly the CA the gateway handed it (STRAND_HUB_CA_PEM, or
 * the file STRAND_HUB_CA for a worker started by hand on another host) and
 * checks the hub's certificate against the server name: the hub URL's host,
 * or STRAND_HUB_SERVER_NAME (mbedtls matches DNS names, not IP addresses).
 */
#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "worker/worker.h"

/* The host part of "tls+tcp://HOST:PORT" into out. */
static void url_host(const char *url, char *out, size_t out_len)
{
	const char *h = strstr(url, "://");
	const char *end;

	h = h ? h + 3 : url;
	if (*h == '[') {
		h++;
		end = strchr(h, ']');
	} else {
		end = strrchr(h, ':');
	}
	snprintf(out, out_len, "%.*s", (int)(end ? (size_t)(end - h) : strlen(h)), h);
}

static int tls_config(const worker_config *cfg, nng_tls_config **out)
{
	nng_tls_config *t;
	char host[256];
	int rv;

	if ((rv = nng_tls_config_alloc(&t, NNG_TLS_MODE_CLIENT)) != 0)
		return rv;
	url_host(cfg->hub, host, sizeof(host));
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

int worker_hub_dial(nng_socket sock, const worker_config *cfg, int flags)
{
	nng_tls_config *t = NULL;
	nng_dialer d;
	int rv;

	if ((rv = nng_dialer_create(&d, sock, cfg->hub)) != 0)
		return rv;
	if (strncmp(cfg->hub, "tls+", 4) == 0) {
		if ((rv = tls_config(cfg, &t)) != 0 || (rv = nng_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, t)) != 0) {
			if (t)
				nng_tls_config_free(t);
			nng_dialer_close(d);
			return rv;
		}
		nng_tls_config_free(t); /* the dialer holds its own reference */
	}
	if ((rv = nng_dialer_start(d, flags)) != 0)
		nng_dialer_close(d);
	return rv;
}

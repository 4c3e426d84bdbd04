/*
 * HOST:PORT as the gateway's --http and a worker's hub URL write it, and
 * the hub URLs served on plain sockets. One parser for the worker and the
 * gateway, so that they agree on what an address is. (libstrand
 * has its own, for URLs whose port may be left out: it links nothing of
 * this library.)
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/common.h"

int cm_host_port(const char *text, size_t len, char *host, size_t host_len, char port[6])
{
	const char *name = text, *end = text + len, *colon;
	size_t name_len;

	if (len && *text == '[') {
		const char *close = memchr(text, ']', len);
		if (!close || close + 1 == end || close[1] != ':')
			return CM_EINVAL;
		name = text + 1;
		name_len = (size_t)(close - name);
		colon = close + 1;
	} else {
		/* An IPv6 address goes in brackets: the port is after the only colon. */
		if (!(colon = memchr(text, ':', len)) || memchr(colon + 1, ':', (size_t)(end - colon - 1)))
			return CM_EINVAL;
		name_len = (size_t)(colon - text);
	}
	size_t digits = (size_t)(end - colon - 1);
	long n = 0;
	if (name_len == 0 || name_len >= host_len || digits == 0 || digits > 5)
		return CM_EINVAL;
	for (const char *d = colon + 1; d < end; d++) {
		if (*d < '0' || *d > '9')
			return CM_EINVAL;
		n = n * 10 + (*d - '0');
	}
	if (n < 1 || n > 65535)
		return CM_EINVAL;
	snprintf(host, host_len, "%.*s", (int)name_len, name);
	snprintf(port, 6, "%ld", n);
	return CM_OK;
}

size_t cm_socket_url(const char *url, int *family, int *tls)
{
	static const struct {
		const char *scheme;
		int family;
	} schemes[] = {{"tcp://", AF_UNSPEC}, {"tcp4://", AF_INET}, {"tcp6://", AF_INET6}, {"ipc://", AF_UNIX}};
	size_t in_tls = strncmp(url, "tls+tcp", 7) == 0 ? 4 : 0;

	*tls = in_tls != 0;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strncmp(url + in_tls, schemes[i].scheme, strlen(schemes[i].scheme)) == 0) {
			*family = schemes[i].family;
			return in_tls + strlen(schemes[i].scheme);
		}
	return 0;
}

int cm_unix_address(const char *path, struct sockaddr_un *a)
{
	size_t len = strlen(path);

	*a = (struct sockaddr_un){.sun_family = AF_UNIX};
	if (len == 0 || len >= sizeof(a->sun_path))
		return CM_EINVAL;
	memcpy(a->sun_path, path, len + 1);
	return CM_OK;
}

/*
 * The worker's socket to the hub (hub_socket.h). Timeouts are the
 * socket's own (SO_RCVTIMEO, SO_SNDTIMEO), so that a wait is one blocking
 * call, set again only when a caller asks for another; TLS reads and
 * writes block on the same socket with the same timeouts.
 */
#define _GNU_SOURCE /* getaddrinfo, NI_MAXHOST, SOCK_CLOEXEC under -std=c11 */
#include "worker/hub_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nng/nng.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/common.h"
#include "proto/wire.h"

/* What a frame's first read takes besides its prefix: a batch of a few
 * tasks, or an answer to a queue call, whole in one call. */
#define FIRST_READ 4096

static int nng_error(int err)
{
	switch (err) {
	case EAGAIN:
	case ETIMEDOUT: return NNG_ETIMEDOUT;
	case ECONNREFUSED: return NNG_ECONNREFUSED;
	case ECONNRESET: return NNG_ECONNRESET;
	case EPIPE: return NNG_ECONNSHUT;
	case ENOMEM: return NNG_ENOMEM;
	default: return NNG_ESYSERR | err;
	}
}

static int set_timeout(hub_socket *s, int timeout_ms)
{
	struct timeval tv;

	if (timeout_ms <= 0) /* 0 would be none at all */
		timeout_ms = 1;
	if (s->timeout_ms == timeout_ms)
		return 0;
	tv = (struct timeval){.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
	if (setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
		return nng_error(errno);
	s->timeout_ms = timeout_ms;
	return 0;
}

/* Connects fd (non-blocking, TCP) to addr within timeout_ms; leaves it
 * blocking. */
static int connect_within(int fd, const struct sockaddr *addr, socklen_t len, int timeout_ms)
{
	int err = 0;
	socklen_t err_len = sizeof(err);

	if (connect(fd, addr, len) != 0) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		if (errno != EINPROGRESS)
			return nng_error(errno);
		int n;
		while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		if (n == 0)
			return NNG_ETIMEDOUT;
		if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0)
			return nng_error(errno);
		if (err)
			return nng_error(err);
	}
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0 ? 0 : nng_error(errno);
}

static int dial_ipc(hub_socket *s, const char *path, int timeout_ms)
{
	struct sockaddr_un a;
	int rv;

	if (cm_unix_address(path, &a) != CM_OK)
		return NNG_EADDRINVAL;
	if ((s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return nng_error(errno);
	/* A local connect waits only while the listener's backlog is full,
	 * within the socket's send timeout. */
	if ((rv = set_timeout(s, timeout_ms)) == 0 && connect(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0)
		rv = nng_error(errno);
	if (rv != 0)
		hub_socket_close(s);
	return rv;
}

static int dial_tcp(hub_socket *s, const char *at, int family, int timeout_ms)
{
	struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	struct addrinfo *found = NULL;
	char host[NI_MAXHOST], port[6];
	int rv, one = 1;

	if (cm_host_port(at, strlen(at), host, sizeof(host), port) != CM_OK)
		return NNG_EADDRINVAL;
	if (getaddrinfo(host, port, &hints, &found) != 0)
		return NNG_EADDRINVAL;
	rv = NNG_EADDRINVAL;
	int64_t give_up = cm_now_ms() + timeout_ms;
	for (struct addrinfo *a = found; a; a = a->ai_next) {
		int left = (int)(give_up - cm_now_ms());
		if (left <= 0) {
			rv = NNG_ETIMEDOUT;
			break;
		}
		if ((s->fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
			rv = nng_error(errno);
			continue;
		}
		/* Frames are whole when sent: nothing to wait for (nng's default). */
		setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if ((rv = connect_within(s->fd, a->ai_addr, a->ai_addrlen, left)) == 0)
			break;
		hub_socket_close(s);
	}
	freeaddrinfo(found);
	return rv;
}

int hub_socket_dial(hub_socket *s, const char *url, int timeout_ms, hub_tls *tls)
{
	int family, in_tls, rv;
	size_t scheme = cm_socket_url(url, &family, &in_tls);

	s->fd = -1;
	s->timeout_ms = 0; /* none set on a new socket */
	s->tls = NULL;
	if (!scheme || (in_tls && !tls))
		return NNG_EADDRINVAL;
	if ((rv = family == AF_UNIX ? dial_ipc(s, url + scheme, timeout_ms)
	                            : dial_tcp(s, url + scheme, family, timeout_ms)) != 0 ||
	    !in_tls)
		return rv;
	if ((rv = set_timeout(s, timeout_ms)) != 0 || (rv = hub_tls_start(tls, s->fd, &s->tls)) != 0)
		hub_socket_close(s);
	return rv;
}

/* What a TLS read or write that failed (on this blocking socket) means:
 * 0 to call it again (a signal came), or nng's error. OpenSSL takes the
 * socket's timeout (EAGAIN) for a read or write to try again. */
static int tls_failure(SSL *tls)
{
	int err = errno, why = SSL_get_error(tls, 0);

	ERR_clear_error();
	if (why != SSL_ERROR_WANT_READ && why != SSL_ERROR_WANT_WRITE && why != SSL_ERROR_SYSCALL)
		return NNG_ECONNSHUT; /* a close_notify, or what TLS refused */
	if (err == EINTR)
		return 0;
	return err == EAGAIN || err == EWOULDBLOCK ? NNG_ETIMEDOUT : NNG_ECONNSHUT;
}

/* Sends len bytes of p on a TLS session: all of them, or an error. */
static int tls_send(SSL *tls, const void *p, size_t len)
{
	size_t wrote = 0;
	int rv;

	while (SSL_write_ex(tls, p, len, &wrote) != 1)
		if ((rv = tls_failure(tls)) != 0)
			return rv;
	return 0;
}

int hub_socket_send(hub_socket *s, const uint8_t *frame, size_t len, int timeout_ms)
{
	uint8_t prefix[WIRE_PREFIX], joined[WIRE_RECORD_MAX];
	struct iovec iov[2] = {{.iov_base = prefix, .iov_len = WIRE_PREFIX},
	                       {.iov_base = (void *)frame, .iov_len = len}};
	unsigned niov = len ? 2 : 1;
	int rv;

	if ((rv = set_timeout(s, timeout_ms)) != 0)
		return rv;
	wire_prefix_put(prefix, len);
	while (niov) {
		size_t went;
		if (s->tls) {
			const void *from = wire_next_write(iov, niov, joined, &went);
			if ((rv = tls_send(s->tls, from, went)) != 0)
				return rv;
		} else {
			struct msghdr m = {.msg_iov = iov, .msg_iovlen = niov};
			ssize_t n = sendmsg(s->fd, &m, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return nng_error(errno);
			went = (size_t)n;
		}
		wire_iov_advance(iov, &niov, went);
	}
	return 0;
}

/* Reads what comes, up to len bytes, waiting up to the socket's timeout. */
static int read_some(const hub_socket *s, uint8_t *into, size_t len, size_t *got)
{
	ssize_t n;

	if (s->tls) {
		int rv;
		while (SSL_read_ex(s->tls, into, len, got) != 1)
			if ((rv = tls_failure(s->tls)) != 0)
				return rv;
		return 0;
	}
	while ((n = recv(s->fd, into, len, 0)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return nng_error(errno);
	if (n == 0)
		return NNG_ECONNSHUT;
	*got = (size_t)n;
	return 0;
}

int hub_socket_recv(hub_socket *s, size_t max, int timeout_ms, uint8_t **frame, size_t *len)
{
	uint8_t first[WIRE_PREFIX + FIRST_READ];
	size_t got = 0, n, have;
	uint8_t *buf;
	int rv;

	if ((rv = set_timeout(s, timeout_ms)) != 0)
		return rv;
	while (got < WIRE_PREFIX) {
		if ((rv = read_some(s, first + got, sizeof(first) - got, &n)) != 0)
			return rv;
		got += n;
	}
	if ((n = wire_prefix_get(first)) > max)
		return NNG_EMSGSIZE;
	if ((have = got - WIRE_PREFIX) > n)
		return NNG_EPROTO; /* a second frame nobody asked for */
	if (!(buf = malloc(n ? n : 1)))
		return NNG_ENOMEM;
	memcpy(buf, first + WIRE_PREFIX, have);
	while (have < n) {
		size_t more;
		if ((rv = read_some(s, buf + have, n - have, &more)) != 0) {
			free(buf);
			return rv;
		}
		have += more;
	}
	*frame = buf;
	*len = n;
	return 0;
}

int hub_socket_over(const hub_socket *s)
{
	struct pollfd p = {.fd = s->fd, .events = POLLIN};

	/* Readable between exchanges: its end, an error, or bytes unasked (in
	 * TLS, a record: the hub's close_notify, say). */
	return (s->tls && SSL_has_pending(s->tls)) || poll(&p, 1, 0) != 0;
}

void hub_socket_close(hub_socket *s)
{
	SSL_free(s->tls); /* no close_notify: the hub takes the end as it comes */
	s->tls = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->timeout_ms = 0;
}

/*
 * The hub's listener and its thread (poll.h).
 */
#define _GNU_SOURCE /* accept4, getaddrinfo, NI_MAXHOST under -std=c11 */
#include "gateway/hub/poll.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/common.h"

#define TICK_MS 1000
#define EVENTS 64

struct hub_poll {
	hub_poll_calls calls;
	int listener, tcp;
	char ipc_path[108]; /* where the listener of an ipc:// hub is, removed with it */
	int epoll;
	int wake; /* an eventfd: hub_poll_stop */
	atomic_int stopping;
	pthread_t thread;
	int started;
	cm_log_limit accept_log; /* a line a second at most, EMFILE under a flood */
};

/* Whether what is at a is a socket nobody listens on any more (a gateway
 * that was killed leaves it); errno is EADDRINUSE when not. Any other
 * file there stays (a connect to it is refused as well). */
static int nobody_listens(const struct sockaddr_un *a)
{
	struct stat sb;
	int probe = -1, stale = lstat(a->sun_path, &sb) == 0 && S_ISSOCK(sb.st_mode) &&
	                        (probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0 &&
	                        connect(probe, (const struct sockaddr *)a, sizeof(*a)) != 0 && errno == ECONNREFUSED;

	if (probe >= 0)
		close(probe);
	if (!stale)
		errno = EADDRINUSE;
	return stale;
}

/* A Unix socket at path, taking the place of one nobody listens on. */
static int listen_ipc(const char *path, char *detail, size_t detail_len)
{
	struct sockaddr_un a;
	int fd;

	if (cm_unix_address(path, &a) != CM_OK) {
		snprintf(detail, detail_len, "hub ipc:// path must be 1 to %zu bytes", sizeof(a.sun_path) - 1);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (errno != EADDRINUSE || !nobody_listens(&a))
			goto fail;
		unlink(path);
		if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
			goto fail;
	}
	/* Workers that run as uids of their own (the local backend's sandbox)
	 * must be able to connect, as anyone on this host can to a tcp:// hub
	 * on loopback: every frame still needs a worker's secret. */
	if (listen(fd, SOMAXCONN) != 0 || chmod(path, 0666) != 0)
		goto fail;
	return fd;
fail:
	snprintf(detail, detail_len, "cannot listen on hub ipc://%s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

static int listen_tcp(const char *url, const char *at, int family, char *detail, size_t detail_len)
{
	struct addrinfo hints = {
	        .ai_family = family, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *found = NULL;
	char host[NI_MAXHOST], port[6];
	int fd = -1, err = 0, one = 1;

	if (cm_host_port(at, strlen(at), host, sizeof(host), port) != CM_OK) {
		snprintf(detail, detail_len, "hub URL must be tcp://HOST:PORT ([V6]:PORT, port 1 to 65535), not %s",
		         url);
		return -1;
	}
	if ((err = getaddrinfo(host, port, &hints, &found)) != 0) {
		snprintf(detail, detail_len, "cannot listen on hub %s: %s", url, gai_strerror(err));
		return -1;
	}
	for (struct addrinfo *a = found; a && fd < 0; a = a->ai_next) {
		if ((fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0) {
			err = errno;
			continue;
		}
		/* A restarted gateway listens again at once, past the last one's
		 * connections in TIME_WAIT. */
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
		    bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(found);
	if (fd < 0)
		snprintf(detail, detail_len, "cannot listen on hub %s: %s", url, strerror(err));
	return fd;
}

static void accept_all(hub_poll *p)
{
	for (;;) {
		struct sockaddr_storage addr;
		socklen_t len = sizeof(addr);
		int fd = accept4(p->listener, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN) { /* out of descriptors, say: do not spin on it */
				cm_log_limited(&p->accept_log, CM_LOG_WARN, "hub: accepting a connection: %s",
				               strerror(errno));
				usleep(10 * 1000);
			}
			return;
		}
		/* Answers are small and each waited for: none waits for more. */
		if (p->tcp)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		p->calls.accepted(p->calls.ctx, fd, &addr, len);
	}
}

static void *poll_main(void *arg)
{
	hub_poll *p = arg;
	struct epoll_event ev[EVENTS];
	int64_t next_tick = cm_now_ms() + TICK_MS;

	pthread_setname_np(pthread_self(), "hub");

	while (!atomic_load(&p->stopping)) {
		int64_t wait = next_tick - cm_now_ms();
		int n = epoll_wait(p->epoll, ev, EVENTS, wait > 0 ? (int)wait : 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &p->wake)
				continue; /* stopping, looked at above */
			if (ev[i].data.ptr == &p->listener)
				accept_all(p);
			else
				p->calls.ready(p->calls.ctx, ev[i].data.ptr);
		}
		if (cm_now_ms() >= next_tick) {
			p->calls.tick(p->calls.ctx);
			next_tick = cm_now_ms() + TICK_MS;
		}
	}
	return NULL;
}

int hub_poll_start(const char *url, const hub_poll_calls *calls, hub_poll **out, char *detail, size_t detail_len)
{
	int family, tls;
	size_t scheme = cm_socket_url(url, &family, &tls);
	hub_poll *p;
	struct epoll_event listen_ev = {.events = EPOLLIN}, wake_ev = {.events = EPOLLIN};

	if (!scheme) {
		snprintf(detail, detail_len, "hub %s: not a tcp://, tls+tcp:// or ipc:// URL", url);
		return CM_EINVAL;
	}
	if (!(p = calloc(1, sizeof(*p))))
		return CM_ENOMEM;
	p->calls = *calls;
	p->epoll = p->wake = -1;
	p->tcp = family != AF_UNIX;
	p->listener = p->tcp ? listen_tcp(url, url + scheme, family, detail, detail_len)
	                     : listen_ipc(url + scheme, detail, detail_len);
	if (!p->tcp && p->listener >= 0)
		snprintf(p->ipc_path, sizeof(p->ipc_path), "%s", url + scheme); /* it fits: bound */
	listen_ev.data.ptr = &p->listener;
	wake_ev.data.ptr = &p->wake;
	*out = p; /* before the thread's first call, which may arm with it */
	if (p->listener < 0 || (p->epoll = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    (p->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
	    epoll_ctl(p->epoll, EPOLL_CTL_ADD, p->listener, &listen_ev) != 0 ||
	    epoll_ctl(p->epoll, EPOLL_CTL_ADD, p->wake, &wake_ev) != 0 ||
	    (errno = pthread_create(&p->thread, NULL, poll_main, p)) != 0) {
		if (p->listener >= 0)
			snprintf(detail, detail_len, "hub %s: %s", url, strerror(errno));
		hub_poll_stop(p);
		*out = NULL;
		return CM_EUNAVAIL;
	}
	p->started = 1;
	return CM_OK;
}

int hub_poll_arm(hub_poll *p, int fd, void *conn, int out, int *added)
{
	struct epoll_event ev = {.events = (out ? EPOLLOUT : EPOLLIN) | EPOLLONESHOT, .data.ptr = conn};

	if (epoll_ctl(p->epoll, *added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0)
		return errno;
	*added = 1;
	return 0;
}

void hub_poll_stop(hub_poll *p)
{
	if (!p)
		return;
	if (p->started) {
		uint64_t one = 1;
		atomic_store(&p->stopping, 1);
		if (write(p->wake, &one, sizeof(one)) < 0)
			cm_warn("hub: waking its thread to stop: %s", strerror(errno));
		pthread_join(p->thread, NULL);
	}
	if (p->listener >= 0)
		close(p->listener);
	if (p->ipc_path[0])
		unlink(p->ipc_path);
	if (p->epoll >= 0)
		close(p->epoll);
	if (p->wake >= 0)
		close(p->wake);
	free(p);
}

/* The front door; see front_door.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/http/front_door.h"

#define SWEEP_MS 250

typedef struct waiting {
	int fd;
	int64_t deadline_ms;
	struct sockaddr_storage addr;
	socklen_t addr_len;
} waiting;

struct front_door {
	int listen_fd, epoll_fd, wake_fd;
	int tls, per_client, max_waiting;
	int64_t idle_ms;
	struct MHD_Daemon *daemon;
	deadlines *deadlines;
	waiting *w; /* max_waiting slots; fd -1: free */
	int nwaiting;
	pthread_t thread;
	int started;
};

/* The answer to bytes that are not HTTP. */
static const char not_http[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nConnection: close\r\n"
        "Content-Length: %zu\r\n\r\n%s";
static const char not_http_body[] =
        "{\"type\":\"urn:strand:problem:bad-request\",\"title\":\"Bad Request\",\"status\":400,\"detail\":\"the "
        "request is not HTTP (a TLS handshake to a plain HTTP port, or bytes of something else): send "
        "METHOD /path HTTP/1.1\",\"instance\":\"\"}";

static int same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		              &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return 0;
}

static void forget(front_door *f, waiting *w, int close_it)
{
	epoll_ctl(f->epoll_fd, EPOLL_CTL_DEL, w->fd, NULL);
	if (close_it)
		close(w->fd);
	w->fd = -1;
	f->nwaiting--;
}

/* To libmicrohttpd, which closes it if its own limits say so. */
static void hand_over(front_door *f, int fd, const struct sockaddr_storage *addr, socklen_t len)
{
	deadlines_handing_over(f->deadlines);
	deadlines_handed_over(f->deadlines,
	                      MHD_add_connection(f->daemon, fd, (const struct sockaddr *)addr, len) == MHD_YES);
}

/* Its first byte is in: HTTP begins with a method, in capitals. */
static void first_byte(front_door *f, waiting *w)
{
	unsigned char c;
	ssize_t n = recv(w->fd, &c, 1, MSG_PEEK);
	int fd = w->fd;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == 1 && c >= 'A' && c <= 'Z') {
		struct sockaddr_storage addr = w->addr;
		socklen_t len = w->addr_len;
		forget(f, w, 0);
		hand_over(f, fd, &addr, len);
		return;
	}
	if (n == 1) {
		char answer[sizeof(not_http) + sizeof(not_http_body) + 32];
		int len = snprintf(answer, sizeof(answer), not_http, strlen(not_http_body), not_http_body);
		if (send(fd, answer, (size_t)len, MSG_NOSIGNAL) < 0) {
			/* gone already */
		}
		shutdown(fd, SHUT_WR);
	}
	forget(f, w, 1);
}

static void accept_all(front_door *f, int64_t now)
{
	for (;;) {
		struct sockaddr_storage addr;
		socklen_t len = sizeof(addr);
		int fd = accept4(f->listen_fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		waiting *slot = NULL;
		int same = 0;

		if (fd < 0)
			return; /* EAGAIN, or out of files: the listen queue keeps them */
		if (f->tls) {
			hand_over(f, fd, &addr, len);
			continue;
		}
		for (int i = 0; i < f->max_waiting; i++) {
			if (f->w[i].fd < 0)
				slot = slot ? slot : &f->w[i];
			else
				same += same_address(&f->w[i].addr, &addr);
		}
		if (!slot || same >= f->per_client) {
			close(fd); /* as libmicrohttpd refuses one past its limits */
			continue;
		}
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = slot};
		if (epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			close(fd);
			continue;
		}
		slot->fd = fd;
		slot->addr = addr;
		slot->addr_len = len;
		slot->deadline_ms = now + f->idle_ms;
		f->nwaiting++;
		first_byte(f, slot); /* often in already: no wait for epoll */
	}
}

static void *run(void *arg)
{
	front_door *f = arg;
	struct epoll_event ev[64];

	pthread_setname_np(pthread_self(), "front-door");

	for (;;) {
		int n = epoll_wait(f->epoll_fd, ev, 64, SWEEP_MS);
		int64_t now = cm_now_ms();
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &f->wake_fd)
				return NULL;
			if (ev[i].data.ptr == &f->listen_fd)
				accept_all(f, now);
			else if (((waiting *)ev[i].data.ptr)->fd >= 0)
				first_byte(f, ev[i].data.ptr);
		}
		for (int i = 0; i < f->max_waiting && f->nwaiting; i++)
			if (f->w[i].fd >= 0 && now >= f->w[i].deadline_ms)
				forget(f, &f->w[i], 1); /* silent: as libmicrohttpd's idle timeout */
	}
}

int front_door_open(const struct sockaddr *addr, socklen_t len, int tls, int64_t idle_ms, int per_client,
                    int max_waiting, front_door **out, char *detail, size_t detail_len)
{
	front_door *f = calloc(1, sizeof(*f));
	int one = 1;

	if (!f || !(f->w = calloc((size_t)max_waiting, sizeof(waiting)))) {
		free(f);
		return CM_ENOMEM;
	}
	for (int i = 0; i < max_waiting; i++)
		f->w[i].fd = -1;
	f->listen_fd = f->epoll_fd = f->wake_fd = -1;
	f->tls = tls;
	f->idle_ms = idle_ms;
	f->per_client = per_client;
	f->max_waiting = max_waiting;
	f->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->listen_fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->listen_fd >= 0)
		setsockopt(f->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (f->epoll_fd < 0 || f->wake_fd < 0 || f->listen_fd < 0 || bind(f->listen_fd, addr, len) != 0 ||
	    listen(f->listen_fd, SOMAXCONN) != 0) {
		snprintf(detail, detail_len, "%s", strerror(errno));
		front_door_close(f);
		return CM_EUNAVAIL;
	}
	struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &f->listen_fd};
	struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &f->wake_fd};
	epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, f->listen_fd, &lev);
	epoll_ctl(f->epoll_fd, EPOLL_CTL_ADD, f->wake_fd, &wev);
	*out = f;
	return CM_OK;
}

int front_door_start(front_door *f, struct MHD_Daemon *daemon, deadlines *d)
{
	f->daemon = daemon;
	f->deadlines = d;
	if (pthread_create(&f->thread, NULL, run, f) != 0)
		return CM_ENOMEM;
	f->started = 1;
	return CM_OK;
}

void front_door_close(front_door *f)
{
	uint64_t one = 1;

	if (!f)
		return;
	if (f->started) {
		if (write(f->wake_fd, &one, sizeof(one)) < 0) {
			/* an eventfd write fails only on overflow */
		}
		pthread_join(f->thread, NULL);
		/* What came before the stop is answered: the listen queue and
		 * those waiting here go on if their request has begun. */
		accept_all(f, cm_now_ms());
		for (int i = 0; i < f->max_waiting; i++)
			if (f->w[i].fd >= 0)
				first_byte(f, &f->w[i]);
	}
	for (int i = 0; i < f->max_waiting; i++)
		if (f->w && f->w[i].fd >= 0)
			close(f->w[i].fd);
	if (f->listen_fd >= 0)
		close(f->listen_fd);
	if (f->epoll_fd >= 0)
		close(f->epoll_fd);
	if (f->wake_fd >= 0)
		close(f->wake_fd);
	free(f->w);
	free(f);
}

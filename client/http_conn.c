/* libstrand's keep-alive connection to a plain http:// gateway; see
 * http_conn.h. Runs on the calling thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "client/http_conn.h"

/* A request's line and headers: its path is the longest part. */
#define REQUEST_HEAD_MAX 4096
#define READ_SIZE 65536

struct http_conn {
	char host[300]; /* the URL's HOST[:PORT], for the Host header */
	char node[256]; /* HOST without brackets, for getaddrinfo */
	char service[8]; /* PORT */
	char prefix[512]; /* the URL's path, before each request's */
	int fd; /* -1 while closed */
	http_reply reply;
	char in[READ_SIZE];
};

/* Bytes a URL's host, port or path may hold: visible ASCII. */
static int visible(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

/* HOST[:PORT] or [V6][:PORT] in p[0..len) into c. */
static int authority(http_conn *c, const char *p, size_t len)
{
	const char *node = p, *port = NULL, *end = p + len;
	size_t node_len;

	if (len == 0 || len >= sizeof(c->host) || !visible(p, len) || memchr(p, '@', len))
		return -1;
	if (*p == '[') {
		const char *close = memchr(p, ']', len);
		if (!close)
			return -1;
		node = p + 1;
		node_len = (size_t)(close - node);
		if (close + 1 < end) {
			if (close[1] != ':')
				return -1;
			port = close + 2;
		}
	} else {
		const char *colon = memchr(p, ':', len);
		node_len = colon ? (size_t)(colon - p) : len;
		port = colon ? colon + 1 : NULL;
	}
	if (node_len == 0 || node_len >= sizeof(c->node))
		return -1;
	if (port) {
		size_t port_len = (size_t)(end - port);
		long n = 0;
		if (port_len == 0 || port_len > 5)
			return -1;
		for (size_t i = 0; i < port_len; i++) {
			if (port[i] < '0' || port[i] > '9')
				return -1;
			n = n * 10 + (port[i] - '0');
		}
		if (n < 1 || n > 65535)
			return -1;
		snprintf(c->service, sizeof(c->service), "%ld", n);
	} else {
		snprintf(c->service, sizeof(c->service), "80");
	}
	snprintf(c->host, sizeof(c->host), "%.*s", (int)len, p);
	snprintf(c->node, sizeof(c->node), "%.*s", (int)node_len, node);
	return 0;
}

http_conn *http_conn_new(const char *url)
{
	http_conn *c;

	if (strncasecmp(url, "http://", 7) != 0)
		return NULL;
	const char *p = url + 7;
	size_t auth_len = strcspn(p, "/?#");
	const char *path = p + auth_len;
	if (strpbrk(path, "?#") || strlen(path) >= sizeof(((http_conn *)0)->prefix) || !visible(path, strlen(path)))
		return NULL;
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	if (authority(c, p, auth_len) != 0) {
		free(c);
		return NULL;
	}
	snprintf(c->prefix, sizeof(c->prefix), "%s", path);
	c->fd = -1;
	return c;
}

static void drop(http_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

void http_conn_free(http_conn *c)
{
	if (!c)
		return;
	drop(c);
	free(c);
}

static int connect_to(http_conn *c, char *why, size_t why_len)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *list;
	int rc = getaddrinfo(c->node, c->service, &hints, &list), err = ECONNREFUSED;

	if (rc != 0) {
		snprintf(why, why_len, "cannot resolve %s: %s", c->node, gai_strerror(rc));
		return -1;
	}
	for (struct addrinfo *a = list; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol), one = 1;
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
			/* A request is one write and its answer is awaited: nothing to
			 * gather, and Nagle would hold a second segment back. */
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			c->fd = fd;
			freeaddrinfo(list);
			return 0;
		}
		err = errno;
		close(fd);
	}
	freeaddrinfo(list);
	snprintf(why, why_len, "cannot connect to %s: %s", c->host, strerror(err));
	return -1;
}

typedef enum sent { SENT_ALL, SENT_ANSWERED_FIRST, SENT_FAILED } sent;

/* Sends iov[0..n) (entries not empty). The socket blocks, but the sends do
 * not: while the peer takes nothing, it is watched for an answer too (a
 * gateway refuses a body over its cap before reading it all). */
static sent send_all(int fd, struct iovec *iov, int n)
{
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};

	while (m.msg_iovlen) {
		ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return SENT_FAILED;
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return SENT_FAILED;
			if (p.revents & POLLIN)
				return SENT_ANSWERED_FIRST;
			if ((p.revents & (POLLERR | POLLHUP)) && !(p.revents & POLLOUT)) {
				errno = ECONNRESET;
				return SENT_FAILED;
			}
			continue;
		}
		while (k > 0) {
			if ((size_t)k < m.msg_iov->iov_len) {
				m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + k;
				m.msg_iov->iov_len -= (size_t)k;
				break;
			}
			k -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
	}
	return SENT_ALL;
}

/* Reads the answer to what was sent. Returns its status, or 0 with why
 * filled and *again set when nothing of it came (on a connection that had
 * served before, the gateway closed it meanwhile: the request may go once
 * more). */
static long read_answer(http_conn *c, int head_request, http_body *body, int *again, char *why, size_t why_len)
{
	http_reply_verdict v = HTTP_REPLY_MORE;
	size_t got = 0, used;

	http_reply_init(&c->reply, body, head_request);
	while (v == HTTP_REPLY_MORE) {
		ssize_t k = recv(c->fd, c->in, sizeof(c->in), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? errno : 0;
			drop(c);
			if (k == 0 && http_reply_end(&c->reply) == HTTP_REPLY_DONE)
				return c->reply.status;
			*again = got == 0;
			snprintf(why, why_len, "reading the answer from %s: %s", c->host,
			         err ? strerror(err) : c->reply.why);
			return 0;
		}
		got += (size_t)k;
		v = http_reply_feed(&c->reply, c->in, (size_t)k, &used);
		if (v == HTTP_REPLY_BAD) {
			drop(c);
			snprintf(why, why_len, "the answer from %s: %s", c->host, c->reply.why);
			return 0;
		}
		if (v == HTTP_REPLY_DONE && used < (size_t)k)
			c->reply.close = 1; /* bytes after the answer: the connection is out of step */
	}
	if (c->reply.close)
		drop(c);
	return c->reply.status;
}

/* A header line's value may hold visible ASCII, spaces and tabs: no line
 * breaks that would start a header of their own. */
static int header_safe(const char *s)
{
	for (; *s; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static int method_safe(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && n <= 16 && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == n;
}

long http_conn_request(http_conn *c, const char *method, const char *path, const char *auth, const char *type,
                       const char *text, size_t len, http_body *body, char *why, size_t why_len)
{
	char head[REQUEST_HEAD_MAX];
	int head_len, counted = text || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
	                        strcmp(method, "PATCH") == 0;

	if (!type)
		type = "application/json";
	if (!method_safe(method) || path[0] != '/' || !visible(path, strlen(path)) || !header_safe(auth) ||
	    !header_safe(type)) {
		snprintf(why, why_len, "a method, path or header that cannot go into a request");
		return 0;
	}
	head_len = snprintf(head, sizeof(head), "%s %s%s HTTP/1.1\r\nHost: %s\r\n%s%sContent-Type: %s\r\n", method,
	                    c->prefix, path, c->host, auth, auth[0] ? "\r\n" : "", type);
	if (head_len > 0 && (size_t)head_len < sizeof(head) && counted)
		head_len += snprintf(head + head_len, sizeof(head) - (size_t)head_len, "Content-Length: %zu\r\n",
		                     text ? len : 0);
	if (head_len > 0 && (size_t)head_len < sizeof(head))
		head_len += snprintf(head + head_len, sizeof(head) - (size_t)head_len, "\r\n");
	if (head_len <= 0 || (size_t)head_len >= sizeof(head)) {
		snprintf(why, why_len, "the request's path is too long");
		return 0;
	}
	for (int attempt = 0;; attempt++) {
		struct iovec iov[2] = {{.iov_base = head, .iov_len = (size_t)head_len},
		                       {.iov_base = (void *)text, .iov_len = len}};
		int reused = c->fd >= 0, again = 0;
		body->len = 0;
		if (body->data)
			body->data[0] = '\0';
		if (!reused && connect_to(c, why, why_len) != 0)
			return 0;
		sent s = send_all(c->fd, iov, text && len ? 2 : 1);
		if (s == SENT_FAILED) {
			int err = errno;
			drop(c);
			if (reused && attempt == 0)
				continue;
			snprintf(why, why_len, "sending to %s: %s", c->host, strerror(err));
			return 0;
		}
		long status = read_answer(c, strcmp(method, "HEAD") == 0, body, &again, why, why_len);
		/* Nothing came on a connection that had served before (its end
		 * may even have seemed to answer while the body went out): the
		 * gateway had closed it. */
		if (status == 0 && again && reused && attempt == 0)
			continue;
		if (s == SENT_ANSWERED_FIRST) /* the rest of the body was never sent */
			drop(c);
		return status;
	}
}

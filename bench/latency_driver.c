/*
 * The strand side of bench/latency: ROUNDS sequential apply round trips of
 * echo on a pool of 2 local workers (connected before the clock runs), each
 * answered with its durably recorded result (POST /v1/pools/{id}/apply?wait),
 * through libstrand and through raw HTTP/1.1 on one keep-alive connection
 * (what the gateway costs without a client library's). Prints, in ms:
 *   libstrand P50 P90 P99
 *   http P50 P90 P99
 *   strand-bench-latency URL [ROUNDS]
 * The API token comes from $STRAND_TOKEN_FILE, as libstrand reads it.
 */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client.h"
#include "common/common.h"

#define WARMUP 50

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Prints NAME and the 50th, 90th and 99th percentiles of ms[0..n), in ms. */
static void report(const char *name, double *ms, int n)
{
	qsort(ms, (size_t)n, sizeof(*ms), by_value);
	printf("%s %.3f %.3f %.3f\n", name, ms[n / 2], ms[n * 9 / 10], ms[n * 99 / 100]);
	fflush(stdout);
}

static int via_libstrand(strand_client *c, const char *pool, int i)
{
	json_t *arg = json_integer(i), *result = NULL;
	int ok = strand_apply(c, pool, "echo", arg, 10, &result) == 0 && json_integer_value(result) == i;

	json_decref(arg);
	json_decref(result);
	return ok ? 0 : -1;
}

/* One keep-alive connection to the gateway, as a client without libcurl
 * would hold it. */
typedef struct raw {
	int fd;
	char token[256];
	char buf[65536];
	size_t have;
} raw;

static int raw_open(raw *r, const char *url)
{
	const char *colon = strrchr(url, ':');
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const char *file = getenv("STRAND_TOKEN_FILE");
	FILE *f = file ? fopen(file, "r") : NULL;
	int one = 1;

	if (!colon || !f || !fgets(r->token, sizeof(r->token), f)) {
		if (f)
			fclose(f);
		fprintf(stderr, "latency: a URL http://127.0.0.1:PORT and $STRAND_TOKEN_FILE are needed\n");
		return -1;
	}
	fclose(f);
	r->token[strcspn(r->token, "\r\n")] = '\0';
	a.sin_port = htons((uint16_t)atoi(colon + 1));
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return connect(r->fd, (struct sockaddr *)&a, sizeof(a));
}

/* POSTs an apply of echo on i and reads the whole answer; 0 when it is
 * 200 with value i. */
static int via_http(raw *r, const char *pool, int i)
{
	char body[64], req[1024], want[48];
	int blen = snprintf(body, sizeof(body), "{\"function\":\"echo\",\"arg\":%d}", i);
	int qlen = snprintf(req, sizeof(req),
	                    "POST /v1/pools/%s/apply?wait=10 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	                    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
	                    "Content-Length: %d\r\n\r\n%s",
	                    pool, r->token, blen, body);
	char *end, *cl;
	size_t need;

	if (write(r->fd, req, (size_t)qlen) != qlen)
		return -1;
	r->have = 0;
	for (;;) { /* the head, then Content-Length bytes of body */
		ssize_t n = read(r->fd, r->buf + r->have, sizeof(r->buf) - 1 - r->have);
		if (n <= 0)
			return -1;
		r->have += (size_t)n;
		r->buf[r->have] = '\0';
		if (!(end = strstr(r->buf, "\r\n\r\n")) || !(cl = strcasestr(r->buf, "Content-Length:")))
			continue;
		need = (size_t)(end + 4 - r->buf) + (size_t)atol(cl + 15);
		if (r->have >= need)
			break;
	}
	snprintf(want, sizeof(want), "\"value\":%d,", i);
	return strncmp(r->buf, "HTTP/1.1 200", 12) == 0 && strstr(end, want) ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *url = argc > 1 ? argv[1] : NULL;
	int rounds = argc > 2 ? atoi(argv[2]) : 1000;
	json_t *spec = json_pack("{s:s}", "backend", "local");
	strand_client *c = strand_client_new(url);
	double *ms = calloc((size_t)rounds, sizeof(*ms));
	char pool[32];
	raw *r = calloc(1, sizeof(*r));

	if (!url || rounds < 100 || !ms || !r || strand_pool_create(c, 2, spec, pool) != 0 ||
	    strand_pool_wait_ready(c, pool, 2, 60) != 0 || raw_open(r, url) != 0) {
		fprintf(stderr, "latency: %s\n", c ? strand_client_error(c) : "out of memory");
		return 1;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = -WARMUP; i < rounds; i++) {
			double t0 = cm_now_s();
			if ((pass == 0 ? via_libstrand(c, pool, i) : via_http(r, pool, i)) != 0) {
				fprintf(stderr, "latency: apply %d failed: %s\n", i,
				        pass == 0 ? strand_client_error(c) : r->buf);
				return 1;
			}
			if (i >= 0)
				ms[i] = (cm_now_s() - t0) * 1000.0;
		}
		report(pass == 0 ? "libstrand" : "http", ms, rounds);
	}
	close(r->fd);
	free(r);
	free(ms);
	strand_pool_terminate(c, pool);
	json_decref(spec);
	strand_client_free(c);
	return 0;
}

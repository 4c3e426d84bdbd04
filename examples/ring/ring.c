/*
 * One member of a strand Ring: a ring all-reduce over nng that averages a
 * vector across all members. Each member is started by the gateway
 * (POST /v1/rings) with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT; rank r
 * listens on MASTER_PORT + 1 + r and sends to rank r + 1. In WORLD_SIZE - 1
 * steps each member passes on what it last received and adds it up, so every
 * member ends with the sum of all vectors. The vectors are whole numbers, so
 * the sums are exact and every rank prints the same average.
 *
 *   strand-example-ring [LENGTH]     (run by a ring, not by hand)
 */
#include <nng/nng.h>
#include <nng/protocol/pipeline0/pull.h>
#include <nng/protocol/pipeline0/push.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEN 1024

static int env_int(const char *name)
{
	const char *v = getenv(name);

	if (!v) {
		fprintf(stderr, "%s is not set: run me as a strand ring member\n", name);
		exit(2);
	}
	return atoi(v);
}

int main(int argc, char **argv)
{
	int rank = env_int("RANK"), size = env_int("WORLD_SIZE"), port = env_int("MASTER_PORT");
	const char *addr = getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "127.0.0.1";
	int len = argc > 1 ? atoi(argv[1]) : 8;
	double sum[MAX_LEN], pass[MAX_LEN];
	nng_socket in, out;
	char url[128];
	int rv;

	if (len < 1 || len > MAX_LEN || size < 1 || rank < 0 || rank >= size)
		return 2;
	/* Rank r's vector: (r + 1) * (i + 1). */
	for (int i = 0; i < len; i++)
		sum[i] = pass[i] = (double)((rank + 1) * (i + 1));
	if ((rv = nng_pull0_open(&in)) != 0 || (rv = nng_push0_open(&out)) != 0) {
		fprintf(stderr, "rank %d: %s\n", rank, nng_strerror(rv));
		return 1;
	}
	nng_socket_set_ms(in, NNG_OPT_RECVTIMEO, 30000);
	nng_socket_set_ms(out, NNG_OPT_SENDTIMEO, 30000);
	snprintf(url, sizeof(url), "tcp://%s:%d", addr, port + 1 + rank);
	if ((rv = nng_listen(in, url, NULL, 0)) != 0) {
		fprintf(stderr, "rank %d: listen %s: %s\n", rank, url, nng_strerror(rv));
		return 1;
	}
	snprintf(url, sizeof(url), "tcp://%s:%d", addr, port + 1 + (rank + 1) % size);
	/* Non-blocking dial: the next member may not be listening yet; nng
	 * keeps trying. */
	nng_dial(out, url, NULL, NNG_FLAG_NONBLOCK);
	for (int step = 0; step < size - 1; step++) {
		void *buf = NULL;
		size_t n = 0;
		if ((rv = nng_send(out, pass, sizeof(double) * (size_t)len, 0)) != 0 ||
		    (rv = nng_recv(in, &buf, &n, NNG_FLAG_ALLOC)) != 0) {
			fprintf(stderr, "rank %d, step %d: %s\n", rank, step, nng_strerror(rv));
			return 1;
		}
		if (n != sizeof(double) * (size_t)len) {
			fprintf(stderr, "rank %d: a message of %zu bytes\n", rank, n);
			nng_free(buf, n);
			return 1;
		}
		memcpy(pass, buf, n);
		nng_free(buf, n);
		for (int i = 0; i < len; i++)
			sum[i] += pass[i];
	}
	printf("rank %d of %d: average =", rank, size);
	for (int i = 0; i < len; i++)
		printf(" %.4f", sum[i] / size);
	printf("\n");
	nng_close(in);
	nng_close(out);
	return 0;
}

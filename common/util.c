/* Ids and clocks. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"

/* Random bytes come from a per-thread pool filled by one getrandom() at a
 * time: an id per request was a system call per request on the engine's
 * path. A forked child starts with an empty pool (pool_forget), so it never
 * hands out its parent's next bytes. */
static __thread unsigned char pool[512];
static __thread size_t pool_left;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_forget(void)
{
	pool_left = 0;
}

static void pool_register(void)
{
	pthread_atfork(NULL, NULL, pool_forget);
}

void cm_random_bytes(void *into, size_t n)
{
	unsigned char *out = into;

	pthread_once(&pool_once, pool_register);
	while (n) {
		if (pool_left == 0) {
			size_t got = 0;
			while (got < sizeof(pool)) {
				ssize_t r = getrandom(pool + got, sizeof(pool) - got, 0);
				if (r > 0)
					got += (size_t)r;
			}
			pool_left = sizeof(pool);
		}
		size_t take = n < pool_left ? n : pool_left;
		unsigned char *from = pool + sizeof(pool) - pool_left;
		memcpy(out, from, take);
		memset(from, 0, take); /* handed out once: no copy stays behind */
		pool_left -= take;
		out += take;
		n -= take;
	}
}

void cm_random_hex(char *out, size_t nbytes)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[64];

	if (nbytes > sizeof(raw))
		nbytes = sizeof(raw);
	cm_random_bytes(raw, nbytes);
	for (size_t i = 0; i < nbytes; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[2 * nbytes] = '\0';
	memset(raw, 0, nbytes);
}

void cm_id_new(char prefix, char out[20])
{
	out[0] = prefix;
	out[1] = '-';
	cm_random_hex(out + 2, 8);
}

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cm_now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}
int64_t cm_wall_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

struct timespec cm_timespec_in(clockid_t id, int64_t ms)
{
	struct timespec ts;

	if (ms < 0)
		ms = 0;
	clock_gettime(id, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

double cm_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cm_read_pem(const char *path, cm_buf *out, char *detail, size_t detail_len)
{
	char chunk[4096];
	size_t n;
	FILE *f = fopen(path, "re");

	if (!f) {
		snprintf(detail, detail_len, "cannot read %s: %s", path, strerror(errno));
		return CM_EIO;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && out->len < (1u << 20))
		if (cm_buf_append(out, chunk, n) != CM_OK)
			break;
	fclose(f);
	if (!out->len || !strstr(out->data, "-----BEGIN ")) {
		snprintf(detail, detail_len, "%s is not a PEM file", path);
		return CM_EINVAL;
	}
	return CM_OK;
}

int cm_read_tail(const char *path, size_t max, cm_buf *out)
{
	char chunk[65536];
	FILE *f = path ? fopen(path, "rb") : NULL;
	long size;
	size_t n;
	int err = CM_OK;

	if (!f)
		return CM_ENOENT;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > (long)max)
		fseek(f, size - (long)max, SEEK_SET);
	else
		fseek(f, 0, SEEK_SET);
	while (err == CM_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		err = cm_buf_append(out, chunk, n);
	fclose(f);
	return err;
}

int cm_secret_equal(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;
	unsigned char diff = 0;

	for (size_t i = 0; i < len; i++)
		diff |= (unsigned char)(x[i] ^ y[i]);
	return diff == 0;
}

int cm_write_all(int fd, const void *p, size_t len)
{
	const char *at = p;

	while (len) {
		ssize_t n = write(fd, at, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		at += n;
		len -= (size_t)n;
	}
	return 0;
}

int cm_read_all(int fd, void *p, size_t len)
{
	char *at = p;

	while (len) {
		ssize_t n = read(fd, at, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			errno = 0;
		if (n <= 0)
			return -1;
		at += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A strand plugin: pi.so:pi_hits. The argument is a sample count N; the
 * result is how many of N random points in the unit square land inside the
 * quarter circle (the seeds' is_inside, batched: one task per N samples,
 * not one task per sample). Built as a shared module; links nothing of
 * strand, only its plugin header.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "strand_plugin.h"

strand_plugin_fn pi_hits;

int pi_hits(const char *arg, size_t arg_len, char **out)
{
	char *end;
	long long n = strtoll(arg, &end, 10);
	uint64_t s;
	long long hits = 0;
	struct timespec ts;

	(void)arg_len;
	if (end == arg || n < 0) {
		*out = NULL;
		if (asprintf(out, "pi_hits: argument must be a non-negative sample count, got %.40s", arg) < 0)
			*out = NULL;
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	s = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)&s;
	s |= 1;
	for (long long i = 0; i < n; i++) {
		double x, y;
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		x = (double)(s >> 11) / 9007199254740992.0;
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		y = (double)(s >> 11) / 9007199254740992.0;
		hits += x * x + y * y < 1.0;
	}
	if (asprintf(out, "%lld", hits) < 0)
		return 1;
	return 0;
}

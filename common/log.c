/* One log line per event on stderr. Thread-safe: one fprintf per line, and
 * stdio locks the stream for each call. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"

static void log_line(int level, const char *msg)
{
	static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
	char stamp[32];
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %s[%d] %s %s\n", stamp, ts.tv_nsec / 1000000, program_invocation_short_name,
	        (int)getpid(), names[level & 3], msg);
}

void cm_log_limited(cm_log_limit *limit, int level, const char *fmt, ...)
{
	int64_t now = cm_now_ms(), next = atomic_load(&limit->next_ms);
	char msg[1024];
	va_list ap;

	/* One caller a second wins the line; the others are counted. */
	if (now < next || !atomic_compare_exchange_strong(&limit->next_ms, &next, now + 1000)) {
		atomic_fetch_add(&limit->left_out, 1);
		return;
	}
	uint64_t left_out = atomic_exchange(&limit->left_out, 0);
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (left_out && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, " (and %llu more like it since the last)",
		         (unsigned long long)left_out);
	log_line(level, msg);
}

void cm_log(int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line(level, msg);
}

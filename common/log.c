/* One log line per event on stderr. Thread-safe: one fprintf per line, and
 * stdio locks the stream for each call. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "common/common.h"

void cm_log(int level, const char *fmt, ...)
{
	static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
	char msg[1024];
	char stamp[32];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %s[%d] %s %s\n", stamp, ts.tv_nsec / 1000000, program_invocation_short_name,
	        (int)getpid(), names[level & 3], msg);
}

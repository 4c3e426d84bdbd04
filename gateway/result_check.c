/* Result checks; see result_check.h. */
#include <stdio.h>

#include "common/common.h"
#include "gateway/json_scan.h"
#include "gateway/result_check.h"
#include "gateway/spec.h"

int result_check(int ok, const void *value, size_t len, char *why, size_t why_len)
{
	const char *s = value;
	char reason[160];
	size_t start, end;
	unsigned flags;

	if (!ok) {
		if (cm_utf8_valid(value, len))
			return 1;
		snprintf(why, why_len, "invalid result: the error message is not UTF-8 text");
		return 0;
	}
	if (len == 0)
		return 1; /* no value: recorded as null */
	/* Whatever made it (a C function, a command, a runtime): one value. */
	if (len > spec_value_max()) {
		char what[48];
		snprintf(what, sizeof(what), "result of %zu bytes", len);
		spec_say_too_big(why, why_len, what);
		return 0;
	}
	/* The scanner, not jansson: building a value to throw it away was
	 * most of what the hub's threads did with a no-op map's results. It
	 * checks UTF-8 and refuses \u0000 as jansson does; duplicate keys,
	 * which jansson accepts too, do not make a page unreadable. */
	start = json_scan_space(s, len, 0);
	if (json_scan_value(s, len, start, &end, &flags, reason, sizeof(reason)) != 0) {
		snprintf(why, why_len, "invalid result: not one UTF-8 JSON value (%s)", reason);
		cm_utf8_sanitize(why);
		return 0;
	}
	if ((end = json_scan_space(s, len, end)) != len) {
		snprintf(why, why_len, "invalid result: not one UTF-8 JSON value (text after it at byte %zu)", end);
		return 0;
	}
	return 1;
}

/* Result checks; see result_check.h. */
#include <jansson.h>
#include <stdio.h>

#include "common/common.h"
#include "gateway/result_check.h"

int result_check(int ok, const void *value, size_t len, char *why, size_t why_len)
{
	json_error_t err;
	json_t *j;

	if (!ok) {
		if (cm_utf8_valid(value, len))
			return 1;
		snprintf(why, why_len, "invalid result: the error message is not UTF-8 text");
		return 0;
	}
	if (len == 0)
		return 1; /* no value: recorded as null */
	/* jansson checks UTF-8 and refuses \u0000 unless told otherwise. */
	j = json_loadb(value, len, JSON_DECODE_ANY, &err);
	if (j) {
		json_decref(j);
		return 1;
	}
	snprintf(why, why_len, "invalid result: not one UTF-8 JSON value (%s at byte %d)", err.text, err.position);
	cm_utf8_sanitize(why);
	return 0;
}

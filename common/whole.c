/* Whole numbers from text, strictly: flags, variables and query parameters
 * (atoi took "4abc" as 4, "two" as 0 and 2^32 + 4 as 4; strtoll alone takes
 * a leading space and stops at what follows the digits). */
#include <errno.h>
#include <stdlib.h>

#include "common/common.h"

int cm_whole(const char *text, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	if (!text || !(text[0] == '+' || text[0] == '-' || (text[0] >= '0' && text[0] <= '9')))
		return CM_EINVAL;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v < lo || v > hi)
		return CM_EINVAL;
	*out = v;
	return CM_OK;
}

#include "gateway/result_item.h"

#include <string.h>

int result_item_append(cm_buf *b, int64_t index, int ok, const void *value, size_t len, const char *job,
                       int64_t output_last)
{
	char head[64], digits[24];
	size_t n = 0, k = 0;
	unsigned long long i = (unsigned long long)index;
	int err;

	/* The head by hand: printf was a tenth of a large results page's cost. */
	memcpy(head, "{\"index\":", 9);
	n = 9;
	do
		digits[k++] = (char)('0' + i % 10);
	while ((i /= 10) > 0);
	while (k)
		head[n++] = digits[--k];
	memcpy(head + n, ok ? ",\"ok\":true," : ",\"ok\":false,", ok ? 11 : 12);
	n += ok ? 11 : 12;
	err = cm_buf_append(b, head, n);
	if (err == CM_OK && ok) {
		err = cm_buf_puts(b, "\"value\":");
		if (err == CM_OK)
			err = len ? cm_buf_append(b, value, len) : cm_buf_puts(b, "null");
	} else if (err == CM_OK) {
		err = cm_buf_puts(b, "\"error\":");
		if (err == CM_OK)
			err = cm_buf_json_string(b, value ? value : "", len);
	}
	if (err == CM_OK && job)
		err = cm_buf_printf(b, ",\"job\":\"%s\"", job);
	if (err == CM_OK && output_last >= 0)
		err = cm_buf_printf(b, ",\"output_last\":%lld", (long long)output_last);
	return err == CM_OK ? cm_buf_puts(b, "}") : err;
}

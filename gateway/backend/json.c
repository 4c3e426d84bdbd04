#include "gateway/backend/json.h"

#include <stdio.h>
#include <string.h>

#include "common/common.h"

json_t *backend_json_strings(char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

json_t *backend_json_pairs(char *const *pairs, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(pairs[i], '=');
		char key[256];
		if (!eq || (size_t)(eq - pairs[i]) >= sizeof(key))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - pairs[i]), pairs[i]);
		json_object_set_new(o, key, json_string(eq + 1));
	}
	return o;
}

size_t backend_reply_collect(char *p, size_t size, size_t n, void *ctx)
{
	cm_buf *b = ctx;

	if (b->len + size * n > BACKEND_REPLY_MAX || cm_buf_append(b, p, size * n) != CM_OK)
		return 0;
	return size * n;
}

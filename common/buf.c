/* Growable buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

void cm_buf_init(cm_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void cm_buf_fini(cm_buf *b)
{
	free(b->data);
	cm_buf_init(b);
}

int cm_buf_reserve(cm_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t cap = b->cap ? b->cap : 256;
	char *p;

	if (need <= b->cap)
		return CM_OK;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return CM_ENOMEM;
	b->data = p;
	b->cap = cap;
	return CM_OK;
}

int cm_buf_append(cm_buf *b, const void *data, size_t len)
{
	if (cm_buf_reserve(b, len) != CM_OK)
		return CM_ENOMEM;
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return CM_OK;
}

int cm_buf_puts(cm_buf *b, const char *s)
{
	return cm_buf_append(b, s, strlen(s));
}

int cm_buf_printf(cm_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || cm_buf_reserve(b, (size_t)n) != CM_OK)
		return CM_ENOMEM;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return CM_OK;
}

int cm_buf_json_string(cm_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	/* Worst case every byte becomes \u00XX. */
	if (cm_buf_reserve(b, len * 6 + 2) != CM_OK)
		return CM_ENOMEM;
	b->data[b->len++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			b->data[b->len++] = '\\';
			b->data[b->len++] = (char)c;
		} else if (c == '\n') {
			b->data[b->len++] = '\\';
			b->data[b->len++] = 'n';
		} else if (c < 0x20) {
			memcpy(b->data + b->len, "\\u00", 4);
			b->len += 4;
			b->data[b->len++] = hex[c >> 4];
			b->data[b->len++] = hex[c & 15];
		} else {
			b->data[b->len++] = (char)c;
		}
	}
	b->data[b->len++] = '"';
	b->data[b->len] = '\0';
	return CM_OK;
}

char *cm_buf_steal(cm_buf *b)
{
	char *p = b->data;

	if (!p)
		return strdup("");
	cm_buf_init(b);
	return p;
}

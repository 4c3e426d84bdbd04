#include "gateway/result_columns.h"

void result_columns_init(result_columns *rc)
{
	*rc = (result_columns){0};
	cm_buf_init(&rc->runs);
	cm_buf_init(&rc->failed);
}

void result_columns_fini(result_columns *rc)
{
	cm_buf_fini(&rc->runs);
	cm_buf_fini(&rc->failed);
}

static int close_run(result_columns *rc)
{
	if (!rc->count)
		return CM_OK;
	return cm_buf_printf(&rc->runs, "[%lld,%lld],", (long long)rc->first, (long long)rc->count);
}

int result_columns_add(result_columns *rc, cm_buf *b, int64_t index, int ok, const void *value, size_t len)
{
	int err = rc->n ? cm_buf_append(b, ",", 1) : CM_OK;

	if (err == CM_OK)
		err = !ok   ? cm_buf_json_string(b, value ? value : "", len)
		      : len ? cm_buf_append(b, value, len)
		            : cm_buf_puts(b, "null");
	if (err == CM_OK && !ok)
		err = cm_buf_printf(&rc->failed, "%lld,", (long long)rc->n);
	if (err == CM_OK && !(rc->count && index == rc->first + rc->count)) {
		if ((err = close_run(rc)) == CM_OK) {
			rc->first = index;
			rc->count = 0;
		}
	}
	if (err != CM_OK)
		return err;
	rc->count++;
	rc->n++;
	return CM_OK;
}

size_t result_columns_pending(const result_columns *rc)
{
	/* ],"indexes":[ … [FIRST,COUNT] ],"failed":[ … ] */
	return rc->runs.len + rc->failed.len + RESULT_COLUMNS_END;
}

/* Appends text (a list with a trailing comma, or empty) without the comma. */
static int append_list(cm_buf *b, const cm_buf *text)
{
	return text->len ? cm_buf_append(b, text->data, text->len - 1) : CM_OK;
}

int result_columns_end(result_columns *rc, cm_buf *b)
{
	int err = close_run(rc);

	rc->count = 0;
	if (err == CM_OK)
		err = cm_buf_puts(b, "],\"indexes\":[");
	if (err == CM_OK)
		err = append_list(b, &rc->runs);
	if (err == CM_OK)
		err = cm_buf_puts(b, "],\"failed\":[");
	if (err == CM_OK)
		err = append_list(b, &rc->failed);
	return err == CM_OK ? cm_buf_puts(b, "]") : err;
}

/*
 * Result and failure pages of a job (GET /v1/jobs/{id}/results and
 * /failures), read straight from the store through read-only connections:
 * what they see is committed, so nothing is served that a crash could take
 * back. A page is bounded (API_PAGE_MAX results, API_PAGE_BYTES) and says
 * where the next one starts.
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"
#include "gateway/result_columns.h"
#include "gateway/result_item.h"

store *http_reader_take(api *a, char *detail, size_t detail_len)
{
	store *st = NULL;

	pthread_mutex_lock(&a->mu);
	if (a->nreaders)
		st = a->readers[--a->nreaders];
	pthread_mutex_unlock(&a->mu);
	if (!st && store_open(a->cfg->db, STORE_READER | (a->cfg->db_shared ? STORE_SHARED : 0), &st, detail,
	                      detail_len) != CM_OK)
		return NULL;
	return st;
}

void http_reader_give(api *a, store *st)
{
	pthread_mutex_lock(&a->mu);
	if (a->nreaders < READERS) {
		a->readers[a->nreaders++] = st;
		st = NULL;
	}
	pthread_mutex_unlock(&a->mu);
	store_close(st);
}

/* A page being written: its text, and its columns when by columns. */
typedef struct page_text {
	cm_buf *b;
	result_columns *columns;
	int64_t n; /* results in it */
} page_text;

static int append_result(void *ctx, const store_result *r)
{
	page_text *t = ctx;
	size_t worst = r->ok ? r->len : 6 * r->len; /* an error is escaped: \u00XX at worst */

	/* Bounded answers: a page stops before API_PAGE_BYTES (always holding
	 * at least one result), and next_cursor says where to go on. */
	if (t->columns)
		worst += result_columns_pending(t->columns) + RESULT_COLUMNS_ROOM;
	if (t->n && t->b->len + worst + 64 > API_PAGE_BYTES)
		return STORE_PAGE_FULL;
	t->n++;
	if (t->columns)
		return result_columns_add(t->columns, t->b, r->index, r->ok, r->value, r->len);
	if (t->n > 1 && cm_buf_append(t->b, ",", 1) != CM_OK)
		return CM_ENOMEM;
	return result_item_append(t->b, r->index, r->ok, r->value, r->len, NULL, -1);
}

/* Reads one page of results into t and, when it is the job's last,
 * *output_last: the number of the last line its pool printed, read after
 * the results (a task's lines are stored no later than its result), so
 * that a client that has shown the lines up to it has every line the
 * job's tasks printed without asking (-1: not the last page). */
static int read_page(api *a, const job_info *info, const page_query *q, page_text *t, int64_t *next,
                     int64_t *output_last, char *detail, size_t detail_len)
{
	store *st = http_reader_take(a, detail, detail_len);
	int err;

	*output_last = -1;
	if (!st)
		return CM_EUNAVAIL;
	err = q->completion ? store_results_completion(st, info->num, q->cursor, q->limit, append_result, t, next)
	                    : store_results_input(st, info->num, info->base, info->total, q->cursor, q->limit,
	                                          append_result, t, next);
	if (err == CM_OK && *next >= info->total)
		err = store_output_last(st, info->pool, output_last);
	http_reader_give(a, st);
	return err;
}

/* One page of results as the JSON body. *waitable: it holds no result and
 * the job has more to come, so a long poll may wait for one. */
static int results_body(api *a, const char *job_id, const job_info *info, const page_query *q, cm_buf *b, int *waitable,
                        char *detail, size_t detail_len)
{
	int64_t next = q->cursor, output_last;
	result_columns columns;
	page_text t = {.b = b, .columns = q->columns ? &columns : NULL};
	int err;

	err = cm_buf_printf(b, "{\"job\":\"%s\",\"order\":\"%s\",\"total\":%lld,\"%s\":[", job_id,
	                    q->completion ? "completion" : "input", (long long)info->total,
	                    q->columns ? "values" : "items");
	if (err != CM_OK)
		return err;
	result_columns_init(&columns);
	err = read_page(a, info, q, &t, &next, &output_last, detail, detail_len);
	if (err == CM_OK)
		err = q->columns ? result_columns_end(&columns, b) : cm_buf_puts(b, "]");
	result_columns_fini(&columns);
	if (err != CM_OK)
		return err;
	*waitable = t.n == 0 && next < info->total;
	if (output_last >= 0)
		return cm_buf_printf(b, ",\"next_cursor\":\"%lld\",\"complete\":true,\"output_last\":%lld}",
		                     (long long)next, (long long)output_last);
	return cm_buf_printf(b, ",\"next_cursor\":\"%lld\",\"complete\":false}", (long long)next);
}

/* The first page of a job with at most one result, parsed; NULL on error. */
json_t *http_first_result_page(api *a, request *rq, int *waitable, int *err, char *detail, size_t detail_len)
{
	cm_buf b;
	json_t *page = NULL;

	cm_buf_init(&b);
	*err = results_body(a, rq->id, &rq->info, &(page_query){.limit = 1}, &b, waitable, detail, detail_len);
	if (*err == CM_OK && !(page = json_loadb(b.data, b.len, 0, NULL)))
		*err = CM_ENOMEM;
	cm_buf_fini(&b);
	return page;
}

static int look_results(api *a, struct MHD_Connection *c, const char *url, request *rq, int final, enum MHD_Result *ret)
{
	char detail[256] = "";
	int waitable = 0;
	cm_buf b;
	int err;

	cm_buf_init(&b);
	err = results_body(a, rq->id, &rq->info, &rq->page, &b, &waitable, detail, sizeof(detail));
	if (err != CM_OK) {
		cm_buf_fini(&b);
		*ret = http_fail(c, err, url, detail);
		return 1;
	}
	if (waitable && !final) {
		cm_buf_fini(&b);
		return 0;
	}
	size_t len = b.len;
	*ret = http_send_text(c, 200, cm_buf_steal(&b), len, "application/json", NULL);
	return 1;
}

enum MHD_Result http_get_results(api *a, struct MHD_Connection *c, const char *url, const char *job_id, request *rq)
{
	char detail[256] = "";
	int64_t wait_s = 0;
	const char *order = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "order");
	const char *shape = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "shape");
	int err;

	rq->page.limit = 1000;
	if (order && strcmp(order, "completion") == 0)
		rq->page.completion = 1;
	else if (order && strcmp(order, "input") != 0)
		return http_problem(c, 400, url, "query parameter 'order' must be 'input' or 'completion'");
	if (shape && strcmp(shape, "columns") == 0)
		rq->page.columns = 1;
	else if (shape && strcmp(shape, "items") != 0)
		return http_problem(c, 400, url, "query parameter 'shape' must be 'items' or 'columns'");
	if (http_query_int(c, "cursor", 0, INT64_MAX / 2, &rq->page.cursor, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "limit", 1, API_PAGE_MAX, &rq->page.limit, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	if ((err = engine_job_info(a->engine, job_id, &rq->info)) != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such job" : NULL);
	snprintf(rq->id, sizeof(rq->id), "%s", job_id);
	return http_long_poll_start(a, c, url, rq, look_results, wait_s);
}

/* A failures page being written: its text, and for a job whose tasks
 * carry several inputs, each task's count (NULL for one input a task),
 * summed as the page goes (its failures come in index order): the inputs
 * of the tasks before task t. */
typedef struct failure_page {
	cm_buf *b;
	const uint32_t *counts;
	int64_t t, before_t;
} failure_page;

/* Where task index's inputs start. */
static int64_t first_input(failure_page *page, int64_t index)
{
	if (index < page->t) { /* not met in a page: counted again from the start */
		page->t = 0;
		page->before_t = 0;
	}
	for (; page->t < index; page->t++)
		page->before_t += page->counts[page->t];
	return page->before_t;
}

/* What a failure shows of its task's input: the input itself up to this
 * many bytes of JSON, else its first bytes as text. */
#define FAILURE_INPUT_MAX 1024

/* Where and how long the task ran, and (whole) its input. */
static int append_facts(cm_buf *b, const store_failure *f, int with_input)
{
	int err = CM_OK;

	if (f->worker)
		err = cm_buf_printf(b, ",\"worker\":\"%.40s\",\"run_ms\":%.3f", f->worker, f->run_us / 1000.0);
	if (err != CM_OK || !with_input || !f->arg)
		return err;
	if (f->arg_len <= FAILURE_INPUT_MAX) {
		if ((err = cm_buf_puts(b, ",\"input\":")) == CM_OK)
			err = cm_buf_append(b, f->arg_len ? f->arg : "null", f->arg_len ? f->arg_len : 4);
		return err;
	}
	size_t head = FAILURE_INPUT_MAX;
	while (head > 0 && ((unsigned char)f->arg[head] & 0xC0) == 0x80) /* not in the middle of a character */
		head--;
	if ((err = cm_buf_puts(b, ",\"input_head\":")) == CM_OK && (err = cm_buf_json_string(b, f->arg, head)) == CM_OK)
		err = cm_buf_printf(b, ",\"input_bytes\":%zu", f->arg_len);
	return err;
}

static int append_item(cm_buf *b, int64_t index, const int64_t *task, int64_t inputs, const store_failure *f,
                       const char *error, size_t len)
{
	int err = cm_buf_printf(b, "%s{\"index\":%lld,", b->data[b->len - 1] == '[' ? "" : ",", (long long)index);

	if (err == CM_OK && task)
		err = cm_buf_printf(b, "\"task\":%lld,\"inputs\":%lld,", (long long)*task, (long long)inputs);
	if (err == CM_OK)
		err = cm_buf_printf(b, "\"attempts\":%u,\"error\":", f->attempts);
	if (err == CM_OK)
		err = cm_buf_json_string(b, error ? error : "", len);
	if (err == CM_OK)
		err = append_facts(b, f, !task);
	return err == CM_OK ? cm_buf_puts(b, "}") : err;
}

/* A task of several inputs whose runtime said which failed alone
 * (docs/tasks.md: {"failed": [[OFFSET, ERROR], ...], "value": ...}): an
 * item for each of those, by its own index. 0 if error is not that. */
static int append_partly(cm_buf *b, int64_t task, int64_t first, int64_t n, const store_failure *f, int *err)
{
	json_t *j, *failed, *one;
	size_t i;

	if (f->len < 2 || f->error[0] != '{' || !(j = json_loadb(f->error, f->len, 0, NULL)))
		return 0;
	failed = json_object_get(j, "failed");
	int shaped = json_is_array(failed) && json_array_size(failed) > 0 && json_object_size(j) == 2 &&
	             json_object_get(j, "value");
	json_array_foreach (failed, i, one) {
		json_t *at = json_array_get(one, 0), *text = json_array_get(one, 1);
		if (!json_is_integer(at) || json_integer_value(at) < 0 || json_integer_value(at) >= n ||
		    !json_is_string(text))
			shaped = 0;
	}
	*err = CM_OK;
	json_array_foreach (failed, i, one) {
		if (!shaped || *err != CM_OK)
			break;
		json_t *text = json_array_get(one, 1);
		*err = append_item(b, first + json_integer_value(json_array_get(one, 0)), &task, 1, f,
		                   json_string_value(text), json_string_length(text));
	}
	json_decref(j);
	return shaped;
}

static int append_failure(void *ctx, const store_failure *f)
{
	failure_page *page = ctx;
	cm_buf *b = page->b;
	int64_t first = page->counts ? first_input(page, f->index) : f->index;
	int64_t n = page->counts ? page->counts[f->index] : 1; /* the items it may make at most */
	int err;

	/* An error is escaped: \u00XX at worst; an input is at most a
	 * 1 KiB head, escaped. */
	if (b->data[b->len - 1] != '[' &&
	    b->len + 6 * f->len + (128 + 6 * FAILURE_INPUT_MAX) * (size_t)n > API_PAGE_BYTES)
		return STORE_PAGE_FULL;
	if (!page->counts)
		return append_item(b, f->index, NULL, 0, f, f->error, f->len);
	if (append_partly(b, f->index, first, n, f, &err))
		return err;
	return append_item(b, first, &f->index, n, f, f->error, f->len); /* every input of the task failed with it */
}

/* For a job whose tasks carry several inputs: each task's count, read
 * from the store (NULL in *counts for one input a task; at most
 * SPEC_MAX_INPUT_TASKS of them). */
static int inputs_of(store *st, const job_info *info, uint32_t **counts)
{
	*counts = NULL;
	if (!info->inputs_total)
		return CM_OK;
	if (!(*counts = malloc((size_t)info->total * sizeof(**counts) + 1)))
		return CM_ENOMEM;
	return store_job_inputs_read(st, info->num, info->total, *counts);
}

/* GET /v1/jobs/{id}/failures?cursor=&limit=: a page of the job's failed
 * tasks, in index order, each with its error and attempts, the worker it
 * ran on and for how long, and its input; for a job whose tasks carry
 * several inputs, by input (index), with the task it was in (cursor and
 * limit still count tasks) and no input (the task's is all of them). */
enum MHD_Result http_get_failures(api *a, struct MHD_Connection *c, const char *url, const char *job_id)
{
	char detail[256] = "";
	int64_t cursor = 0, limit = 100, next = 0;
	job_info info;
	cm_buf b;
	int err;

	if (http_query_int(c, "cursor", 0, INT64_MAX, &cursor, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "limit", 1, 1000, &limit, detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	if ((err = engine_job_info(a->engine, job_id, &info)) != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such job" : NULL);
	cm_buf_init(&b);
	err = cm_buf_printf(&b, "{\"job\":\"%s\",\"items\":[", job_id);
	store *st = err == CM_OK ? http_reader_take(a, detail, sizeof(detail)) : NULL;
	if (st) {
		failure_page page = {.b = &b};
		uint32_t *counts = NULL;
		if ((err = inputs_of(st, &info, &counts)) == CM_OK) {
			page.counts = counts;
			err = store_results_failed(st, info.num, info.base, info.total, cursor, limit, append_failure,
			                           &page, &next);
		}
		free(counts);
		http_reader_give(a, st);
	} else if (err == CM_OK) {
		err = CM_EUNAVAIL;
	}
	if (err == CM_OK)
		err = cm_buf_printf(&b, "],\"next_cursor\":\"%lld\",\"end\":%s}", (long long)next,
		                    next >= info.total ? "true" : "false");
	if (err != CM_OK) {
		cm_buf_fini(&b);
		return http_fail(c, err, url, detail[0] ? detail : NULL);
	}
	size_t len = b.len;
	return http_send_text(c, 200, cm_buf_steal(&b), len, "application/json", NULL);
}

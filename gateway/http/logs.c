/*
 * GET /v1/pools/{id}/logs?after=SEQ&limit=N&worker=W&wait=S: what a pool's
 * tasks printed, read from the store a line at a time, oldest first
 * (tail=N instead of limit: the newest N, as the dashboard shows them):
 *
 *   {"lines": [{"seq", "worker", "stream": "stdout" | "stderr", "at",
 *               "text"}], "next": SEQ, "missed": true}
 *
 * "next" is the after= of the next request; "missed" (only when so): lines
 * after the reader's were gone (past the kept ones) before it read them.
 * With wait=S one that finds no
 * line waits (parked, no thread held) until a commit brings some, or S
 * seconds: strand logs --follow and the Python client follow a pool so.
 * lease=L: the reader is the program that made the pool under lease L,
 * whose workers then wait for it rather than push out lines it has not
 * read (engine/output.c).
 * Text that is not UTF-8 is shown with '?' for its bad bytes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gateway/http/http_int.h"

#define LOGS_PAGE 1000 /* lines a page by default */
#define LOGS_PAGE_MAX 10000

typedef struct page {
	json_t *lines;
	int64_t last;
} page;

static int add_line(void *ctx, int64_t seq, const char *worker, int64_t at_ms, int stream, const void *text, size_t len)
{
	page *pg = ctx;
	char at[32], *copy = malloc(len + 1);
	time_t secs = (time_t)(at_ms / 1000);
	struct tm tm;

	if (!copy)
		return CM_ENOMEM;
	if (len) /* an empty line's text may be NULL */
		memcpy(copy, text, len);
	copy[len] = '\0';
	cm_utf8_sanitize(copy); /* a NUL in it ends it: bytes past it are dropped */
	gmtime_r(&secs, &tm);
	snprintf(at + strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%S", &tm), 12, ".%03dZ", (int)(at_ms % 1000));
	json_array_append_new(pg->lines,
	                      json_pack("{s:I, s:s, s:s, s:s, s:s}", "seq", (json_int_t)seq, "worker", worker, "stream",
	                                stream == 2 ? "stderr" : "stdout", "at", at, "text", copy));
	free(copy);
	pg->last = seq;
	return CM_OK;
}

static int look_logs(api *a, struct MHD_Connection *c, const char *url, request *rq, int final, enum MHD_Result *ret)
{
	page pg = {.lines = json_array(), .last = rq->page.cursor};
	char detail[256] = "";
	store *st = http_reader_take(a, detail, sizeof(detail));
	int err = st ? store_output_read(st, rq->id, rq->page.cursor, rq->worker[0] ? rq->worker : NULL, rq->page.limit,
	                                 rq->page.completion, add_line, &pg)
	             : CM_EUNAVAIL;

	if (st)
		http_reader_give(a, st);
	if (err != CM_OK) {
		json_decref(pg.lines);
		*ret = http_fail(c, err, url, detail[0] ? detail : NULL);
		return 1;
	}
	if (!json_array_size(pg.lines) && !final) {
		json_decref(pg.lines);
		return 0;
	}
	json_t *body = json_pack("{s:o, s:I}", "lines", pg.lines, "next", (json_int_t)pg.last);
	if (rq->missed && !rq->page.completion)
		json_object_set_new(body, "missed", json_true());
	*ret = http_send_json(c, 200, body, NULL);
	return 1;
}

enum MHD_Result http_get_pool_logs(api *a, struct MHD_Connection *c, const char *url, const char *pool_id, request *rq)
{
	const char *worker = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "worker");
	char lease[20];
	char detail[256] = "";
	int64_t wait_s = 0, tail = 0;
	int err;

	rq->page.limit = LOGS_PAGE;
	if (http_query_int(c, "after", 0, INT64_MAX / 2, &rq->page.cursor, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "limit", 1, LOGS_PAGE_MAX, &rq->page.limit, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "tail", 1, LOGS_PAGE_MAX, &tail, detail, sizeof(detail)) != CM_OK ||
	    http_query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK ||
	    http_query_id(c, "lease", lease, sizeof(lease), detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	if (tail && MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit"))
		return http_problem(c, 400, url, "give 'limit' (the first lines) or 'tail' (the newest), not both");
	if (tail) { /* the newest: the page's "completion" order stands for it */
		rq->page.limit = tail;
		rq->page.completion = 1;
	}
	if (worker && (strlen(worker) >= sizeof(rq->worker) || !worker[0]))
		return http_problem(c, 400, url, "query parameter 'worker' must be a worker's id");
	if ((err = engine_pool_output_read(a->engine, pool_id, tail ? 0 : rq->page.cursor, lease, &rq->missed)) !=
	    CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? "no such pool" : NULL);
	snprintf(rq->id, sizeof(rq->id), "%s", pool_id);
	snprintf(rq->worker, sizeof(rq->worker), "%s", worker ? worker : "");
	rq->watch = ENGINE_WATCH_OUTPUT; /* not every task's result */
	return http_long_poll_start(a, c, url, rq, look_logs, wait_s);
}

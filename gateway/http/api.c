/*
 * REST handlers. They run on libmicrohttpd's small thread pool, so nothing
 * here may wait long: a short request waits for one engine cycle; a long
 * poll parks its connection (parking.h) and looks again when resumed.
 * Nothing here holds engine state.
 *
 *   GET    /healthz                      GET  /v1/pools       POST /v1/pools
 *   GET    /v1/pools/{id}                DELETE /v1/pools/{id}
 *   PATCH  /v1/pools/{id} {processes | autoscale}
 *   POST   /v1/pools/{id}/map            POST /v1/pools/{id}/apply[?wait=S]
 *   POST   /v1/pools/{id}/close          GET  /v1/pools/{id}/jobs
 *   GET|DELETE /v1/jobs/{id}             (DELETE: cancel a running job, remove an ended one)
 *   POST   /v1/jobs/{id}/args            (the next part of a submitting job's arguments)
 *   POST|GET /v1/queues                  GET|DELETE /v1/queues/{id}
 *   POST   /v1/queues/{id}/items         GET  /v1/queues/{id}/items?max=&wait=
 *   POST   /v1/managers {type}           GET|DELETE /v1/managers/{id}
 *   POST   /v1/managers/{id}/calls       GET /v1/managers/{id}/calls/{cid}?wait=S
 *   POST|GET /v1/rings {size, ...}       GET|DELETE /v1/rings/{id}[?wait=S]
 *   POST   /v1/processes                 GET /v1/processes[/{id}[?wait=S]]
 *   GET    /v1/processes/{id}/logs       DELETE /v1/processes/{id}
 *   POST|GET /v1/pipes {duplex}          GET|DELETE /v1/pipes/{id}
 *   POST   /v1/pipes/{id}/ends/{0|1}/send  GET /v1/pipes/{id}/ends/{0|1}/recv?wait=
 *   GET    /v1/jobs/{id}/results?cursor=&limit=&wait=&order=input|completion
 *   GET    /v1/jobs/{id}/failures?cursor=&limit=
 *   GET    /v1/jobs?pool=&state=&cursor=&limit=
 *   GET    /v1/events[?pool=]            Server-Sent Events: pool, manager, worker, job, progress, process
 *   GET    /metrics                      Prometheus text format
 *   GET    /v1/openapi.json              this API's description (openapi.json)
 *   GET    /  and /web/FILE              the dashboard
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "gateway/http/api.h"
#include "gateway/http/event_stream.h"
#include "gateway/auth.h"
#include "gateway/http/metrics.h"
#include "gateway/http/openapi_doc.h"
#include "gateway/http/parking.h"
#include "gateway/policy.h"
#include "gateway/result_columns.h"
#include "gateway/result_item.h"
#include "gateway/http/route_table.h"
#include "store/store.h"

#define READERS 16
/* Handlers wait at most for an engine cycle or a results page, so a few
 * threads per core serve any number of connections. */
#define HTTP_THREADS 8
#define API_STOP_GRACE_MS 5000 /* at stop, for parked requests' answers to be sent */

struct api {
	const gw_config *cfg;
	engine *engine;
	char token[AUTH_TOKEN_MAX]; /* "" with --no-auth */
	cm_buf tls_cert, tls_key; /* PEM, kept for as long as the daemon runs */
	struct MHD_Daemon *daemon;
	parking *parking;
	pthread_mutex_t mu;
	store *readers[READERS]; /* idle read-only connections */
	int nreaders;
	size_t parked; /* requests that parked once and are not completed yet */
	pthread_cond_t unparked;
	http_metrics *metrics; /* requests counted as they complete */
};

typedef struct request request;

/* One look of a long poll: answers (returns 1 with *ret set) or returns 0
 * to wait on. When final (its deadline passed, the gateway stops) it must
 * answer. */
typedef int (*request_look)(api *a, struct MHD_Connection *c, const char *url, request *rq, int final,
                            enum MHD_Result *ret);

/* What a results page asks for (GET /v1/jobs/{id}/results). */
typedef struct page_query {
	int completion; /* order=completion, else input */
	int columns; /* shape=columns, else items */
	int64_t cursor, limit;
} page_query;

struct request {
	api *api;
	struct MHD_Connection *connection;
	cm_buf body;
	size_t cap; /* the body's cap for this route */
	int too_big;
	int refused; /* answered at its first call: the body is not read */
	size_t route; /* its route_table index, counted when it completes */
	char method[8];
	int parked; /* counted in api.parked until it completes */

	/* A long poll, between its looks: what it waits on and until when. */
	request_look look;
	int64_t deadline;
	char id[64]; /* the job, call, process or ring */
	job_info info;
	page_query page;
	int (*get)(engine *, const char *, json_t **); /* a join's */
	const char *missing; /* 404's detail */
	char *accepted; /* apply: the 202 answer when no result comes in time (JSON text) */
	size_t accepted_len;
	char location[64];
	/* An apply that waits: the engine answers it (engine_apply_start); the
	 * request holds its spec and key until it completes. */
	int applying;
	map_spec spec;
	char idem_key[129];

	/* An engine call it started, answered once the connection resumes. */
	int calling;
	engine_call *call; /* NULL while calling: there was no memory to start it */
};

/* ---- responses ---------------------------------------------------------- */

static int status_of(int err)
{
	switch (err) {
	case CM_EINVAL: return MHD_HTTP_BAD_REQUEST;
	case CM_ENOENT: return MHD_HTTP_NOT_FOUND;
	case CM_ECLOSED: return MHD_HTTP_CONFLICT;
	case CM_ETOOBIG: return MHD_HTTP_CONTENT_TOO_LARGE;
	case CM_EUNSUPPORTED: return MHD_HTTP_UNPROCESSABLE_CONTENT;
	case CM_EUNAVAIL:
	case CM_ESHUTDOWN: return MHD_HTTP_SERVICE_UNAVAILABLE;
	case CM_ETIMEDOUT: return MHD_HTTP_GATEWAY_TIMEOUT;
	case CM_EPERM: return MHD_HTTP_FORBIDDEN;
	default: return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

static const char *slug_of(int status)
{
	switch (status) {
	case 400: return "bad-request";
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not-found";
	case 405: return "method-not-allowed";
	case 409: return "conflict";
	case 413: return "content-too-large";
	case 414: return "uri-too-long";
	case 415: return "unsupported-media-type";
	case 421: return "misdirected-request";
	case 422: return "unprocessable";
	case 503: return "unavailable";
	default: return "internal";
	}
}

/* Queues text (stolen) as the answer; header_name/value: one extra header
 * (Location, WWW-Authenticate, Set-Cookie), or NULL. */
static enum MHD_Result send_text_with(struct MHD_Connection *c, int status, char *text, size_t len, const char *type,
                                      const char *header_name, const char *header_value)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (header_name && header_value)
		MHD_add_response_header(r, header_name, header_value);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_text(struct MHD_Connection *c, int status, char *text, size_t len, const char *type,
                                 const char *location)
{
	return send_text_with(c, status, text, len, type, MHD_HTTP_HEADER_LOCATION, location);
}

/* Sends and releases j (stolen) as the given content type. */
static enum MHD_Result send_json_as(struct MHD_Connection *c, int status, json_t *j, const char *type,
                                    const char *location)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s)
		return MHD_NO;
	return send_text(c, status, s, strlen(s), type, location);
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, json_t *j, const char *location)
{
	return send_json_as(c, status, j, "application/json", location);
}

/* A problem+json answer. The URL and the detail may hold bytes a client sent
 * (a field name, an id): they are made valid UTF-8 first, or jansson would
 * refuse them and the client would get no answer at all. */
static enum MHD_Result problem_with(struct MHD_Connection *c, int status, const char *url, const char *detail,
                                    const char *header_name, const char *header_value)
{
	const char *reason = MHD_get_reason_phrase_for((unsigned)status);
	char type[64], instance[API_URL_MAX + 1], text[512];
	json_t *j;
	char *body;

	snprintf(type, sizeof(type), "urn:strand:problem:%s", slug_of(status));
	snprintf(instance, sizeof(instance), "%s", url ? url : "");
	snprintf(text, sizeof(text), "%s", detail && detail[0] ? detail : reason);
	cm_utf8_sanitize(instance);
	cm_utf8_sanitize(text);
	j = json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title", reason, "status", status, "detail", text,
	              "instance", instance);
	body = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!body)
		return MHD_NO;
	return send_text_with(c, status, body, strlen(body), "application/problem+json", header_name, header_value);
}

static enum MHD_Result problem(struct MHD_Connection *c, int status, const char *url, const char *detail)
{
	return problem_with(c, status, url, detail, NULL, NULL);
}

static enum MHD_Result fail(struct MHD_Connection *c, int err, const char *url, const char *detail)
{
	return problem(c, status_of(err), url, detail && detail[0] ? detail : cm_strerror(err));
}

/* ---- query parameters --------------------------------------------------- */

static int query_int(struct MHD_Connection *c, const char *name, int64_t lo, int64_t hi, int64_t *out, char *detail,
                     size_t detail_len)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
	char *end;
	long long n;

	if (!v || !v[0])
		return CM_OK;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n < lo || n > hi) {
		snprintf(detail, detail_len, "query parameter '%s' must be an integer from %lld to %lld", name,
		         (long long)lo, (long long)hi);
		return CM_EINVAL;
	}
	*out = n;
	return CM_OK;
}

/* ---- store readers ------------------------------------------------------ */

static store *reader_take(api *a, char *detail, size_t detail_len)
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

static void reader_give(api *a, store *st)
{
	pthread_mutex_lock(&a->mu);
	if (a->nreaders < READERS) {
		a->readers[a->nreaders++] = st;
		st = NULL;
	}
	pthread_mutex_unlock(&a->mu);
	store_close(st);
}

/* ---- results ------------------------------------------------------------ */

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
	return result_item_append(t->b, r->index, r->ok, r->value, r->len, NULL);
}

/* Reads one page of results into t. */
static int read_page(api *a, const job_info *info, const page_query *q, page_text *t, int64_t *next, char *detail,
                     size_t detail_len)
{
	store *st = reader_take(a, detail, detail_len);
	int err;

	if (!st)
		return CM_EUNAVAIL;
	err = q->completion ? store_results_completion(st, info->num, q->cursor, q->limit, append_result, t, next)
	                    : store_results_input(st, info->num, info->base, info->total, q->cursor, q->limit,
	                                          append_result, t, next);
	reader_give(a, st);
	return err;
}

/* One page of results as the JSON body. *waitable: it holds no result and
 * the job has more to come, so a long poll may wait for one. */
static int results_body(api *a, const char *job_id, const job_info *info, const page_query *q, cm_buf *b, int *waitable,
                        char *detail, size_t detail_len)
{
	int64_t next = q->cursor;
	result_columns columns;
	page_text t = {.b = b, .columns = q->columns ? &columns : NULL};
	int err;

	err = cm_buf_printf(b, "{\"job\":\"%s\",\"order\":\"%s\",\"total\":%lld,\"%s\":[", job_id,
	                    q->completion ? "completion" : "input", (long long)info->total,
	                    q->columns ? "values" : "items");
	if (err != CM_OK)
		return err;
	result_columns_init(&columns);
	err = read_page(a, info, q, &t, &next, detail, detail_len);
	if (err == CM_OK)
		err = q->columns ? result_columns_end(&columns, b) : cm_buf_puts(b, "]");
	result_columns_fini(&columns);
	if (err != CM_OK)
		return err;
	*waitable = t.n == 0 && next < info->total;
	return cm_buf_printf(b, ",\"next_cursor\":\"%lld\",\"complete\":%s}", (long long)next,
	                     next >= info->total ? "true" : "false");
}

/* Counts a request that parks for the first time: the API's stop waits
 * until each is answered and sent. */
static void count_parked(api *a, request *rq)
{
	if (rq->parked)
		return;
	rq->parked = 1;
	pthread_mutex_lock(&a->mu);
	a->parked++;
	pthread_mutex_unlock(&a->mu);
}

/* Looks once more: answers, or parks the connection until there may be
 * something new. The generation is read before the look, so a commit
 * between the look and the park resumes it at once. */
static enum MHD_Result long_poll(api *a, struct MHD_Connection *c, const char *url, request *rq)
{
	uint64_t gen = engine_generation(a->engine);
	int final = cm_now_ms() >= rq->deadline || engine_closing(a->engine);
	enum MHD_Result ret;

	if (rq->look(a, c, url, rq, final, &ret))
		return ret;
	count_parked(a, rq);
	parking_wait(a->parking, c, gen, rq->deadline);
	return MHD_YES;
}

/* Starts a long poll of wait_s seconds (0: one look). */
static enum MHD_Result long_poll_start(api *a, struct MHD_Connection *c, const char *url, request *rq,
                                       request_look look, int64_t wait_s)
{
	rq->look = look;
	rq->deadline = cm_now_ms() + wait_s * 1000;
	return long_poll(a, c, url, rq);
}

/* The first page of a job with at most one result, parsed; NULL on error. */
static json_t *first_result_page(api *a, request *rq, int *waitable, int *err, char *detail, size_t detail_len)
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
		*ret = fail(c, err, url, detail);
		return 1;
	}
	if (waitable && !final) {
		cm_buf_fini(&b);
		return 0;
	}
	size_t len = b.len;
	*ret = send_text(c, 200, cm_buf_steal(&b), len, "application/json", NULL);
	return 1;
}

static enum MHD_Result get_results(api *a, struct MHD_Connection *c, const char *url, const char *job_id, request *rq)
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
		return problem(c, 400, url, "query parameter 'order' must be 'input' or 'completion'");
	if (shape && strcmp(shape, "columns") == 0)
		rq->page.columns = 1;
	else if (shape && strcmp(shape, "items") != 0)
		return problem(c, 400, url, "query parameter 'shape' must be 'items' or 'columns'");
	if (query_int(c, "cursor", 0, INT64_MAX / 2, &rq->page.cursor, detail, sizeof(detail)) != CM_OK ||
	    query_int(c, "limit", 1, API_PAGE_MAX, &rq->page.limit, detail, sizeof(detail)) != CM_OK ||
	    query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
		return problem(c, 400, url, detail);
	if ((err = engine_job_info(a->engine, job_id, &rq->info)) != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? "no such job" : NULL);
	snprintf(rq->id, sizeof(rq->id), "%s", job_id);
	return long_poll_start(a, c, url, rq, look_results, wait_s);
}

/* ---- engine calls that answer later ------------------------------------- */

static void call_done(void *ctx)
{
	request *rq = ctx;

	parking_resume(rq->api->parking, rq->connection);
}

/* Holds the connection for a call start() is about to start; the handler
 * runs again once it is answered (call_answer). */
static void call_hold(api *a, struct MHD_Connection *c, request *rq, const char *missing)
{
	rq->calling = 1;
	rq->missing = missing;
	count_parked(a, rq);
	parking_hold(a->parking, c);
}

/* A started call was answered (or could not start): its answer. */
static enum MHD_Result call_answer(struct MHD_Connection *c, const char *url, request *rq)
{
	char detail[256] = "";
	json_t *out = NULL;
	int err;

	if (!rq->call)
		return fail(c, CM_ENOMEM, url, NULL);
	err = engine_call_finish(rq->call, &out, detail, sizeof(detail));
	rq->call = NULL;
	rq->calling = 0;
	if (err != CM_OK)
		return fail(c, err, url, detail[0] ? detail : err == CM_ENOENT ? rq->missing : NULL);
	return send_json(c, 200, out, NULL);
}

static enum MHD_Result call_started(api *a, struct MHD_Connection *c, request *rq, engine_call *call)
{
	rq->call = call;
	if (!call) /* done never runs: resume now, answered as out of memory */
		parking_resume(a->parking, c);
	return MHD_YES;
}

/* GET of a collection the engine lists (queues, pipes). */
static enum MHD_Result listing(api *a, struct MHD_Connection *c, const char *url, int (*list)(engine *, int, json_t **),
                               int which)
{
	json_t *out = NULL;
	int err = list(a->engine, which, &out);

	return err == CM_OK ? send_json(c, 200, out, NULL) : fail(c, err, url, NULL);
}

/* ---- routing ------------------------------------------------------------ */

/* The first path segment of rest (sub: where it ends, or NULL) into id. */
static void first_segment(const char *rest, const char *sub, char *id, size_t id_len)
{
	snprintf(id, id_len, "%.*s", (int)(sub ? (size_t)(sub - rest) : strlen(rest)), rest);
}

/* GET or DELETE of one resource: its JSON, or 404 naming what is missing. */
static enum MHD_Result get_or_delete(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                     const char *id, request *rq, int (*get)(engine *, const char *, json_t **),
                                     engine_call *(*del)(engine *, const char *, engine_call_done, void *),
                                     const char *noun, const char *missing)
{
	char detail[96];
	json_t *out = NULL;
	int err;

	if (strcmp(method, "DELETE") == 0) {
		call_hold(a, c, rq, missing);
		return call_started(a, c, rq, del(a->engine, id, call_done, rq));
	}
	if (strcmp(method, "GET") != 0) {
		snprintf(detail, sizeof(detail), "use GET or DELETE on a %s", noun);
		return problem(c, 405, url, detail);
	}
	if ((err = get(a->engine, id, &out)) != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? missing : NULL);
	return send_json(c, 200, out, NULL);
}

/* ---- pools and jobs ----------------------------------------------------- */

/* An apply's one look in the store: its result, or 202 with its job. */
static enum MHD_Result apply_look(api *a, struct MHD_Connection *c, request *rq)
{
	char detail[256] = "";
	int waitable = 0, err;
	json_t *page = first_result_page(a, rq, &waitable, &err, detail, sizeof(detail));
	json_t *item = json_array_get(json_object_get(page, "items"), 0);
	enum MHD_Result ret;

	if (item) {
		json_object_set_new(item, "job", json_string(rq->id));
		json_incref(item);
		json_decref(page);
		return send_json(c, 200, item, rq->location);
	}
	json_decref(page);
	ret = send_text(c, 202, rq->accepted, rq->accepted_len, "application/json", rq->location);
	rq->accepted = NULL;
	return ret;
}

/* An apply the engine answered: with its result, or with none, when the
 * store is looked in once (the result, or 202 with the job). */
static enum MHD_Result apply_answer(struct MHD_Connection *c, const char *url, request *rq)
{
	engine_apply_answer ans;
	char detail[256] = "";
	enum MHD_Result ret;
	int err;

	if (!rq->call)
		return fail(c, CM_ENOMEM, url, NULL);
	err = engine_apply_finish(rq->call, &ans, detail, sizeof(detail));
	rq->call = NULL;
	rq->calling = 0;
	if (err != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
	snprintf(rq->id, sizeof(rq->id), "%s", ans.id);
	snprintf(rq->location, sizeof(rq->location), "/v1/jobs/%.40s", rq->id);
	rq->accepted = ans.job;
	rq->accepted_len = ans.job_len;
	if (ans.item)
		return send_text(c, 200, ans.item, ans.item_len, "application/json", rq->location);
	if (!ans.info_ok) { /* the job is gone (an Idempotency-Key naming a job removed since) */
		ret = send_text(c, 202, rq->accepted, rq->accepted_len, "application/json", rq->location);
		rq->accepted = NULL;
		return ret;
	}
	rq->info = ans.info;
	return apply_look(rq->api, c, rq);
}

static enum MHD_Result post_map(api *a, struct MHD_Connection *c, const char *url, const char *pool_id, request *rq,
                                int single)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
	char detail[256] = "";
	int64_t wait_s = -1;
	char location[64];
	map_spec spec;
	json_t *out = NULL;
	int err;

	if (key && (strlen(key) == 0 || strlen(key) > 128))
		return problem(c, 400, url, "header 'Idempotency-Key' must be 1 to 128 characters");
	if (single && query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
		return problem(c, 400, url, detail);
	err = spec_map_parse(rq->body.data ? rq->body.data : "", rq->body.len, single, &spec, detail, sizeof(detail));
	if (err != CM_OK)
		return fail(c, err, url, detail);
	if ((err = policy_check_command(a->cfg, spec.command != NULL, detail, sizeof(detail))) != CM_OK) {
		spec_map_fini(&spec);
		return fail(c, err, url, detail);
	}
	if (single && wait_s > 0) { /* apply: the engine answers with the one result */
		rq->spec = spec;
		snprintf(rq->idem_key, sizeof(rq->idem_key), "%s", key ? key : "");
		rq->applying = 1;
		call_hold(a, c, rq, "no such pool");
		return call_started(a, c, rq,
		                    engine_apply_start(a->engine, pool_id, &rq->spec, key ? rq->idem_key : NULL,
		                                       wait_s * 1000, call_done, rq));
	}
	err = engine_map(a->engine, pool_id, &spec, key, &out, detail, sizeof(detail));
	spec_map_fini(&spec);
	if (err != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
	snprintf(location, sizeof(location), "/v1/jobs/%s", json_string_value(json_object_get(out, "id")));
	return send_json(c, 202, out, location);
}

static enum MHD_Result route_pools(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const char *rest, request *rq)
{
	char detail[256] = "";
	char id[64];
	const char *sub;
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		if (strcmp(method, "GET") == 0) {
			if ((err = engine_pool_list(a->engine, 0, &out)) != CM_OK)
				return fail(c, err, url, NULL);
			return send_json(c, 200, out, NULL);
		}
		if (strcmp(method, "POST") == 0) {
			pool_spec spec;
			char location[64];
			err = spec_pool_parse(rq->body.data ? rq->body.data : "", rq->body.len, a->cfg->backend,
			                      a->cfg->image, &spec, detail, sizeof(detail));
			if (err == CM_OK)
				err = policy_check_run(a->cfg, &spec, detail, sizeof(detail));
			if (err == CM_OK)
				err = engine_pool_create(a->engine, &spec, &out, detail, sizeof(detail));
			if (err != CM_OK)
				return fail(c, err, url, detail);
			snprintf(location, sizeof(location), "/v1/pools/%s",
			         json_string_value(json_object_get(out, "id")));
			return send_json(c, 201, out, location);
		}
		return problem(c, 405, url, "use GET or POST on /v1/pools");
	}
	sub = strchr(rest, '/');
	first_segment(rest, sub, id, sizeof(id));
	if (id[0] == 'm') { /* a manager is not a pool: its calls are its only work */
		snprintf(detail, sizeof(detail), "no such pool: %.40s is a manager (/v1/managers/%.40s)", id, id);
		return problem(c, 404, url, detail);
	}
	if ((!sub || !sub[1]) && strcmp(method, "PATCH") == 0) {
		pool_patch patch;
		if ((err = spec_pool_patch_parse(rq->body.data ? rq->body.data : "", rq->body.len, &patch, detail,
		                                 sizeof(detail))) == CM_OK)
			err = engine_pool_patch(a->engine, id, &patch, &out, detail, sizeof(detail));
		if (err != CM_OK)
			return fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
		return send_json(c, 200, out, NULL);
	}
	if ((!sub || !sub[1]) && strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
		return problem(c, 405, url, "use GET, PATCH or DELETE on a pool");
	if (!sub || !sub[1])
		return get_or_delete(a, c, url, method, id, rq, engine_pool_get, engine_pool_delete_start, "pool",
		                     "no such pool");
	if (strcmp(sub, "/jobs") == 0) {
		if (strcmp(method, "GET") != 0)
			return problem(c, 405, url, "use GET on a pool's jobs");
		if ((err = engine_pool_jobs(a->engine, id, &out)) != CM_OK)
			return fail(c, err, url, err == CM_ENOENT ? "no such pool" : NULL);
		return send_json(c, 200, out, NULL);
	}
	if (strcmp(method, "POST") != 0)
		return problem(c, 405, url, "use POST on pool actions");
	if (strcmp(sub, "/map") == 0)
		return post_map(a, c, url, id, rq, 0);
	if (strcmp(sub, "/apply") == 0)
		return post_map(a, c, url, id, rq, 1);
	if (strcmp(sub, "/close") == 0) {
		if ((err = engine_pool_close(a->engine, id, &out, detail, sizeof(detail))) != CM_OK)
			return fail(c, err, url, err == CM_ENOENT ? "no such pool" : detail);
		return send_json(c, 200, out, NULL);
	}
	return problem(c, 404, url, "no such pool action (map, apply, close)");
}

/* POST /v1/jobs/{id}/args: the next part of a submitting job's arguments. */
static enum MHD_Result post_args(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *job_id, const request *rq)
{
	char detail[256] = "";
	spec_args args;
	int64_t offset;
	json_t *out = NULL;
	int err;

	if (strcmp(method, "POST") != 0)
		return problem(c, 405, url, "use POST to send a part of a job's arguments");
	err = spec_part_parse(rq->body.data ? rq->body.data : "", rq->body.len, &offset, &args, detail, sizeof(detail));
	if (err != CM_OK)
		return fail(c, err, url, detail);
	err = engine_job_args(a->engine, job_id, offset, &args, &out, detail, sizeof(detail));
	spec_args_fini(&args);
	if (err != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? "no such job" : detail);
	return send_json(c, 200, out, NULL);
}

static int append_failure(void *ctx, int64_t index, unsigned attempts, const char *error, size_t len)
{
	cm_buf *b = ctx;
	int first = b->data[b->len - 1] == '[';

	if (!first && b->len + 6 * len + 96 > API_PAGE_BYTES) /* an error is escaped: \u00XX at worst */
		return STORE_PAGE_FULL;
	int err = cm_buf_printf(b, "%s{\"index\":%lld,\"attempts\":%u,\"error\":", first ? "" : ",", (long long)index,
	                        attempts);
	if (err == CM_OK)
		err = cm_buf_json_string(b, error ? error : "", len);
	return err == CM_OK ? cm_buf_puts(b, "}") : err;
}

/* GET /v1/jobs/{id}/failures?cursor=&limit=: a page of the job's failed
 * tasks, in index order, each with its error and attempts. */
static enum MHD_Result get_failures(api *a, struct MHD_Connection *c, const char *url, const char *job_id)
{
	char detail[256] = "";
	int64_t cursor = 0, limit = 100, next = 0;
	job_info info;
	cm_buf b;
	int err;

	if (query_int(c, "cursor", 0, INT64_MAX, &cursor, detail, sizeof(detail)) != CM_OK ||
	    query_int(c, "limit", 1, 1000, &limit, detail, sizeof(detail)) != CM_OK)
		return problem(c, 400, url, detail);
	if ((err = engine_job_info(a->engine, job_id, &info)) != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? "no such job" : NULL);
	cm_buf_init(&b);
	err = cm_buf_printf(&b, "{\"job\":\"%s\",\"items\":[", job_id);
	store *st = err == CM_OK ? reader_take(a, detail, sizeof(detail)) : NULL;
	if (st) {
		err = store_results_failed(st, info.num, info.base, info.total, cursor, limit, append_failure, &b,
		                           &next);
		reader_give(a, st);
	} else if (err == CM_OK) {
		err = CM_EUNAVAIL;
	}
	if (err == CM_OK)
		err = cm_buf_printf(&b, "],\"next_cursor\":\"%lld\",\"end\":%s}", (long long)next,
		                    next >= info.total ? "true" : "false");
	if (err != CM_OK) {
		cm_buf_fini(&b);
		return fail(c, err, url, detail[0] ? detail : NULL);
	}
	size_t len = b.len;
	return send_text(c, 200, cm_buf_steal(&b), len, "application/json", NULL);
}

/* GET /metrics: Prometheus' text format; the engine's part, then the
 * HTTP counters and the database's size. (Its method, as every table
 * route's, was checked against route_table.) */
static enum MHD_Result get_metrics(api *a, struct MHD_Connection *c, const char *url)
{
	cm_buf b;
	int err;

	cm_buf_init(&b);
	if ((err = engine_metrics(a->engine, &b)) != CM_OK || (err = http_metrics_write(a->metrics, &b)) != CM_OK ||
	    (err = cm_buf_printf(&b,
	                         "# HELP strand_database_bytes The database's bytes on disk, its log included.\n"
	                         "# TYPE strand_database_bytes gauge\nstrand_database_bytes %lld\n",
	                         (long long)store_file_bytes(a->cfg->db))) != CM_OK) {
		cm_buf_fini(&b);
		return fail(c, err, url, NULL);
	}
	size_t len = b.len;
	return send_text(c, 200, cm_buf_steal(&b), len, "text/plain; version=0.0.4; charset=utf-8", NULL);
}

/* GET /v1/openapi.json: the API's description, built in. */
static enum MHD_Result get_openapi(struct MHD_Connection *c)
{
	struct MHD_Response *r =
	        MHD_create_response_from_buffer(openapi_doc_len, (void *)openapi_doc, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET /v1/events[?pool=ID]: Server-Sent Events (event_stream.h). */
static enum MHD_Result get_events(api *a, struct MHD_Connection *c, const char *url, request *rq)
{
	const char *pool = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pool");
	const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	struct MHD_Response *r = NULL;
	enum MHD_Result ret;
	int err;

	if (pool && (!pool[0] || strlen(pool) > 23))
		return problem(c, 400, url, "query 'pool' must be a pool's or a manager's id");
	if ((err = event_stream_open(a->engine, a->parking, c, last, pool, &r)) != CM_OK)
		return fail(c, err, url,
		            err == CM_EUNAVAIL ? "too many event streams are open; close one or try again later"
		                               : NULL);
	count_parked(a, rq); /* the API's stop waits for its end */
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET /v1/jobs?pool=&state=&cursor=&limit=: jobs newest first. */
static enum MHD_Result list_jobs(api *a, struct MHD_Connection *c, const char *url, const char *method)
{
	static const char *const states[] = {"submitting", "running", "done", "cancelled", NULL};
	const char *pool_id = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pool");
	const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	char detail[256] = "";
	int64_t cursor = 0, limit = 100;
	json_t *out = NULL;
	int err, known = 0;

	if (strcmp(method, "GET") != 0)
		return problem(c, 405, url, "use GET on /v1/jobs (a job is made by a pool's map or apply)");
	for (size_t i = 0; state && states[i]; i++)
		known |= strcmp(state, states[i]) == 0;
	if (state && !known)
		return problem(c, 400, url, "query 'state' must be submitting, running, done or cancelled");
	if (pool_id && (!pool_id[0] || strlen(pool_id) > 40))
		return problem(c, 400, url, "query 'pool' must be a pool's id");
	if (query_int(c, "cursor", 1, INT64_MAX, &cursor, detail, sizeof(detail)) != CM_OK ||
	    query_int(c, "limit", 1, 1000, &limit, detail, sizeof(detail)) != CM_OK)
		return problem(c, 400, url, detail);
	if ((err = engine_job_list(a->engine, pool_id, state, cursor, (int)limit, &out)) != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? "no such pool" : NULL);
	return send_json(c, 200, out, NULL);
}

static enum MHD_Result route_jobs(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64];
	json_t *out = NULL;
	int err;

	first_segment(rest, sub, id, sizeof(id));
	if (!sub || !sub[1]) {
		if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
			return problem(c, 405, url, "use GET or DELETE on a job");
		err = strcmp(method, "GET") == 0 ? engine_job_get(a->engine, id, &out)
		                                 : engine_job_delete(a->engine, id, &out);
		if (err != CM_OK)
			return fail(c, err, url, err == CM_ENOENT ? "no such job" : NULL);
		return send_json(c, 200, out, NULL);
	}
	if (strcmp(sub, "/args") == 0)
		return post_args(a, c, url, method, id, rq);
	if (strcmp(method, "GET") != 0)
		return problem(c, 405, url, "a job's results are read with GET");
	if (strcmp(sub, "/results") == 0)
		return get_results(a, c, url, id, rq);
	if (strcmp(sub, "/failures") == 0)
		return get_failures(a, c, url, id);
	return problem(c, 404, url, "no such job resource (args, results, failures)");
}

/* ---- queues and pipes --------------------------------------------------- */

/* POST items to queue qid. */
static enum MHD_Result queue_put(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                                 const request *rq)
{
	char detail[256] = "";
	items_spec items;
	json_t *out = NULL;
	int err;

	err = spec_items_parse(rq->body.data ? rq->body.data : "", rq->body.len, &items, detail, sizeof(detail));
	if (err != CM_OK)
		return fail(c, err, url, detail);
	err = engine_queue_put(a->engine, qid, end, items.items, items.lens, items.n, &out, detail, sizeof(detail));
	spec_items_fini(&items);
	if (err != CM_OK)
		return fail(c, err, url, detail[0] ? detail : err == CM_ENOENT ? "no such queue" : NULL);
	return send_json(c, 201, out, NULL);
}

/* GET (pop) items from queue qid: ?max=N (1) and ?wait=S (0). The engine
 * keeps the reader in line and answers when items come or the wait ends. */
static enum MHD_Result queue_get(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                                 request *rq)
{
	char detail[256] = "";
	int64_t max = 1, wait_s = 0;

	if (query_int(c, "max", 1, 10000, &max, detail, sizeof(detail)) != CM_OK ||
	    query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
		return problem(c, 400, url, detail);
	call_hold(a, c, rq, "no such queue");
	return call_started(a, c, rq, engine_queue_get_start(a->engine, qid, end, max, wait_s * 1000, call_done, rq));
}

static enum MHD_Result route_queues(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                    const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], location[96];
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		if (strcmp(method, "GET") == 0)
			return listing(a, c, url, engine_queue_list, 0);
		if (strcmp(method, "POST") != 0)
			return problem(c, 405, url, "use GET or POST on /v1/queues");
		if ((err = engine_queue_create(a->engine, "queue", &out)) != CM_OK)
			return fail(c, err, url, NULL);
		snprintf(location, sizeof(location), "/v1/queues/%s", json_string_value(json_object_get(out, "id")));
		return send_json(c, 201, out, location);
	}
	first_segment(rest, sub, id, sizeof(id));
	if (id[0] != 'q')
		return problem(c, 404, url, "no such queue");
	if (!sub || !sub[1]) {
		if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
			return problem(c, 405, url, "use GET or DELETE on a queue");
		err = (strcmp(method, "GET") == 0 ? engine_queue_info : engine_queue_delete)(a->engine, id, &out);
		if (err != CM_OK)
			return fail(c, err, url, err == CM_ENOENT ? "no such queue" : NULL);
		return send_json(c, 200, out, NULL);
	}
	if (strcmp(sub, "/items") != 0)
		return problem(c, 404, url, "no such queue resource (items)");
	if (strcmp(method, "POST") == 0)
		return queue_put(a, c, url, id, -1, rq);
	if (strcmp(method, "GET") == 0)
		return queue_get(a, c, url, id, -1, rq);
	return problem(c, 405, url, "POST items to put, GET items to take");
}

/* A pipe is one queue per direction, "<pipe>.0" and (duplex) "<pipe>.1";
 * which one an end sends to or receives from, the engine decides. */
static enum MHD_Result route_pipes(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], qid[80], detail[256] = "";
	json_t *out = NULL, *other = NULL;
	int duplex, end, err;

	if (!rest[0]) {
		char location[96];
		if (strcmp(method, "GET") == 0)
			return listing(a, c, url, engine_queue_list, 1);
		if (strcmp(method, "POST") != 0)
			return problem(c, 405, url, "use GET or POST on /v1/pipes");
		err = spec_pipe_parse(rq->body.data ? rq->body.data : "", rq->body.len, &duplex, detail,
		                      sizeof(detail));
		if (err == CM_OK)
			err = engine_queue_create(a->engine, duplex ? "duplex" : "simplex", &out);
		if (err != CM_OK)
			return fail(c, err, url, detail);
		const char *pid = json_string_value(json_object_get(out, "id"));
		json_t *ends = json_array();
		for (int i = 0; i < 2; i++) {
			snprintf(location, sizeof(location), "/v1/pipes/%s/ends/%d", pid, i);
			json_array_append_new(ends, json_string(location));
		}
		json_object_set_new(out, "ends", ends);
		snprintf(location, sizeof(location), "/v1/pipes/%s", pid);
		return send_json(c, 201, out, location);
	}
	first_segment(rest, sub, id, sizeof(id));
	if (sub && strncmp(sub, "/ends/", 6) == 0) {
		/* send and recv: the engine picks the direction's queue */
		if (sscanf(sub, "/ends/%d", &end) != 1 || end < 0 || end > 1)
			return problem(c, 404, url, "no such pipe end (ends/0 or ends/1, then send or recv)");
		sub = strchr(sub + 6, '/');
		if (sub && strcmp(sub, "/send") == 0 && strcmp(method, "POST") == 0)
			return queue_put(a, c, url, id, end, rq);
		if (sub && strcmp(sub, "/recv") == 0 && strcmp(method, "GET") == 0)
			return queue_get(a, c, url, id, end, rq);
		return problem(c, 404, url, "use POST .../send or GET .../recv on a pipe end");
	}
	if (sub && sub[1])
		return problem(c, 404, url, "no such pipe resource (ends)");
	if (strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0)
		return problem(c, 405, url, "use GET or DELETE on a pipe");
	snprintf(qid, sizeof(qid), "%s.0", id);
	if (id[0] != 'x' || engine_queue_info(a->engine, qid, &out) != CM_OK)
		return problem(c, 404, url, "no such pipe");
	snprintf(qid, sizeof(qid), "%s.1", id);
	duplex = engine_queue_info(a->engine, qid, &other) == CM_OK;
	if (strcmp(method, "DELETE") == 0) {
		for (int i = 0; i < 1 + duplex; i++) {
			json_t *gone = NULL;
			snprintf(qid, sizeof(qid), "%s.%d", id, i);
			engine_queue_delete(a->engine, qid, &gone);
			json_decref(gone);
		}
	}
	json_t *p = json_pack("{s:s, s:b, s:[o]}", "id", id, "duplex", duplex, "directions", out);
	if (other)
		json_array_append_new(json_object_get(p, "directions"), other);
	if (strcmp(method, "DELETE") == 0)
		json_object_set_new(p, "deleted", json_true());
	return send_json(c, 200, p, NULL);
}

/* ---- managers ----------------------------------------------------------- */

static int look_call(api *a, struct MHD_Connection *c, const char *url, request *rq, int final, enum MHD_Result *ret)
{
	char detail[256] = "";
	int waitable = 0, err;
	json_t *page = first_result_page(a, rq, &waitable, &err, detail, sizeof(detail));
	json_t *item = json_array_get(json_object_get(page, "items"), 0);
	json_t *out;

	if (err != CM_OK) {
		*ret = fail(c, err, url, detail);
		return 1;
	}
	if (!item && !final) {
		json_decref(page);
		return 0;
	}
	if (!item) {
		out = json_pack("{s:s, s:s}", "id", rq->id, "state", "pending");
	} else if (json_is_true(json_object_get(item, "ok"))) {
		json_t *v = json_object_get(item, "value");
		out = json_pack("{s:s, s:s, s:b, s:O?, s:O?, s:O?}", "id", rq->id, "state", "done", "ok", 1, "result",
		                json_object_get(v, "result"), "started_ms", json_object_get(v, "started_ms"),
		                "ended_ms", json_object_get(v, "ended_ms"));
	} else {
		out = json_pack("{s:s, s:s, s:b, s:O?}", "id", rq->id, "state", "done", "ok", 0, "error",
		                json_object_get(item, "error"));
	}
	json_decref(page);
	*ret = send_json(c, 200, out, NULL);
	return 1;
}

/* GET a call: its result once there, waiting up to wait_s. */
static enum MHD_Result manager_call_get(api *a, struct MHD_Connection *c, const char *url, const char *manager,
                                        const char *cid, int64_t wait_s, request *rq)
{
	int err;

	/* Only this manager's calls: any other job's result is not a call's. */
	err = engine_job_info(a->engine, cid, &rq->info);
	if (err == CM_OK && strcmp(rq->info.pool, manager) != 0)
		err = CM_ENOENT;
	if (err != CM_OK)
		return fail(c, err, url, err == CM_ENOENT ? "no such call" : NULL);
	snprintf(rq->id, sizeof(rq->id), "%s", cid);
	return long_poll_start(a, c, url, rq, look_call, wait_s);
}

static enum MHD_Result route_managers(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                      const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], detail[256] = "", location[128];
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		if (strcmp(method, "GET") == 0) {
			if ((err = engine_pool_list(a->engine, 1, &out)) != CM_OK)
				return fail(c, err, url, NULL);
			return send_json(c, 200, out, NULL);
		}
		if (strcmp(method, "POST") != 0)
			return problem(c, 405, url, "use GET or POST on /v1/managers");
		pool_spec spec;
		err = spec_manager_parse(rq->body.data ? rq->body.data : "", rq->body.len, a->cfg->backend,
		                         a->cfg->image, &spec, detail, sizeof(detail));
		if (err == CM_OK)
			err = policy_check_run(a->cfg, &spec, detail, sizeof(detail));
		if (err == CM_OK)
			err = engine_pool_create(a->engine, &spec, &out, detail, sizeof(detail));
		if (err != CM_OK)
			return fail(c, err, url, detail);
		snprintf(location, sizeof(location), "/v1/managers/%s", json_string_value(json_object_get(out, "id")));
		return send_json(c, 201, out, location);
	}
	first_segment(rest, sub, id, sizeof(id));
	if (id[0] != 'm')
		return problem(c, 404, url, "no such manager");
	if (!sub || !sub[1])
		return get_or_delete(a, c, url, method, id, rq, engine_pool_get, engine_pool_delete_start, "manager",
		                     "no such manager");
	if (strcmp(sub, "/calls") == 0 && strcmp(method, "POST") == 0) {
		/* A call is a one-task job of the reserved function "manager". */
		char *arg = NULL;
		if ((err = spec_call_parse(rq->body.data ? rq->body.data : "", rq->body.len, &arg, detail,
		                           sizeof(detail))) != CM_OK)
			return fail(c, err, url, detail);
		size_t offs[2] = {0, strlen(arg)};
		char *fn = strdup("manager");
		map_spec spec = {.function = fn,
		                 .args = {.text = arg, .offs = offs, .n = 1},
		                 .total = 1,
		                 .chunksize = 1,
		                 .max_attempts = 1,
		                 .retry_errors = 0};
		err = fn ? engine_map(a->engine, id, &spec, NULL, &out, detail, sizeof(detail)) : CM_ENOMEM;
		free(spec.function);
		free(arg);
		if (err != CM_OK)
			return fail(c, err, url, err == CM_ENOENT ? "no such manager" : detail);
		const char *cid = json_string_value(json_object_get(out, "id"));
		snprintf(location, sizeof(location), "/v1/managers/%s/calls/%s", id, cid);
		json_t *handle = json_pack("{s:s, s:s, s:s, s:s}", "id", cid, "manager", id, "state", "pending", "href",
		                           location);
		json_decref(out);
		return send_json(c, 202, handle, location);
	}
	if (strncmp(sub, "/calls/", 7) == 0 && strcmp(method, "GET") == 0) {
		int64_t wait_s = 0;
		if (query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
			return problem(c, 400, url, detail);
		return manager_call_get(a, c, url, id, sub + 7, wait_s, rq);
	}
	return problem(c, 404, url, "use POST .../calls, GET .../calls/{id}");
}

/* ---- rings --------------------------------------------------------------- */

static int look_join(api *a, struct MHD_Connection *c, const char *url, request *rq, int final, enum MHD_Result *ret)
{
	json_t *out = NULL;
	int err = rq->get(a->engine, rq->id, &out);

	if (err != CM_OK) {
		*ret = fail(c, err, url, err == CM_ENOENT ? rq->missing : NULL);
		return 1;
	}
	if (!final && strcmp(json_string_value(json_object_get(out, "state")), "running") == 0) {
		json_decref(out);
		return 0;
	}
	*ret = send_json(c, 200, out, NULL);
	return 1;
}

/* GET with ?wait=S on something that runs (a process, a ring): answers once
 * its state is not "running" any more, or after S seconds. */
static enum MHD_Result join(api *a, struct MHD_Connection *c, const char *url, const char *id, request *rq,
                            int (*get)(engine *, const char *, json_t **), const char *missing)
{
	char detail[256] = "";
	int64_t wait_s = 0;

	if (query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
		return problem(c, 400, url, detail);
	snprintf(rq->id, sizeof(rq->id), "%s", id);
	rq->get = get;
	rq->missing = missing;
	return long_poll_start(a, c, url, rq, look_join, wait_s);
}

static enum MHD_Result route_rings(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const char *rest, request *rq)
{
	char detail[256] = "", location[64];
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		process_spec spec;
		int size = 0;
		if (strcmp(method, "GET") == 0) {
			if ((err = engine_ring_list(a->engine, &out)) != CM_OK)
				return fail(c, err, url, NULL);
			return send_json(c, 200, out, NULL);
		}
		if (strcmp(method, "POST") != 0)
			return problem(c, 405, url, "use GET or POST on /v1/rings");
		err = spec_ring_parse(rq->body.data ? rq->body.data : "", rq->body.len, a->cfg->backend, a->cfg->image,
		                      &spec, &size, detail, sizeof(detail));
		if (err != CM_OK)
			return fail(c, err, url, detail);
		if ((err = policy_check_process(a->cfg, &spec, detail, sizeof(detail))) != CM_OK) {
			spec_process_fini(&spec);
			return fail(c, err, url, detail);
		}
		err = engine_ring_start(a->engine, &spec, size, &out, detail, sizeof(detail));
		spec_process_fini(&spec);
		if (err != CM_OK)
			return fail(c, err, url, detail);
		snprintf(location, sizeof(location), "/v1/rings/%s", json_string_value(json_object_get(out, "id")));
		return send_json(c, 201, out, location);
	}
	if (strchr(rest, '/'))
		return problem(c, 404, url, "no such ring resource");
	if (strcmp(method, "DELETE") == 0) {
		call_hold(a, c, rq, "no such ring");
		return call_started(a, c, rq, engine_ring_delete_start(a->engine, rest, call_done, rq));
	}
	if (strcmp(method, "GET") != 0)
		return problem(c, 405, url, "use GET or DELETE on a ring");
	return join(a, c, url, rest, rq, engine_ring_get, "no such ring");
}

/* ---- processes ---------------------------------------------------------- */

static enum MHD_Result route_processes(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                       const char *rest, request *rq)
{
	const char *sub = strchr(rest, '/');
	char id[64], detail[256] = "";
	json_t *out = NULL;
	int err;

	if (!rest[0]) {
		if (strcmp(method, "GET") == 0) {
			if ((err = engine_process_list(a->engine, &out)) != CM_OK)
				return fail(c, err, url, NULL);
			return send_json(c, 200, out, NULL);
		}
		if (strcmp(method, "POST") == 0) {
			process_spec spec;
			char location[64];
			err = spec_process_parse(rq->body.data ? rq->body.data : "", rq->body.len, a->cfg->backend,
			                         a->cfg->image, &spec, detail, sizeof(detail));
			if (err != CM_OK)
				return fail(c, err, url, detail);
			if ((err = policy_check_process(a->cfg, &spec, detail, sizeof(detail))) != CM_OK) {
				spec_process_fini(&spec);
				return fail(c, err, url, detail);
			}
			err = engine_process_start(a->engine, &spec, &out, detail, sizeof(detail));
			spec_process_fini(&spec);
			if (err != CM_OK)
				return fail(c, err, url, detail[0] ? detail : NULL);
			snprintf(location, sizeof(location), "/v1/processes/%s",
			         json_string_value(json_object_get(out, "id")));
			return send_json(c, 201, out, location);
		}
		return problem(c, 405, url, "use GET or POST on /v1/processes");
	}
	first_segment(rest, sub, id, sizeof(id));
	if (sub && strcmp(sub, "/logs") == 0 && strcmp(method, "GET") == 0) {
		if ((err = engine_process_logs(a->engine, id, &out)) != CM_OK)
			return fail(c, err, url, err == CM_ENOENT ? "no such process" : NULL);
		char *text = strndup(json_string_value(out), json_string_length(out));
		size_t len = json_string_length(out);
		json_decref(out);
		return text ? send_text(c, 200, text, len, "text/plain; charset=utf-8", NULL) : MHD_NO;
	}
	if (sub && sub[1])
		return problem(c, 404, url, "no such process resource (logs)");
	if (strcmp(method, "DELETE") == 0) {
		call_hold(a, c, rq, "no such process");
		return call_started(a, c, rq, engine_process_delete_start(a->engine, id, call_done, rq));
	}
	if (strcmp(method, "GET") != 0)
		return problem(c, 405, url, "use GET or DELETE on a process");
	return join(a, c, url, id, rq, engine_process_get, "no such process");
}

/* ---- dashboard ---------------------------------------------------------- */

static enum MHD_Result serve_file(api *a, struct MHD_Connection *c, const char *url, const char *name)
{
	char path[2048];
	const char *dot = strrchr(name, '.');
	const char *type = "application/octet-stream";
	struct stat sb;
	int fd;

	if (strstr(name, "..") || strchr(name, '/'))
		return problem(c, 404, url, "no such file");
	snprintf(path, sizeof(path), "%s/%s", a->cfg->web_root, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		if (fd >= 0)
			close(fd);
		return problem(c, 404, url, "no such file");
	}
	if (dot && strcmp(dot, ".html") == 0)
		type = "text/html; charset=utf-8";
	else if (dot && strcmp(dot, ".js") == 0)
		type = "text/javascript";
	else if (dot && strcmp(dot, ".css") == 0)
		type = "text/css";
	struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)sb.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	/* The dashboard runs only its own scripts, talks only to this origin,
	 * and is never framed: its buttons delete pools (clickjacking). */
	MHD_add_response_header(r, "Content-Security-Policy",
	                        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
	                        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- who may ask ------------------------------------------------------- */

typedef struct header_count {
	int content_length; /* how many Content-Length headers */
	int differ; /* two of them disagree */
	int transfer_encoding;
	const char *first;
} header_count;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	header_count *h = cls;

	(void)kind;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
		if (h->content_length++ && value && h->first && strcmp(value, h->first) != 0)
			h->differ = 1;
		if (!h->first)
			h->first = value;
	} else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
		h->transfer_encoding = 1;
	}
	return MHD_YES;
}

static int is_safe_method(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

/* Checks what can be checked from the request line and headers alone, before
 * any of the body is read: returns 0 to go on, or an HTTP status with the
 * reason in detail. */
static int screen(api *a, struct MHD_Connection *c, const char *url, const char *method, char *detail,
                  size_t detail_len)
{
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ORIGIN);
	const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *cookie = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, AUTH_COOKIE);
	header_count h = {0};

	if (strlen(url) > API_URL_MAX) {
		snprintf(detail, detail_len, "the URL is over %d bytes", API_URL_MAX);
		return 414;
	}
	if (!cm_utf8_valid(url, strlen(url))) {
		snprintf(detail, detail_len, "the URL is not valid UTF-8 once percent-decoded");
		return 400;
	}
	MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &h);
	if (h.differ || (h.content_length && h.transfer_encoding)) {
		snprintf(detail, detail_len, "conflicting Content-Length or Transfer-Encoding headers");
		return 400;
	}
	/* DNS rebinding: a page on a name that resolves here carries that name. */
	if (!auth_host_allowed(host, a->cfg->public_hosts)) {
		snprintf(detail, detail_len,
		         "Host '%.100s' is not a name of this gateway: use its IP address, localhost or a "
		         "--public-host name",
		         host ? host : "");
		return 421;
	}
	if (strcmp(url, "/healthz") == 0) {
		if (!is_safe_method(method)) {
			snprintf(detail, detail_len, "use GET on /healthz");
			return 405;
		}
		return 0;
	}
	if (strncmp(url, "/v1/", 4) != 0 && strcmp(url, "/v1") != 0 && strcmp(url, "/metrics") != 0)
		return 0; /* the dashboard's files: public; they hold no data */
	if (origin && !auth_origin_same(origin, host)) {
		snprintf(detail, detail_len, "cross-origin request refused (Origin '%.100s')", origin);
		return 403;
	}
	if (!is_safe_method(method) && (h.content_length || h.transfer_encoding) &&
	    !(h.first && strcmp(h.first, "0") == 0) && !auth_content_type_json(type)) {
		snprintf(detail, detail_len, "request bodies must be 'Content-Type: application/json'");
		return 415;
	}
	if (!a->token[0] || strcmp(url, "/v1/session") == 0)
		return 0; /* --no-auth; or the dashboard's sign-in, which checks the token itself */
	if (auth_token_equal(a->token, auth_bearer(auth)))
		return 0;
	if (!auth && auth_token_equal(a->token, cookie)) {
		/* A browser sends the cookie on its own: a change must also come
		 * with this gateway's own Origin (checked above). */
		if (is_safe_method(method) || origin)
			return 0;
		snprintf(detail, detail_len, "a request authenticated by cookie must carry this gateway's Origin");
		return 403;
	}
	snprintf(detail, detail_len,
	         auth ? "the bearer token is not this gateway's"
	              : "authentication required: 'Authorization: Bearer TOKEN' (the token is in the gateway's token "
	                "file, see strand-gateway --help)");
	return 401;
}

/* POST /v1/session {"token"}: the dashboard signs in once and the browser
 * keeps the token in an HttpOnly, SameSite=Strict cookie, out of the reach
 * of scripts and of other sites. DELETE signs out. GET says whether the
 * request is signed in (cookie or bearer), with no 401 to log: the
 * dashboard asks before it shows anything. */
static enum MHD_Result route_session(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                     const request *rq)
{
	char cookie[AUTH_TOKEN_MAX + 128];
	json_t *body, *token;
	int ok;

	if (strcmp(method, "GET") == 0) {
		const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
		const char *held = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, AUTH_COOKIE);
		int in = !a->token[0] || auth_token_equal(a->token, auth ? auth_bearer(auth) : held);
		return send_json(c, 200, json_pack("{s:b}", "signed_in", in), NULL);
	}
	if (strcmp(method, "DELETE") == 0) {
		snprintf(cookie, sizeof(cookie), "%s=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", AUTH_COOKIE);
		return send_text_with(c, 200, strdup("{}"), 2, "application/json", MHD_HTTP_HEADER_SET_COOKIE, cookie);
	}
	if (strcmp(method, "POST") != 0)
		return problem(c, 405, url, "sign in with POST /v1/session {\"token\": ...}, out with DELETE");
	/* Reached without a token: its body is capped small (on_request). */
	body = json_loadb(rq->body.data ? rq->body.data : "", rq->body.len, 0, NULL);
	token = json_object_get(body, "token");
	if (!json_is_object(body) || !json_is_string(token) || json_object_size(body) != 1) {
		json_decref(body);
		return problem(c, 400, url, "a sign-in is {\"token\": \"...\"}");
	}
	ok = !a->token[0] || auth_token_equal(a->token, json_string_value(token));
	json_decref(body);
	if (!ok)
		return problem(c, 401, url, "the token is not this gateway's");
	snprintf(cookie, sizeof(cookie), "%s=%s; Path=/; HttpOnly; SameSite=Strict%s", AUTH_COOKIE, a->token,
	         a->cfg->tls_cert[0] ? "; Secure" : "");
	return send_text_with(c, 200, strdup("{\"signed_in\":true}"), 18, "application/json",
	                      MHD_HTTP_HEADER_SET_COOKIE, cookie);
}

/* ---- dispatch ----------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	api *a = cls;
	request *rq = *con_cls;

	(void)version;
	if (!rq) {
		char detail[256];
		int status;
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		rq->api = a;
		rq->connection = c;
		rq->route = route_find(url);
		snprintf(rq->method, sizeof(rq->method), "%s", method);
		cm_buf_init(&rq->body);
		/* The sign-in is the one route without a token: its body is a token. */
		rq->cap = strcmp(url, "/v1/session") == 0 ? API_SESSION_BODY_MAX : API_BODY_MAX;
		*con_cls = rq;
		/* Refused before its body is read: an unauthenticated client
		 * cannot make the gateway buffer anything. */
		if ((status = screen(a, c, url, method, detail, sizeof(detail))) != 0) {
			rq->refused = 1;
			if (status == 401)
				return problem_with(c, status, url, detail, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				                    "Bearer realm=\"strand\"");
			return problem(c, status, url, detail);
		}
		return MHD_YES;
	}
	if (rq->refused) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!rq->too_big && rq->body.len + *upload_size > rq->cap)
			rq->too_big = 1;
		if (!rq->too_big && cm_buf_append(&rq->body, upload_data, *upload_size) != CM_OK)
			rq->too_big = 1;
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->calling) /* resumed: the engine answered the call it started */
		return rq->applying ? apply_answer(c, url, rq) : call_answer(c, url, rq);
	if (rq->look) /* resumed: a long poll looks again */
		return long_poll(a, c, url, rq);
	if (rq->too_big) {
		char detail[96];
		snprintf(detail, sizeof(detail), "request body is over the %zu byte cap", rq->cap);
		return problem(c, 413, url, detail);
	}
	if (rq->route < route_count && !route_allows(rq->route, method)) {
		char detail[160], allow[64];
		route_usage(rq->route, detail, sizeof(detail), allow, sizeof(allow));
		return problem_with(c, 405, url, detail, MHD_HTTP_HEADER_ALLOW, allow);
	}
	if (strcmp(url, "/healthz") == 0)
		return send_json(c, 200,
		                 json_pack("{s:s, s:i, s:s, s:I}", "status", "ok", "pid", (int)getpid(), "sync",
		                           a->cfg->sync_full ? "full" : "normal", "db_bytes",
		                           (json_int_t)store_file_bytes(a->cfg->db)),
		                 NULL);
	if (strcmp(url, "/v1/session") == 0)
		return route_session(a, c, url, method, rq);
	if (strcmp(url, "/metrics") == 0)
		return get_metrics(a, c, url);
	if (strcmp(url, "/v1/openapi.json") == 0)
		return get_openapi(c);
	if (strncmp(url, "/v1/pools", 9) == 0 && (url[9] == '\0' || url[9] == '/'))
		return route_pools(a, c, url, method, url[9] ? url + 10 : "", rq);
	if (strncmp(url, "/v1/jobs/", 9) == 0 && url[9])
		return route_jobs(a, c, url, method, url + 9, rq);
	if (strcmp(url, "/v1/jobs") == 0 || strcmp(url, "/v1/jobs/") == 0)
		return list_jobs(a, c, url, method);
	if (strcmp(url, "/v1/events") == 0)
		return get_events(a, c, url, rq);
	if (strncmp(url, "/v1/queues", 10) == 0 && (url[10] == '\0' || url[10] == '/'))
		return route_queues(a, c, url, method, url[10] ? url + 11 : "", rq);
	if (strncmp(url, "/v1/rings", 9) == 0 && (url[9] == '\0' || url[9] == '/'))
		return route_rings(a, c, url, method, url[9] ? url + 10 : "", rq);
	if (strncmp(url, "/v1/managers", 12) == 0 && (url[12] == '\0' || url[12] == '/'))
		return route_managers(a, c, url, method, url[12] ? url + 13 : "", rq);
	if (strncmp(url, "/v1/processes", 13) == 0 && (url[13] == '\0' || url[13] == '/'))
		return route_processes(a, c, url, method, url[13] ? url + 14 : "", rq);
	if (strncmp(url, "/v1/pipes", 9) == 0 && (url[9] == '\0' || url[9] == '/'))
		return route_pipes(a, c, url, method, url[9] ? url + 10 : "", rq);
	if (strcmp(url, "/") == 0 || strncmp(url, "/web/", 5) == 0) {
		if (strcmp(method, "GET") != 0)
			return problem(c, 405, url, "the dashboard's files are read with GET");
		return serve_file(a, c, url, url[1] ? url + 5 : "index.html");
	}
	return problem(c, 404, url, "no such resource");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	api *a = cls;
	request *rq = *con_cls;

	(void)toe;
	if (rq) {
		const union MHD_ConnectionInfo *status = MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS);
		if (status) /* none: the client went before it was answered */
			http_metrics_count(a->metrics, rq->route, rq->method, status->http_status);
	}
	if (rq && rq->parked) {
		pthread_mutex_lock(&a->mu);
		if (--a->parked == 0)
			pthread_cond_broadcast(&a->unparked);
		pthread_mutex_unlock(&a->mu);
	}
	if (rq) {
		if (rq->applying)
			spec_map_fini(&rq->spec);
		cm_buf_fini(&rq->body);
		free(rq->accepted);
		free(rq);
		*con_cls = NULL;
	}
}

/* Parses "HOST:PORT" or "[V6]:PORT" into a numeric socket address. */
static int parse_addr(const char *text, struct sockaddr_storage *ss, int *v6, char *detail, size_t detail_len)
{
	char host[256], port[6];
	struct addrinfo hints = {.ai_flags = AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;

	if (cm_host_port(text, strlen(text), host, sizeof(host), port) != CM_OK ||
	    getaddrinfo(host, port, &hints, &res) != 0 || !res)
		goto bad;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*v6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	return CM_OK;
bad:
	snprintf(detail, detail_len, "HTTP address '%s' is not HOST:PORT ([V6]:PORT for IPv6, a port of 1 to 65535)",
	         text);
	return CM_EINVAL;
}

static int hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
		return (ch | 0x20) - 'a' + 10;
	return -1;
}

/* Percent-decoding of the path and query, as MHD's own except that %00 is
 * left as it is: a NUL would end the id early, so that "p-1%00x" would name
 * pool p-1. Returns the new length. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	char *w = s;

	(void)cls;
	(void)c;
	for (const char *r = s; *r;) {
		int hi = r[0] == '%' ? hex_value(r[1]) : -1;
		int lo = hi >= 0 ? hex_value(r[2]) : -1;
		if (lo >= 0 && (hi | lo) != 0) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return 0;
}

/* The token every /v1 request must carry, or none with --no-auth (loopback
 * only: anyone who can reach the port could otherwise run programs). */
static int load_token(api *a, const struct sockaddr_storage *ss, char *detail, size_t detail_len)
{
	const gw_config *cfg = a->cfg;
	int created = 0, err;

	if (cfg->no_auth) {
		if (!is_loopback(ss)) {
			snprintf(detail, detail_len,
			         "--no-auth is refused unless --http is a loopback address (not %s)", cfg->http);
			return CM_EINVAL;
		}
		cm_warn("authentication is OFF (--no-auth): every local user and process can use the API");
		return CM_OK;
	}
	if ((err = auth_token_load(cfg->token_file, cfg->token, a->token, &created, detail, detail_len)) != CM_OK)
		return err;
	if (cfg->token[0])
		cm_info("API token: from STRAND_TOKEN");
	else
		cm_info("API token: in %s%s", cfg->token_file, created ? " (created now)" : "");
	return CM_OK;
}

/* --http-max, or what the open-file limit (raised to its hard maximum at
 * start) leaves after a reserve for the store and the workers, and the
 * quarter the hub's connections may take (hub/hub.c). */
static unsigned connection_limit(const gw_config *cfg)
{
	struct rlimit rl;
	rlim_t room;

	if (cfg->http_max > 0)
		return (unsigned)cfg->http_max;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return API_CONNECTIONS_MAX;
	room = rl.rlim_cur - rl.rlim_cur / 4;
	room = room > 2 * API_FD_RESERVE ? room - API_FD_RESERVE : room / 2;
	return room < API_CONNECTIONS_MAX ? (unsigned)room : API_CONNECTIONS_MAX;
}

int api_start(const gw_config *cfg, engine *e, api **out, char *detail, size_t detail_len)
{
	api *a = calloc(1, sizeof(*a));
	struct sockaddr_storage ss;
	int v6 = 0;
	int err;

	if (!a)
		return CM_ENOMEM;
	a->cfg = cfg;
	a->engine = e;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->unparked, NULL);
	cm_buf_init(&a->tls_cert);
	cm_buf_init(&a->tls_key);
	if ((err = parse_addr(cfg->http, &ss, &v6, detail, detail_len)) != CM_OK ||
	    (err = load_token(a, &ss, detail, detail_len)) != CM_OK ||
	    (cfg->tls_cert[0] && ((err = cm_read_pem(cfg->tls_cert, &a->tls_cert, detail, detail_len)) != CM_OK ||
	                          (err = cm_read_pem(cfg->tls_key, &a->tls_key, detail, detail_len)) != CM_OK)) ||
	    (err = http_metrics_new(&a->metrics)) != CM_OK || (err = parking_new(e, &a->parking)) != CM_OK) {
		api_stop(a);
		return err;
	}
	struct MHD_OptionItem tls[] = {
	        {MHD_OPTION_HTTPS_MEM_CERT, 0, a->tls_cert.data},
	        {MHD_OPTION_HTTPS_MEM_KEY, 0, a->tls_key.data},
	        {MHD_OPTION_END, 0, NULL},
	};
	/* A few threads, each polling its share of the connections with
	 * epoll; long polls are suspended, not waited for (parking.h). The idle
	 * timeout covers reading a request and a silent keep-alive; a
	 * suspended connection is not idle. One client address cannot take
	 * every connection, and all of them stay below the open-file limit the
	 * gateway also needs for its store, hub and workers. */
	a->daemon = MHD_start_daemon(
	        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0) |
	                (cfg->tls_cert[0] ? MHD_USE_TLS : 0),
	        0, NULL, NULL, on_request, a, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTP_THREADS, MHD_OPTION_SOCK_ADDR,
	        (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, a, MHD_OPTION_UNESCAPE_CALLBACK,
	        unescape, a, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http_idle_s, MHD_OPTION_CONNECTION_LIMIT,
	        connection_limit(cfg), MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->http_per_client,
	        MHD_OPTION_ARRAY, cfg->tls_cert[0] ? tls : tls + 2, MHD_OPTION_END);
	if (!a->daemon) {
		snprintf(detail, detail_len,
		         "cannot listen on %s://%s (in use, or the certificate and key do not match?)",
		         cfg->tls_cert[0] ? "https" : "http", cfg->http);
		api_stop(a);
		return CM_EUNAVAIL;
	}
	*out = a;
	return CM_OK;
}

void api_stop(api *a)
{
	if (!a)
		return;
	/* libmicrohttpd must not stop with a connection suspended: every long
	 * poll answers first (the engine quiesced, so none waits long). */
	if (a->parking)
		parking_stop(a->parking);
	/* ... and is sent: stopping closes connections with answers unsent.
	 * A client that does not read gets a few seconds. */
	pthread_mutex_lock(&a->mu);
	struct timespec until = cm_timespec_in(CLOCK_REALTIME, API_STOP_GRACE_MS);
	while (a->parked && pthread_cond_timedwait(&a->unparked, &a->mu, &until) == 0)
		;
	pthread_mutex_unlock(&a->mu);
	if (a->daemon)
		MHD_stop_daemon(a->daemon);
	parking_free(a->parking);
	http_metrics_free(a->metrics);
	while (a->nreaders)
		store_close(a->readers[--a->nreaders]);
	if (a->tls_key.data)
		explicit_bzero(a->tls_key.data, a->tls_key.len);
	cm_buf_fini(&a->tls_cert);
	cm_buf_fini(&a->tls_key);
	pthread_cond_destroy(&a->unparked);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

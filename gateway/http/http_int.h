/*
 * The HTTP side's inside, shared by its files in gateway/http/:
 *   api.c          the daemon: start, stop, and the dispatch of each request
 *   screen.c       who may ask: URL, headers, host, origin, token
 *   reply.c        answers: JSON, text, RFC 9457 problems; query parameters
 *   long_poll.c    requests that wait: long polls and engine calls that
 *                  answer later, parked meanwhile (parking.h)
 *   results.c      result and failure pages, read from the store
 *   logs.c         a pool's output, read from the store
 *   pools.c, jobs.c, queues.c, pipes.c, managers.c, rings.c, processes.c,
 *   session.c, code.c, values.c, leases.c  one resource each: its routes
 *                                under /v1; uploads.c streams their bodies
 *   run_check.c    what only this host can say of what a pool or process asks
 *   service.c      health, metrics, the OpenAPI document, the event stream
 *                  (event_stream.c) and the dashboard's files
 * Handlers run on libmicrohttpd's threads, so none may wait long: a short
 * request waits for one engine cycle; a long poll parks its connection and
 * looks again when resumed. Nothing here holds engine state.
 */
#ifndef GATEWAY_HTTP_HTTP_INT_H
#define GATEWAY_HTTP_HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>

#include "common/common.h"
#include "gateway/auth.h"
#include "gateway/sessions.h"
#include "gateway/http/api.h"
#include "gateway/http/deadlines.h"
#include "gateway/http/front_door.h"
#include "gateway/http/metrics.h"
#include "gateway/http/parking.h"
#include "store/store.h"

#define READERS 16 /* idle read-only store connections kept for result pages */

struct api {
	const gw_config *cfg;
	engine *engine;
	blob_store *code; /* uploaded code packages */
	blob_store *values; /* uploaded values */
	char token[AUTH_TOKEN_MAX]; /* "" with --no-auth */
	sessions *sessions; /* the dashboard's sign-ins */
	char cookie[32]; /* their cookie's name: strand_session_PORT */
	cm_buf tls_cert, tls_key; /* PEM, kept for as long as the daemon runs */
	struct MHD_Daemon *daemon;
	parking *parking;
	pthread_mutex_t mu;
	store *readers[READERS]; /* idle read-only connections */
	int nreaders;
	size_t parked; /* requests that parked once and are not completed yet */
	pthread_cond_t unparked;
	http_metrics *metrics; /* requests counted as they complete */
	deadlines *deadlines; /* for each request's headers and body */
	front_door *front; /* accepts connections, hands them to the daemon */
	size_t inflight; /* bytes of request bodies held at once (under mu), --max-inflight-bytes */
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
	int too_busy; /* its body would go past --max-inflight-bytes */
	size_t reserved; /* of the bodies held at once (api.inflight), given back when completed */
	int refused; /* answered at its first call: the body is not read */
	size_t route; /* its route_table index, counted when it completes */
	char method[8];
	int parked; /* counted in api.parked until it completes */

	/* A long poll, between its looks: what it waits on and until when. */
	request_look look;
	engine_watch watch; /* which commits may bring what it waits for */
	int64_t deadline;
	char id[64]; /* the job, call, process or ring */
	job_info info;
	page_query page;
	char worker[24]; /* a pool's logs: of this worker only ("": all) */
	int missed; /* ... of which lines after the reader's were trimmed before it read them */
	int (*get)(engine *, const char *, json_t **); /* a join's */
	const char *missing; /* 404's detail */
	char *accepted; /* apply: the 202 answer when no result comes in time (JSON text) */
	size_t accepted_len;
	char location[64];
	/* An apply that waits: the engine answers it (engine_apply_start); the
	 * request holds its spec and key until it completes. */
	int applying;
	char manager[24]; /* ... a manager's call (POST .../calls?wait=): its manager, answered as a call */
	map_spec spec;
	char idem_key[129];

	/* An engine call it started, answered once the connection resumes. */
	int calling;
	engine_call *call; /* NULL while calling: there was no memory to start it */

	/* PUT /v1/code/{sha256} or /v1/values/{sha256}: its body streams into
	 * the store (uploads.c). */
	int uploading;
	blob_upload *upload; /* NULL once finished or refused */
	int upload_err; /* the first refusal of its bytes (CM_ETOOBIG, CM_EIO) */
	int stored_already; /* the blob it names is stored: its bytes are dropped */
	int64_t stored_size;
	char upload_detail[200];
};

/* ---- reply.c: answers and query parameters ------------------------------ */

/* Queues text (stolen) as the answer; header_name/value: one extra header
 * (Location, WWW-Authenticate, Set-Cookie), or NULL. */
enum MHD_Result http_send_text_with(struct MHD_Connection *c, int status, char *text, size_t len, const char *type,
                                    const char *header_name, const char *header_value);
enum MHD_Result http_send_text(struct MHD_Connection *c, int status, char *text, size_t len, const char *type,
                               const char *location);
/* Sends and releases j (stolen). */
enum MHD_Result http_send_json(struct MHD_Connection *c, int status, json_t *j, const char *location);
/* An RFC 9457 problem+json answer (detail NULL or "": the status' reason). */
enum MHD_Result http_problem_with(struct MHD_Connection *c, int status, const char *url, const char *detail,
                                  const char *header_name, const char *header_value);
enum MHD_Result http_problem(struct MHD_Connection *c, int status, const char *url, const char *detail);
/* The problem a CM_* error is (404 for CM_ENOENT, 409 for CM_ECLOSED, ...). */
enum MHD_Result http_fail(struct MHD_Connection *c, int err, const char *url, const char *detail);
/* Query parameter name as an integer in [lo, hi] into *out, left as it is
 * when absent; CM_EINVAL with detail otherwise. */
int http_query_int(struct MHD_Connection *c, const char *name, int64_t lo, int64_t hi, int64_t *out, char *detail,
                   size_t detail_len);
/* An id-like query parameter: lower-case letters, digits, dots and dashes,
 * shorter than len, into out ("" when absent); CM_EINVAL with detail
 * otherwise. */
int http_query_id(struct MHD_Connection *c, const char *name, char *out, size_t len, char *detail, size_t detail_len);
void http_first_segment(const char *rest, const char *sub, char *id, size_t id_len);

/* ---- join.c: workers that join external pools --------------------------- */

enum MHD_Result http_post_join_token(api *a, struct MHD_Connection *c, const char *url, const char *pool_id,
                                     const request *rq);
enum MHD_Result http_post_join(api *a, struct MHD_Connection *c, const char *url, const char *method,
                               const request *rq);

/* ---- lists.c: GET on a collection, a page of it ------------------------ */

enum MHD_Result http_listing(api *a, struct MHD_Connection *c, const char *url, engine_list_kind kind);

/* ---- long_poll.c: requests that wait ------------------------------------ */

void http_count_parked(api *a, request *rq);
enum MHD_Result http_long_poll(api *a, struct MHD_Connection *c, const char *url, request *rq);
enum MHD_Result http_long_poll_start(api *a, struct MHD_Connection *c, const char *url, request *rq, request_look look,
                                     int64_t wait_s);
/* An engine call's done callback: resumes the request's connection. */
void http_call_done(void *ctx);
void http_call_hold(api *a, struct MHD_Connection *c, request *rq, const char *missing);
enum MHD_Result http_call_answer(struct MHD_Connection *c, const char *url, request *rq);
enum MHD_Result http_call_started(api *a, struct MHD_Connection *c, request *rq, engine_call *call);
enum MHD_Result http_get_or_delete(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const char *id, request *rq, int (*get)(engine *, const char *, json_t **),
                                   engine_call *(*del)(engine *, const char *, engine_call_done, void *),
                                   const char *noun, const char *missing, int joinable);

/* ---- results.c ---------------------------------------------------------- */

/* A read-only store connection, borrowed for one request (NULL with the
 * reason when none opens), and given back. */
store *http_reader_take(api *a, char *detail, size_t detail_len);
void http_reader_give(api *a, store *st);

json_t *http_first_result_page(api *a, request *rq, int *waitable, int *err, char *detail, size_t detail_len);
enum MHD_Result http_get_results(api *a, struct MHD_Connection *c, const char *url, const char *job_id, request *rq);
enum MHD_Result http_get_failures(api *a, struct MHD_Connection *c, const char *url, const char *job_id);

/* ---- the resources: each routes what follows its prefix (rest) ---------- */

enum MHD_Result http_route_pools(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *rest, request *rq);
enum MHD_Result http_pools_collection(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                      const request *rq, int managers);
/* The answer of the apply rq waited for, taken from its call (CM_ENOMEM:
 * there was no memory to start it). */
int http_apply_take(request *rq, engine_apply_answer *ans, char *detail, size_t detail_len);
enum MHD_Result http_apply_answer(struct MHD_Connection *c, const char *url, request *rq);
/* The same for a manager's call that waited (managers.c). */
enum MHD_Result http_manager_call_answer(struct MHD_Connection *c, const char *url, request *rq);
enum MHD_Result http_route_jobs(api *a, struct MHD_Connection *c, const char *url, const char *method, const char *rest,
                                request *rq);
enum MHD_Result http_list_jobs(api *a, struct MHD_Connection *c, const char *url, const char *method);
enum MHD_Result http_jobs_page(api *a, struct MHD_Connection *c, const char *url, const char *pool_id);
enum MHD_Result http_route_queues(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *rest, request *rq);
/* end: -1 for a queue's items, else the pipe end (pipes.c). */
enum MHD_Result http_queue_put(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                               const request *rq);
enum MHD_Result http_queue_take(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                                request *rq);
enum MHD_Result http_queue_release(api *a, struct MHD_Connection *c, const char *url, const char *qid, int end,
                                   const char *hold);
enum MHD_Result http_route_pipes(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *rest, request *rq);
enum MHD_Result http_route_managers(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                    const char *rest, request *rq);
enum MHD_Result http_route_rings(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *rest, request *rq);
enum MHD_Result http_route_processes(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                     const char *rest, request *rq);
/* The session id this request's dashboard cookie holds, or NULL. */
const char *http_session_cookie(const api *a, struct MHD_Connection *c);
enum MHD_Result http_route_session(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const request *rq);

enum MHD_Result http_route_leases(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *rest, const request *rq);

/* ---- logs.c: what a pool's tasks printed --------------------------------- */

enum MHD_Result http_get_pool_logs(api *a, struct MHD_Connection *c, const char *url, const char *pool_id, request *rq);

/* ---- uploads.c: a blob's body streamed into its store ------------------ */

/* The store a request uploads into (PUT /v1/code/{sha256},
 * PUT /v1/values/{sha256}), or NULL: uploads.c takes its body. */
blob_store *http_upload_store(api *a, const char *url, const char *method);
/* At its first call, after screening: refused at once (413 by its
 * Content-Length, 200 when stored already) or begun. */
enum MHD_Result http_upload_begin(struct MHD_Connection *c, const char *url, blob_store *into, request *rq);
void http_upload_bytes(request *rq, const char *data, size_t len);
/* The request ended before its body did: nothing of it is kept. */
void http_upload_forget(request *rq);
/* The whole body came: 201 once stored under name, or refused. */
enum MHD_Result http_upload_end(struct MHD_Connection *c, const char *url, const char *name, request *rq);
/* {"sha256", "size"} */
json_t *http_blob_json(const char *sha256, int64_t size);

/* ---- code.c, run_check.c and values.c: code packages and values --------- */

enum MHD_Result http_route_code(api *a, struct MHD_Connection *c, const char *url, const char *method, const char *rest,
                                request *rq);
/* CM_OK when spec names no code package or one stored; CM_EUNSUPPORTED
 * (422) with the reason otherwise. */
int http_code_check(api *a, const pool_spec *spec, char *detail, size_t detail_len);
/* http_code_check, and for the local backend's sandbox its volumes
 * (sandbox_volumes_check): CM_OK or CM_EUNSUPPORTED (422) with why. */
int http_run_check(api *a, const pool_spec *spec, char *detail, size_t detail_len);
enum MHD_Result http_route_values(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *rest, request *rq);

/* ---- screen.c and service.c --------------------------------------------- */

/* 0 to go on, or the HTTP status a request is refused with (detail: why),
 * from its request line and headers alone, before its body is read. */
int http_screen(api *a, struct MHD_Connection *c, const char *url, const char *method, char *detail, size_t detail_len);
enum MHD_Result http_get_health(api *a, struct MHD_Connection *c);
enum MHD_Result http_get_metrics(api *a, struct MHD_Connection *c, const char *url);
enum MHD_Result http_get_openapi(struct MHD_Connection *c);
enum MHD_Result http_get_events(api *a, struct MHD_Connection *c, const char *url, request *rq);
enum MHD_Result http_get_history(api *a, struct MHD_Connection *c, const char *url);
enum MHD_Result http_serve_file(api *a, struct MHD_Connection *c, const char *url, const char *name);

#endif

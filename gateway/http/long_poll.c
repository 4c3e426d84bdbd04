/*
 * Requests that wait without holding a thread: a long poll looks (request_look)
 * and parks its connection until the next commit or its deadline; an
 * engine call that answers later (a DELETE that waits for processes to
 * end, a queue get) holds its connection until its done callback resumes
 * it, and is answered then (http_call_answer).
 */
#define _GNU_SOURCE
#include <string.h>

#include "gateway/http/http_int.h"

/* Counts a request that parks for the first time: the API's stop waits
 * until each is answered and sent. */
void http_count_parked(api *a, request *rq)
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
enum MHD_Result http_long_poll(api *a, struct MHD_Connection *c, const char *url, request *rq)
{
	uint64_t gen = engine_generation(a->engine, rq->watch);
	int final = cm_now_ms() >= rq->deadline || engine_closing(a->engine);
	enum MHD_Result ret;

	if (rq->look(a, c, url, rq, final, &ret))
		return ret;
	http_count_parked(a, rq);
	parking_wait(a->parking, c, rq->watch, gen, rq->deadline);
	return MHD_YES;
}

/* Starts a long poll of wait_s seconds (0: one look). */
enum MHD_Result http_long_poll_start(api *a, struct MHD_Connection *c, const char *url, request *rq, request_look look,
                                     int64_t wait_s)
{
	rq->look = look;
	rq->deadline = cm_now_ms() + wait_s * 1000;
	return http_long_poll(a, c, url, rq);
}

void http_call_done(void *ctx)
{
	request *rq = ctx;

	parking_resume(rq->api->parking, rq->connection);
}

/* Holds the connection for a call start() is about to start; the handler
 * runs again once it is answered (http_call_answer). */
void http_call_hold(api *a, struct MHD_Connection *c, request *rq, const char *missing)
{
	rq->calling = 1;
	rq->missing = missing;
	http_count_parked(a, rq);
	parking_hold(a->parking, c);
}

/* A started call was answered (or could not start): its answer. */
enum MHD_Result http_call_answer(struct MHD_Connection *c, const char *url, request *rq)
{
	char detail[256] = "";
	json_t *out = NULL;
	int err;

	if (!rq->call)
		return http_fail(c, CM_ENOMEM, url, NULL);
	err = engine_call_finish(rq->call, &out, detail, sizeof(detail));
	rq->call = NULL;
	rq->calling = 0;
	if (err != CM_OK)
		return http_fail(c, err, url, detail[0] ? detail : err == CM_ENOENT ? rq->missing : NULL);
	return http_send_json(c, 200, out, NULL);
}

enum MHD_Result http_call_started(api *a, struct MHD_Connection *c, request *rq, engine_call *call)
{
	rq->call = call;
	if (!call) /* done never runs: resume now, answered as out of memory */
		parking_resume(a->parking, c);
	return MHD_YES;
}

static int look_join(api *a, struct MHD_Connection *c, const char *url, request *rq, int final, enum MHD_Result *ret)
{
	json_t *out = NULL;
	int err = rq->get(a->engine, rq->id, &out);

	if (err != CM_OK) {
		*ret = http_fail(c, err, url, err == CM_ENOENT ? rq->missing : NULL);
		return 1;
	}
	if (!final && strcmp(json_string_value(json_object_get(out, "state")), "running") == 0) {
		json_decref(out);
		return 0;
	}
	*ret = http_send_json(c, 200, out, NULL);
	return 1;
}

/* GET with ?wait=S on something that runs (a process, a ring): answers once
 * its state is not "running" any more, or after S seconds. */
static enum MHD_Result join(api *a, struct MHD_Connection *c, const char *url, const char *id, request *rq,
                            int (*get)(engine *, const char *, json_t **), const char *missing)
{
	char detail[256] = "";
	int64_t wait_s = 0;

	if (http_query_int(c, "wait", 0, API_WAIT_MAX_S, &wait_s, detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	snprintf(rq->id, sizeof(rq->id), "%s", id);
	rq->get = get;
	rq->missing = missing;
	return http_long_poll_start(a, c, url, rq, look_join, wait_s);
}

/* GET or DELETE of one resource: its JSON, or 404 naming what is missing.
 * A DELETE answers once the engine did it (it may wait for processes to
 * end); a joinable one's GET takes ?wait=S to wait for its end (join). */
enum MHD_Result http_get_or_delete(api *a, struct MHD_Connection *c, const char *url, const char *method,
                                   const char *id, request *rq, int (*get)(engine *, const char *, json_t **),
                                   engine_call *(*del)(engine *, const char *, engine_call_done, void *),
                                   const char *noun, const char *missing, int joinable)
{
	char detail[96];
	json_t *out = NULL;
	int err;

	if (strcmp(method, "DELETE") == 0) {
		http_call_hold(a, c, rq, missing);
		return http_call_started(a, c, rq, del(a->engine, id, http_call_done, rq));
	}
	if (strcmp(method, "GET") != 0) {
		snprintf(detail, sizeof(detail), "use GET or DELETE on a %s", noun);
		return http_problem(c, 405, url, detail);
	}
	if (joinable)
		return join(a, c, url, id, rq, get, missing);
	if ((err = get(a->engine, id, &out)) != CM_OK)
		return http_fail(c, err, url, err == CM_ENOENT ? missing : NULL);
	return http_send_json(c, 200, out, NULL);
}

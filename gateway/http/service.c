/*
 * What the gateway says of itself and serves besides the resources:
 * GET /healthz, /metrics, the OpenAPI document, the event stream
 * (/v1/events) and the dashboard's files.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gateway/http/http_int.h"
#include "gateway/http/event_stream.h"
#include "gateway/http/openapi_doc.h"
#include "gateway/http/process_metrics.h"

/* GET /healthz, without a token: for a load balancer or a liveness probe,
 * and for the database's size on disk, its log included. */
enum MHD_Result http_get_health(api *a, struct MHD_Connection *c)
{
	return http_send_json(c, 200,
	                      json_pack("{s:s, s:i, s:s, s:I}", "status", "ok", "pid", (int)getpid(), "sync",
	                                a->cfg->sync_full ? "full" : "normal", "db_bytes",
	                                (json_int_t)store_file_bytes(a->cfg->db)),
	                      NULL);
}

/* GET /metrics: Prometheus' text format; the engine's part, then the
 * HTTP counters and the database's size. (Its method, as every table
 * route's, was checked against route_table.) */
enum MHD_Result http_get_metrics(api *a, struct MHD_Connection *c, const char *url)
{
	cm_buf b;
	int err;

	cm_buf_init(&b);
	pthread_mutex_lock(&a->mu);
	size_t held = a->inflight;
	pthread_mutex_unlock(&a->mu);
	if ((err = engine_metrics(a->engine, &b)) != CM_OK || (err = http_metrics_write(a->metrics, &b)) != CM_OK ||
	    (err = process_metrics_write(&b)) != CM_OK ||
	    (err = cm_buf_printf(&b,
	                         "# HELP strand_database_bytes The database's bytes on disk, its log included.\n"
	                         "# TYPE strand_database_bytes gauge\nstrand_database_bytes %lld\n"
	                         "# HELP strand_http_body_bytes_held Bytes of request bodies held for requests "
	                         "being read (at most --max-inflight-bytes).\n"
	                         "# TYPE strand_http_body_bytes_held gauge\nstrand_http_body_bytes_held %zu\n",
	                         (long long)store_file_bytes(a->cfg->db), held)) != CM_OK) {
		cm_buf_fini(&b);
		return http_fail(c, err, url, NULL);
	}
	size_t len = b.len;
	return http_send_text(c, 200, cm_buf_steal(&b), len, "text/plain; version=0.0.4; charset=utf-8", NULL);
}

/* GET /v1/history: the dashboard's charts' samples. */
enum MHD_Result http_get_history(api *a, struct MHD_Connection *c, const char *url)
{
	json_t *out = NULL;
	int err = engine_history(a->engine, &out);

	if (err != CM_OK)
		return http_fail(c, err, url, NULL);
	return http_send_json(c, 200, out, NULL);
}

/* GET /v1/openapi.json: the API's description, built in. */
enum MHD_Result http_get_openapi(struct MHD_Connection *c)
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

/* GET /v1/events[?pool=ID]: Server-Sent Events (api_events.h). */
enum MHD_Result http_get_events(api *a, struct MHD_Connection *c, const char *url, request *rq)
{
	const char *pool = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pool");
	const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	struct MHD_Response *r = NULL;
	enum MHD_Result ret;
	int err;

	if (pool && (!pool[0] || strlen(pool) > 23))
		return http_problem(c, 400, url, "query 'pool' must be a pool's or a manager's id");
	if ((err = event_stream_open(a->engine, a->parking, c, last, pool, &r)) != CM_OK)
		return http_fail(c, err, url,
		                 err == CM_EUNAVAIL ? "too many event streams are open; close one or try again later"
		                                    : NULL);
	http_count_parked(a, rq); /* the API's stop waits for its end */
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result http_serve_file(api *a, struct MHD_Connection *c, const char *url, const char *name)
{
	char path[2048];
	const char *dot = strrchr(name, '.');
	const char *type = "application/octet-stream";
	struct stat sb;
	int fd;

	if (strstr(name, "..") || strchr(name, '/'))
		return http_problem(c, 404, url, "no such file");
	snprintf(path, sizeof(path), "%s/%s", a->cfg->web_root, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		if (fd >= 0)
			close(fd);
		return http_problem(c, 404, url, "no such file");
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

/*
 * The REST surface's daemon: it starts and stops libmicrohttpd, screens
 * each request (screen.c), reads its body up to its cap, and hands it to
 * its resource's file (http_int.h lists them). The routes:
 *
 *   GET    /healthz                      GET  /v1/pools       POST /v1/pools
 *   GET    /v1/pools/{id}                DELETE /v1/pools/{id}
 *   PATCH  /v1/pools/{id} {processes | autoscale}
 *   POST   /v1/pools/{id}/map            POST /v1/pools/{id}/apply[?wait=S]
 *   POST   /v1/pools/{id}/close          GET  /v1/pools/{id}/jobs
 *   GET    /v1/pools/{id}/logs?after=&limit=&worker=&wait=   what its tasks printed
 *   GET|DELETE /v1/jobs/{id}             (DELETE: cancel a running job, remove an ended one)
 *   POST   /v1/jobs/{id}/args            (the next part of a submitting job's arguments)
 *   POST|GET /v1/queues                  GET|DELETE /v1/queues/{id}
 *   POST   /v1/queues/{id}/items         POST /v1/queues/{id}/take?max=&wait=
 *   POST   /v1/managers {type}           GET|DELETE /v1/managers/{id}
 *   POST   /v1/managers/{id}/calls       GET /v1/managers/{id}/calls/{cid}?wait=S
 *   GET    /v1/managers/{id}/logs?after=&limit=&worker=&wait=   what its methods printed
 *   POST|GET /v1/rings {size, ...}       GET|DELETE /v1/rings/{id}[?wait=S]
 *   POST   /v1/processes                 GET /v1/processes[/{id}[?wait=S]]
 *   GET    /v1/processes/{id}/logs       DELETE /v1/processes/{id}
 *   POST|GET /v1/pipes {duplex}          GET|DELETE /v1/pipes/{id}
 *   POST   /v1/pipes/{id}/ends/{0|1}/send  POST /v1/pipes/{id}/ends/{0|1}/recv?wait=
 *   GET    /v1/jobs/{id}/results?cursor=&limit=&wait=&order=input|completion
 *   GET    /v1/jobs/{id}/failures?cursor=&limit=
 *   GET    /v1/jobs?pool=&state=&cursor=&limit=
 *   GET    /v1/code                      PUT|GET /v1/code/{sha256} (a code package: a zip)
 *   GET    /v1/values                    PUT|GET|DELETE /v1/values/{sha256} (a value's bytes)
 *   POST|GET /v1/leases {lease_s}        GET|DELETE /v1/leases/{id}   POST /v1/leases/{id}/renew
 *   GET    /v1/events[?pool=]            Server-Sent Events: pool, manager, worker, job, progress, process
 *   GET    /metrics                      Prometheus text format
 *   GET    /v1/openapi.json              this API's description (openapi.json)
 *   GET    /  and /web/FILE              the dashboard
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "gateway/http/http_int.h"
#include "gateway/http/route_table.h"

/* Handlers wait at most for an engine cycle or a results page, so a few
 * threads per core serve any number of connections. */
#define HTTP_THREADS 8
#define API_STOP_GRACE_MS 5000 /* at stop, for answers owed to be sent */

/* ---- dispatch ----------------------------------------------------------- */

/* Holds room for total bytes of rq's body among those held at once
 * (--max-inflight-bytes); 0 when there is none left. */
static int reserve(api *a, request *rq, size_t total)
{
	int ok;

	if (total <= rq->reserved)
		return 1;
	pthread_mutex_lock(&a->mu);
	ok = a->inflight + (total - rq->reserved) <= (size_t)a->cfg->max_inflight_bytes;
	if (ok) {
		a->inflight += total - rq->reserved;
		rq->reserved = total;
	}
	pthread_mutex_unlock(&a->mu);
	return ok;
}

static void unreserve(api *a, request *rq)
{
	pthread_mutex_lock(&a->mu);
	a->inflight -= rq->reserved;
	rq->reserved = 0;
	pthread_mutex_unlock(&a->mu);
}

static enum MHD_Result too_busy(struct MHD_Connection *c, const char *url, const api *a)
{
	char detail[160];

	snprintf(detail, sizeof(detail),
	         "the gateway holds %lld bytes of request bodies at most at once (--max-inflight-bytes): try again",
	         (long long)a->cfg->max_inflight_bytes);
	return http_problem_with(c, 503, url, detail, MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

/* The body's length as its headers say: Content-Length, -1 for a chunked
 * body, 0 for none. */
static int64_t body_length(struct MHD_Connection *c)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return -1;
	return len ? strtoll(len, NULL, 10) : 0;
}

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
		/* The sign-in and a worker's join carry no API token: their body
		 * is a token. */
		rq->cap = strcmp(url, "/v1/session") == 0 || strcmp(url, "/v1/join") == 0 ? API_SESSION_BODY_MAX
		                                                                          : API_BODY_MAX;
		*con_cls = rq;
		deadlines_headers_in(a->deadlines, c, body_length(c), (int64_t)rq->cap);
		/* Refused before its body is read: an unauthenticated client
		 * cannot make the gateway buffer anything. */
		if ((status = http_screen(a, c, url, method, detail, sizeof(detail))) != 0) {
			rq->refused = 1;
			if (status == 401)
				return http_problem_with(c, status, url, detail, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				                         "Bearer realm=\"strand\"");
			return http_problem(c, status, url, detail);
		}
		blob_store *into = http_upload_store(a, url, method);
		if (into)
			return http_upload_begin(c, url, into, rq);
		/* Room for a body of known length is held before any of it is
		 * read; one over its cap is refused later, by its cap. Without
		 * room, its bytes are dropped as they come and the answer waits
		 * for the last: answered before, a client still sending would
		 * be reset and lose it. */
		int64_t len = body_length(c);
		if (len > 0 && !reserve(a, rq, (size_t)len < rq->cap ? (size_t)len : rq->cap))
			rq->too_busy = 1;
		return MHD_YES;
	}
	if (rq->refused) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size && rq->uploading) {
		http_upload_bytes(rq, upload_data, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!rq->too_big && rq->body.len + *upload_size > rq->cap)
			rq->too_big = 1;
		if (!rq->too_big && !rq->too_busy && !reserve(a, rq, rq->body.len + *upload_size))
			rq->too_busy = 1; /* a chunked body, past its room */
		if (!rq->too_big && !rq->too_busy && cm_buf_append(&rq->body, upload_data, *upload_size) != CM_OK)
			rq->too_big = 1;
		*upload_size = 0;
		return MHD_YES;
	}
	deadlines_body_in(a->deadlines, c);
	if (rq->calling) /* resumed: the engine answered the call it started */
		return !rq->applying    ? http_call_answer(c, url, rq)
		       : rq->manager[0] ? http_manager_call_answer(c, url, rq)
		                        : http_apply_answer(c, url, rq);
	if (rq->look) /* resumed: a long poll looks again */
		return http_long_poll(a, c, url, rq);
	if (rq->too_busy)
		return too_busy(c, url, a);
	if (rq->too_big) {
		char detail[96];
		snprintf(detail, sizeof(detail), "request body is over the %zu byte cap", rq->cap);
		return http_problem(c, 413, url, detail);
	}
	if (rq->route < route_count && !route_allows(rq->route, method)) {
		char detail[160], allow[64];
		route_usage(rq->route, detail, sizeof(detail), allow, sizeof(allow));
		return http_problem_with(c, 405, url, detail, MHD_HTTP_HEADER_ALLOW, allow);
	}
	if (strcmp(url, "/healthz") == 0)
		return http_get_health(a, c);
	if (strcmp(url, "/v1/session") == 0)
		return http_route_session(a, c, url, method, rq);
	if (strcmp(url, "/v1/join") == 0)
		return http_post_join(a, c, url, method, rq);
	if (strcmp(url, "/metrics") == 0)
		return http_get_metrics(a, c, url);
	if (strcmp(url, "/v1/openapi.json") == 0)
		return http_get_openapi(c);
	if (strncmp(url, "/v1/pools", 9) == 0 && (url[9] == '\0' || url[9] == '/'))
		return http_route_pools(a, c, url, method, url[9] ? url + 10 : "", rq);
	if (strncmp(url, "/v1/jobs/", 9) == 0 && url[9])
		return http_route_jobs(a, c, url, method, url + 9, rq);
	if (strcmp(url, "/v1/jobs") == 0 || strcmp(url, "/v1/jobs/") == 0)
		return http_list_jobs(a, c, url, method);
	if (strcmp(url, "/v1/events") == 0)
		return http_get_events(a, c, url, rq);
	if (strcmp(url, "/v1/history") == 0)
		return http_get_history(a, c, url);
	if (strncmp(url, "/v1/leases", 10) == 0 && (url[10] == '\0' || url[10] == '/'))
		return http_route_leases(a, c, url, method, url[10] ? url + 11 : "", rq);
	if (strncmp(url, "/v1/code", 8) == 0 && (url[8] == '\0' || url[8] == '/'))
		return http_route_code(a, c, url, method, url[8] ? url + 9 : "", rq);
	if (strncmp(url, "/v1/values", 10) == 0 && (url[10] == '\0' || url[10] == '/'))
		return http_route_values(a, c, url, method, url[10] ? url + 11 : "", rq);
	if (strncmp(url, "/v1/queues", 10) == 0 && (url[10] == '\0' || url[10] == '/'))
		return http_route_queues(a, c, url, method, url[10] ? url + 11 : "", rq);
	if (strncmp(url, "/v1/rings", 9) == 0 && (url[9] == '\0' || url[9] == '/'))
		return http_route_rings(a, c, url, method, url[9] ? url + 10 : "", rq);
	if (strncmp(url, "/v1/managers", 12) == 0 && (url[12] == '\0' || url[12] == '/'))
		return http_route_managers(a, c, url, method, url[12] ? url + 13 : "", rq);
	if (strncmp(url, "/v1/processes", 13) == 0 && (url[13] == '\0' || url[13] == '/'))
		return http_route_processes(a, c, url, method, url[13] ? url + 14 : "", rq);
	if (strncmp(url, "/v1/pipes", 9) == 0 && (url[9] == '\0' || url[9] == '/'))
		return http_route_pipes(a, c, url, method, url[9] ? url + 10 : "", rq);
	if (strcmp(url, "/") == 0 || strncmp(url, "/web/", 5) == 0) {
		if (strcmp(method, "GET") != 0)
			return http_problem(c, 405, url, "the dashboard's files are read with GET");
		return http_serve_file(a, c, url, url[1] ? url + 5 : "index.html");
	}
	return http_problem(c, 404, url, "no such resource");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	api *a = cls;
	request *rq = *con_cls;

	(void)toe;
	deadlines_answered(a->deadlines, c);
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
		http_upload_forget(rq);
		unreserve(a, rq);
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

int api_start(const gw_config *cfg, engine *e, blob_store *code, blob_store *values, api **out, char *detail,
              size_t detail_len)
{
	api *a = calloc(1, sizeof(*a));
	struct sockaddr_storage ss;
	int v6 = 0;
	int err;

	if (!a)
		return CM_ENOMEM;
	a->cfg = cfg;
	a->engine = e;
	/* Cookies are not kept apart by port: each gateway of a host has its own. */
	const char *port = strrchr(cfg->http, ':');
	snprintf(a->cookie, sizeof(a->cookie), "strand_session_%.5s", port ? port + 1 : "");
	a->code = code;
	a->values = values;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->unparked, NULL);
	cm_buf_init(&a->tls_cert);
	cm_buf_init(&a->tls_key);
	if ((err = parse_addr(cfg->http, &ss, &v6, detail, detail_len)) != CM_OK ||
	    (err = load_token(a, &ss, detail, detail_len)) != CM_OK ||
	    (err = sessions_new(cfg->session_idle_ms, &a->sessions)) != CM_OK ||
	    (cfg->tls_cert[0] && ((err = cm_read_pem(cfg->tls_cert, &a->tls_cert, detail, detail_len)) != CM_OK ||
	                          (err = cm_read_pem(cfg->tls_key, &a->tls_key, detail, detail_len)) != CM_OK)) ||
	    (err = http_metrics_new(&a->metrics)) != CM_OK || (err = parking_new(e, &a->parking)) != CM_OK ||
	    (err = deadlines_start((int64_t)cfg->http_header_s * 1000, cfg->http_min_rate, &a->deadlines)) != CM_OK ||
	    (err = front_door_open((struct sockaddr *)&ss,
	                           v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in),
	                           cfg->tls_cert[0] != '\0', (int64_t)cfg->http_idle_s * 1000, cfg->http_per_client,
	                           (int)connection_limit(cfg), &a->front, detail, detail_len)) != CM_OK) {
		if (err == CM_EUNAVAIL) {
			char why[160];
			snprintf(why, sizeof(why), "%s", detail);
			snprintf(detail, detail_len, "cannot listen on %s://%s: %s",
			         cfg->tls_cert[0] ? "https" : "http", cfg->http, why);
		}
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
	 * gateway also needs for its store, hub and workers. A request's
	 * headers and body have deadlines of their own (deadlines.h). */
	a->daemon = MHD_start_daemon(
	        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
	                MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0) |
	                (cfg->tls_cert[0] ? MHD_USE_TLS : 0),
	        0, NULL, NULL, on_request, a, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTP_THREADS,
	        MHD_OPTION_NOTIFY_COMPLETED, on_completed, a, MHD_OPTION_UNESCAPE_CALLBACK, unescape, a,
	        MHD_OPTION_NOTIFY_CONNECTION, deadlines_on_connection, a->deadlines, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	        (size_t)API_HEAD_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->http_idle_s,
	        MHD_OPTION_CONNECTION_LIMIT, connection_limit(cfg), MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	        (unsigned)cfg->http_per_client, MHD_OPTION_ARRAY, cfg->tls_cert[0] ? tls : tls + 2, MHD_OPTION_END);
	if (!a->daemon || front_door_start(a->front, a->daemon, a->deadlines) != CM_OK) {
		snprintf(detail, detail_len, "cannot serve %s://%s (do the certificate and key match?)",
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
	int64_t stop_by = cm_now_ms() + API_STOP_GRACE_MS;
	struct timespec until = cm_timespec_in(CLOCK_REALTIME, API_STOP_GRACE_MS);
	while (a->parked && pthread_cond_timedwait(&a->unparked, &a->mu, &until) == 0)
		;
	pthread_mutex_unlock(&a->mu);
	/* No new connection from here; those that came before are answered
	 * (503 from the quiesced engine) within what is left of the grace. */
	front_door_close(a->front);
	if (a->deadlines && stop_by > cm_now_ms())
		deadlines_wait_answered(a->deadlines, stop_by - cm_now_ms());
	if (a->daemon)
		MHD_stop_daemon(a->daemon);
	deadlines_stop(a->deadlines);
	parking_free(a->parking);
	http_metrics_free(a->metrics);
	sessions_free(a->sessions);
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

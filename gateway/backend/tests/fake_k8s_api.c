/* A scripted Kubernetes API server: see fake_k8s_api.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/common.h"
#include "gateway/backend/tests/fake_k8s_api.h"

#define MAX_WATCHES 64

/* The open watch's script: lines to send, then how it ends. */
enum watch_end { WATCH_OPEN, WATCH_END, WATCH_BREAK };

struct fake_k8s_api {
	struct MHD_Daemon *d;
	char url[64];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *items;
	char rv[32];
	int lists;
	int watches;
	char watch_from[MAX_WATCHES][32];
	cm_buf pending; /* event lines not yet sent to the open watch */
	enum watch_end end;
	char *created; /* what a pod's creation answers */
	int held; /* creations wait for release */
	int creations;
	int stopping;
};

static char *read_file(const char *path)
{
	cm_buf b;

	cm_buf_init(&b);
	if (cm_read_tail(path, 1 << 20, &b) != CM_OK || cm_buf_append(&b, "", 1) != CM_OK) {
		cm_buf_fini(&b);
		return NULL;
	}
	return b.data;
}

/* The open watch's stream: what the test sent, then its end. */
static ssize_t watch_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
	fake_k8s_api *f = cls;
	ssize_t n = 0;

	(void)pos;
	pthread_mutex_lock(&f->mu);
	while (!f->pending.len && f->end == WATCH_OPEN && !f->stopping) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 1;
		pthread_cond_timedwait(&f->cv, &f->mu, &t);
	}
	if (f->pending.len) {
		n = (ssize_t)(f->pending.len < max ? f->pending.len : max);
		memcpy(buf, f->pending.data, (size_t)n);
		memmove(f->pending.data, f->pending.data + n, f->pending.len - (size_t)n);
		f->pending.len -= (size_t)n;
	} else {
		n = f->end == WATCH_BREAK ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
		f->end = WATCH_OPEN; /* the next watch starts open */
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *data, size_t *size, void **state)
{
	fake_k8s_api *f = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	const char *watch = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "watch");

	(void)version;
	(void)data;
	if (strcmp(method, "POST") == 0) {
		/* The body is read and dropped (the test knows what it asked
		 * for); the answer comes once it has all come. */
		if (!*state) {
			*state = f;
			return MHD_YES;
		}
		if (*size) {
			*size = 0;
			return MHD_YES;
		}
		int pod = strcmp(url, "/api/v1/namespaces/default/pods") == 0;
		char *body = NULL;
		pthread_mutex_lock(&f->mu);
		if (pod) {
			f->creations++;
			pthread_cond_broadcast(&f->cv);
			while (f->held && !f->stopping)
				pthread_cond_wait(&f->cv, &f->mu);
		}
		body = strdup(pod && f->created ? f->created : "{}");
		pthread_mutex_unlock(&f->mu);
		r = MHD_create_response_from_buffer(body ? strlen(body) : 0, body, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(r, "Content-Type", "application/json");
		ret = MHD_queue_response(c, MHD_HTTP_CREATED, r);
		MHD_destroy_response(r);
		return ret;
	}
	(void)size;
	(void)state;
	if (strcmp(method, "GET") != 0 || strcmp(url, "/api/v1/namespaces/default/pods") != 0) {
		r = MHD_create_response_from_buffer(2, "{}", MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(c, MHD_HTTP_NOT_FOUND, r);
		MHD_destroy_response(r);
		return ret;
	}
	pthread_mutex_lock(&f->mu);
	if (watch) {
		const char *from = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resourceVersion");
		if (f->watches < MAX_WATCHES)
			snprintf(f->watch_from[f->watches], sizeof(f->watch_from[0]), "%s", from ? from : "");
		f->watches++;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, watch_stream, f, NULL);
	} else {
		char *body = NULL;
		f->lists++;
		if (asprintf(&body, "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"%s\"},\"items\":%s}",
		             f->rv, f->items ? f->items : "[]") < 0)
			body = NULL;
		pthread_cond_broadcast(&f->cv);
		pthread_mutex_unlock(&f->mu);
		r = MHD_create_response_from_buffer(body ? strlen(body) : 0, body, MHD_RESPMEM_MUST_FREE);
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

fake_k8s_api *fake_k8s_api_start(const char *cert_file, const char *key_file)
{
	fake_k8s_api *f = calloc(1, sizeof(*f));
	char *cert = read_file(cert_file), *key = read_file(key_file);

	if (!f || !cert || !key)
		goto fail;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	cm_buf_init(&f->pending);
	snprintf(f->rv, sizeof(f->rv), "1");
	/* Loopback, port 0: the kernel picks a free one, read back below. */
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	f->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS, 0, NULL,
	                        NULL, answer, f, MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key,
	                        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	if (!f->d)
		goto fail;
	snprintf(f->url, sizeof(f->url), "https://127.0.0.1:%u",
	         (unsigned)MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT)->port);
	free(cert);
	free(key);
	return f;
fail:
	free(cert);
	free(key);
	free(f);
	return NULL;
}

const char *fake_k8s_api_url(fake_k8s_api *f)
{
	return f->url;
}

void fake_k8s_api_set_pods(fake_k8s_api *f, const char *items_json, const char *resource_version)
{
	pthread_mutex_lock(&f->mu);
	free(f->items);
	f->items = strdup(items_json);
	snprintf(f->rv, sizeof(f->rv), "%s", resource_version);
	pthread_mutex_unlock(&f->mu);
}

int fake_k8s_api_lists(fake_k8s_api *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->lists;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int fake_k8s_api_watches(fake_k8s_api *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->watches;
	pthread_mutex_unlock(&f->mu);
	return n;
}

const char *fake_k8s_api_watch_from(fake_k8s_api *f, int n)
{
	return n >= 0 && n < MAX_WATCHES ? f->watch_from[n] : "";
}

void fake_k8s_api_send(fake_k8s_api *f, const char *event_json)
{
	pthread_mutex_lock(&f->mu);
	cm_buf_append(&f->pending, event_json, strlen(event_json));
	cm_buf_append(&f->pending, "\n", 1);
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void end_as(fake_k8s_api *f, enum watch_end how)
{
	pthread_mutex_lock(&f->mu);
	f->end = how;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void fake_k8s_api_end(fake_k8s_api *f)
{
	end_as(f, WATCH_END);
}

void fake_k8s_api_break(fake_k8s_api *f)
{
	end_as(f, WATCH_BREAK);
}

void fake_k8s_api_set_created(fake_k8s_api *f, const char *pod_json)
{
	pthread_mutex_lock(&f->mu);
	free(f->created);
	f->created = strdup(pod_json);
	pthread_mutex_unlock(&f->mu);
}

static void set_held(fake_k8s_api *f, int held)
{
	pthread_mutex_lock(&f->mu);
	f->held = held;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

void fake_k8s_api_hold(fake_k8s_api *f)
{
	set_held(f, 1);
}

void fake_k8s_api_release(fake_k8s_api *f)
{
	set_held(f, 0);
}

int fake_k8s_api_creations(fake_k8s_api *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->creations;
	pthread_mutex_unlock(&f->mu);
	return n;
}

int fake_k8s_api_sent_all(fake_k8s_api *f)
{
	pthread_mutex_lock(&f->mu);
	int all = f->pending.len == 0;
	pthread_mutex_unlock(&f->mu);
	return all;
}

void fake_k8s_api_stop(fake_k8s_api *f)
{
	pthread_mutex_lock(&f->mu);
	f->stopping = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	MHD_stop_daemon(f->d);
	cm_buf_fini(&f->pending);
	free(f->items);
	free(f->created);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

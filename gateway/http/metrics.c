/*
 * A fixed table of (route, method, status) counters. Its size bounds what
 * a client can make the gateway keep: routes and statuses are the
 * gateway's own, and a method that is not one of ours counts as "other".
 */
#include "gateway/http/metrics.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/http/route_table.h"

#define COUNTERS_MAX 1024 /* more would be a route, method and status never seen together */

static const char *const methods[] = {"GET", "HEAD", "POST", "PATCH", "PUT", "DELETE", "other"};
#define METHODS ((unsigned short)(sizeof(methods) / sizeof(methods[0])))

typedef struct counter {
	unsigned short route, method, status;
	unsigned long long n;
} counter;

struct http_metrics {
	pthread_mutex_t mu;
	size_t n;
	counter c[COUNTERS_MAX];
};

int http_metrics_new(http_metrics **out)
{
	http_metrics *m = calloc(1, sizeof(*m));

	if (!m)
		return CM_ENOMEM;
	pthread_mutex_init(&m->mu, NULL);
	*out = m;
	return CM_OK;
}

void http_metrics_free(http_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

void http_metrics_count(http_metrics *m, size_t route, const char *method, unsigned status)
{
	unsigned short r = (unsigned short)(route < route_count ? route : route_count), k = METHODS - 1;
	size_t i;

	for (unsigned short j = 0; j + 1 < METHODS; j++)
		if (strcmp(method, methods[j]) == 0)
			k = j;
	pthread_mutex_lock(&m->mu);
	for (i = 0; i < m->n; i++)
		if (m->c[i].route == r && m->c[i].method == k && m->c[i].status == status)
			break;
	if (i == m->n && m->n < COUNTERS_MAX)
		m->c[m->n++] = (counter){.route = r, .method = k, .status = (unsigned short)status};
	if (i < m->n)
		m->c[i].n++;
	pthread_mutex_unlock(&m->mu);
}

int http_metrics_write(http_metrics *m, cm_buf *out)
{
	int err = cm_buf_puts(out, "# HELP strand_http_requests_total HTTP requests answered, by route, method and "
	                           "status.\n# TYPE strand_http_requests_total counter\n");

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n && err == CM_OK; i++) {
		const counter *c = &m->c[i];
		err = cm_buf_printf(out, "strand_http_requests_total{route=\"%s\",method=\"%s\",code=\"%u\"} %llu\n",
		                    c->route < route_count ? route_table[c->route].path : "other", methods[c->method],
		                    c->status, c->n);
	}
	pthread_mutex_unlock(&m->mu);
	return err;
}

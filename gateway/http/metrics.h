/*
 * http_metrics: HTTP requests counted by route template, method and
 * status, for GET /metrics. Any thread counts; one mutex, held for a short
 * search of a small table.
 */
#ifndef GATEWAY_HTTP_METRICS_H
#define GATEWAY_HTTP_METRICS_H

#include "common/common.h"

typedef struct http_metrics http_metrics;

int http_metrics_new(http_metrics **out);
void http_metrics_free(http_metrics *m);
/* route: an index of route_table, or route_count for none ("other"). */
void http_metrics_count(http_metrics *m, size_t route, const char *method, unsigned status);
/* strand_http_requests_total, in Prometheus' text format. */
int http_metrics_write(http_metrics *m, cm_buf *out);

#endif

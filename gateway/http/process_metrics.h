/*
 * The gateway process's own figures for GET /metrics, with the names
 * Prometheus' client libraries give them (process_*), and the build's
 * version (strand_build_info): read from /proc at each scrape, on the
 * scraping thread.
 */
#ifndef GATEWAY_HTTP_PROCESS_METRICS_H
#define GATEWAY_HTTP_PROCESS_METRICS_H

#include "common/common.h"

int process_metrics_write(cm_buf *b);

#endif

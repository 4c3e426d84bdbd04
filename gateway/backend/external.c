/*
 * The external backend: the workers of a pool with backend "external" are
 * started by someone else, on any host, and join with a token (the
 * engine's join.c). Nothing is run here. What the engine asks of a joined
 * worker is what a backend can do for something it cannot reach: a soft
 * stop is left to the worker's pull, which the engine answers "stop"; a
 * hard stop (a worker silent past its lease, or past its pool's grace)
 * counts it as gone at once, and the executor reports its end, so that its
 * tasks go back to the queue. The hub refuses it from then on.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/backend/backend.h"

typedef struct gone {
	char handle[BACKEND_HANDLE_MAX];
	struct gone *next;
} gone;

typedef struct external {
	backend base; /* first: the engine holds a backend * */
	gone *gone; /* hard-stopped, until polled */
} external;

static int external_run(backend *b, const backend_run_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
                        size_t detail_len)
{
	(void)b;
	(void)spec;
	(void)handle;
	snprintf(detail, detail_len, "an external pool's workers join by themselves (POST /v1/pools/{id}/join)");
	return CM_EUNSUPPORTED;
}

static int external_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out)
{
	(void)b;
	(void)handle;
	(void)log_path;
	(void)max;
	(void)out;
	return CM_OK; /* its host keeps what it wrote; its tasks' output comes over the hub */
}

static int external_poll(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len)
{
	external *x = (external *)b;

	for (gone **at = &x->gone; *at; at = &(*at)->next)
		if (strcmp((*at)->handle, handle) == 0) {
			gone *g = *at;
			*at = g->next;
			free(g);
			*exit_code = -1;
			snprintf(detail, detail_len,
			         "a joined worker, let go (it stopped answering, or its pool ended)");
			return 1;
		}
	return 0;
}

static void external_stop(backend *b, const char *handle, int hard)
{
	external *x = (external *)b;
	gone *g;

	if (!hard || !(g = calloc(1, sizeof(*g))))
		return;
	snprintf(g->handle, sizeof(g->handle), "%s", handle);
	g->next = x->gone;
	x->gone = g;
}

static void external_release(backend *b, const char *handle)
{
	(void)b;
	(void)handle;
}

static void external_free(backend *b)
{
	external *x = (external *)b;

	while (x->gone) {
		gone *g = x->gone;
		x->gone = g->next;
		free(g);
	}
	free(x);
}

static const backend_ops external_ops = {
        .name = "external",
        .native = 0,
        .run = external_run,
        .logs = external_logs,
        .poll = external_poll,
        .stop = external_stop,
        .release = external_release,
        .free = external_free,
};

backend *backend_external_new(void)
{
	external *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->base.ops = &external_ops;
	return &x->base;
}

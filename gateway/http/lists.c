/*
 * GET on a collection (/v1/pools, /v1/managers, /v1/processes, /v1/rings,
 * /v1/queues, /v1/pipes, /v1/leases): a page, newest first, of at most
 * limit (default 100, at most 1000) items in the states asked for, from the
 * cursor the page before gave. Jobs are paged apart (jobs.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/http/http_int.h"

/* state=a,b,...: a bit per state of the kind's, into *bits. */
static int parse_states(engine_list_kind kind, const char *v, unsigned *bits, char *detail, size_t detail_len)
{
	const char *const *states = engine_list_states(kind);
	const char *p = v;

	if (!states) {
		snprintf(detail, detail_len, "%s have no state to filter by", engine_list_name(kind));
		return CM_EINVAL;
	}
	for (;;) {
		size_t len = strcspn(p, ",");
		unsigned i = 0;
		while (states[i] && (strlen(states[i]) != len || strncmp(states[i], p, len) != 0))
			i++;
		if (!states[i]) {
			size_t at = (size_t)snprintf(detail, detail_len, "query 'state' must be one or more of");
			for (unsigned k = 0; states[k] && at < detail_len; k++)
				at += (size_t)snprintf(detail + at, detail_len - at, "%s%s", k ? ", " : " ", states[k]);
			if (at < detail_len)
				snprintf(detail + at, detail_len - at, " (separated by commas)");
			return CM_EINVAL;
		}
		*bits |= 1u << i;
		if (!p[len])
			return CM_OK;
		p += len + 1;
	}
}

/* cursor=MS.SEQ, as a page's next_cursor gave it. */
static int parse_cursor(const char *v, engine_list_page *pg)
{
	char *end;
	long long ms;
	unsigned long long seq;

	if (v[0] < '0' || v[0] > '9')
		return CM_EINVAL;
	errno = 0;
	ms = strtoll(v, &end, 10);
	if (errno || ms <= 0 || *end != '.' || end[1] < '0' || end[1] > '9')
		return CM_EINVAL;
	seq = strtoull(end + 1, &end, 10);
	if (errno || *end)
		return CM_EINVAL;
	pg->below_ms = ms;
	pg->below_seq = seq;
	return CM_OK;
}

enum MHD_Result http_listing(api *a, struct MHD_Connection *c, const char *url, engine_list_kind kind)
{
	const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	const char *cursor = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "cursor");
	engine_list_page pg = {.limit = 100};
	char detail[256] = "";
	int64_t limit = pg.limit;
	json_t *out = NULL;
	int err;

	if (state && parse_states(kind, state, &pg.states, detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	if (cursor && cursor[0] && parse_cursor(cursor, &pg) != CM_OK)
		return http_problem(c, 400, url, "query 'cursor' must be a next_cursor this list gave");
	if (http_query_int(c, "limit", 1, 1000, &limit, detail, sizeof(detail)) != CM_OK)
		return http_problem(c, 400, url, detail);
	pg.limit = (int)limit;
	if ((err = engine_list(a->engine, kind, &pg, &out)) != CM_OK)
		return http_fail(c, err, url, NULL);
	return http_send_json(c, 200, out, NULL);
}

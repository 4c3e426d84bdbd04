/*
 * Pages of the lists: pools, managers, processes, rings, queues, pipes and
 * clients' leases, newest first. A page costs the engine one pass over the
 * kind's items, comparing two numbers each, and copies of the plain fields
 * of what it shows (item_views.h); the page's JSON is made by the HTTP
 * thread that asked.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "gateway/engine/engine_int.h"

static const char *const pool_states[] = {"active", "closed", "terminating", "terminated", "failed", NULL};
static const char *const process_states[] = {"running", "exited", "failed", NULL};
static const char *const ring_states[] = {"running", "done", "failed", NULL};
_Static_assert(sizeof(pool_states) / sizeof(*pool_states) - 1 == sizeof(pool_state_names) / sizeof(*pool_state_names),
               "a state for every pool state");
_Static_assert(sizeof(process_states) / sizeof(*process_states) - 1 ==
                       sizeof(proc_state_names) / sizeof(*proc_state_names),
               "a state for every process state");

const char *engine_list_name(engine_list_kind kind)
{
	static const char *const names[] = {"pools", "managers", "processes", "rings", "queues", "pipes", "leases"};

	return names[kind];
}

const char *const *engine_list_states(engine_list_kind kind)
{
	switch (kind) {
	case LIST_POOLS:
	case LIST_MANAGERS: return pool_states;
	case LIST_PROCESSES: return process_states;
	case LIST_RINGS: return ring_states;
	default: return NULL; /* queues, pipes and leases are there or gone */
	}
}

/* An item the page may show: items are ordered by when they were made,
 * then (two made in one millisecond) by the engine's count of what it made.
 * That count starts again with each gateway, from the store's order: a
 * cursor kept across a restart still pages by time. */
typedef struct pick {
	int64_t ms;
	uint64_t seq;
	const void *item;
} pick;

typedef struct picks {
	const engine_list_page *pg;
	pick *p; /* the newest so far, newest first */
	size_t n, cap; /* cap: the page and one more (whether a next page starts) */
} picks;

static int newer(int64_t a_ms, uint64_t a_seq, int64_t b_ms, uint64_t b_seq)
{
	return a_ms != b_ms ? a_ms > b_ms : a_seq > b_seq;
}

static int state_shown(const picks *ps, const char *const *states, const char *state)
{
	if (!ps->pg->states)
		return 1;
	for (unsigned i = 0; states[i]; i++)
		if (strcmp(states[i], state) == 0)
			return (ps->pg->states >> i) & 1u;
	return 0;
}

/* Keeps item if it is below the cursor and among the cap newest so far.
 * Items mostly come newest first (lists are prepended to), so the insert
 * rarely moves anything. */
static void offer(picks *ps, int64_t ms, uint64_t seq, const void *item)
{
	size_t i;

	if (ps->pg->below_ms && !newer(ps->pg->below_ms, ps->pg->below_seq, ms, seq))
		return;
	if (ps->n == ps->cap && !newer(ms, seq, ps->p[ps->n - 1].ms, ps->p[ps->n - 1].seq))
		return;
	i = ps->n < ps->cap ? ps->n++ : ps->cap - 1;
	for (; i > 0 && newer(ms, seq, ps->p[i - 1].ms, ps->p[i - 1].seq); i--)
		ps->p[i] = ps->p[i - 1];
	ps->p[i] = (pick){ms, seq, item};
}

/* Items by id, sorted, to find a ring's members or a pipe's way back
 * without a walk of every process or queue for each item of the page. */
typedef struct by_id {
	const char *id;
	const void *item;
} by_id;

typedef struct id_index {
	by_id *at;
	size_t n, cap;
	int made, failed;
} id_index;

static int by_id_order(const void *a, const void *b)
{
	return strcmp(((const by_id *)a)->id, ((const by_id *)b)->id);
}

static void index_add(id_index *ix, const char *id, const void *item)
{
	if (ix->n == ix->cap && !ix->failed) {
		size_t cap = ix->cap ? 2 * ix->cap : 64;
		by_id *at = realloc(ix->at, cap * sizeof(*at));
		if (!at) {
			ix->failed = 1;
			return;
		}
		ix->at = at;
		ix->cap = cap;
	}
	if (!ix->failed)
		ix->at[ix->n++] = (by_id){id, item};
}

static void index_sort(id_index *ix)
{
	ix->made = 1;
	if (ix->n)
		qsort(ix->at, ix->n, sizeof(*ix->at), by_id_order);
}

static void index_processes(engine *e, id_index *ix)
{
	for (const process *pr = e->processes; pr; pr = pr->next)
		index_add(ix, pr->id, pr);
	index_sort(ix);
}

static void index_queues(engine *e, id_index *ix)
{
	for (const queue *q = e->queues; q; q = q->next)
		index_add(ix, q->id, q);
	index_sort(ix);
}

static const void *index_find(const id_index *ix, const char *id)
{
	by_id key = {id, NULL};
	const by_id *found = ix->n ? bsearch(&key, ix->at, ix->n, sizeof(*ix->at), by_id_order) : NULL;

	return found ? found->item : NULL;
}

static void ring_members(engine *e, id_index *processes, const ring *r, const process *members[SPEC_MAX_RING])
{
	if (!processes->made)
		index_processes(e, processes);
	for (int i = 0; i < r->size; i++)
		members[i] = index_find(processes, r->members[i]);
}

static void pick_all(engine *e, engine_list_kind kind, picks *ps, id_index *processes)
{
	const process *members[SPEC_MAX_RING];

	switch (kind) {
	case LIST_POOLS:
	case LIST_MANAGERS:
		for (const pool *p = e->pools; p; p = p->next)
			if ((p->spec.manager[0] != '\0') == (kind == LIST_MANAGERS) &&
			    state_shown(ps, pool_states, pool_state_names[p->state]))
				offer(ps, p->created_ms, p->seq, p);
		break;
	case LIST_PROCESSES:
		for (const process *pr = e->processes; pr; pr = pr->next)
			if (state_shown(ps, process_states, proc_state_names[pr->state]))
				offer(ps, pr->created_ms, pr->seq, pr);
		break;
	case LIST_RINGS:
		for (const ring *r = e->rings; r; r = r->next) {
			if (ps->pg->states)
				ring_members(e, processes, r, members);
			if (!ps->pg->states || state_shown(ps, ring_states, engine__ring_state_of(r, members)))
				offer(ps, r->created_ms, r->seq, r);
		}
		break;
	case LIST_QUEUES:
	case LIST_PIPES:
		/* a pipe is its directions' queues "<pipe>.0" and "<pipe>.1":
		 * picked by its first */
		for (const queue *q = e->queues; q; q = q->next) {
			size_t len = strlen(q->id);
			if (!engine__queue_is_pipe(q)
			            ? kind == LIST_QUEUES
			            : kind == LIST_PIPES && len > 2 && strcmp(q->id + len - 2, ".0") == 0)
				offer(ps, q->created_ms, q->seq, q);
		}
		break;
	case LIST_LEASES:
		for (const client_lease *l = e->client_leases; l; l = l->next)
			offer(ps, l->created_ms, l->seq, l);
		break;
	}
}

/* The page's leases by id, given what they hold in one pass over pools,
 * processes and queues. */
static int lease_holdings(engine *e, item_view *views, size_t n)
{
	id_index leases = {0};
	int err;

	for (size_t i = 0; i < n; i++)
		index_add(&leases, views[i].u.lease.id, &views[i].u.lease);
	index_sort(&leases);
	err = leases.failed ? CM_ENOMEM : CM_OK;
	for (const pool *p = e->pools; p && err == CM_OK; p = p->next) {
		lease_view *v = p->spec.lease[0] ? (lease_view *)index_find(&leases, p->spec.lease) : NULL;
		if (v)
			err = engine__lease_view_pool(v, p);
	}
	for (const process *pr = e->processes; pr && err == CM_OK; pr = pr->next) {
		lease_view *v = pr->lease[0] ? (lease_view *)index_find(&leases, pr->lease) : NULL;
		if (v)
			err = engine__lease_view_process(v, pr);
	}
	for (const queue *q = e->queues; q && err == CM_OK; q = q->next) {
		lease_view *v = q->lease[0] ? (lease_view *)index_find(&leases, q->lease) : NULL;
		if (v)
			err = engine__lease_view_queue(v, q);
	}
	free(leases.at);
	return err;
}

/* The view of a picked item into v (v->kind set). */
static int copy_item(engine *e, const void *item, item_view *v, id_index *processes, id_index *queues)
{
	const process *members[SPEC_MAX_RING];

	switch (v->kind) {
	case LIST_POOLS:
	case LIST_MANAGERS: return engine__pool_view(&v->u.pool, item);
	case LIST_PROCESSES: return engine__process_view(&v->u.process, item);
	case LIST_RINGS:
		ring_members(e, processes, item, members);
		return processes->failed ? CM_ENOMEM : engine__ring_view(&v->u.ring, item, members);
	case LIST_QUEUES: engine__queue_view(&v->u.queue, item); return CM_OK;
	case LIST_PIPES: {
		const queue *q0 = item, *q1 = NULL;
		if (strcmp(q0->kind, "duplex") == 0) {
			char back[64];
			if (!queues->made)
				index_queues(e, queues);
			snprintf(back, sizeof(back), "%.*s.1", (int)strlen(q0->id) - 2, q0->id);
			q1 = index_find(queues, back);
		}
		engine__pipe_view(&v->u.pipe, q0, q1);
		return queues->failed ? CM_ENOMEM : CM_OK;
	}
	case LIST_LEASES: engine__lease_view(&v->u.lease, item, 0); return CM_OK;
	}
	return CM_EINVAL;
}

static void views_free(item_view *views, size_t n)
{
	for (size_t i = 0; i < n; i++)
		item_view_fini(&views[i]);
	free(views);
}

void engine__handle_list(engine *e, op *o)
{
	engine_list_kind kind = o->u.list.kind;
	const engine_list_page *pg = o->u.list.page;
	picks ps = {.pg = pg, .cap = (size_t)pg->limit + 1};
	id_index processes = {0}, queues = {0};
	item_view *views = NULL;
	size_t n = 0;

	if (!(ps.p = calloc(ps.cap, sizeof(*ps.p)))) {
		o->err = CM_ENOMEM;
		return;
	}
	pick_all(e, kind, &ps, &processes);
	n = ps.n < (size_t)pg->limit ? ps.n : (size_t)pg->limit;
	if (processes.failed || (n && !(views = calloc(n, sizeof(*views)))))
		o->err = CM_ENOMEM;
	for (size_t i = 0; i < n && o->err == CM_OK; i++) {
		views[i].kind = kind;
		o->err = copy_item(e, ps.p[i].item, &views[i], &processes, &queues);
	}
	if (o->err == CM_OK && kind == LIST_LEASES && n)
		o->err = lease_holdings(e, views, n);
	if (o->err == CM_OK && ps.n > (size_t)pg->limit) /* the last shown */
		snprintf(o->u.list.next, sizeof(o->u.list.next), "%lld.%llu", (long long)ps.p[pg->limit - 1].ms,
		         (unsigned long long)ps.p[pg->limit - 1].seq);
	if (o->err != CM_OK)
		views_free(views, views ? n : 0);
	else {
		o->u.list.views = views;
		o->u.list.nviews = n;
	}
	free(ps.p);
	free(processes.at);
	free(queues.at);
}

json_t *engine__list_json(op *o)
{
	json_t *items = json_array(), *out = NULL;

	for (size_t i = 0; items && i < o->u.list.nviews; i++)
		if (json_array_append_new(items, item_view_json(&o->u.list.views[i])) != 0) {
			json_decref(items);
			items = NULL;
		}
	if (items)
		out = json_pack("{s:o, s:o}", engine_list_name(o->u.list.kind), items, "next_cursor",
		                o->u.list.next[0] ? json_string(o->u.list.next) : json_null());
	views_free(o->u.list.views, o->u.list.nviews);
	o->u.list.views = NULL;
	o->u.list.nviews = 0;
	return out;
}

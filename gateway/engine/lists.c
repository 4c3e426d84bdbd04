/*
 * Pages of the lists: pools, managers, processes, rings, queues, pipes and
 * clients' leases, newest first. A page costs the engine one pass over the
 * kind's items, comparing two numbers each, and the JSON of what it shows
 * (at most a page): never the JSON of everything a gateway holds.
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

static void pick_all(engine *e, engine_list_kind kind, picks *ps)
{
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
		for (const ring *r = e->rings; r; r = r->next)
			if (state_shown(ps, ring_states, engine__ring_state(e, r)))
				offer(ps, r->created_ms, r->seq, r);
		break;
	case LIST_QUEUES:
	case LIST_PIPES:
		/* a pipe is its directions' queues "<pipe>.0" and "<pipe>.1":
		 * picked by its first */
		for (const queue *q = e->queues; q; q = q->next) {
			size_t len = strlen(q->id);
			if (strcmp(q->kind, "queue") == 0
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

static json_t *item_json(engine *e, engine_list_kind kind, const void *item)
{
	switch (kind) {
	case LIST_POOLS:
	case LIST_MANAGERS: return engine__pool_json(item);
	case LIST_PROCESSES: return engine__process_json(item);
	case LIST_RINGS: return engine__ring_json(e, item);
	case LIST_QUEUES: return engine__queue_json(item);
	case LIST_PIPES: return engine__pipe_json(e, item);
	case LIST_LEASES: return engine__lease_json(e, item, 0);
	}
	return NULL;
}

void engine__handle_list(engine *e, op *o)
{
	engine_list_kind kind = o->u.list.kind;
	const engine_list_page *pg = o->u.list.page;
	picks ps = {.pg = pg, .cap = (size_t)pg->limit + 1};
	json_t *items;
	char cursor[48];
	const char *name = engine_list_name(kind);

	if (!(ps.p = calloc(ps.cap, sizeof(*ps.p))) || !(items = json_array())) {
		free(ps.p);
		o->err = CM_ENOMEM;
		return;
	}
	pick_all(e, kind, &ps);
	for (size_t i = 0; i < ps.n && i < (size_t)pg->limit; i++)
		json_array_append_new(items, item_json(e, kind, ps.p[i].item));
	if (ps.n > (size_t)pg->limit) /* the last shown */
		snprintf(cursor, sizeof(cursor), "%lld.%llu", (long long)ps.p[pg->limit - 1].ms,
		         (unsigned long long)ps.p[pg->limit - 1].seq);
	o->out = json_pack("{s:o, s:o}", name, items, "next_cursor",
	                   ps.n > (size_t)pg->limit ? json_string(cursor) : json_null());
	free(ps.p);
}

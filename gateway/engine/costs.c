/*
 * What a pool has measured of the functions it ran lately, so that work
 * handed out is priced in time before it has run:
 *  - each function's run time (an EWMA over its results): a small job (an
 *    apply, a manager's call, a short map) of a function measured here
 *    starts with that cost, not a probe, so a busy worker can take it
 *    beside the work it holds. A pool running a large map and applies of
 *    another function sees both, so the applies are not priced as a whole
 *    batch each;
 *  - the pool's own run time over all its results: what a worker's tasks
 *    in hand are worth (they are mostly of the jobs handed out most), and
 *    what autoscale sizes the backlog by.
 * The table keeps the POOL_COSTS functions used last: a pool that runs
 * many functions re-measures the others, as a new function would be.
 */
#include <string.h>

#include "gateway/engine/engine_int.h"

double engine__cost_average(double avg, double run_us)
{
	return (1.0 - COST_WEIGHT) * avg + COST_WEIGHT * run_us;
}

/* function's slot in p's table, marked used now; NULL if it has none. */
static function_cost *slot_of(pool *p, const char *function)
{
	for (int i = 0; i < POOL_COSTS; i++)
		if (p->costs[i].used && strcmp(p->costs[i].function, function) == 0) {
			p->costs[i].used = ++p->costs_clock;
			return &p->costs[i];
		}
	return NULL;
}

double engine__function_cost(pool *p, const char *function)
{
	const function_cost *c = slot_of(p, function);

	return c ? c->us : -1;
}

void engine__function_measured(pool *p, const char *function, double us)
{
	function_cost *c = slot_of(p, function), *slot = &p->costs[0];

	if (c) {
		c->us = engine__cost_average(c->us, us);
		return;
	}
	for (int i = 1; i < POOL_COSTS; i++)
		if (p->costs[i].used < slot->used)
			slot = &p->costs[i]; /* the least recently used, or an empty one */
	if (strlen(function) >= sizeof(slot->function))
		return; /* not kept: its jobs are probed as a new function's */
	memcpy(slot->function, function, strlen(function) + 1);
	slot->us = us;
	slot->used = ++p->costs_clock;
}

void engine__pool_measured(pool *p, double run_us)
{
	p->est_us = p->est_known ? engine__cost_average(p->est_us, run_us) : run_us;
	p->est_known = 1;
}

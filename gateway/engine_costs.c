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

#include "engine_int.h"

/* The weight of a new result: recent tasks count most, without one odd
 * task swinging the price. */
#define COST_WEIGHT 0.2

double engine__function_cost(pool *p, const char *function)
{
	for (int i = 0; i < POOL_COSTS; i++)
		if (p->costs[i].used && strcmp(p->costs[i].function, function) == 0) {
			p->costs[i].used = ++p->costs_clock;
			return p->costs[i].us;
		}
	return -1;
}

void engine__function_measured(pool *p, const char *function, double us)
{
	function_cost *slot = &p->costs[0];

	for (int i = 0; i < POOL_COSTS; i++) {
		function_cost *c = &p->costs[i];
		if (c->used && strcmp(c->function, function) == 0) {
			c->us = (1.0 - COST_WEIGHT) * c->us + COST_WEIGHT * us;
			c->used = ++p->costs_clock;
			return;
		}
		if (c->used < slot->used)
			slot = c; /* the least recently used, or an empty one */
	}
	if (strlen(function) >= sizeof(slot->function))
		return; /* not kept: its jobs are probed as a new function's */
	memcpy(slot->function, function, strlen(function) + 1);
	slot->us = us;
	slot->used = ++p->costs_clock;
}

void engine__pool_measured(pool *p, double run_us)
{
	p->est_us = p->est_known ? (1.0 - COST_WEIGHT) * p->est_us + COST_WEIGHT * run_us : run_us;
	p->est_known = 1;
}

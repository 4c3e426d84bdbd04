/*
 * Pool sizes. A pool's size is its spec's processes: set when it is made,
 * by PATCH /v1/pools/{id}, or, for a pool with autoscale, by the gateway
 * from its backlog. Each tick converges the pool's workers to it. Missing
 * ones are started. Extra ones retire, cheapest first: one being stopped
 * anyway (its lease ran out) is not replaced, one still starting is
 * stopped (it holds nothing), an idle one (its pull parked) is told to stop
 * at once, and a busy one takes no new task and is told to stop once it
 * holds none, so a shrink loses nothing and runs nothing twice. Retiring is
 * not stored: the size is, and a restarted gateway retires again whatever
 * is above it.
 *
 * Autoscale follows Dask's adaptive model: enough workers to drain the
 * backlog (tasks queued and handed out) within target_s at the pool's last
 * measured task time, or UNKNOWN_TASK_US before any measure, between min
 * and max. It grows at once and shrinks only by workers idle for idle_s;
 * each change is logged with its reason, stored, and shown on the pool.
 */
#include <limits.h>

#include "gateway/engine/engine_int.h"

#define SCALE_EVERY_MS 250 /* autoscale looks this often */
#define UNKNOWN_TASK_US 500000.0 /* a task never measured is taken to take this (Dask's default) */

static int store_size(engine *e, pool *p)
{
	char *json = spec_pool_json(&p->spec);
	int err = json ? store_pool_set_spec(e->st, p->id, json) : CM_ENOMEM;

	free(json);
	return err;
}

/* The spec p would have after patch pt; CM_OK, or the error and why. */
static int patched(const pool *p, const pool_patch *pt, pool_spec *next, char *detail, size_t detail_len)
{
	*next = p->spec;
	if (pt->processes >= 0 && !pt->autoscale && p->spec.scale_max) {
		snprintf(detail, detail_len,
		         "pool %s autoscales between %d and %d workers: PATCH its 'autoscale' instead (null turns it "
		         "off)",
		         p->id, p->spec.scale_min, p->spec.scale_max);
		return CM_ECLOSED;
	}
	if (pt->autoscale < 0) {
		next->scale_min = next->scale_max = next->scale_target_s = next->scale_idle_s = 0;
	} else if (pt->autoscale > 0) {
		next->scale_min = pt->scale_min;
		next->scale_max = pt->scale_max;
		next->scale_target_s = pt->scale_target_s;
		next->scale_idle_s = pt->scale_idle_s;
	}
	if (pt->processes >= 0)
		next->processes = pt->processes;
	else if (next->scale_max) /* the size it has, within the new bounds */
		next->processes = next->processes < next->scale_min   ? next->scale_min
		                  : next->processes > next->scale_max ? next->scale_max
		                                                      : next->processes;
	else if (next->processes < 1) /* autoscale off at no worker: one */
		next->processes = 1;
	if (next->scale_max && (next->processes < next->scale_min || next->processes > next->scale_max)) {
		snprintf(detail, detail_len, "field 'processes' (%d) must be within autoscale's min and max (%d to %d)",
		         next->processes, next->scale_min, next->scale_max);
		return CM_EINVAL;
	}
	if (!next->scale_max && next->processes < 1) {
		snprintf(detail, detail_len,
		         "field 'processes' must be 1 or more (with autoscale, min 0 lets a pool hold no worker while "
		         "it has no work)");
		return CM_EINVAL;
	}
	return CM_OK;
}

void engine__handle_pool_patch(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);
	pool_spec next;

	if (!p) {
		o->err = CM_ENOENT;
		return;
	}
	if (p->spec.manager[0]) {
		o->err = CM_ECLOSED;
		snprintf(o->detail, sizeof(o->detail), "%s is a manager: it has exactly one process", p->id);
		return;
	}
	if (p->state != POOL_ACTIVE && p->state != POOL_CLOSED) {
		o->err = CM_ECLOSED;
		snprintf(o->detail, sizeof(o->detail), "pool %s is %s: it cannot be resized", p->id,
		         pool_state_names[p->state]);
		return;
	}
	if ((o->err = patched(p, o->u.patch, &next, o->detail, sizeof(o->detail))) != CM_OK)
		return;
	/* Growing counts against --max-workers; shrinking never does. */
	if ((next.scale_max > 0 ? next.scale_max : next.processes) >
	            (p->spec.scale_max > 0 ? p->spec.scale_max : p->spec.processes) &&
	    (o->err = engine__quota_pool(e, p, &next, o->detail, sizeof(o->detail))) != CM_OK)
		return;
	int was = p->spec.processes;
	pool_spec before = p->spec;
	p->spec = next;
	if ((o->err = store_size(e, p)) != CM_OK) {
		p->spec = before;
		return;
	}
	p->scale_next = 0; /* autoscale looks again at once */
	if (p->spec.scale_max)
		snprintf(p->scale_reason, sizeof(p->scale_reason), "autoscale set: %d to %d workers", p->spec.scale_min,
		         p->spec.scale_max);
	if (p->spec.scale_max)
		cm_info("pool %s autoscales from %d to %d workers; it has %d now", p->id, p->spec.scale_min,
		        p->spec.scale_max, p->spec.processes);
	else
		cm_info("pool %s resized: %d -> %d workers", p->id, was, p->spec.processes);
	o->out = engine__pool_json(p);
}

/* Autoscale's look: the size p's backlog needs, stored when it changes. */
static void autoscale(engine *e, pool *p, int64_t now)
{
	const pool_spec *s = &p->spec;
	int64_t backlog = p->queued;
	int idle = 0;

	for (const worker *w = p->workers; w; w = w->next)
		if (w->state != W_EXITED && !w->retiring) {
			backlog += w->pending;
			idle += w->state == W_CONNECTED && w->idle_since &&
			        now - w->idle_since >= s->scale_idle_s * 1000LL;
		}
	double task_us = p->est_us > 0 ? p->est_us : UNKNOWN_TASK_US;
	double need_d = (double)backlog * task_us / (s->scale_target_s * 1e6);
	int need = need_d >= s->scale_max ? s->scale_max : (int)need_d + (need_d > (int)need_d); /* rounded up */
	if (backlog > 0 && need < 1)
		need = 1;
	if (need < s->scale_min)
		need = s->scale_min;
	int size = s->processes, next = size;
	char reason[sizeof(p->scale_reason)];
	if (need > size) {
		next = need;
		snprintf(reason, sizeof(reason),
		         "a backlog of %lld tasks of about %.3g ms needs %d workers to drain in %d s",
		         (long long)backlog, task_us / 1000.0, need, s->scale_target_s);
	} else if (need < size && idle > 0) {
		next = size - idle < need ? need : size - idle;
		snprintf(reason, sizeof(reason), "%d worker%s idle for %d s", size - next, size - next == 1 ? "" : "s",
		         s->scale_idle_s);
	}
	if (next == size)
		return;
	cm_info("pool %s autoscale: %d -> %d workers: %s", p->id, size, next, reason);
	p->spec.processes = next;
	memcpy(p->scale_reason, reason, sizeof(reason));
	store_size(e, p); /* a failure fails the cycle, which reloads the size stored before */
}

/* Retires one of p's workers, the cheapest to lose; 0 when none is left. */
static int retire_one(engine *e, pool *p)
{
	worker *best = NULL;
	int best_rank = 4;

	for (worker *w = p->workers; w; w = w->next) {
		if (w->state == W_EXITED || w->retiring)
			continue;
		int rank = w->state == W_STOPPING   ? 0 /* its lease ran out: not replaced */
		           : w->state == W_STARTING ? 1
		           : w->parked.head         ? 2
		                                    : 3;
		if (rank < best_rank || (rank == 3 && best_rank == 3 && w->pending < best->pending)) {
			best = w;
			best_rank = rank;
		}
	}
	if (!best)
		return 0;
	best->retiring = 1;
	if (best_rank == 1) {
		best->state = W_STOPPING;
		engine__worker_stop(p, best, 0);
	} else if (best_rank == 2) {
		best->state = W_STOPPING;
		engine__pull_finish(e, waitlist_take(&best->parked), ENGINE_BATCH_STOP, NULL);
	}
	cm_info("pool %s: worker %s retires (%lld tasks in hand)", p->id, best->id, (long long)best->pending);
	return 1;
}

/* A local worker's start is CPU on this host: its sandbox, the worker and,
 * for a Python pool, an interpreter importing its modules (some 100 ms).
 * All started at once, a new Pool(4) on two cores had no runtime up before
 * four starts' time: 340 ms to its first map's results. Now at most one a
 * core starts at a time, gateway-wide (--local-starts; a worker connects
 * once its runtime is up, and the next starts then): the first are up in
 * one start's time, 180 ms to the same results. A start slower than
 * local_start_slot_ms (a slow disk, not the CPU) stops holding back the
 * next.
 *
 * How many more of local pool p's workers may start now. A pool with none
 * starting may always start one: a pool of many slow starts does not hold
 * back another pool's first worker. */
static int local_starts_free(const engine *e, const pool *p, int64_t now)
{
	int starting = 0, own = 0;

	for (const pool *q = e->ticked; q; q = q->ticked_next) /* a pool with a worker starting is ticked */
		if (q->backend == e->local)
			for (const worker *w = q->workers; w; w = w->next)
				if (w->state == W_STARTING && !w->adopted &&
				    now - w->started < e->cfg->local_start_slot_ms) {
					starting++;
					own += q == p;
				}
	return starting < e->cfg->local_starts ? e->cfg->local_starts - starting : !own;
}

void engine__pool_converge(engine *e, pool *p, int64_t now)
{
	int active = 0;

	if (p->spec.scale_max && now >= p->scale_next) {
		p->scale_next = now + SCALE_EVERY_MS;
		autoscale(e, p, now);
	}
	for (const worker *w = p->workers; w; w = w->next)
		active += w->state != W_EXITED && !w->retiring;
	while (active > p->spec.processes && retire_one(e, p))
		active--;
	if (active >= p->spec.processes)
		return;
	int room = p->backend == e->local ? local_starts_free(e, p, now) : INT_MAX;
	while (active < p->spec.processes && room > 0 && p->state != POOL_FAILED &&
	       engine__worker_spawn(e, p) == CM_OK) {
		active++;
		room--;
	}
}

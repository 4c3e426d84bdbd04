/*
 * The store's upkeep, a little each cycle so that no request waits on it:
 * ended jobs older than --retain are removed as DELETE removes one (gone
 * from every view at once, their tasks and results deleted a slice a cycle
 * by the chores), terminated pools and managers too, then the jobs of
 * deleted pools, then ended processes and rings with their output files,
 * and the pages deletions free are given back to the file
 * system by incremental vacuum, so the file is as large as what it keeps,
 * not as its peak.
 */
#include "gateway/engine/engine_int.h"

/* How often ended jobs are looked over when the last look removed all it
 * found; and how many jobs one cycle removes at most (each costs a few
 * statements now and its chore later). */
#define SWEEP_MS 1000
#define SWEEP_JOBS 64
/* Pages given back per cycle (4 KiB each: about 1 MiB moved within the
 * file, a few milliseconds), and how often free pages are looked for when
 * there were fewer. Only while no chore runs: the deletions come first. */
#define VACUUM_PAGES 256
#define VACUUM_IDLE_MS 1000

/* Removes up to SWEEP_JOBS jobs, then processes and rings, that ended
 * before cutoff; returns how many (SWEEP_JOBS: look again next cycle).
 * A pool's jobs are in creation order and a job ends after it was
 * created, so a sweep reads only jobs created before the cutoff. */
static int sweep(engine *e, int64_t cutoff)
{
	int removed = 0;

	for (pool *p = e->pools, *next; p && removed < SWEEP_JOBS; p = next) {
		next = p->next;
		if (p->state == POOL_TERMINATED && p->ended_ms <= cutoff) {
			removed += engine__pool_delete(e, p, "older than --retain") == CM_OK ? 1 : SWEEP_JOBS;
			continue;
		}
		removed += engine__jobs_remove_ended(e, p, cutoff, SWEEP_JOBS - removed);
	}
	if (removed < SWEEP_JOBS)
		removed += engine__processes_remove_ended(e, cutoff, SWEEP_JOBS - removed);
	return removed;
}

void engine__upkeep(engine *e, int64_t now)
{
	int64_t left = 0;

	/* now paces the looks; a job's times are the wall clock's, as stored */
	if (e->cfg->retain_ms > 0 && now >= e->next_sweep)
		e->next_sweep = sweep(e, cm_wall_ms() - e->cfg->retain_ms) == SWEEP_JOBS ? now : now + SWEEP_MS;
	if (e->deleted_pools)
		engine__deleted_pools_step(e, SWEEP_JOBS);
	if (!e->chores && now >= e->next_vacuum && store_vacuum_step(e->st, VACUUM_PAGES, &left) == CM_OK)
		e->next_vacuum = left >= VACUUM_PAGES ? now : now + VACUUM_IDLE_MS;
}

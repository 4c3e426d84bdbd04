/*
 * The operator's quotas (--max-*): how many pools, managers, workers,
 * processes, queues, pipes and leases the gateway holds at once, and how
 * many bytes of queue items, so that no client fills the machine (45 pools
 * of 8 workers, 20,000 queues and a 2.2 GB database of items went through
 * before). Counted from the engine's own lists when something is made, not
 * on a hot path; queue bytes are a running total. A refusal is CM_EQUOTA
 * (429), its detail naming the quota and its flag.
 */
#include <stdio.h>
#include <string.h>

#include "gateway/engine/engine_int.h"

static int live(const pool *p)
{
	return p->state != POOL_TERMINATED && p->state != POOL_FAILED;
}

/* The workers a pool may have: autoscale's maximum, else its size. */
static int64_t workers_of(const pool_spec *s)
{
	return s->scale_max > 0 ? s->scale_max : s->processes;
}

static int refuse(char *detail, size_t detail_len, const char *what, int64_t max, const char *flag)
{
	snprintf(detail, detail_len, "quota: this gateway holds at most %lld %s at once (%s)", (long long)max, what,
	         flag);
	return CM_EQUOTA;
}

int engine__quota_pool(engine *e, const pool *resizing, const pool_spec *next, char *detail, size_t detail_len)
{
	int64_t pools = 0, managers = 0, workers = workers_of(next);

	for (const pool *p = e->ticked; p; p = p->ticked_next) { /* a live pool is ticked */
		if (!live(p) || p == resizing)
			continue;
		pools += !p->spec.manager[0];
		managers += p->spec.manager[0] != '\0';
		workers += workers_of(&p->spec);
	}
	if (!resizing && !next->manager[0] && pools >= e->cfg->max_pools)
		return refuse(detail, detail_len, "pools", e->cfg->max_pools, "--max-pools");
	if (!resizing && next->manager[0] && managers >= e->cfg->max_managers)
		return refuse(detail, detail_len, "managers", e->cfg->max_managers, "--max-managers");
	if (workers > e->cfg->max_workers)
		return refuse(detail, detail_len, "workers (pools' sizes and autoscale maxima together)",
		              e->cfg->max_workers, "--max-workers");
	return CM_OK;
}

int engine__quota_processes(engine *e, int adding, char *detail, size_t detail_len)
{
	int64_t running = adding;

	for (const process *pr = e->processes; pr; pr = pr->next)
		running += pr->state == PR_RUNNING;
	if (running > e->cfg->max_processes)
		return refuse(detail, detail_len, "running processes (ring members included)", e->cfg->max_processes,
		              "--max-processes");
	return CM_OK;
}

int engine__quota_queue(engine *e, int pipe, char *detail, size_t detail_len)
{
	int64_t n = 0;

	/* A pipe is one queue per direction, named "<pipe>.0" and "<pipe>.1". */
	for (const queue *q = e->queues; q; q = q->next)
		n += pipe ? engine__queue_is_pipe(q) && q->id[strlen(q->id) - 1] == '0' : !engine__queue_is_pipe(q);
	if (pipe && n >= e->cfg->max_pipes)
		return refuse(detail, detail_len, "pipes", e->cfg->max_pipes, "--max-pipes");
	if (!pipe && n >= e->cfg->max_queues)
		return refuse(detail, detail_len, "queues", e->cfg->max_queues, "--max-queues");
	return CM_OK;
}

int engine__quota_queue_bytes(engine *e, int64_t adding, char *detail, size_t detail_len)
{
	if (e->queue_bytes + adding > e->cfg->max_queue_bytes)
		return refuse(detail, detail_len, "bytes of items in its queues and pipes", e->cfg->max_queue_bytes,
		              "--max-queue-bytes");
	return CM_OK;
}

int engine__quota_lease(engine *e, char *detail, size_t detail_len)
{
	int64_t n = 0;

	for (const client_lease *l = e->client_leases; l; l = l->next)
		n++;
	if (n >= e->cfg->max_leases)
		return refuse(detail, detail_len, "client leases", e->cfg->max_leases, "--max-leases");
	return CM_OK;
}

/*
 * Applies that wait for their result (POST /v1/pools/{id}/apply?wait=S),
 * answered by the engine itself. An apply is a one-task map; once the cycle
 * that stored its job has committed, the request waits in e->applies, and
 * the cycle that records its task's result answers it with that result
 * after its own commit. No long poll looks for the result, so it goes from
 * the engine's commit straight to the client's connection.
 *
 * A wait that ends without a result (its time passed, the job ended some
 * other way, the gateway stops or reloads, the recording cycle failed) is
 * answered with none: the HTTP side looks in the store once and answers
 * the result, or 202 with the job.
 */
#include "gateway/engine/engine_int.h"
#include "gateway/result_item.h"

int engine__apply_settle(engine *e, op *o, int committed)
{
	if (o->u.map.stored) {
		/* A result recorded in a cycle that did not commit is not one. */
		if (!committed) {
			cm_buf_fini(&o->u.map.item);
			cm_buf_init(&o->u.map.item);
		}
		return 0;
	}
	if (!committed || o->err != CM_OK)
		return 0; /* answered as any map */
	o->u.map.stored = 1;
	/* An Idempotency-Key may name a job that ended, or was removed since. */
	job *j = o->u.map.job_id[0] ? engine__job_find(e, o->u.map.job_id) : NULL;
	if (!j)
		return 0;
	o->u.map.info = (job_info){.num = j->num, .base = j->base, .total = j->total};
	snprintf(o->u.map.info.pool, sizeof(o->u.map.info.pool), "%s", j->pool->id);
	o->u.map.info_ok = 1;
	if (j->state != JOB_RUNNING)
		return 0;
	o->u.map.job = j;
	j->waiters++;
	waitlist_add(&e->applies, o);
	return 1;
}

/* Answers every waiting apply for which is_due(o, arg) holds, after this
 * cycle's commit. */
static void release_where(engine *e, int (*is_due)(const op *o, const void *arg), const void *arg)
{
	op *prev = NULL;

	for (op *o = e->applies.head, *n; o; o = n) {
		n = o->next;
		if (!is_due(o, arg)) {
			prev = o;
			continue;
		}
		if (prev)
			prev->next = n;
		else
			e->applies.head = n;
		if (e->applies.tail == o)
			e->applies.tail = prev;
		o->u.map.job->waiters--;
		o->u.map.job = NULL;
		engine__ready(e, o);
	}
}

static int of_job(const op *o, const void *j)
{
	return o->u.map.job == j;
}

void engine__applies_result(engine *e, job *j, int64_t index, int ok, const void *value, size_t len)
{
	if (index != 0) /* an apply answers with its job's first result */
		return;
	for (op *o = e->applies.head; o; o = o->next)
		if (o->u.map.job == j &&
		    result_item_append(&o->u.map.item, index, ok, value, len, j->id, j->pool->output_last) != CM_OK) {
			cm_buf_fini(&o->u.map.item); /* no memory for it: it looks in the store */
			cm_buf_init(&o->u.map.item);
		}
	release_where(e, of_job, j);
}

void engine__applies_end(engine *e, job *j)
{
	release_where(e, of_job, j);
}

static int past_wait(const op *o, const void *now)
{
	return o->u.map.wait_until <= *(const int64_t *)now;
}

void engine__applies_tick(engine *e, int64_t now)
{
	if (e->applies.head)
		release_where(e, past_wait, &now);
}

static int any(const op *o, const void *arg)
{
	(void)o;
	(void)arg;
	return 1;
}

void engine__applies_quiesce(engine *e)
{
	release_where(e, any, NULL);
}

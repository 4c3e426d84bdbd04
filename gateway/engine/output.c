/*
 * What pools' tasks printed: the lines a worker's pull brings
 * (worker/output.h) are stored in the cycle's transaction, so a line
 * printed before a task returned is readable (GET /v1/pools/{id}/logs) no
 * later than its result. Each pool keeps its OUTPUT_KEPT newest lines;
 * while the program that made it follows them, as a parent reads its
 * children's pipes, a worker whose lines would push out some it has not
 * read yet is told to keep them and ask again, as a child's write to a
 * full pipe waits (the results after them wait too: worker/output.h).
 * Runs on the engine thread.
 */
#include "gateway/engine/engine_int.h"

/* Past this many lines over the kept ones, the oldest go (in one delete,
 * not one a pull). */
#define OUTPUT_SLACK 1000
/* Lines one pull may store, as many as a worker sends (worker/worker.c):
 * a frame of a million empty lines is not a million inserts in one cycle. */
#define OUTPUT_PER_PULL 1024
/* A follower asks again once it showed a page (the Python client's: 2,000
 * lines), and within its long poll's wait (5 s) when no line comes: one
 * that has not asked for this long is gone, or stuck, and holds no worker
 * back. */
#define FOLLOWED_MS 60000

/* The lines of m not stored yet (those sent again after a lost answer
 * were). */
static size_t new_lines(const worker *w, const engine_pull_msg *m)
{
	uint64_t stored = w->output_next > m->output_first ? w->output_next - m->output_first : 0;

	return stored >= m->noutput ? 0 : m->noutput - (size_t)stored;
}

/* By line numbers, which all pools share: other pools' lines between this
 * one's count too, so it holds back sooner, never later; and a reader that
 * read all there is (after at output_last) lets any pull through, so it
 * never holds back for good. */
int engine__pool_output_held_back(const pool *p, const worker *w, const engine_pull_msg *m, int64_t now)
{
	size_t n = new_lines(w, m);

	return n && p->output_read_ms && now - p->output_read_ms < FOLLOWED_MS &&
	       p->output_last + (int64_t)(n < OUTPUT_PER_PULL ? n : OUTPUT_PER_PULL) - OUTPUT_KEPT > p->output_read;
}

void engine__pool_output_read(engine *e, op *o)
{
	pool *p = engine__pool_find(e, o->id);

	if (!p) {
		o->err = CM_ENOENT;
		return;
	}
	o->u.output_read.missed = o->u.output_read.after < p->output_gone;
	/* Only the program that made it holds its workers back: a person's
	 * strand logs -f, or the dashboard, never does. */
	if (!p->spec.lease[0] || strcmp(o->u.output_read.lease, p->spec.lease) != 0)
		return;
	if (o->u.output_read.after > p->output_read)
		p->output_read = o->u.output_read.after;
	p->output_read_ms = cm_now_ms();
}

void engine__pool_output(engine *e, pool *p, worker *w, const engine_pull_msg *m)
{
	size_t skip = 0, n = m->noutput;
	const uint8_t *text = m->output;

	/* Lines sent again after an answer that was lost (a gateway that
	 * restarted, too: the number is in the worker's row, in the same
	 * transaction as the lines): stored once. */
	if (w->output_next > m->output_first)
		skip = w->output_next - m->output_first > n ? n : (size_t)(w->output_next - m->output_first);
	for (size_t i = 0; i < skip; i++)
		text += m->output_lens[i];
	if (skip == n)
		return;
	w->output_next = m->output_first + n;
	store_worker_set_output_next(e->st, w->id, (int64_t)w->output_next);
	size_t keep = n - skip > OUTPUT_PER_PULL ? OUTPUT_PER_PULL : n - skip;
	if (!keep || store_output_add(e->st, p->id, w->id, cm_wall_ms(), keep, text, m->output_lens + skip,
	                              m->output_streams + skip, &p->output_last) != CM_OK)
		return;
	e->output_stored = 1;
	if (keep < n - skip) {
		char note[128];
		uint32_t len = (uint32_t)snprintf(note, sizeof(note),
		                                  "[strand: %zu lines over the %d one pull may bring "
		                                  "were dropped]",
		                                  n - skip - keep, OUTPUT_PER_PULL),
		         stream = 2;
		if (store_output_add(e->st, p->id, w->id, cm_wall_ms(), 1, (const uint8_t *)note, &len, &stream,
		                     &p->output_last) == CM_OK)
			keep++;
	}
	if ((p->output_lines += (int64_t)keep) > OUTPUT_KEPT + OUTPUT_SLACK &&
	    store_output_trim(e->st, p->id, OUTPUT_KEPT, &p->output_gone) == CM_OK)
		p->output_lines = OUTPUT_KEPT;
}

void engine__load_output_count(void *ctx, const char *pool_id, int64_t lines, int64_t last)
{
	pool *p = engine__pool_find(ctx, pool_id);

	if (p) {
		p->output_lines = lines;
		p->output_last = last;
	}
}

/*
 * What pools' tasks printed: the lines a worker's pull brings
 * (worker/output.h) are stored in the cycle's transaction, so a line
 * printed before a task returned is readable (GET /v1/pools/{id}/logs) no
 * later than its result. Each pool keeps its OUTPUT_KEPT newest lines.
 * Runs on the engine thread.
 */
#include "gateway/engine/engine_int.h"

/* Past this many lines over the kept ones, the oldest go (in one delete,
 * not one a pull). */
#define OUTPUT_SLACK 1000
/* Lines one pull may store, as many as a worker sends (worker/worker.c):
 * a frame of a million empty lines is not a million inserts in one cycle. */
#define OUTPUT_PER_PULL 1024

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
	    store_output_trim(e->st, p->id, OUTPUT_KEPT) == CM_OK)
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

/*
 * What the dashboard charts over the last hour: every HISTORY_EVERY_MS the
 * engine notes, over all its pools, the tasks done so far, the tasks
 * queued and in workers' hands, and the workers connected, keeping the
 * last HISTORY_SAMPLES in a ring (an hour: 360 samples, some 12 KiB). GET
 * /v1/history reads them, the moment of the request last, so that a chart
 * has two points from the gateway's start on. Kept in memory only: a
 * restart begins a new hour.
 */
#include "gateway/engine/engine_int.h"

static history_sample sample_now(engine *e, int64_t wall_ms)
{
	history_sample s = {.at_ms = wall_ms};

	for (const pool *p = e->pools; p; p = p->next) {
		s.done += p->tasks_done;
		s.queued += p->queued;
		for (const worker *w = p->workers; w; w = w->next) {
			s.pending += w->state != W_EXITED ? w->pending : 0;
			s.workers += w->state == W_CONNECTED;
		}
	}
	return s;
}

void engine__history_tick(engine *e, int64_t now)
{
	history *h = &e->history;

	if (now < h->next_ms)
		return;
	h->next_ms = now + HISTORY_EVERY_MS;
	h->ring[h->at] = sample_now(e, cm_wall_ms());
	h->at = (h->at + 1) % HISTORY_SAMPLES;
	if (h->n < HISTORY_SAMPLES)
		h->n++;
}

static json_t *sample_json(const history_sample *s)
{
	char at[32];

	engine__iso_time(s->at_ms, at);
	return json_pack("{s:s, s:I, s:I, s:I, s:I}", "at", at, "done", (json_int_t)s->done, "queued",
	                 (json_int_t)s->queued, "pending", (json_int_t)s->pending, "workers", (json_int_t)s->workers);
}

void engine__handle_history(engine *e, op *o)
{
	const history *h = &e->history;
	json_t *list = json_array();
	history_sample now = sample_now(e, cm_wall_ms());

	for (int i = 0; list && i < h->n; i++)
		json_array_append_new(list,
		                      sample_json(&h->ring[(h->at - h->n + i + HISTORY_SAMPLES) % HISTORY_SAMPLES]));
	if (list)
		json_array_append_new(list, sample_json(&now));
	o->out = list ? json_pack("{s:i, s:o}", "every_s", HISTORY_EVERY_MS / 1000, "samples", list) : NULL;
	if (!o->out)
		o->err = CM_ENOMEM;
}

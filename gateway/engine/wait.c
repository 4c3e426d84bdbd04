/*
 * The engine's one way to wait: a request that cannot be answered yet (a
 * worker's pull with nothing to hand out, a queue reader, a DELETE waiting
 * for processes to end, a start waiting for its backend, a log read) sits
 * in a waitlist, first come first served, until the part of the engine that
 * owns the list answers it. Ops link through their own next pointer: an op
 * is in at most one list, and never on the ready list at the same time.
 */
#include "gateway/engine/engine_int.h"

void waitlist_add(waitlist *w, op *o)
{
	o->next = NULL;
	if (w->tail)
		w->tail->next = o;
	else
		w->head = o;
	w->tail = o;
}

op *waitlist_take(waitlist *w)
{
	op *o = w->head;

	if (o) {
		w->head = o->next;
		if (!w->head)
			w->tail = NULL;
		o->next = NULL;
	}
	return o;
}

int waitlist_remove(waitlist *w, const op *o)
{
	op *prev = NULL;

	for (op *it = w->head; it; prev = it, it = it->next) {
		if (it != o)
			continue;
		if (prev)
			prev->next = it->next;
		else
			w->head = it->next;
		if (w->tail == it)
			w->tail = prev;
		it->next = NULL;
		return 1;
	}
	return 0;
}

size_t waitlist_count(const waitlist *w)
{
	size_t n = 0;

	for (const op *o = w->head; o; o = o->next)
		n++;
	return n;
}

void waitlist_answer_all(engine *e, waitlist *w, int err, const char *detail)
{
	op *o;

	while ((o = waitlist_take(w))) {
		o->err = err;
		if (detail)
			snprintf(o->detail, sizeof(o->detail), "%s", detail);
		engine__ready(e, o);
	}
}

void waitlist_drop_all(engine *e, waitlist *w)
{
	op *o;

	while ((o = waitlist_take(w)))
		engine__answer(e, o, 0);
}

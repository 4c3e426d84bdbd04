/*
 * A queue of kind "turns" deals its items to its readers in turn, as
 * Fiber's SimpleQueuePush does: with four readers, 2,400 items put give
 * each exactly 600, however fast each comes back for more. A reader is
 * whoever asked the queue for an item (a client's lease, a worker, a
 * process) until it ends. Each reader's share waits for it, up to
 * TURNS_DEALT_MAX items (a socket's buffer in Fiber): past that the turn
 * goes on to the readers with room, so one that stopped reading holds
 * back at most that many. An item no reader has room for, or put before
 * any reader asked, is anyone's: taken by whoever asks first (a Fiber
 * push socket gives those all to its first peer; readers started after
 * their queue was filled share it here). Items stay one FIFO in the
 * store, taken from its head; what is dealt is a count, how many each
 * may take.
 */
#include "gateway/engine/engine_int.h"

queue_turns *turns_new(void)
{
	return calloc(1, sizeof(queue_turns));
}

void turns_free(queue_turns *t)
{
	if (t)
		free(t->readers);
	free(t);
}

static queue_reader *reader_find(const queue_turns *t, const char *reader)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->readers[i].id, reader) == 0)
			return &t->readers[i];
	return NULL;
}

/* Deals n items, one each to the next reader with room; those no reader
 * has room for are anyone's. */
static void deal(queue_turns *t, int64_t n)
{
	size_t misses = 0;

	while (n > 0 && t->n > 0 && misses < t->n) {
		queue_reader *r = &t->readers[t->next];
		t->next = (t->next + 1) % t->n;
		if (r->dealt >= TURNS_DEALT_MAX) {
			misses++;
			continue;
		}
		r->dealt++;
		n--;
		misses = 0;
	}
	t->undealt += n;
}

int turns_join(queue_turns *t, const char *reader)
{
	if (reader_find(t, reader))
		return CM_OK;
	if (t->n == TURNS_READERS_MAX)
		return CM_EQUOTA;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		queue_reader *grown = realloc(t->readers, cap * sizeof(*grown));
		if (!grown)
			return CM_ENOMEM;
		t->readers = grown;
		t->cap = cap;
	}
	t->readers[t->n] = (queue_reader){.dealt = 0};
	snprintf(t->readers[t->n].id, sizeof(t->readers[t->n].id), "%s", reader);
	t->n++;
	return CM_OK;
}

void turns_deal(queue_turns *t, int64_t n)
{
	deal(t, n);
}

int64_t turns_allowance(const queue_turns *t, const char *reader)
{
	const queue_reader *r = reader_find(t, reader);

	return (r ? r->dealt : 0) + t->undealt;
}

void turns_took(queue_turns *t, const char *reader, int64_t n)
{
	queue_reader *r = reader_find(t, reader);
	int64_t own = r ? (n < r->dealt ? n : r->dealt) : 0;

	if (r)
		r->dealt -= own;
	t->undealt -= n - own;
}

int turns_leave(queue_turns *t, const char *reader)
{
	queue_reader *r = reader_find(t, reader);
	size_t i;

	if (!r)
		return 0;
	i = (size_t)(r - t->readers);
	int64_t share = r->dealt;
	memmove(r, r + 1, (t->n - i - 1) * sizeof(*r));
	t->n--;
	if (i < t->next)
		t->next--;
	if (t->next >= t->n)
		t->next = 0;
	deal(t, share);
	return 1;
}

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
	if (t) {
		free(t->readers);
		free(t->index);
	}
	free(t);
}

/* The index entry of reader: the one naming it, or the empty one where
 * it would go. */
static uint32_t *index_entry(const queue_turns *t, const char *reader)
{
	size_t mask = 2 * t->cap - 1, at = engine__id_hash(reader) & mask;

	while (t->index[at] && strcmp(t->readers[t->index[at] - 1].id, reader) != 0)
		at = (at + 1) & mask;
	return &t->index[at];
}

/* Indexes every reader again (after one left, or the array grew). */
static void index_all(queue_turns *t)
{
	memset(t->index, 0, 2 * t->cap * sizeof(*t->index));
	for (size_t i = 0; i < t->n; i++)
		*index_entry(t, t->readers[i].id) = (uint32_t)i + 1;
}

static queue_reader *reader_find(const queue_turns *t, const char *reader)
{
	if (!t->cap)
		return NULL;
	uint32_t at = *index_entry(t, reader);
	return at ? &t->readers[at - 1] : NULL;
}

int turns_join(queue_turns *t, const char *reader)
{
	if (reader_find(t, reader))
		return CM_OK;
	if (t->n == TURNS_READERS_MAX)
		return CM_EQUOTA;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8; /* a power of two: the index's mask */
		queue_reader *grown = realloc(t->readers, cap * sizeof(*grown));
		uint32_t *index = calloc(2 * cap, sizeof(*index));
		if (grown)
			t->readers = grown;
		if (!grown || !index) {
			free(index);
			return CM_ENOMEM;
		}
		free(t->index);
		t->index = index;
		t->cap = cap;
		index_all(t);
	}
	t->readers[t->n] = (queue_reader){.dealt = 0};
	snprintf(t->readers[t->n].id, sizeof(t->readers[t->n].id), "%s", reader);
	*index_entry(t, t->readers[t->n].id) = (uint32_t)t->n + 1;
	t->n++;
	return CM_OK;
}

void turns_deal(queue_turns *t, int64_t n)
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

	if (!r)
		return 0;
	size_t i = (size_t)(r - t->readers);
	int64_t share = r->dealt;
	memmove(r, r + 1, (t->n - i - 1) * sizeof(*r));
	t->n--;
	index_all(t); /* the readers after it moved */
	if (i < t->next)
		t->next--;
	if (t->next >= t->n)
		t->next = 0;
	turns_deal(t, share);
	return 1;
}

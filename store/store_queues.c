/*
 * Queues and pipes in the store (store.h): a queue's items are rows of
 * queue_items in commit order. A take removes the head's rows, or, for a
 * client taking several at once, marks them held under the hold's name:
 * they leave the queue for everyone else but stay stored until the client
 * says how many it used (store_queue_release), so that a client that dies
 * with items it had not used yet loses none of them.
 */
#include <sqlite3.h>

#include "common/common.h"
#include "store/store_int.h"

int store_queue_insert(store *st, const char *id, const char *kind, int64_t created_ms, const char *lease)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "INSERT INTO queues(id, kind, created_ms, lease) VALUES(?, ?, ?, ?)", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	store__bind_text(s, 2, kind);
	sqlite3_bind_int64(s, 3, created_ms);
	store__bind_text(s, 4, lease && lease[0] ? lease : NULL);
	return store__step_done(st, s);
}

int store_queue_delete(store *st, const char *id)
{
	sqlite3_stmt *s;

	if (store__prepare(st, "DELETE FROM queue_items WHERE queue = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	if (store__step_done(st, s) != CM_OK || store__prepare(st, "DELETE FROM queues WHERE id = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, id);
	return store__step_done(st, s);
}

int store_queue_each(store *st, store_queue_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	/* Items are blobs: length() reads a value's size from its record
	 * without loading it (a CAST would read every item at start). Held
	 * items count in the bytes (they are stored), not in the size. */
	if (store__prepare(st,
	                   "SELECT q.id, q.kind, q.created_ms, count(i.id) - count(i.hold),"
	                   " coalesce(sum(length(i.value)), 0), coalesce(q.lease, '')"
	                   " FROM queues q LEFT JOIN queue_items i ON i.queue = q.id GROUP BY q.id",
	                   &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, (const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1),
		   sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4),
		   (const char *)sqlite3_column_text(s, 5));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

/* Puts, takes and a hold's end are a queue's every item: their statements
 * are kept prepared (compiling them was most of SQLite's time in a put and
 * take in turn). */
int store_queue_put(store *st, const char *queue, size_t n, char *const *items, const size_t *lens)
{
	sqlite3_stmt *s;
	int err = CM_OK;

	if (store__kept(st, KEPT_QUEUE_PUT, "INSERT INTO queue_items(queue, value) VALUES(?, ?)", &s) != CM_OK)
		return CM_EIO;
	for (size_t i = 0; i < n && err == CM_OK; i++) {
		store__bind_text(s, 1, queue);
		sqlite3_bind_blob(s, 2, items[i], (int)lens[i], SQLITE_STATIC);
		err = store__kept_done(st, s);
	}
	return err;
}

int store_queue_take(store *st, const char *queue, int64_t max, int64_t max_bytes, const char *hold, store_item_fn fn,
                     void *ctx, int64_t *taken, int64_t *bytes)
{
	sqlite3_stmt *s;
	int64_t last = -1;
	int rc = SQLITE_DONE;
	int err = CM_OK;

	*taken = *bytes = 0;
	if (store__kept(st, KEPT_QUEUE_TAKE,
	                "SELECT id, value FROM queue_items WHERE queue = ? AND hold IS NULL ORDER BY id LIMIT ?",
	                &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, queue);
	sqlite3_bind_int64(s, 2, max);
	while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t len = sqlite3_column_bytes(s, 1);
		if (*taken > 0 && *bytes + len > max_bytes)
			break;
		last = sqlite3_column_int64(s, 0);
		err = fn(ctx, sqlite3_column_blob(s, 1), (size_t)len);
		(*taken)++;
		*bytes += len;
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store__fail(st, rc);
	if (err != CM_OK || last < 0)
		return err;
	if (hold ? store__kept(st, KEPT_QUEUE_HOLD,
	                       "UPDATE queue_items SET hold = ?3 WHERE queue = ?1 AND hold IS NULL AND id <= ?2", &s)
	         : store__kept(st, KEPT_QUEUE_REMOVE,
	                       "DELETE FROM queue_items WHERE queue = ?1 AND hold IS NULL AND id <= ?2", &s))
		return CM_EIO;
	store__bind_text(s, 1, queue);
	sqlite3_bind_int64(s, 2, last);
	if (hold)
		store__bind_text(s, 3, hold);
	return store__kept_done(st, s);
}

int store_queue_hold_drop(store *st, const char *hold)
{
	sqlite3_stmt *s;

	if (store__kept(st, KEPT_QUEUE_HOLD_DROP, "DELETE FROM queue_items WHERE hold = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, hold);
	return store__kept_done(st, s);
}

int store_queue_release(store *st, const char *hold, int64_t used, int64_t *removed, int64_t *removed_bytes)
{
	sqlite3_stmt *s;
	int rc;

	*removed = *removed_bytes = 0;
	if (used > 0) {
		/* The first `used` of the hold, by id: the order they were given in. */
		if (store__prepare(st,
		                   "SELECT count(*), coalesce(sum(length(value)), 0) FROM"
		                   " (SELECT value FROM queue_items WHERE hold = ?1 ORDER BY id LIMIT ?2)",
		                   &s) != CM_OK)
			return CM_EIO;
		store__bind_text(s, 1, hold);
		sqlite3_bind_int64(s, 2, used);
		if ((rc = sqlite3_step(s)) == SQLITE_ROW) {
			*removed = sqlite3_column_int64(s, 0);
			*removed_bytes = sqlite3_column_int64(s, 1);
		}
		sqlite3_finalize(s);
		if (rc != SQLITE_ROW)
			return store__fail(st, rc);
		if (store__prepare(st,
		                   "DELETE FROM queue_items WHERE id IN"
		                   " (SELECT id FROM queue_items WHERE hold = ?1 ORDER BY id LIMIT ?2)",
		                   &s) != CM_OK)
			return CM_EIO;
		store__bind_text(s, 1, hold);
		sqlite3_bind_int64(s, 2, used);
		if (store__step_done(st, s) != CM_OK)
			return CM_EIO;
	}
	if (store__prepare(st, "UPDATE queue_items SET hold = NULL WHERE hold = ?", &s) != CM_OK)
		return CM_EIO;
	store__bind_text(s, 1, hold);
	return store__step_done(st, s);
}

int store_queue_holds_each(store *st, store_hold_fn fn, void *ctx)
{
	sqlite3_stmt *s;
	int rc;

	if (store__prepare(st,
	                   "SELECT queue, hold, count(*), sum(length(value)) FROM queue_items WHERE hold IS NOT NULL"
	                   " GROUP BY queue, hold",
	                   &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		fn(ctx, (const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1),
		   sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

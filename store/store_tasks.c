/*
 * Tasks and results, kept by chunks (schema 6).
 *
 * A job's tasks are stored as chunks of contiguous ids, at most CHUNK_TASKS
 * tasks and CHUNK_ARG_BYTES of arguments each (one task at least):
 *   chunks(id, n, args)       id is the chunk's first task id; args packs
 *                             its n arguments (written once, never changed;
 *                             the row is deleted once every task of the
 *                             chunk succeeded, below);
 *   chunk_state(id, job, n, queued, pending, done, failed, tasks)
 *                             tasks is n records (task_records.h, as runs):
 *                             state, ok, attempts, and the holder's ref while
 *                             PENDING or the completion seq once DONE (NULL:
 *                             every task QUEUED, never attempted).
 * Results go to results(job, seq, n, data) by groups: the results of one job
 * recorded in one transaction, with contiguous seqs, packed in one blob. A
 * task's record gives its seq, and its seq its group.
 *
 * So a no-op task costs SQLite a record in a blob and an entry in a group,
 * where a row per task cost an insert, two updates and their index entries.
 * The writer keeps the chunks it touches in memory (the cache below) and
 * changes them there; store__tasks_flush writes each chunk that changed and
 * each group once, at the commit. A rollback drops the cache: what the
 * database holds is the truth again. Readers read committed rows only.
 *
 * Holders (the workers that hold tasks) are interned as small integers in
 * holders(ref, name); the writer keeps each holder's count of PENDING tasks.
 *
 * A chunk whose tasks all succeeded has its arguments deleted in the
 * commit that records its last result: nothing reads them again (a task
 * is handed out from the queue, and only a failed task's argument is
 * shown, on the failures page). Kept with the job for --retain, a map of
 * a list of 100,000 numbers left 630 KB in the database (after 209 such
 * maps, a 176 MB file and a 135 MB log), which the checkpoints copied: a
 * fifth of the gateway's CPU in a loop of such maps.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "store/store_int.h"
#include "store/task_records.h"

#define CHUNK_TASKS 1024
#define CHUNK_ARG_BYTES (1u << 20)
/* A group ends at this many results or bytes (one result always fits). */
#define GROUP_RESULTS 4096
#define GROUP_BYTES (4u << 20)
/* Chunks kept in memory after a commit beyond those it used. */
#define CACHE_KEEP 64
#define HOLDER_BUCKETS 256
/* A result entry in a group: task id (8), ok (1), then the value. */
#define ENTRY_HEAD 9

typedef struct chunk {
	int64_t id, job;
	int n;
	int64_t queued, pending, done, failed;
	int dirty;
	uint64_t used; /* the transaction that last touched it */
	trec t[];
} chunk;

typedef struct holder {
	int64_t ref;
	int64_t pending;
	int live; /* requeue_orphans' mark */
	struct holder *next; /* in its bucket */
	char name[];
} holder;

typedef struct group {
	int64_t job, seq;
	uint32_t n;
	cm_buf offsets; /* n + 1 uint32 offsets into data */
	cm_buf data; /* entries */
	struct group *next;
} group;

enum {
	S_CHUNK_AT, /* the chunk holding a task id */
	S_CHUNK_INSERT,
	S_STATE_INSERT,
	S_STATE_UPDATE,
	S_CHUNK_DROP,
	S_GROUP_INSERT,
	S_HOLDER_INSERT,
	S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
        [S_CHUNK_AT] = "SELECT id, job, n, queued, pending, done, failed, tasks FROM chunk_state"
                       " WHERE id <= ?1 ORDER BY id DESC LIMIT 1",
        [S_CHUNK_INSERT] = "INSERT INTO chunks(id, n, args) VALUES(?, ?, ?)",
        [S_STATE_INSERT] = "INSERT INTO chunk_state(id, job, n, queued, pending, done, failed, tasks)"
                           " VALUES(?1, ?2, ?3, ?3, 0, 0, 0, NULL)",
        [S_STATE_UPDATE] = "UPDATE chunk_state SET queued = ?, pending = ?, done = ?, failed = ?, tasks = ?"
                           " WHERE id = ?",
        [S_CHUNK_DROP] = "DELETE FROM chunks WHERE id = ?",
        [S_GROUP_INSERT] = "INSERT INTO results(job, seq, n, data) VALUES(?, ?, ?, ?)",
        [S_HOLDER_INSERT] = "INSERT INTO holders(name) VALUES(?)",
};

struct task_cache {
	sqlite3_stmt *s[S_COUNT];
	chunk **chunks; /* sorted by id */
	size_t n, cap;
	chunk *last; /* the one found last: results come in runs */
	uint64_t epoch;
	holder *holders[HOLDER_BUCKETS];
	holder **by_ref; /* index: ref */
	size_t nrefs;
	int holders_loaded;
	group *groups;
	cm_buf scratch;
};

/* ---- encoding ----------------------------------------------------------- */

/* One entry of a group blob: k-th of n; CM_EIO if the blob is malformed. */
static int group_entry(const uint8_t *blob, size_t len, uint32_t n, uint32_t k, int64_t *id, int *ok,
                       const void **value, size_t *value_len)
{
	size_t head = ((size_t)n + 1) * 4;
	if (k >= n || len < head)
		return CM_EIO;
	uint32_t a = cm_le32_get(blob + (size_t)k * 4), b = cm_le32_get(blob + (size_t)k * 4 + 4);
	if (a > b || head + b > len || b - a < ENTRY_HEAD)
		return CM_EIO;
	const uint8_t *e = blob + head + a;
	*id = (int64_t)cm_le64_get(e);
	*ok = e[8];
	*value = e + ENTRY_HEAD;
	*value_len = b - a - ENTRY_HEAD;
	return CM_OK;
}

/* The records of the chunk_state row at s (its n in column col, its tasks
 * in col + 1) into t, room for CHUNK_TASKS; CM_EIO if they are not. */
static int row_records(sqlite3_stmt *s, int col, trec *t, int *n)
{
	*n = sqlite3_column_int(s, col);
	if (*n <= 0 || *n > CHUNK_TASKS)
		return CM_EIO;
	return task_records_decode(t, *n, sqlite3_column_blob(s, col + 1), (size_t)sqlite3_column_bytes(s, col + 1));
}

/* ---- holders ------------------------------------------------------------ */

static size_t name_hash(const char *s)
{
	size_t h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h % HOLDER_BUCKETS;
}

static holder *holder_find(struct task_cache *c, const char *name)
{
	for (holder *h = c->holders[name_hash(name)]; h; h = h->next)
		if (strcmp(h->name, name) == 0)
			return h;
	return NULL;
}

static holder *holder_by_ref(struct task_cache *c, int64_t ref)
{
	return ref > 0 && (size_t)ref < c->nrefs ? c->by_ref[ref] : NULL;
}

static int holder_add(struct task_cache *c, int64_t ref, const char *name)
{
	size_t len = strlen(name);
	holder *h;

	if (ref <= 0)
		return CM_EIO;
	if ((size_t)ref >= c->nrefs) {
		size_t cap = (size_t)ref * 2 + 16;
		holder **p = realloc(c->by_ref, cap * sizeof(*p));
		if (!p)
			return CM_ENOMEM;
		memset(p + c->nrefs, 0, (cap - c->nrefs) * sizeof(*p));
		c->by_ref = p;
		c->nrefs = cap;
	}
	if (!(h = calloc(1, sizeof(*h) + len + 1)))
		return CM_ENOMEM;
	h->ref = ref;
	memcpy(h->name, name, len + 1);
	h->next = c->holders[name_hash(name)];
	c->holders[name_hash(name)] = h;
	c->by_ref[ref] = h;
	return CM_OK;
}

static void holders_clear(struct task_cache *c)
{
	for (size_t b = 0; b < HOLDER_BUCKETS; b++) {
		while (c->holders[b]) {
			holder *h = c->holders[b];
			c->holders[b] = h->next;
			free(h);
		}
	}
	free(c->by_ref);
	c->by_ref = NULL;
	c->nrefs = 0;
	c->holders_loaded = 0;
}

/* Every holder, and its count of PENDING tasks from the chunks that have
 * any. Called before a transaction changes anything in memory, so the
 * database (this connection's view) is the truth. */
static int holders_ready(store *st)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s;
	int rc;
	int err = CM_OK;

	if (c->holders_loaded)
		return CM_OK;
	if (store__prepare(st, "SELECT ref, name FROM holders", &s) != CM_OK)
		return CM_EIO;
	while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW)
		err = holder_add(c, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1));
	sqlite3_finalize(s);
	if (err == CM_OK && rc != SQLITE_DONE)
		err = store__fail(st, rc);
	trec *t = err == CM_OK ? malloc(CHUNK_TASKS * sizeof(*t)) : NULL;
	if (err == CM_OK && !t)
		err = CM_ENOMEM;
	if (err == CM_OK && store__prepare(st, "SELECT n, tasks FROM chunk_state WHERE pending > 0", &s) != CM_OK)
		err = CM_EIO;
	else if (err == CM_OK) {
		while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
			int n;
			if ((err = row_records(s, 0, t, &n)) != CM_OK)
				break;
			for (int i = 0; i < n; i++) {
				holder *h = t[i].state == STORE_PENDING ? holder_by_ref(c, t[i].x) : NULL;
				if (h)
					h->pending++;
			}
		}
		sqlite3_finalize(s);
		if (err == CM_OK && rc != SQLITE_DONE)
			err = store__fail(st, rc);
	}
	free(t);
	if (err != CM_OK) {
		holders_clear(c);
		return err;
	}
	c->holders_loaded = 1;
	return CM_OK;
}

/* The holder named name, made (and stored) if there is none. */
static int holder_get(store *st, const char *name, holder **out)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s = c->s[S_HOLDER_INSERT];
	int rc;

	if ((*out = holder_find(c, name)))
		return CM_OK;
	sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store__fail(st, rc);
	if (holder_add(c, sqlite3_last_insert_rowid(st->db), name) != CM_OK)
		return CM_ENOMEM;
	*out = holder_find(c, name);
	return CM_OK;
}

int store__holder_forget(store *st, const char *name)
{
	struct task_cache *c = st->tasks;
	int err = holders_ready(st);
	holder *h, **at;

	if (err != CM_OK)
		return err;
	for (at = &c->holders[name_hash(name)]; (h = *at) && strcmp(h->name, name) != 0; at = &h->next)
		;
	/* One that holds a task keeps its ref: its records name it. */
	if (!h || h->pending > 0)
		return CM_OK;
	if ((err = store__exec_ints(st, "DELETE FROM holders WHERE ref = ?1", h->ref, 0)) != CM_OK)
		return err;
	*at = h->next;
	c->by_ref[h->ref] = NULL;
	free(h);
	return CM_OK;
}

/* ---- the chunk cache ---------------------------------------------------- */

/* Index of the first cached chunk with id > task (binary search). */
static size_t cache_upper(const struct task_cache *c, int64_t task)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->chunks[mid]->id <= task)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cache_insert(struct task_cache *c, chunk *k)
{
	size_t at = cache_upper(c, k->id);

	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		chunk **p = realloc(c->chunks, cap * sizeof(*p));
		if (!p)
			return CM_ENOMEM;
		c->chunks = p;
		c->cap = cap;
	}
	memmove(c->chunks + at + 1, c->chunks + at, (c->n - at) * sizeof(*c->chunks));
	c->chunks[at] = k;
	c->n++;
	return CM_OK;
}

static void cache_clear(struct task_cache *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->chunks[i]);
	c->n = 0;
	c->last = NULL;
}

/* A chunk_state row (columns id, job, n, queued, pending, done, failed,
 * tasks from col) as a chunk. */
static int chunk_from_row(sqlite3_stmt *s, chunk **out)
{
	int n = sqlite3_column_int(s, 2);
	chunk *k;

	if (n <= 0 || n > CHUNK_TASKS)
		return CM_EIO;
	if (!(k = malloc(sizeof(*k) + (size_t)n * sizeof(trec))))
		return CM_ENOMEM;
	*k = (chunk){.id = sqlite3_column_int64(s, 0),
	             .job = sqlite3_column_int64(s, 1),
	             .n = n,
	             .queued = sqlite3_column_int64(s, 3),
	             .pending = sqlite3_column_int64(s, 4),
	             .done = sqlite3_column_int64(s, 5),
	             .failed = sqlite3_column_int64(s, 6)};
	if (task_records_decode(k->t, n, sqlite3_column_blob(s, 7), (size_t)sqlite3_column_bytes(s, 7)) != CM_OK) {
		free(k);
		return CM_EIO;
	}
	*out = k;
	return CM_OK;
}

/* The chunk that holds task id, from memory or the database; *out NULL
 * when there is none. */
static int chunk_get(store *st, int64_t id, chunk **out)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s = c->s[S_CHUNK_AT];
	chunk *k = c->last;
	int rc, err = CM_OK;

	*out = NULL;
	if (!k || id < k->id || id >= k->id + k->n) {
		size_t at = cache_upper(c, id);
		k = at ? c->chunks[at - 1] : NULL;
	}
	if (k && id >= k->id && id < k->id + k->n) {
		k->used = c->epoch;
		*out = c->last = k;
		return CM_OK;
	}
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && id < sqlite3_column_int64(s, 0) + sqlite3_column_int64(s, 2)) {
		if ((err = chunk_from_row(s, &k)) == CM_OK && (err = cache_insert(c, k)) != CM_OK)
			free(k);
		if (err == CM_OK) {
			k->used = c->epoch;
			*out = c->last = k;
		}
	} else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		err = store__fail(st, rc);
	}
	sqlite3_reset(s);
	if (err == CM_EIO && !st->tx_failed)
		store__fail(st, SQLITE_CORRUPT);
	return err;
}

/* The chunk that holds task id or, if none does, the first that starts
 * after it and by hi (a range may span removed ids); *out NULL if none. */
static int chunk_from(store *st, int64_t id, int64_t hi, chunk **out)
{
	sqlite3_stmt *s;
	int64_t first = 0;
	int rc, err = chunk_get(st, id, out);

	if (err != CM_OK || *out || id >= hi)
		return err;
	if (store__prepare(st, "SELECT min(id) FROM chunk_state WHERE id > ?1 AND id <= ?2", &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, hi);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		first = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (rc != SQLITE_ROW)
		return store__fail(st, rc);
	return first ? chunk_get(st, first, out) : CM_OK;
}

/* Chunk ids in memory or in the database that have PENDING tasks, sorted. */
static int pending_chunks(store *st, int64_t **ids, size_t *n)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s;
	size_t cap = c->n + 64, m = 0;
	int64_t *v = malloc(cap * sizeof(*v));
	int rc;

	if (!v)
		return CM_ENOMEM;
	for (size_t i = 0; i < c->n; i++)
		if (c->chunks[i]->pending > 0)
			v[m++] = c->chunks[i]->id;
	if (store__prepare(st, "SELECT id FROM chunk_state WHERE pending > 0 ORDER BY id", &s) != CM_OK) {
		free(v);
		return CM_EIO;
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (m == cap) {
			int64_t *p = realloc(v, (cap *= 2) * sizeof(*v));
			if (!p) {
				rc = SQLITE_NOMEM;
				break;
			}
			v = p;
		}
		v[m++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		free(v);
		return store__fail(st, rc);
	}
	/* Both lists are sorted: merge them into one without repeats. */
	size_t ncached = 0;
	for (size_t i = 0; i < c->n; i++)
		ncached += c->chunks[i]->pending > 0;
	int64_t *out = malloc((m ? m : 1) * sizeof(*out));
	size_t a = 0, b = ncached, o = 0;
	if (!out) {
		free(v);
		return CM_ENOMEM;
	}
	while (a < ncached || b < m) {
		int64_t next = b >= m || (a < ncached && v[a] <= v[b]) ? v[a] : v[b];
		while (a < ncached && v[a] == next)
			a++;
		while (b < m && v[b] == next)
			b++;
		out[o++] = next;
	}
	free(v);
	*ids = out;
	*n = o;
	return CM_OK;
}

/* ---- changing a task ---------------------------------------------------- */

static void touch(struct task_cache *c, chunk *k)
{
	k->dirty = 1;
	k->used = c->epoch;
}

/* Out of PENDING (into QUEUED or DONE): its holder's count goes down. */
static void leave_pending(struct task_cache *c, chunk *k, trec *r)
{
	holder *h = holder_by_ref(c, r->x);
	if (h && h->pending > 0)
		h->pending--;
	k->pending--;
}

static void set_queued(struct task_cache *c, chunk *k, trec *r)
{
	if (r->state == STORE_PENDING)
		leave_pending(c, k, r);
	else if (r->state == STORE_QUEUED)
		return;
	r->state = STORE_QUEUED;
	r->x = 0;
	k->queued++;
	touch(c, k);
}

/* The open group of job that seq follows on, or a new one. */
static int group_for(struct task_cache *c, int64_t job, int64_t seq, size_t len, group **out)
{
	group *g;

	for (g = c->groups; g; g = g->next)
		if (g->job == job && g->seq + g->n == seq && g->n < GROUP_RESULTS && g->data.len + len <= GROUP_BYTES)
			break;
	if (!g) {
		uint8_t zero[4] = {0};
		if (!(g = calloc(1, sizeof(*g))))
			return CM_ENOMEM;
		g->job = job;
		g->seq = seq;
		cm_buf_init(&g->offsets);
		cm_buf_init(&g->data);
		if (cm_buf_append(&g->offsets, zero, 4) != CM_OK) {
			free(g);
			return CM_ENOMEM;
		}
		g->next = c->groups;
		c->groups = g;
	}
	*out = g;
	return CM_OK;
}

/* Appends task id's result to its job's group for seq. */
static int group_add(struct task_cache *c, int64_t job, int64_t seq, int64_t id, int ok, const void *value, size_t len)
{
	uint8_t head[ENTRY_HEAD], off[4];
	group *g;

	if (len > UINT32_MAX - ENTRY_HEAD || group_for(c, job, seq, len + ENTRY_HEAD, &g) != CM_OK)
		return CM_ENOMEM;
	cm_le64_put(head, (uint64_t)id);
	head[8] = ok ? 1 : 0;
	if (g->data.len + ENTRY_HEAD + len > UINT32_MAX || cm_buf_reserve(&g->data, ENTRY_HEAD + len) != CM_OK ||
	    cm_buf_reserve(&g->offsets, 4) != CM_OK)
		return CM_ENOMEM;
	cm_buf_append(&g->data, head, ENTRY_HEAD);
	if (len)
		cm_buf_append(&g->data, value, len);
	cm_le32_put(off, (uint32_t)g->data.len);
	cm_buf_append(&g->offsets, off, 4);
	g->n++;
	return CM_OK;
}

/* Records task r (of chunk k) DONE with seq and its result in its job's
 * group. Memory first: a failure leaves the task as it was. */
static int set_done(struct task_cache *c, chunk *k, trec *r, int64_t seq, int ok, const void *value, size_t len)
{
	if (group_add(c, k->job, seq, k->id + (r - k->t), ok, value, len) != CM_OK)
		return CM_ENOMEM;
	if (r->state == STORE_PENDING)
		leave_pending(c, k, r);
	else
		k->queued--;
	r->state = STORE_DONE;
	r->ok = ok ? 1 : 0;
	r->x = seq;
	k->done++;
	k->failed += !ok;
	touch(c, k);
	return CM_OK;
}

/* ---- the writer's cache: open, flush, forget ---------------------------- */

int store__tasks_open(store *st)
{
	struct task_cache *c;

	if (st->tasks)
		return CM_OK;
	if (!(c = calloc(1, sizeof(*c))))
		return CM_ENOMEM;
	cm_buf_init(&c->scratch);
	st->tasks = c;
	for (int i = 0; i < S_COUNT; i++)
		if (store__prepare(st, stmt_sql[i], &c->s[i]) != CM_OK)
			return CM_EIO;
	return CM_OK;
}

/* Takes the first group off c's list and frees it. */
static void group_pop(struct task_cache *c)
{
	group *g = c->groups;

	c->groups = g->next;
	cm_buf_fini(&g->offsets);
	cm_buf_fini(&g->data);
	free(g);
}

static void groups_clear(struct task_cache *c)
{
	while (c->groups)
		group_pop(c);
}

void store__tasks_close(store *st)
{
	struct task_cache *c = st->tasks;

	if (!c)
		return;
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(c->s[i]);
	cache_clear(c);
	free(c->chunks);
	holders_clear(c);
	groups_clear(c);
	cm_buf_fini(&c->scratch);
	free(c);
	st->tasks = NULL;
}

void store__tasks_forget(store *st)
{
	struct task_cache *c = st->tasks;

	if (!c)
		return;
	cache_clear(c);
	holders_clear(c);
	groups_clear(c);
}

static int flush_chunk(store *st, chunk *k)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s = c->s[S_STATE_UPDATE];
	int rc;

	if (task_records_encode(k->t, k->n, &c->scratch) != CM_OK)
		return CM_ENOMEM;
	sqlite3_bind_int64(s, 1, k->queued);
	sqlite3_bind_int64(s, 2, k->pending);
	sqlite3_bind_int64(s, 3, k->done);
	sqlite3_bind_int64(s, 4, k->failed);
	sqlite3_bind_blob(s, 5, c->scratch.data, (int)c->scratch.len, SQLITE_STATIC);
	sqlite3_bind_int64(s, 6, k->id);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc == SQLITE_DONE && k->done == k->n && k->failed == 0) { /* see the top */
		s = c->s[S_CHUNK_DROP];
		sqlite3_bind_int64(s, 1, k->id);
		rc = sqlite3_step(s);
		sqlite3_reset(s);
	}
	if (rc != SQLITE_DONE)
		return store__fail(st, rc);
	k->dirty = 0;
	return CM_OK;
}

static int flush_group(store *st, group *g)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s = c->s[S_GROUP_INSERT];
	size_t len = g->offsets.len + g->data.len;
	int rc;

	if (len > INT32_MAX)
		return store__fail(st, SQLITE_TOOBIG);
	c->scratch.len = 0;
	if (cm_buf_append(&c->scratch, g->offsets.data, g->offsets.len) != CM_OK ||
	    cm_buf_append(&c->scratch, g->data.data, g->data.len) != CM_OK)
		return CM_ENOMEM;
	sqlite3_bind_int64(s, 1, g->job);
	sqlite3_bind_int64(s, 2, g->seq);
	sqlite3_bind_int64(s, 3, g->n);
	sqlite3_bind_blob(s, 4, c->scratch.data, (int)len, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store__tasks_flush(store *st)
{
	struct task_cache *c = st->tasks;
	int err = CM_OK;

	if (!c)
		return CM_OK;
	for (size_t i = 0; i < c->n && err == CM_OK; i++)
		if (c->chunks[i]->dirty)
			err = flush_chunk(st, c->chunks[i]);
	for (group *g = c->groups; g && err == CM_OK; g = g->next)
		if (g->n) /* none when the memory for its first entry was refused */
			err = flush_group(st, g);
	if (err != CM_OK)
		return err;
	groups_clear(c);
	/* Keep what this transaction used (the next one likely goes on with
	 * it) when there is much; every chunk is clean now. */
	if (c->n > CACHE_KEEP) {
		size_t kept = 0;
		for (size_t i = 0; i < c->n; i++) {
			if (c->chunks[i]->used == c->epoch)
				c->chunks[kept++] = c->chunks[i];
			else
				free(c->chunks[i]);
		}
		c->n = kept;
		c->last = NULL;
	}
	c->epoch++;
	if (c->scratch.cap > CHUNK_ARG_BYTES)
		cm_buf_fini(&c->scratch); /* a large group's: not kept */
	return CM_OK;
}

/* Outside a transaction (store_begin), each call is one of its own: what
 * it changed in memory is written at once. */
static int settle(store *st, int err)
{
	if (st->in_tx)
		return err;
	if (err == CM_OK && store__exec(st, "BEGIN IMMEDIATE") == CM_OK) {
		if ((err = store__tasks_flush(st)) == CM_OK)
			err = store__exec(st, "COMMIT");
		if (err != CM_OK)
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	} else if (err == CM_OK) {
		err = CM_EIO;
	}
	if (err != CM_OK && err != STORE_TASK_LEAVE)
		store__tasks_forget(st);
	return err;
}

/* ---- tasks -------------------------------------------------------------- */

static int insert_chunk(store *st, int64_t job, int64_t id, size_t n, const char *text, const size_t *offs)
{
	struct task_cache *c = st->tasks;
	size_t head = (n + 1) * 4, bytes = offs[n] - offs[0];
	sqlite3_stmt *s;
	int rc;

	if (head + bytes > INT32_MAX)
		return CM_ETOOBIG;
	c->scratch.len = 0;
	if (cm_buf_reserve(&c->scratch, head + bytes) != CM_OK)
		return CM_ENOMEM;
	/* The blob: n + 1 offsets from its first argument, then the texts as
	 * they lie in text. */
	uint8_t *p = (uint8_t *)c->scratch.data;
	for (size_t i = 0; i <= n; i++)
		cm_le32_put(p + i * 4, (uint32_t)(offs[i] - offs[0]));
	if (bytes)
		memcpy(p + head, text + offs[0], bytes);
	s = c->s[S_CHUNK_INSERT];
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, (int64_t)n);
	sqlite3_bind_blob(s, 3, p, (int)(head + bytes), SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store__fail(st, rc);
	s = c->s[S_STATE_INSERT];
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_int64(s, 2, job);
	sqlite3_bind_int64(s, 3, (int64_t)n);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_tasks_insert(store *st, int64_t job, int64_t base, size_t n, const char *text, const size_t *offs)
{
	size_t i = 0;
	int err = CM_OK;

	while (i < n && err == CM_OK) {
		size_t k = 1;
		while (i + k < n && k < CHUNK_TASKS && offs[i + k + 1] - offs[i] <= CHUNK_ARG_BYTES)
			k++;
		err = insert_chunk(st, job, base + (int64_t)i, k, text, offs + i);
		i += k;
	}
	return err;
}

/* Arguments k0..k1 of chunk k, read from its args blob: *offs gets the
 * k1 - k0 + 2 offsets (relative to *bytes). Both in c->scratch. */
static int read_args(store *st, const chunk *k, int k0, int k1, const uint8_t **offs, const uint8_t **bytes)
{
	struct task_cache *c = st->tasks;
	sqlite3_blob *b = NULL;
	size_t head = ((size_t)k->n + 1) * 4, noffs = (size_t)(k1 - k0 + 2) * 4;
	int rc = sqlite3_blob_open(st->db, "main", "chunks", "args", k->id, 0, &b);

	if (rc != SQLITE_OK) {
		sqlite3_blob_close(b);
		return store__fail(st, rc);
	}
	c->scratch.len = 0;
	if (cm_buf_reserve(&c->scratch, noffs) != CM_OK) {
		sqlite3_blob_close(b);
		return CM_ENOMEM;
	}
	rc = (size_t)sqlite3_blob_bytes(b) < head ? SQLITE_CORRUPT
	                                          : sqlite3_blob_read(b, c->scratch.data, (int)noffs, k0 * 4);
	uint32_t lo = rc == SQLITE_OK ? cm_le32_get((uint8_t *)c->scratch.data) : 0;
	uint32_t hi = rc == SQLITE_OK ? cm_le32_get((uint8_t *)c->scratch.data + noffs - 4) : 0;
	if (rc == SQLITE_OK && (lo > hi || head + hi > (size_t)sqlite3_blob_bytes(b)))
		rc = SQLITE_CORRUPT;
	if (rc == SQLITE_OK && cm_buf_reserve(&c->scratch, noffs + (hi - lo)) != CM_OK)
		rc = SQLITE_NOMEM;
	if (rc == SQLITE_OK && hi > lo)
		rc = sqlite3_blob_read(b, c->scratch.data + noffs, (int)(hi - lo), (int)(head + lo));
	sqlite3_blob_close(b);
	if (rc != SQLITE_OK)
		return store__fail(st, rc);
	*offs = (const uint8_t *)c->scratch.data;
	*bytes = (const uint8_t *)c->scratch.data + noffs;
	return CM_OK;
}

static int do_tasks_assign(store *st, int64_t lo, int64_t hi, const char *worker, store_task_fn fn, void *ctx,
                           int64_t *next)
{
	struct task_cache *c = st->tasks;
	holder *h;
	int err = CM_OK;
	int64_t t = lo;

	*next = hi + 1;
	if ((err = holders_ready(st)) != CM_OK || (err = holder_get(st, worker, &h)) != CM_OK)
		return err;
	/* Read first, mark after: what fn leaves stays queued untouched. */
	while (t <= hi && err == CM_OK) {
		chunk *k;
		const uint8_t *offs = NULL, *bytes = NULL;
		if ((err = chunk_from(st, t, hi, &k)) != CM_OK || !k)
			break;
		if (t < k->id)
			t = k->id;
		int k0 = (int)(t - k->id), k1 = (int)((hi < k->id + k->n - 1 ? hi : k->id + k->n - 1) - k->id);
		if ((err = read_args(st, k, k0, k1, &offs, &bytes)) != CM_OK)
			break;
		uint32_t base = cm_le32_get(offs);
		for (int i = k0; i <= k1 && err == CM_OK; i++) {
			const trec *r = &k->t[i];
			uint32_t a = cm_le32_get(offs + (size_t)(i - k0) * 4) - base;
			uint32_t b = cm_le32_get(offs + (size_t)(i - k0 + 1) * 4) - base;
			if (r->state != STORE_QUEUED)
				continue;
			err = fn(ctx, k->id + i, bytes + a, b - a, r->attempts + 1);
			if (err == STORE_TASK_LEAVE)
				*next = k->id + i;
		}
		t = k->id + k->n;
	}
	if (err != CM_OK && err != STORE_TASK_LEAVE)
		return err;
	for (t = lo; t < *next;) {
		chunk *k;
		if ((err = chunk_from(st, t, *next - 1, &k)) != CM_OK || !k)
			break;
		if (t < k->id)
			t = k->id;
		int64_t end = *next - 1 < k->id + k->n - 1 ? *next - 1 : k->id + k->n - 1;
		for (int64_t id = t; id <= end; id++) {
			trec *r = &k->t[id - k->id];
			if (r->state != STORE_QUEUED)
				continue;
			r->state = STORE_PENDING;
			r->x = h->ref;
			if (r->attempts < UINT16_MAX)
				r->attempts++;
			k->queued--;
			k->pending++;
			h->pending++;
			touch(c, k);
		}
		t = k->id + k->n;
	}
	return err == STORE_TASK_LEAVE ? CM_OK : err;
}

static int do_task_complete(store *st, int64_t id, int64_t seq, int ok, const void *value, size_t len, int64_t from,
                            int *recorded)
{
	struct task_cache *c = st->tasks;
	chunk *k;
	int err;

	*recorded = 0;
	if ((err = holders_ready(st)) != CM_OK || (err = chunk_get(st, id, &k)) != CM_OK || !k)
		return err;
	trec *r = &k->t[id - k->id];
	if (r->state == STORE_DONE)
		return CM_OK;
	if (from != STORE_FROM_GATEWAY && (r->state != STORE_PENDING || r->x != from))
		return CM_OK; /* from a worker that does not hold it (refs are > 0) */
	if ((err = set_done(c, k, r, seq, ok, value, len)) != CM_OK)
		return err;
	*recorded = 1;
	return CM_OK;
}

int store_tasks_held_count(store *st, const char *worker, int64_t *n)
{
	int err = holders_ready(st);
	holder *h = err == CM_OK ? holder_find(st->tasks, worker) : NULL;

	*n = h ? h->pending : 0;
	return err;
}

/* Calls visit for each PENDING task, in id order, that pick says to take
 * (pick(ctx, holder ref)), after setting it QUEUED; what visit gets:
 * its id and attempts as they were. */
typedef int (*pick_fn)(void *ctx, int64_t id, const trec *r);
static int requeue_where(store *st, pick_fn pick, void *pick_ctx, int attempt_back, store_task_fn fn, void *ctx)
{
	struct task_cache *c = st->tasks;
	int64_t *ids = NULL;
	size_t n = 0;
	int err;

	if ((err = holders_ready(st)) != CM_OK || (err = pending_chunks(st, &ids, &n)) != CM_OK)
		return err;
	for (size_t i = 0; i < n && err == CM_OK; i++) {
		chunk *k;
		if ((err = chunk_get(st, ids[i], &k)) != CM_OK || !k)
			continue;
		for (int j = 0; j < k->n && err == CM_OK; j++) {
			trec *r = &k->t[j];
			if (r->state != STORE_PENDING || !pick(pick_ctx, k->id + j, r))
				continue;
			set_queued(c, k, r);
			if (attempt_back && r->attempts > 0)
				r->attempts--;
			if (fn)
				err = fn(ctx, k->id + j, NULL, 0, r->attempts);
		}
	}
	free(ids);
	return err;
}

static int pick_ref(void *ctx, int64_t id, const trec *r)
{
	(void)id;
	return r->x == *(const int64_t *)ctx;
}

static int do_tasks_requeue(store *st, const char *worker, store_task_fn fn, void *ctx)
{
	int err = holders_ready(st);
	holder *h = err == CM_OK ? holder_find(st->tasks, worker) : NULL;

	if (err != CM_OK || !h || h->pending == 0)
		return err;
	return requeue_where(st, pick_ref, &h->ref, 0, fn, ctx);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

typedef struct release_pick {
	int64_t ref;
	const uint64_t *held;
	size_t nheld;
} release_pick;

static int pick_not_held(void *ctx, int64_t id, const trec *r)
{
	const release_pick *p = ctx;
	uint64_t key = (uint64_t)id;

	return r->x == p->ref && !(p->nheld && bsearch(&key, p->held, p->nheld, sizeof(key), cmp_u64));
}

static int do_tasks_release(store *st, const char *worker, const uint64_t *held_in, size_t nheld, store_task_fn fn,
                            void *ctx)
{
	int err = holders_ready(st);
	holder *h = err == CM_OK ? holder_find(st->tasks, worker) : NULL;
	uint64_t *held;

	if (err != CM_OK || !h || h->pending == 0)
		return err;
	if (!(held = malloc((nheld ? nheld : 1) * sizeof(*held))))
		return CM_ENOMEM;
	if (nheld) { /* sorted, to look each up */
		memcpy(held, held_in, nheld * sizeof(*held));
		qsort(held, nheld, sizeof(*held), cmp_u64);
	}
	release_pick p = {.ref = h->ref, .held = held, .nheld = nheld};
	err = requeue_where(st, pick_not_held, &p, 1, fn, ctx);
	free(held);
	return err;
}

static int do_task_requeue_one(store *st, int64_t id)
{
	chunk *k;
	int err;

	if ((err = holders_ready(st)) != CM_OK || (err = chunk_get(st, id, &k)) != CM_OK || !k)
		return err;
	if (k->t[id - k->id].state == STORE_PENDING)
		set_queued(st->tasks, k, &k->t[id - k->id]);
	return CM_OK;
}

static int pick_orphan(void *ctx, int64_t id, const trec *r)
{
	holder *h = holder_by_ref(ctx, r->x);
	(void)id;
	return !h || !h->live;
}

static int do_tasks_requeue_orphans(store *st)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s;
	int rc, err;

	if ((err = holders_ready(st)) != CM_OK)
		return err;
	if (store__prepare(st, "SELECT id FROM workers WHERE state IN ('starting', 'connected')", &s) != CM_OK)
		return CM_EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		holder *h = holder_find(c, (const char *)sqlite3_column_text(s, 0));
		if (h)
			h->live = 1;
	}
	sqlite3_finalize(s);
	err = rc == SQLITE_DONE ? requeue_where(st, pick_orphan, c, 0, NULL, NULL) : store__fail(st, rc);
	for (size_t i = 0; i < c->nrefs; i++)
		if (c->by_ref[i])
			c->by_ref[i]->live = 0;
	return err;
}

static int do_job_cancel(store *st, int64_t lo, int64_t hi, int64_t seq_from, const char *message, int64_t *count)
{
	struct task_cache *c = st->tasks;
	size_t len = strlen(message);
	int64_t t = lo;
	int err;

	*count = 0;
	if ((err = holders_ready(st)) != CM_OK)
		return err;
	/* In id order; seqs dense from seq_from, so seq stays the job's
	 * completion count that results are recorded by. */
	while (t <= hi && err == CM_OK) {
		chunk *k;
		if ((err = chunk_from(st, t, hi, &k)) != CM_OK || !k)
			break;
		if (t < k->id)
			t = k->id;
		int64_t end = hi < k->id + k->n - 1 ? hi : k->id + k->n - 1;
		for (int64_t id = t; id <= end && err == CM_OK; id++) {
			trec *r = &k->t[id - k->id];
			if (r->state != STORE_DONE &&
			    (err = set_done(c, k, r, seq_from + *count, 0, message, len)) == CM_OK)
				(*count)++;
		}
		t = k->id + k->n;
	}
	return err;
}

/* The changes, each settled (written at once) outside a transaction. */
int store_tasks_assign(store *st, int64_t lo, int64_t hi, const char *worker, store_task_fn fn, void *ctx,
                       int64_t *next)
{
	return settle(st, do_tasks_assign(st, lo, hi, worker, fn, ctx, next));
}

int store_holder_ref(store *st, const char *worker, int64_t *from)
{
	int err = holders_ready(st);
	holder *h = err == CM_OK ? holder_find(st->tasks, worker) : NULL;

	*from = h ? h->ref : STORE_FROM_NOBODY;
	return err;
}

int store_task_complete_from(store *st, int64_t id, int64_t seq, int ok, const void *value, size_t len, int64_t from,
                             int *recorded)
{
	int err = settle(st, do_task_complete(st, id, seq, ok, value, len, from, recorded));
	if (err != CM_OK)
		*recorded = 0;
	return err;
}

int store_tasks_requeue(store *st, const char *worker, store_task_fn fn, void *ctx)
{
	return settle(st, do_tasks_requeue(st, worker, fn, ctx));
}

int store_tasks_release(store *st, const char *worker, const uint64_t *held, size_t nheld, store_task_fn fn, void *ctx)
{
	return settle(st, do_tasks_release(st, worker, held, nheld, fn, ctx));
}

int store_task_requeue_one(store *st, int64_t id)
{
	return settle(st, do_task_requeue_one(st, id));
}

int store_tasks_requeue_orphans(store *st)
{
	return settle(st, do_tasks_requeue_orphans(st));
}

int store_job_cancel(store *st, int64_t lo, int64_t hi, int64_t seq_from, const char *message, int64_t *count)
{
	return settle(st, do_job_cancel(st, lo, hi, seq_from, message, count));
}

int store_tasks_delete(store *st, int64_t lo, int64_t hi)
{
	struct task_cache *c = st->tasks;
	size_t kept = 0;

	for (size_t i = 0; i < c->n; i++) {
		chunk *k = c->chunks[i];
		if (k->id < lo || k->id > hi) {
			c->chunks[kept++] = k;
			continue;
		}
		for (int j = 0; j < k->n; j++)
			if (k->t[j].state == STORE_PENDING)
				leave_pending(c, k, &k->t[j]);
		free(k);
	}
	c->n = kept;
	c->last = NULL;
	/* A chunk starts in one slice [lo, hi] of its job's ids: deleted with
	 * that slice, whatever its length. */
	if (store__exec_ints(st, "DELETE FROM chunks WHERE id BETWEEN ?1 AND ?2", lo, hi) != CM_OK ||
	    store__exec_ints(st,
	                     "DELETE FROM failure_notes WHERE task BETWEEN ?1 AND"
	                     " (SELECT COALESCE(MAX(id + n - 1), ?2) FROM chunk_state WHERE id BETWEEN ?1 AND ?2)",
	                     lo, hi) != CM_OK)
		return CM_EIO;
	return store__exec_ints(st, "DELETE FROM chunk_state WHERE id BETWEEN ?1 AND ?2", lo, hi);
}

int store_failure_note(store *st, int64_t id, const char *worker, int64_t run_us)
{
	sqlite3_stmt *s;

	if (store__kept(st, KEPT_FAILURE_NOTE, "INSERT OR REPLACE INTO failure_notes VALUES(?1, ?2, ?3)", &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, id);
	sqlite3_bind_text(s, 2, worker, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, run_us);
	return store__kept_done(st, s);
}

int store_tasks_queued_each(store *st, int64_t job, store_task_fn fn, void *ctx)
{
	struct task_cache *c = st->tasks;
	sqlite3_stmt *s;
	trec *recs = malloc(CHUNK_TASKS * sizeof(*recs));
	int rc = SQLITE_DONE, err = CM_OK;

	if (!recs)
		return CM_ENOMEM;
	if (store__prepare(st,
	                   "SELECT id, job, n, queued, pending, done, failed, tasks FROM chunk_state"
	                   " WHERE job = ? AND queued > 0 ORDER BY id",
	                   &s) != CM_OK) {
		free(recs);
		return CM_EIO;
	}
	sqlite3_bind_int64(s, 1, job);
	while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		int n = sqlite3_column_int(s, 2);
		size_t at = cache_upper(c, id);
		const trec *t = recs;
		if (at && c->chunks[at - 1]->id == id) { /* memory is newer */
			t = c->chunks[at - 1]->t;
		} else if (n <= 0 || n > CHUNK_TASKS ||
		           task_records_decode(recs, n, sqlite3_column_blob(s, 7),
		                               (size_t)sqlite3_column_bytes(s, 7)) != CM_OK) {
			err = store__fail(st, SQLITE_CORRUPT);
			break;
		}
		for (int i = 0; i < n && err == CM_OK; i++)
			if (t[i].state == STORE_QUEUED)
				err = fn(ctx, id + i, NULL, 0, t[i].attempts);
	}
	sqlite3_finalize(s);
	free(recs);
	if (err == CM_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
		err = store__fail(st, rc);
	return err;
}

/* ---- results (any connection: committed rows only) ---------------------- */

/* A reader's position in a job's groups: the group row it has open. */
typedef struct group_cursor {
	sqlite3_stmt *find; /* the group holding a seq */
	int open;
	int64_t seq;
	uint32_t n;
	const uint8_t *data;
	size_t len;
} group_cursor;

/* Moves gc to the group of job that holds seq; CM_ENOENT if none. */
static int group_seek(store *st, group_cursor *gc, int64_t job, int64_t seq)
{
	int rc;

	if (gc->open && seq >= gc->seq && seq < gc->seq + gc->n)
		return CM_OK;
	sqlite3_reset(gc->find);
	gc->open = 0;
	sqlite3_bind_int64(gc->find, 1, job);
	sqlite3_bind_int64(gc->find, 2, seq);
	rc = sqlite3_step(gc->find);
	if (rc == SQLITE_DONE)
		return CM_ENOENT;
	if (rc != SQLITE_ROW)
		return store__fail(st, rc);
	gc->seq = sqlite3_column_int64(gc->find, 0);
	gc->n = (uint32_t)sqlite3_column_int64(gc->find, 1);
	gc->data = sqlite3_column_blob(gc->find, 2);
	gc->len = (size_t)sqlite3_column_bytes(gc->find, 2);
	if (seq >= gc->seq + gc->n)
		return CM_ENOENT;
	gc->open = 1;
	return CM_OK;
}

static int group_cursor_open(store *st, group_cursor *gc)
{
	*gc = (group_cursor){0};
	return store__prepare(st,
	                      "SELECT seq, n, data FROM results WHERE job = ?1 AND seq <= ?2"
	                      " ORDER BY seq DESC LIMIT 1",
	                      &gc->find);
}

/* The result with seq, through gc, into r (index from base). */
static int result_at(store *st, group_cursor *gc, int64_t job, int64_t base, int64_t seq, store_result *r)
{
	int64_t id;
	int ok, err = group_seek(st, gc, job, seq);

	if (err != CM_OK)
		return err;
	if (group_entry(gc->data, gc->len, gc->n, (uint32_t)(seq - gc->seq), &id, &ok, (const void **)&r->value,
	                &r->len) != CM_OK)
		return CM_EIO;
	r->index = id - base;
	r->seq = seq;
	r->ok = ok;
	return CM_OK;
}

int store_results_input(store *st, int64_t job, int64_t base, int64_t total, int64_t cursor, int64_t limit,
                        store_result_fn fn, void *ctx, int64_t *next)
{
	sqlite3_stmt *s;
	group_cursor gc;
	int64_t pos = cursor, end = cursor + limit < total ? cursor + limit : total;
	int rc, err = CM_OK;
	trec *recs;

	*next = cursor;
	if (!(recs = malloc(CHUNK_TASKS * sizeof(*recs))))
		return CM_ENOMEM;
	if (store__prepare(st, "SELECT id, n, tasks FROM chunk_state WHERE id <= ?1 ORDER BY id DESC LIMIT 1", &s) !=
	    CM_OK) {
		free(recs);
		return CM_EIO;
	}
	if (group_cursor_open(st, &gc) != CM_OK) {
		sqlite3_finalize(s);
		free(recs);
		return CM_EIO;
	}
	/* imap: up to the first index that has no result yet. */
	while (pos < end && err == CM_OK) {
		sqlite3_bind_int64(s, 1, base + pos);
		rc = sqlite3_step(s);
		if (rc != SQLITE_ROW) {
			err = rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
			break;
		}
		int64_t id = sqlite3_column_int64(s, 0);
		int n = sqlite3_column_int(s, 1);
		if (base + pos >= id + n || sqlite3_column_type(s, 2) == SQLITE_NULL) /* no such task, or none done */
			break;
		if ((err = row_records(s, 1, recs, &n)) != CM_OK)
			break;
		int stop = 0;
		for (; pos < end && base + pos < id + n && err == CM_OK; pos++) {
			const trec rec = recs[base + pos - id];
			store_result r;
			if (rec.state != STORE_DONE || (err = result_at(st, &gc, job, base, rec.x, &r)) != CM_OK ||
			    (err = fn(ctx, &r)) != CM_OK) {
				stop = 1;
				break;
			}
		}
		sqlite3_reset(s);
		if (stop)
			break;
	}
	sqlite3_finalize(s);
	sqlite3_finalize(gc.find);
	free(recs);
	*next = pos;
	return err == STORE_PAGE_FULL || err == CM_ENOENT ? CM_OK : err;
}

/* The argument of task i of a chunk of n tasks whose args row is open in
 * blob, into out (as stored: JSON text). */
static int failed_arg(store *st, sqlite3_blob *blob, int n, int i, cm_buf *out)
{
	uint8_t offs[8];
	size_t head = ((size_t)n + 1) * 4, size = (size_t)sqlite3_blob_bytes(blob);
	int rc = size < head ? SQLITE_CORRUPT : sqlite3_blob_read(blob, offs, 8, i * 4);
	uint32_t lo = rc == SQLITE_OK ? cm_le32_get(offs) : 0, hi = rc == SQLITE_OK ? cm_le32_get(offs + 4) : 0;

	if (rc == SQLITE_OK && (lo > hi || head + hi > size))
		rc = SQLITE_CORRUPT;
	out->len = 0;
	if (rc == SQLITE_OK && cm_buf_reserve(out, hi - lo) != CM_OK)
		return CM_ENOMEM;
	if (rc == SQLITE_OK && hi > lo)
		rc = sqlite3_blob_read(blob, out->data, (int)(hi - lo), (int)(head + lo));
	if (rc != SQLITE_OK)
		return store__fail(st, rc);
	out->len = hi - lo;
	return CM_OK;
}

/* Where failed task id ran and for how long, if noted: into f. */
static int failed_note(store *st, sqlite3_stmt *note, int64_t id, store_failure *f)
{
	int rc;

	sqlite3_bind_int64(note, 1, id);
	rc = sqlite3_step(note);
	if (rc == SQLITE_ROW) {
		f->worker = (const char *)sqlite3_column_text(note, 0);
		f->run_us = sqlite3_column_int64(note, 1);
	}
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? CM_OK : store__fail(st, rc);
}

int store_results_failed(store *st, int64_t job, int64_t base, int64_t total, int64_t cursor, int64_t limit,
                         store_failure_fn fn, void *ctx, int64_t *next)
{
	sqlite3_stmt *s, *note = NULL;
	sqlite3_blob *args = NULL;
	group_cursor gc;
	int64_t found = 0, pos;
	int rc = SQLITE_DONE, err = CM_OK;
	trec *recs;
	cm_buf arg;

	*next = cursor;
	if (!(recs = malloc(CHUNK_TASKS * sizeof(*recs))))
		return CM_ENOMEM;
	/* A chunk holding index cursor starts at most CHUNK_TASKS before it. */
	if (store__prepare(st,
	                   "SELECT id, n, tasks FROM chunk_state WHERE job = ?1 AND id > ?2 AND failed > 0"
	                   " ORDER BY id",
	                   &s) != CM_OK) {
		free(recs);
		return CM_EIO;
	}
	if (group_cursor_open(st, &gc) != CM_OK ||
	    store__prepare(st, "SELECT worker, run_us FROM failure_notes WHERE task = ?1", &note) != CM_OK) {
		sqlite3_finalize(s);
		sqlite3_finalize(gc.find);
		free(recs);
		return CM_EIO;
	}
	cm_buf_init(&arg);
	sqlite3_bind_int64(s, 1, job);
	sqlite3_bind_int64(s, 2, base + cursor - CHUNK_TASKS);
	pos = total; /* none left, unless a page ends first */
	while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		int n, opened = 0;
		if (sqlite3_column_type(s, 2) == SQLITE_NULL)
			continue;
		if ((err = row_records(s, 1, recs, &n)) != CM_OK)
			continue;
		for (int i = id < base + cursor ? (int)(base + cursor - id) : 0; i < n && err == CM_OK; i++) {
			const trec rec = recs[i];
			store_result r;
			store_failure f = {.run_us = -1};
			if (rec.state != STORE_DONE || rec.ok)
				continue;
			if (found == limit) {
				pos = id + i - base;
				err = STORE_PAGE_FULL;
				break;
			}
			if ((err = result_at(st, &gc, job, base, rec.x, &r)) != CM_OK)
				break;
			if (!opened) { /* the chunk's arguments: one blob, read in the pieces its failures need */
				int orc = args ? sqlite3_blob_reopen(args, id)
				               : sqlite3_blob_open(st->db, "main", "chunks", "args", id, 0, &args);
				if (orc != SQLITE_OK) {
					err = store__fail(st, orc);
					break;
				}
				opened = 1;
			}
			sqlite3_reset(note);
			if ((err = failed_arg(st, args, n, i, &arg)) != CM_OK ||
			    (err = failed_note(st, note, id + i, &f)) != CM_OK)
				break;
			f.index = r.index;
			f.attempts = rec.attempts;
			f.error = r.value;
			f.len = r.len;
			f.arg = arg.data;
			f.arg_len = arg.len;
			if ((err = fn(ctx, &f)) == CM_OK)
				found++;
			else if (err == STORE_PAGE_FULL)
				pos = id + i - base;
		}
	}
	if (err == CM_OK && rc != SQLITE_DONE)
		err = store__fail(st, rc);
	sqlite3_finalize(s);
	sqlite3_finalize(note);
	sqlite3_finalize(gc.find);
	sqlite3_blob_close(args);
	cm_buf_fini(&arg);
	free(recs);
	if (err == STORE_PAGE_FULL)
		err = CM_OK;
	if (err == CM_OK)
		*next = pos;
	return err;
}

int store_results_completion(store *st, int64_t job, int64_t cursor, int64_t limit, store_result_fn fn, void *ctx,
                             int64_t *next)
{
	group_cursor gc;
	int64_t base = 0, seq = cursor + 1;
	int err = CM_OK;
	sqlite3_stmt *s;

	*next = cursor;
	if (store__prepare(st, "SELECT base FROM jobs WHERE num = ?", &s) != CM_OK)
		return CM_EIO;
	sqlite3_bind_int64(s, 1, job);
	if (sqlite3_step(s) == SQLITE_ROW)
		base = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (group_cursor_open(st, &gc) != CM_OK)
		return CM_EIO;
	for (; seq <= cursor + limit && err == CM_OK; seq++) {
		store_result r;
		if ((err = result_at(st, &gc, job, base, seq, &r)) == CM_OK && (err = fn(ctx, &r)) == CM_OK)
			*next = seq;
	}
	sqlite3_finalize(gc.find);
	return err == STORE_PAGE_FULL || err == CM_ENOENT ? CM_OK : err;
}

/* ---- schema 6: the tasks table into chunks ------------------------------ */

typedef struct convert_chunk {
	int64_t job, id;
	size_t n;
	cm_buf text; /* the arguments, packed as store_tasks_insert takes them */
	size_t *offs;
	trec *recs;
} convert_chunk;

static int convert_flush(store *st, convert_chunk *cc)
{
	int64_t counts[4] = {0}; /* queued, pending, done, failed */
	int err;

	if (!cc->n)
		return CM_OK;
	if ((err = insert_chunk(st, cc->job, cc->id, cc->n, cc->text.data, cc->offs)) != CM_OK)
		return err;
	chunk *k = malloc(sizeof(*k) + cc->n * sizeof(trec));
	if (!k)
		return CM_ENOMEM;
	*k = (chunk){.id = cc->id, .job = cc->job, .n = (int)cc->n};
	memcpy(k->t, cc->recs, cc->n * sizeof(trec));
	for (size_t i = 0; i < cc->n; i++) {
		counts[cc->recs[i].state]++;
		counts[3] += cc->recs[i].state == STORE_DONE && !cc->recs[i].ok;
	}
	k->queued = counts[0];
	k->pending = counts[1];
	k->done = counts[2];
	k->failed = counts[3];
	err = flush_chunk(st, k);
	free(k);
	cc->text.len = 0;
	cc->n = 0;
	return err;
}

int store__tasks_convert(store *st)
{
	struct task_cache *c;
	sqlite3_stmt *s = NULL;
	convert_chunk cc = {0};
	int rc = SQLITE_DONE, err;

	if ((err = store__tasks_open(st)) != CM_OK)
		return err;
	c = st->tasks;
	cm_buf_init(&cc.text);
	cc.offs = calloc(CHUNK_TASKS + 1, sizeof(*cc.offs));
	cc.recs = calloc(CHUNK_TASKS, sizeof(*cc.recs));
	if (!cc.offs || !cc.recs)
		err = CM_ENOMEM;
	/* Arguments and states by chunks of each job's contiguous ids. */
	if (err == CM_OK && store__prepare(st,
	                                   "SELECT id, job, arg, state, attempts, worker, seq, ok FROM tasks"
	                                   " ORDER BY id",
	                                   &s) != CM_OK)
		err = CM_EIO;
	size_t bytes = 0;
	while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0), job = sqlite3_column_int64(s, 1);
		size_t len = (size_t)sqlite3_column_bytes(s, 2);
		if (cc.n && (job != cc.job || id != cc.id + (int64_t)cc.n || cc.n == CHUNK_TASKS ||
		             bytes + len > CHUNK_ARG_BYTES)) {
			if ((err = convert_flush(st, &cc)) != CM_OK)
				break;
		}
		if (!cc.n) {
			cc.job = job;
			cc.id = id;
			bytes = 0;
		}
		trec *r = &cc.recs[cc.n];
		*r = (trec){.state = (uint8_t)sqlite3_column_int(s, 3),
		            .ok = (uint8_t)sqlite3_column_int(s, 7),
		            .attempts = (uint16_t)sqlite3_column_int(s, 4)};
		if (r->state == STORE_DONE) {
			r->x = sqlite3_column_int64(s, 6);
		} else if (r->state == STORE_PENDING) {
			holder *h;
			const char *w = (const char *)sqlite3_column_text(s, 5);
			if ((err = holder_get(st, w ? w : "", &h)) != CM_OK)
				break;
			r->x = h->ref;
		} else {
			r->state = STORE_QUEUED;
		}
		if (len && (err = cm_buf_append(&cc.text, sqlite3_column_blob(s, 2), len)) != CM_OK)
			break;
		cc.offs[++cc.n] = cc.text.len;
		bytes += len;
	}
	if (err == CM_OK && rc != SQLITE_DONE)
		err = store__fail(st, rc);
	if (err == CM_OK)
		err = convert_flush(st, &cc);
	sqlite3_finalize(s);
	s = NULL;
	/* Results by groups, in each job's seq order. */
	if (err == CM_OK && store__prepare(st,
	                                   "SELECT id, job, seq, ok, value FROM tasks WHERE seq IS NOT NULL"
	                                   " ORDER BY job, seq",
	                                   &s) != CM_OK)
		err = CM_EIO;
	while (err == CM_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		/* Full groups are written as they fill; the rest at the end. */
		err = group_add(c, sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 0),
		                sqlite3_column_int(s, 3), sqlite3_column_blob(s, 4),
		                (size_t)sqlite3_column_bytes(s, 4));
		if (err == CM_OK && c->groups->n >= GROUP_RESULTS && (err = flush_group(st, c->groups)) == CM_OK)
			group_pop(c);
	}
	if (err == CM_OK && s && rc != SQLITE_DONE)
		err = store__fail(st, rc);
	sqlite3_finalize(s);
	for (group *g = c->groups; g && err == CM_OK; g = g->next)
		err = flush_group(st, g);
	cm_buf_fini(&cc.text);
	free(cc.offs);
	free(cc.recs);
	store__tasks_forget(st);
	return err;
}

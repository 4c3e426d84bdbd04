/*
 * The writer's checkpoints, on a thread and a connection of their own.
 * SQLite checkpoints a WAL database from the connection that commits, once
 * the log passes 1,000 pages: the commit that crosses it copies 4 MB into
 * the database file and syncs it before it returns. On the engine thread
 * that held one request in seventy for about 6 ms (bench/latency's p99 was
 * 6.9 ms). So the writer's automatic checkpoint is off: once the log passes
 * KICK_FRAMES pages its commits wake this thread (store__checkpointer_kick,
 * from SQLite's WAL hook), which copies what was committed with a PASSIVE
 * checkpoint, never waiting on nor holding up the writer or a reader; the
 * writer starts the log again from its beginning once all of it was copied.
 * Checkpoints are kept rare as well: each costs CPU the request path shares
 * on a small machine and a sync of the file (at 1,000 pages, apply's p50
 * was 0.76 ms; at 8,192, 0.6 ms).
 *
 * The log starts again only at a write that begins once all of it was
 * copied. Under steady load that never happens off this thread: commits
 * come in while it copies and syncs. Kicked at every commit past the
 * threshold, it then checkpointed every few commits for good, two syncs
 * each (bench/latency: 0.5 fdatasync an apply, the log past 16,000 pages).
 * So a kick needs KICK_AGAIN_FRAMES more since the last, and a log that
 * reaches STORE_LOG_CAP_FRAMES is checkpointed by the writer itself right
 * after its commit, as SQLite would (a few ms, once per that many pages of
 * steady load): its next write starts the log again. That checkpoint finds
 * SQLITE_BUSY while this thread's run still goes, and tries again at the
 * next commit; a run starved of the CPU (other work on a small machine) let
 * the log pass twice the cap. From WAIT_FRAMES on, the writer waits for the
 * run to end instead: the log stays bounded, and only a starved thread
 * ever makes the writer wait.
 *
 * A log that started again keeps its file's size (up to
 * STORE_LOG_LIMIT_BYTES: reused, not grown, under load); a gateway used
 * lightly for ten minutes had a 1 MB database and a 44 MB log. Once no
 * commit came for QUIET_MS, this thread copies the rest and cuts the file
 * to nothing (a TRUNCATE checkpoint, which waits on no one: a reader or a
 * commit that comes meanwhile makes it try again at its next look).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "common/common.h"
#include "store/store_int.h"

/* A log of fewer pages (32 MiB) is left to grow. */
#define KICK_FRAMES 8192
#define KICK_AGAIN_FRAMES 1024
/* Unkicked, the log is looked at this often: what a writer that went
 * quiet left below the threshold reaches the file too. */
#define IDLE_MS 5000
/* No commit for this long: the log is cut to nothing. */
#define QUIET_MS 10000
/* The writer waits for this thread's run from here (above). */
#define WAIT_FRAMES (STORE_LOG_CAP_FRAMES + STORE_LOG_CAP_FRAMES / 2)

struct store_checkpointer {
	sqlite3 *db;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake; /* a kick, the stop */
	pthread_mutex_t run; /* held by this thread through each checkpoint */
	int kicked;
	int stopping;
	atomic_llong last_commit_ms; /* set by the writer's commits (cm_now_ms) */
	long long cut_after; /* this thread's: the last commit the log was cut after */
	/* the writer's thread only: */
	int kicked_at; /* the log's length at the last kick */
	int due; /* the log reached STORE_LOG_CAP_FRAMES: the writer checkpoints */
	int frames; /* the log's length at the last commit */
};

static void *checkpointer_main(void *arg)
{
	store_checkpointer *c = arg;

	pthread_setname_np(pthread_self(), "checkpoint");

	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		if (!c->kicked) {
			struct timespec ts = cm_timespec_in(CLOCK_REALTIME, IDLE_MS);
			pthread_cond_timedwait(&c->wake, &c->mu, &ts);
		}
		if (c->stopping)
			break;
		c->kicked = 0;
		pthread_mutex_unlock(&c->mu);
		long long last = atomic_load_explicit(&c->last_commit_ms, memory_order_relaxed);
		int quiet = last != c->cut_after && cm_now_ms() - last >= QUIET_MS;
		/* Fewer copied than there are: a reader still needs the rest; the
		 * writer's next commits kick again. */
		pthread_mutex_lock(&c->run);
		int rc = sqlite3_wal_checkpoint_v2(
		        c->db, "main", quiet ? SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_unlock(&c->run);
		if (rc == SQLITE_OK && quiet)
			c->cut_after = last;
		if (rc != SQLITE_OK && rc != SQLITE_BUSY)
			cm_warn("checkpoint: %s (%d)", sqlite3_errmsg(c->db), rc);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int store__checkpointer_start(const char *path, int mode, store_checkpointer **out)
{
	store_checkpointer *c = calloc(1, sizeof(*c));

	if (!c)
		return CM_ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->run, NULL);
	pthread_cond_init(&c->wake, NULL);
	/* A connection sees the log once it has read the database: asked for
	 * its journal mode, it reads the header (WAL, which the writer set). */
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, store__vfs(mode)) != SQLITE_OK ||
	    sqlite3_exec(c->db, "PRAGMA journal_mode", NULL, NULL, NULL) != SQLITE_OK ||
	    pthread_create(&c->thread, NULL, checkpointer_main, c) != 0) {
		sqlite3_close(c->db);
		pthread_cond_destroy(&c->wake);
		pthread_mutex_destroy(&c->mu);
		pthread_mutex_destroy(&c->run);
		free(c);
		return CM_EIO;
	}
	*out = c;
	return CM_OK;
}

void store__checkpointer_kick(store_checkpointer *c, int frames)
{
	atomic_store_explicit(&c->last_commit_ms, cm_now_ms(), memory_order_relaxed);
	c->frames = frames;
	if (frames < c->kicked_at)
		c->kicked_at = 0; /* the log started again */
	if ((c->due = frames >= STORE_LOG_CAP_FRAMES)) {
		pthread_mutex_lock(&c->mu);
		c->kicked = 0; /* a run of the thread would only hold the writer's off */
		pthread_mutex_unlock(&c->mu);
		return;
	}
	if (frames < KICK_FRAMES || frames < c->kicked_at + KICK_AGAIN_FRAMES)
		return;
	c->kicked_at = frames;
	pthread_mutex_lock(&c->mu);
	c->kicked = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->mu);
}

void store__checkpointer_after_commit(store_checkpointer *c, sqlite3 *writer)
{
	int rc;

	if (!c || !c->due)
		return;
	/* SQLITE_BUSY while the thread's run still goes: the next commit tries
	 * again, or past WAIT_FRAMES waits for the run to end. */
	rc = sqlite3_wal_checkpoint_v2(writer, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (rc == SQLITE_BUSY && c->frames >= WAIT_FRAMES) {
		pthread_mutex_lock(&c->run);
		rc = sqlite3_wal_checkpoint_v2(writer, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_unlock(&c->run);
	}
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		cm_warn("checkpoint: %s (%d)", sqlite3_errmsg(writer), rc);
}

void store__checkpointer_stop(store_checkpointer *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->run);
	free(c);
}

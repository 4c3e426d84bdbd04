/*
 * The database's integrity check, apart from opening it: PRAGMA
 * quick_check reads every page, so its time grows with the database (seconds
 * at ten million tasks), and a gateway must answer soon after it starts at
 * any size. The check runs on its own read-only connection and thread while
 * the gateway serves; a damaged file is reported to the caller, which stops.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "store/store_int.h"

struct store_check {
	sqlite3 *db;
	pthread_t thread;
	pthread_mutex_t mu; /* guards db against the interrupt from store_check_stop */
	int stopping;
	void (*on_fail)(void *ctx, const char *why);
	void *ctx;
};

/* Returns CM_OK when db passes, else the reason in why ("" when the check
 * was interrupted). */
static int run_check(sqlite3 *db, char *why, size_t why_len)
{
	sqlite3_stmt *s = NULL;
	int rc;

	why[0] = '\0';
	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &s, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(s, 0), "ok") != 0)
		snprintf(why, why_len, "database failed its integrity check: %s", sqlite3_column_text(s, 0));
	else if (rc != SQLITE_ROW && rc != SQLITE_INTERRUPT)
		snprintf(why, why_len, "database integrity check could not run: %s", sqlite3_errmsg(db));
	sqlite3_finalize(s);
	return rc == SQLITE_ROW && !why[0] ? CM_OK : CM_EIO;
}

int store_check_file(const char *path, int mode, char *why, size_t why_len)
{
	sqlite3 *db = NULL;
	int err;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, store__vfs(mode)) != SQLITE_OK) {
		snprintf(why, why_len, "cannot open database %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return CM_EIO;
	}
	err = run_check(db, why, why_len);
	sqlite3_close(db);
	return err;
}

static void *check_main(void *arg)
{
	store_check *c = arg;
	char why[512];

	pthread_setname_np(pthread_self(), "store-check");
	int err = run_check(c->db, why, sizeof(why));

	pthread_mutex_lock(&c->mu);
	int stopping = c->stopping;
	pthread_mutex_unlock(&c->mu);
	if (stopping)
		return NULL;
	if (err != CM_OK)
		c->on_fail(c->ctx, why);
	else
		cm_info("database passed its integrity check");
	return NULL;
}

int store_check_start(const char *path, int mode, void (*on_fail)(void *ctx, const char *why), void *ctx,
                      store_check **out)
{
	store_check *c = calloc(1, sizeof(*c));

	if (!c)
		return CM_ENOMEM;
	c->on_fail = on_fail;
	c->ctx = ctx;
	pthread_mutex_init(&c->mu, NULL);
	if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, store__vfs(mode)) != SQLITE_OK ||
	    pthread_create(&c->thread, NULL, check_main, c) != 0) {
		sqlite3_close(c->db);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return CM_EIO;
	}
	*out = c;
	return CM_OK;
}

void store_check_stop(store_check *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = 1;
	sqlite3_interrupt(c->db); /* safe from another thread while the connection is open */
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	sqlite3_close(c->db);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

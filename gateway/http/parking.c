/*
 * One thread resumes parked connections. Waiting ones sit in a list with the
 * generation they saw and their deadline; the engine's commit hook and each
 * new park wake the thread, which resumes every entry whose generation is
 * old or whose deadline passed, then sleeps until the earliest deadline. A
 * resumed request re-reads what it waits for, so a spurious resume costs a
 * look, never a wrong answer.
 */
#define _GNU_SOURCE
#include "gateway/http/parking.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/common.h"

typedef struct parked {
	struct MHD_Connection *c;
	engine_watch what;
	uint64_t gen;
	int64_t deadline;
	struct parked *next;
} parked;

struct parking {
	engine *engine;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake; /* the thread: a commit, a new park, the stop */
	pthread_cond_t idle; /* parking_stop: held connections went down */
	parked *waiting;
	size_t waiting_any; /* of them, those that watch every commit (ENGINE_WATCH_ANY) */
	size_t held; /* connections suspended by parking_hold, not resumed yet */
	int kicked; /* a commit or a park since the thread last looked */
	int stopping;
	int exit;
};

static void on_commit(void *ctx, engine_watch moved)
{
	parking *pk = ctx;

	/* Only a connection whose generation moved needs the thread: a
	 * commit with none waiting wakes nobody (two futex wake-ups an
	 * apply, on this path), nor one that stored no output while only
	 * output followers wait (a Python program's pool follows its
	 * output while it applies: two wake-ups an apply, each a look that
	 * found nothing to resume). */
	pthread_mutex_lock(&pk->mu);
	if (moved == ENGINE_WATCH_OUTPUT ? pk->waiting != NULL : pk->waiting_any > 0) {
		pk->kicked = 1;
		pthread_cond_signal(&pk->wake);
	}
	pthread_mutex_unlock(&pk->mu);
}

static void *resumer_main(void *arg)
{
	parking *pk = arg;

	pthread_setname_np(pthread_self(), "resumer");

	pthread_mutex_lock(&pk->mu);
	while (!pk->exit) {
		uint64_t gens[] = {[ENGINE_WATCH_ANY] = engine_generation(pk->engine, ENGINE_WATCH_ANY),
		                   [ENGINE_WATCH_OUTPUT] = engine_generation(pk->engine, ENGINE_WATCH_OUTPUT)};
		int64_t now = cm_now_ms(), earliest = INT64_MAX;
		parked *due = NULL;

		pk->kicked = 0;
		for (parked **pp = &pk->waiting; *pp;) {
			parked *w = *pp;
			if (w->gen != gens[w->what] || w->deadline <= now || pk->stopping) {
				*pp = w->next;
				w->next = due;
				due = w;
				pk->waiting_any -= w->what == ENGINE_WATCH_ANY;
			} else {
				if (w->deadline < earliest)
					earliest = w->deadline;
				pp = &w->next;
			}
		}
		/* libmicrohttpd's resume only queues a wakeup of its own thread:
		 * safe under our lock, and nothing it calls comes back here. */
		while (due) {
			parked *w = due;
			due = w->next;
			MHD_resume_connection(w->c);
			free(w);
		}
		if (pk->stopping)
			pthread_cond_broadcast(&pk->idle);
		if (pk->kicked || pk->exit)
			continue;
		if (earliest == INT64_MAX) {
			pthread_cond_wait(&pk->wake, &pk->mu);
		} else {
			struct timespec ts = cm_timespec_in(CLOCK_MONOTONIC, earliest - now);
			pthread_cond_timedwait(&pk->wake, &pk->mu, &ts);
		}
	}
	pthread_mutex_unlock(&pk->mu);
	return NULL;
}

int parking_new(engine *e, parking **out)
{
	parking *pk = calloc(1, sizeof(*pk));
	pthread_condattr_t attr;

	if (!pk)
		return CM_ENOMEM;
	pk->engine = e;
	pthread_mutex_init(&pk->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&pk->wake, &attr);
	pthread_condattr_destroy(&attr);
	pthread_cond_init(&pk->idle, NULL);
	if (pthread_create(&pk->thread, NULL, resumer_main, pk) != 0) {
		pthread_cond_destroy(&pk->idle);
		pthread_cond_destroy(&pk->wake);
		pthread_mutex_destroy(&pk->mu);
		free(pk);
		return CM_EIO;
	}
	engine_on_commit(e, on_commit, pk);
	*out = pk;
	return CM_OK;
}

void parking_wait(parking *pk, struct MHD_Connection *c, engine_watch what, uint64_t gen, int64_t deadline_ms)
{
	parked *w = malloc(sizeof(*w));

	MHD_suspend_connection(c);
	if (!w) { /* no memory to wait in: look again at once */
		MHD_resume_connection(c);
		return;
	}
	w->c = c;
	w->what = what;
	w->gen = gen;
	w->deadline = deadline_ms;
	pthread_mutex_lock(&pk->mu);
	w->next = pk->waiting;
	pk->waiting = w;
	pk->waiting_any += what == ENGINE_WATCH_ANY;
	pk->kicked = 1;
	pthread_cond_signal(&pk->wake);
	pthread_mutex_unlock(&pk->mu);
}

void parking_hold(parking *pk, struct MHD_Connection *c)
{
	pthread_mutex_lock(&pk->mu);
	pk->held++;
	pthread_mutex_unlock(&pk->mu);
	MHD_suspend_connection(c);
}

void parking_resume(parking *pk, struct MHD_Connection *c)
{
	MHD_resume_connection(c);
	pthread_mutex_lock(&pk->mu);
	if (--pk->held == 0)
		pthread_cond_broadcast(&pk->idle);
	pthread_mutex_unlock(&pk->mu);
}

int parking_stopping(parking *pk)
{
	int stopping;

	pthread_mutex_lock(&pk->mu);
	stopping = pk->stopping;
	pthread_mutex_unlock(&pk->mu);
	return stopping;
}

void parking_stop(parking *pk)
{
	pthread_mutex_lock(&pk->mu);
	pk->stopping = 1;
	pk->kicked = 1;
	pthread_cond_signal(&pk->wake);
	while (pk->held || pk->waiting)
		pthread_cond_wait(&pk->idle, &pk->mu);
	pthread_mutex_unlock(&pk->mu);
}

void parking_free(parking *pk)
{
	if (!pk)
		return;
	engine_on_commit(pk->engine, NULL, NULL);
	pthread_mutex_lock(&pk->mu);
	pk->exit = 1;
	pthread_cond_signal(&pk->wake);
	pthread_mutex_unlock(&pk->mu);
	pthread_join(pk->thread, NULL);
	while (pk->waiting) {
		parked *w = pk->waiting;
		pk->waiting = w->next;
		MHD_resume_connection(w->c);
		free(w);
	}
	pthread_cond_destroy(&pk->idle);
	pthread_cond_destroy(&pk->wake);
	pthread_mutex_destroy(&pk->mu);
	free(pk);
}

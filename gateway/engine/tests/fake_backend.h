/*
 * fake_backend: a backend (gateway/backend/backend.h) that starts nothing. It is the
 * seam where unit tests replace the real local and docker backends: each
 * run is recorded with the worker id its environment names, "exits" when a
 * test says so or when stopped, and the test can see the stops it got.
 * Called from the engine's executor thread; the test reads it from its own.
 */
#ifndef GATEWAY_ENGINE_TESTS_FAKE_BACKEND_H
#define GATEWAY_ENGINE_TESTS_FAKE_BACKEND_H

#include "gateway/backend/backend.h"

#define FAKE_RUNS_MAX 64

typedef struct fake_backend fake_backend;

/* A backend of that name ("local" for the engine's default). */
fake_backend *fake_backend_new(const char *name);
backend *fake_backend_base(fake_backend *f);

/* The worker id of the i-th run (0-based), waiting up to a second for the
 * executor to start it; "" if it never came. */
const char *fake_backend_worker(fake_backend *f, int i, char out[32]);
int fake_backend_runs(fake_backend *f);
/* Makes worker_id's run end with exit_code. */
void fake_backend_exit(fake_backend *f, const char *worker_id, int exit_code);
/* How many hard stops (kills) worker_id's run got. */
int fake_backend_kills(fake_backend *f, const char *worker_id);
/* From now on each release takes ms, as a daemon removing a container. */
void fake_backend_set_release_ms(fake_backend *f, int ms);
/* How many runs were released. */
int fake_backend_released(fake_backend *f);

#endif

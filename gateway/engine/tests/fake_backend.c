#define _GNU_SOURCE
#include "gateway/engine/tests/fake_backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct fake_run {
	char handle[16];
	char worker_id[32];
	int alive;
	int exit_code;
	int kills;
} fake_run;

struct fake_backend {
	backend base; /* first */
	backend_ops ops;
	pthread_mutex_t mu;
	fake_run runs[FAKE_RUNS_MAX];
	int n;
	int released;
	int release_ms; /* how long a release takes, as a daemon removing a container */
};

static fake_run *find(fake_backend *f, const char *key, int by_handle)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(by_handle ? f->runs[i].handle : f->runs[i].worker_id, key) == 0)
			return &f->runs[i];
	return NULL;
}

static int fake_run_op(backend *b, const backend_run_spec *spec, char handle[BACKEND_HANDLE_MAX], char *detail,
                       size_t detail_len)
{
	fake_backend *f = (fake_backend *)b;
	int err = CM_OK;

	pthread_mutex_lock(&f->mu);
	if (f->n == FAKE_RUNS_MAX) {
		snprintf(detail, detail_len, "fake backend: full");
		err = CM_EUNAVAIL;
	} else {
		fake_run *r = &f->runs[f->n];
		memset(r, 0, sizeof(*r));
		snprintf(r->handle, sizeof(r->handle), "fake-%d", f->n);
		for (size_t i = 0; i < spec->nenv; i++)
			if (strncmp(spec->env[i], "STRAND_WORKER_ID=", 17) == 0)
				snprintf(r->worker_id, sizeof(r->worker_id), "%s", spec->env[i] + 17);
		r->alive = 1;
		snprintf(handle, BACKEND_HANDLE_MAX, "%s", r->handle);
		f->n++;
	}
	pthread_mutex_unlock(&f->mu);
	return err;
}

static int fake_logs(backend *b, const char *handle, const char *log_path, size_t max, cm_buf *out)
{
	(void)b;
	(void)handle;
	(void)log_path;
	(void)max;
	(void)out;
	return CM_OK;
}

static int fake_poll(backend *b, const char *handle, int *exit_code, char *detail, size_t detail_len)
{
	fake_backend *f = (fake_backend *)b;
	int gone = 1;

	if (detail_len)
		detail[0] = '\0';
	pthread_mutex_lock(&f->mu);
	fake_run *r = find(f, handle, 1);
	*exit_code = r ? r->exit_code : -1;
	if (r && r->alive)
		gone = 0;
	pthread_mutex_unlock(&f->mu);
	return gone;
}

static void fake_stop(backend *b, const char *handle, int hard)
{
	fake_backend *f = (fake_backend *)b;

	pthread_mutex_lock(&f->mu);
	fake_run *r = find(f, handle, 1);
	if (r && r->alive) {
		r->alive = 0;
		r->exit_code = hard ? 128 + 9 : 0;
	}
	if (r && hard)
		r->kills++;
	pthread_mutex_unlock(&f->mu);
}

static void fake_release(backend *b, const char *handle)
{
	fake_backend *f = (fake_backend *)b;

	(void)handle;
	pthread_mutex_lock(&f->mu);
	int ms = f->release_ms;
	pthread_mutex_unlock(&f->mu);
	usleep((useconds_t)ms * 1000);
	pthread_mutex_lock(&f->mu);
	f->released++;
	pthread_mutex_unlock(&f->mu);
}

static void fake_free(backend *b)
{
	fake_backend *f = (fake_backend *)b;

	pthread_mutex_destroy(&f->mu);
	free(f);
}

fake_backend *fake_backend_new(const char *name)
{
	fake_backend *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->ops = (backend_ops){.name = name,
	                       .run = fake_run_op,
	                       .logs = fake_logs,
	                       .poll = fake_poll,
	                       .stop = fake_stop,
	                       .release = fake_release,
	                       .free = fake_free};
	f->base.ops = &f->ops;
	pthread_mutex_init(&f->mu, NULL);
	return f;
}

backend *fake_backend_base(fake_backend *f)
{
	return &f->base;
}

int fake_backend_runs(fake_backend *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->n;
	pthread_mutex_unlock(&f->mu);
	return n;
}

const char *fake_backend_worker(fake_backend *f, int i, char out[32])
{
	out[0] = '\0';
	for (int tries = 0; tries < 100 && !out[0]; tries++) {
		pthread_mutex_lock(&f->mu);
		if (i < f->n)
			snprintf(out, 32, "%s", f->runs[i].worker_id);
		pthread_mutex_unlock(&f->mu);
		if (!out[0])
			usleep(10000);
	}
	return out;
}

void fake_backend_exit(fake_backend *f, const char *worker_id, int exit_code)
{
	pthread_mutex_lock(&f->mu);
	fake_run *r = find(f, worker_id, 0);
	if (r) {
		r->alive = 0;
		r->exit_code = exit_code;
	}
	pthread_mutex_unlock(&f->mu);
}

int fake_backend_kills(fake_backend *f, const char *worker_id)
{
	pthread_mutex_lock(&f->mu);
	fake_run *r = find(f, worker_id, 0);
	int n = r ? r->kills : 0;
	pthread_mutex_unlock(&f->mu);
	return n;
}

void fake_backend_set_release_ms(fake_backend *f, int ms)
{
	pthread_mutex_lock(&f->mu);
	f->release_ms = ms;
	pthread_mutex_unlock(&f->mu);
}

int fake_backend_released(fake_backend *f)
{
	pthread_mutex_lock(&f->mu);
	int n = f->released;
	pthread_mutex_unlock(&f->mu);
	return n;
}

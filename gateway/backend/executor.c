/*
 * One thread per backend. The engine's calls append commands to a FIFO; the
 * thread runs them in order, then polls what it watches. Entries (owner,
 * handle) live on this thread only, so the backend needs no locking.
 */
#define _GNU_SOURCE
#include "gateway/backend/executor.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum cmd_kind { CMD_RUN, CMD_ADOPT, CMD_STOP, CMD_RELEASE, CMD_LOGS, CMD_RETAIN, CMD_SETTLE } cmd_kind;

/* A run spec copied whole: the engine's may be gone when the thread runs. */
typedef struct run_copy {
	backend_run_spec spec;
	pool_spec pool;
	char **strings; /* argv, env, labels, log_path, name, group: every string, freed at once */
	size_t nstrings;
} run_copy;

typedef struct cmd {
	cmd_kind kind;
	char owner[BX_OWNER_MAX];
	char handle[BACKEND_HANDLE_MAX];
	int hard;
	run_copy *run;
	char *path; /* CMD_RUN: save_logs; CMD_LOGS: log_path */
	size_t max;
	void *tag;
	char (*owners)[BX_OWNER_MAX];
	size_t nowners;
	struct cmd *next;
} cmd;

typedef struct entry {
	char owner[BX_OWNER_MAX];
	char handle[BACKEND_HANDLE_MAX];
	char *save_logs;
	int ended; /* BX_EXITED was sent */
	int queued; /* BX_QUEUED was sent, BX_RUNNING not yet */
	int forgotten; /* bx_retain killed it: released when it ends, unreported */
	struct entry *next;
} entry;

struct bx {
	backend *b;
	bx_post_fn post;
	void *ctx;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	cmd *head, *tail;
	int exit;
	entry *entries; /* the thread's own */
};

const char *bx_name(const bx *x)
{
	return x->b->ops->name;
}

int bx_native(const bx *x)
{
	return x->b->ops->native;
}

void bx_event_free(bx_event *ev)
{
	if (!ev)
		return;
	cm_buf_fini(&ev->logs);
	free(ev);
}

static bx_event *event_new(bx *x, bx_event_kind kind, const char *owner)
{
	bx_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->kind = kind;
	ev->from = x;
	snprintf(ev->owner, sizeof(ev->owner), "%s", owner);
	cm_buf_init(&ev->logs);
	return ev;
}

/* ---- copying a run spec -------------------------------------------------- */

static char *keep(run_copy *rc, const char *s)
{
	char *d = s ? strdup(s) : NULL;

	if (d)
		rc->strings[rc->nstrings++] = d;
	return d;
}

static void run_copy_free(run_copy *rc)
{
	if (!rc)
		return;
	/* The environment holds the worker's secret. */
	for (size_t i = 0; i < rc->nstrings; i++) {
		explicit_bzero(rc->strings[i], strlen(rc->strings[i]));
		free(rc->strings[i]);
	}
	free(rc->strings);
	free((void *)rc->spec.argv);
	free((void *)rc->spec.env);
	free((void *)rc->spec.labels);
	free(rc);
}

static char **keep_all(run_copy *rc, char *const *v, size_t n, int *ok)
{
	char **out = calloc(n + 1, sizeof(char *));

	if (!out) {
		*ok = 0;
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		if (!(out[i] = keep(rc, v[i])))
			*ok = 0;
	return out;
}

static run_copy *run_copy_new(const backend_run_spec *s)
{
	run_copy *rc = calloc(1, sizeof(*rc));
	int ok = 1;

	if (!rc)
		return NULL;
	rc->strings = calloc(s->argc + s->nenv + s->nlabels + 3, sizeof(char *)); /* + log_path, name, group */
	if (!rc->strings) {
		free(rc);
		return NULL;
	}
	rc->spec = *s;
	if (s->spec) {
		rc->pool = *s->spec;
		rc->spec.spec = &rc->pool;
	}
	rc->spec.argv = keep_all(rc, s->argv, s->argc, &ok);
	rc->spec.env = keep_all(rc, s->env, s->nenv, &ok);
	rc->spec.labels = keep_all(rc, s->labels, s->nlabels, &ok);
	if ((s->log_path && !(rc->spec.log_path = keep(rc, s->log_path))) ||
	    (s->name && !(rc->spec.name = keep(rc, s->name))) || (s->group && !(rc->spec.group = keep(rc, s->group))))
		ok = 0;
	if (!ok) {
		run_copy_free(rc);
		return NULL;
	}
	return rc;
}

/* ---- the thread ----------------------------------------------------------- */

static entry *entry_find(bx *x, const char *owner)
{
	for (entry *n = x->entries; n; n = n->next)
		if (strcmp(n->owner, owner) == 0)
			return n;
	return NULL;
}

static entry *entry_add(bx *x, const char *owner, const char *handle)
{
	entry *n = entry_find(x, owner);

	if (!n) {
		if (!(n = calloc(1, sizeof(*n))))
			return NULL;
		snprintf(n->owner, sizeof(n->owner), "%s", owner);
		n->next = x->entries;
		x->entries = n;
	}
	snprintf(n->handle, sizeof(n->handle), "%s", handle);
	n->ended = 0;
	return n;
}

static void entry_drop(bx *x, entry *n)
{
	for (entry **pp = &x->entries; *pp; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			break;
		}
	if (n->handle[0])
		x->b->ops->release(x->b, n->handle);
	free(n->save_logs);
	free(n);
}

static void post(bx *x, bx_event *ev)
{
	if (ev)
		x->post(x->ctx, ev);
}

static void do_run(bx *x, cmd *c)
{
	bx_event *ev = event_new(x, BX_STARTED, c->owner);
	char handle[BACKEND_HANDLE_MAX] = "";
	char detail[512] = "";
	int err = x->b->ops->run(x->b, &c->run->spec, handle, detail, sizeof(detail));
	entry *n = NULL;

	if (err == CM_OK && !(n = entry_add(x, c->owner, handle))) {
		x->b->ops->stop(x->b, handle, 1); /* cannot watch it: it must not run unseen */
		err = CM_ENOMEM;
		snprintf(detail, sizeof(detail), "out of memory");
	}
	if (n) {
		n->save_logs = c->path;
		c->path = NULL;
	}
	if (ev) {
		ev->err = err;
		snprintf(ev->handle, sizeof(ev->handle), "%s", handle);
		snprintf(ev->detail, sizeof(ev->detail), "%s", detail);
	}
	post(x, ev);
}

/* Copies what a backend kept of an ended run's output to where it was asked. */
static void save_logs(bx *x, entry *n)
{
	cm_buf out;
	FILE *f;

	if (!n->save_logs)
		return;
	cm_buf_init(&out);
	if (x->b->ops->logs(x->b, n->handle, NULL, 1u << 20, &out) == CM_OK && (f = fopen(n->save_logs, "wb"))) {
		if (out.len)
			fwrite(out.data, 1, out.len, f);
		fclose(f);
	}
	cm_buf_fini(&out);
}

static void do_command(bx *x, cmd *c)
{
	entry *n = c->kind == CMD_RUN ? NULL : entry_find(x, c->owner);

	switch (c->kind) {
	case CMD_RUN: do_run(x, c); break;
	case CMD_ADOPT:
		if (n && !c->handle[0] && n->handle[0]) {
			/* The engine lost its start (a cycle that did not commit):
			 * say it again, and watch it again. */
			bx_event *ev = event_new(x, BX_STARTED, c->owner);
			if (ev)
				snprintf(ev->handle, sizeof(ev->handle), "%s", n->handle);
			n->ended = 0;
			post(x, ev);
		} else if (!c->handle[0] && x->b->ops->find && x->b->ops->find(x->b, c->owner, c->handle) == CM_OK) {
			/* Started, but the handle was never recorded (a crash right
			 * after the start): found by its label, and told. */
			bx_event *ev = event_new(x, BX_STARTED, c->owner);
			if (ev)
				snprintf(ev->handle, sizeof(ev->handle), "%s", c->handle);
			entry_add(x, c->owner, c->handle);
			post(x, ev);
		} else {
			entry_add(x, c->owner, c->handle);
		}
		break;
	case CMD_STOP:
		if (n && !n->ended)
			x->b->ops->stop(x->b, n->handle, c->hard);
		break;
	case CMD_RELEASE:
		if (n)
			entry_drop(x, n);
		break;
	case CMD_LOGS: {
		bx_event *ev = event_new(x, BX_LOGS, c->owner);
		if (ev) {
			ev->tag = c->tag;
			if (n && !n->ended)
				ev->err = x->b->ops->logs(x->b, n->handle, c->path, c->max, &ev->logs);
			else
				ev->err = cm_read_tail(c->path, c->max, &ev->logs);
		}
		post(x, ev);
		break;
	}
	case CMD_SETTLE: post(x, event_new(x, BX_SETTLED, c->owner)); break;
	case CMD_RETAIN:
		for (entry *m = x->entries, *next; m; m = next) {
			int known = 0;
			next = m->next;
			for (size_t i = 0; i < c->nowners && !known; i++)
				known = strcmp(c->owners[i], m->owner) == 0;
			if (!known) {
				cm_info("%s backend: stopping %.12s, which the gateway no longer knows",
				        x->b->ops->name, m->handle);
				x->b->ops->stop(x->b, m->handle, 1);
				m->forgotten = 1;
			}
		}
		break;
	}
}

/* Tells the engine that owner waits in its backend's queue, or runs now
 * after it waited. */
static void say_queued(bx *x, entry *n, int queued)
{
	if (n->queued == queued || n->forgotten)
		return;
	n->queued = queued;
	post(x, event_new(x, queued ? BX_QUEUED : BX_RUNNING, n->owner));
}

/* Reports each watched run that ended (and one that waits to start, or
 * starts after it waited). One the engine no longer knows (bx_retain) is
 * released here instead. */
static void watch(bx *x)
{
	for (entry *n = x->entries, *next; n; n = next) {
		int code = -1, polled;
		char words[512] = "";
		next = n->next;
		if (n->ended)
			continue;
		polled = x->b->ops->poll(x->b, n->handle, &code, words, sizeof(words));
		if (polled != 1) {
			say_queued(x, n, polled == BACKEND_QUEUED);
			continue;
		}
		n->ended = 1;
		if (n->forgotten) {
			entry_drop(x, n);
			continue;
		}
		save_logs(x, n);
		bx_event *ev = event_new(x, BX_EXITED, n->owner);
		if (ev) {
			ev->exit_code = code;
			snprintf(ev->handle, sizeof(ev->handle), "%s", n->handle);
			snprintf(ev->detail, sizeof(ev->detail), "%s", words);
		}
		post(x, ev);
	}
}

static void cmd_free(cmd *c)
{
	run_copy_free(c->run);
	free(c->path);
	free(c->owners);
	free(c);
}

static void *executor_main(void *arg)
{
	bx *x = arg;
	int64_t next_watch = 0;
	char name[16];

	snprintf(name, sizeof(name), "exec-%s", x->b->ops->name);
	pthread_setname_np(pthread_self(), name);

	pthread_mutex_lock(&x->mu);
	for (;;) {
		cmd *batch = x->head;
		int exit = x->exit;
		x->head = x->tail = NULL;
		pthread_mutex_unlock(&x->mu);
		while (batch) {
			cmd *c = batch;
			batch = c->next;
			do_command(x, c);
			cmd_free(c);
		}
		if (exit)
			break;
		if (cm_now_ms() >= next_watch) {
			watch(x);
			next_watch = cm_now_ms() + BX_WATCH_MS;
		}
		pthread_mutex_lock(&x->mu);
		if (!x->head && !x->exit) {
			struct timespec ts = cm_timespec_in(CLOCK_MONOTONIC, next_watch - cm_now_ms());
			pthread_cond_timedwait(&x->wake, &x->mu, &ts);
		}
	}
	while (x->entries) { /* what still runs is left running: only forgotten */
		entry *n = x->entries;
		x->entries = n->next;
		free(n->save_logs);
		free(n);
	}
	return NULL;
}

/* ---- the engine's side --------------------------------------------------- */

static int enqueue(bx *x, cmd *c)
{
	pthread_mutex_lock(&x->mu);
	if (x->tail)
		x->tail->next = c;
	else
		x->head = c;
	x->tail = c;
	pthread_cond_signal(&x->wake);
	pthread_mutex_unlock(&x->mu);
	return CM_OK;
}

static cmd *cmd_new(cmd_kind kind, const char *owner)
{
	cmd *c = calloc(1, sizeof(*c));

	if (c) {
		c->kind = kind;
		snprintf(c->owner, sizeof(c->owner), "%s", owner ? owner : "");
	}
	return c;
}

bx *bx_new(backend *b, bx_post_fn post_fn, void *ctx)
{
	bx *x = b ? calloc(1, sizeof(*x)) : NULL;
	pthread_condattr_t attr;

	if (!x) {
		if (b)
			b->ops->free(b);
		return NULL;
	}
	x->b = b;
	x->post = post_fn;
	x->ctx = ctx;
	pthread_mutex_init(&x->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&x->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&x->thread, NULL, executor_main, x) != 0) {
		pthread_cond_destroy(&x->wake);
		pthread_mutex_destroy(&x->mu);
		b->ops->free(b);
		free(x);
		return NULL;
	}
	return x;
}

void bx_free(bx *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->mu);
	x->exit = 1;
	pthread_cond_signal(&x->wake);
	pthread_mutex_unlock(&x->mu);
	pthread_join(x->thread, NULL);
	while (x->head) { /* queued after the thread's last look */
		cmd *c = x->head;
		x->head = c->next;
		cmd_free(c);
	}
	pthread_cond_destroy(&x->wake);
	pthread_mutex_destroy(&x->mu);
	x->b->ops->free(x->b);
	free(x);
}

int bx_run(bx *x, const char *owner, const backend_run_spec *spec, const char *save_logs)
{
	cmd *c = cmd_new(CMD_RUN, owner);

	if (!c || !(c->run = run_copy_new(spec)) || (save_logs && !(c->path = strdup(save_logs)))) {
		if (c)
			cmd_free(c);
		return CM_ENOMEM;
	}
	return enqueue(x, c);
}

int bx_adopt(bx *x, const char *owner, const char *handle)
{
	cmd *c = cmd_new(CMD_ADOPT, owner);

	if (!c)
		return CM_ENOMEM;
	snprintf(c->handle, sizeof(c->handle), "%s", handle);
	return enqueue(x, c);
}

int bx_stop(bx *x, const char *owner, int hard)
{
	cmd *c = cmd_new(CMD_STOP, owner);

	if (!c)
		return CM_ENOMEM;
	c->hard = hard;
	return enqueue(x, c);
}

int bx_release(bx *x, const char *owner)
{
	cmd *c = cmd_new(CMD_RELEASE, owner);

	return c ? enqueue(x, c) : CM_ENOMEM;
}

int bx_settle(bx *x, const char *owner)
{
	cmd *c = cmd_new(CMD_SETTLE, owner);

	return c ? enqueue(x, c) : CM_ENOMEM;
}

int bx_logs(bx *x, const char *owner, const char *log_path, size_t max, void *tag)
{
	cmd *c = cmd_new(CMD_LOGS, owner);

	if (!c || !(c->path = strdup(log_path))) {
		free(c);
		return CM_ENOMEM;
	}
	c->max = max;
	c->tag = tag;
	return enqueue(x, c);
}

int bx_retain(bx *x, char (*owners)[BX_OWNER_MAX], size_t n)
{
	cmd *c = cmd_new(CMD_RETAIN, NULL);

	if (!c || !(c->owners = calloc(n + 1, BX_OWNER_MAX))) {
		free(c);
		return CM_ENOMEM;
	}
	memcpy(c->owners, owners, n * BX_OWNER_MAX);
	c->nowners = n;
	return enqueue(x, c);
}

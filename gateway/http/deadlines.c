/* Whole-request deadlines; see deadlines.h. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "common/common.h"
#include "gateway/http/deadlines.h"

#define SWEEP_MS 250

typedef struct tracked {
	int fd;
	int64_t deadline_ms; /* 0: none */
	int shut; /* shut down once; libmicrohttpd closes it */
	int owed; /* a request has begun and is not answered yet */
	struct tracked *prev, *next;
} tracked;

struct deadlines {
	int64_t header_ms, min_rate;
	pthread_mutex_t mu;
	pthread_cond_t wake, answered;
	int stopping;
	int owed; /* connections owed an answer */
	tracked *head;
	pthread_t sweeper;
};

/* Shuts down the connections past their deadline. The fd is still open:
 * libmicrohttpd closes it only after telling on_connection, which takes
 * the same lock. */
static void *sweep(void *arg)
{
	deadlines *d = arg;

	pthread_setname_np(pthread_self(), "deadlines");

	pthread_mutex_lock(&d->mu);
	while (!d->stopping) {
		struct timespec until = cm_timespec_in(CLOCK_MONOTONIC, SWEEP_MS);
		pthread_cond_timedwait(&d->wake, &d->mu, &until);
		int64_t now = cm_now_ms();
		for (tracked *t = d->head; t; t = t->next) {
			if (t->deadline_ms && now >= t->deadline_ms && !t->shut) {
				shutdown(t->fd, SHUT_RDWR);
				t->shut = 1;
			}
		}
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int deadlines_start(int64_t header_ms, int64_t min_rate, deadlines **out)
{
	deadlines *d = calloc(1, sizeof(*d));
	pthread_condattr_t attr;

	if (!d)
		return CM_ENOMEM;
	d->header_ms = header_ms;
	d->min_rate = min_rate > 0 ? min_rate : 1;
	pthread_mutex_init(&d->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&d->wake, &attr);
	pthread_cond_init(&d->answered, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&d->sweeper, NULL, sweep, d) != 0) {
		pthread_cond_destroy(&d->answered);
		pthread_cond_destroy(&d->wake);
		pthread_mutex_destroy(&d->mu);
		free(d);
		return CM_ENOMEM;
	}
	*out = d;
	return CM_OK;
}

void deadlines_stop(deadlines *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stopping = 1;
	pthread_cond_signal(&d->wake);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->sweeper, NULL);
	while (d->head) { /* the daemon stopped first: these are closed */
		tracked *t = d->head;
		d->head = t->next;
		free(t);
	}
	pthread_cond_destroy(&d->answered);
	pthread_cond_destroy(&d->wake);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

void deadlines_handing_over(deadlines *d)
{
	pthread_mutex_lock(&d->mu);
	d->owed++;
	pthread_mutex_unlock(&d->mu);
}

void deadlines_handed_over(deadlines *d, int ok)
{
	if (ok)
		return;
	pthread_mutex_lock(&d->mu);
	if (--d->owed == 0)
		pthread_cond_broadcast(&d->answered);
	pthread_mutex_unlock(&d->mu);
}

void deadlines_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                             enum MHD_ConnectionNotificationCode code)
{
	deadlines *d = cls;
	tracked *t = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!fd || !(t = calloc(1, sizeof(*t)))) {
			deadlines_handed_over(d, 0); /* untracked: libmicrohttpd's idle timeout still holds */
			return;
		}
		t->fd = fd->connect_fd;
		t->owed = 1; /* counted at its hand-over: its request had begun */
		pthread_mutex_lock(&d->mu);
		t->deadline_ms = cm_now_ms() + d->header_ms;
		t->next = d->head;
		if (d->head)
			d->head->prev = t;
		d->head = t;
		pthread_mutex_unlock(&d->mu);
		*socket_context = t;
		return;
	}
	if (!t)
		return;
	pthread_mutex_lock(&d->mu);
	if (t->prev)
		t->prev->next = t->next;
	else
		d->head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	if (t->owed && --d->owed == 0)
		pthread_cond_broadcast(&d->answered);
	pthread_mutex_unlock(&d->mu);
	*socket_context = NULL;
	free(t);
}

/* owed: 1 a request began, 0 it is answered, -1 unchanged. */
static void set_deadline(deadlines *d, struct MHD_Connection *c, int64_t deadline_ms, int owed)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	tracked *t = info ? info->socket_context : NULL;

	if (!t)
		return;
	pthread_mutex_lock(&d->mu);
	t->deadline_ms = deadline_ms;
	if (owed >= 0 && owed != t->owed) {
		t->owed = owed;
		d->owed += owed ? 1 : -1;
		if (d->owed == 0)
			pthread_cond_broadcast(&d->answered);
	}
	pthread_mutex_unlock(&d->mu);
}

void deadlines_headers_in(deadlines *d, struct MHD_Connection *c, int64_t body_len, int64_t cap_bytes)
{
	int64_t len = body_len < 0 ? cap_bytes : body_len;

	set_deadline(d, c, len == 0 ? 0 : cm_now_ms() + d->header_ms + len * 1000 / d->min_rate, 1);
}

void deadlines_body_in(deadlines *d, struct MHD_Connection *c)
{
	set_deadline(d, c, 0, -1);
}

void deadlines_answered(deadlines *d, struct MHD_Connection *c)
{
	set_deadline(d, c, cm_now_ms() + d->header_ms, 0);
}

int deadlines_wait_answered(deadlines *d, int64_t ms)
{
	struct timespec until = cm_timespec_in(CLOCK_MONOTONIC, ms);

	pthread_mutex_lock(&d->mu);
	while (d->owed && pthread_cond_timedwait(&d->answered, &d->mu, &until) == 0)
		;
	int owed = d->owed;
	pthread_mutex_unlock(&d->mu);
	return owed;
}

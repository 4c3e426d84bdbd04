/* A client's lease; see lease.h. */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "client/client.h"
#include "client/lease.h"

struct client_lease {
	strand_client *own; /* the renewing thread's */
	char id[32];
	int lease_s;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	int ended;
	int running; /* the thread was started */
	pthread_t thread;
};

static void *renew(void *arg)
{
	client_lease *l = arg;
	char path[96];

	snprintf(path, sizeof(path), "/v1/leases/%s/renew", l->id);
	pthread_mutex_lock(&l->mu);
	while (!l->ended) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		long ms = l->lease_s * 1000L / 4;
		until.tv_sec += ms / 1000;
		until.tv_nsec += (ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&l->wake, &l->mu, &until) == 0 || l->ended)
			continue;
		pthread_mutex_unlock(&l->mu);
		json_t *reply = NULL;
		long status = strand_request(l->own, "POST", path, NULL, &reply);
		json_decref(reply);
		pthread_mutex_lock(&l->mu);
		/* 404: it ran out (the program stood still): what it held is
		 * gone. No answer: the gateway restarts, and gives it its
		 * whole time again. */
		if (status == 404) {
			fprintf(stderr, "strand: lease %s ended: the gateway terminated what this program made\n",
			        l->id);
			l->ended = 1;
		}
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int client_lease_start(strand_client *c, const char *url, int lease_s, client_lease **out, char id[32])
{
	client_lease *l = calloc(1, sizeof(*l));
	json_t *body = json_pack("{s:i}", "lease_s", lease_s), *reply = NULL;
	pthread_condattr_t attr;
	long status;

	if (!l || !body || !(l->own = strand_client_new(url))) {
		json_decref(body);
		free(l);
		return -1;
	}
	status = strand_request(c, "POST", "/v1/leases", body, &reply);
	json_decref(body);
	if (status != 201 || !json_is_string(json_object_get(reply, "id"))) {
		json_decref(reply);
		strand_client_free(l->own);
		free(l);
		return -1;
	}
	snprintf(l->id, sizeof(l->id), "%s", json_string_value(json_object_get(reply, "id")));
	json_decref(reply);
	l->lease_s = lease_s;
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&l->thread, NULL, renew, l) != 0) {
		snprintf(id, 32, "%s", "");
		client_lease_end(l); /* deletes it: nothing holds it yet */
		return -1;
	}
	l->running = 1;
	snprintf(id, 32, "%s", l->id);
	*out = l;
	return 0;
}

void client_lease_end(client_lease *l)
{
	char path[64];
	json_t *reply = NULL;

	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->ended = 1;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->mu);
	if (l->running)
		pthread_join(l->thread, NULL);
	snprintf(path, sizeof(path), "/v1/leases/%s", l->id);
	strand_request(l->own, "DELETE", path, NULL, &reply);
	json_decref(reply);
	strand_client_free(l->own);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

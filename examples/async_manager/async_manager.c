/*
 * The Fiber AsyncManager demo: 4 managers, each hosting a CartPole-v1
 * environment (cartpole.so:CartPole), stepped with random actions, first
 * synchronously (one call, wait for it, the next), then asynchronously
 * (a call to each of the 4, then their results): the managers run in
 * parallel, so the second is clearly faster.
 *
 * A step of this C CartPole costs microseconds, less than a call's round
 * trip; a step of a Python gym environment costs far more. --substeps
 * integrates each step more finely (same physics) to give it the cost of
 * such a simulator; 1 is gym's CartPole-v1 exactly.
 *
 *   strand-example-async-manager [--url URL] [--steps N] [--substeps K]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "client/client.h"

#define ENVS 4

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(strand_client *c)
{
	fprintf(stderr, "strand-example-async-manager: %s\n", strand_client_error(c));
	return 1;
}

/* One step of env i; restarts its episode when it ends. */
static int done_of(json_t *r)
{
	return json_is_true(json_array_get(r, 2));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"url", required_argument, NULL, 'u'},
	        {"steps", required_argument, NULL, 's'},
	        {"substeps", required_argument, NULL, 'k'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	const char *url = NULL;
	int steps = 100, substeps = 100000, opt;
	char envs[ENVS][32], calls[ENVS][32];
	strand_client *c;
	json_t *r;
	double t0;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'u': url = optarg; break;
		case 's': steps = atoi(optarg); break;
		case 'k': substeps = atoi(optarg); break;
		case 'h':
			printf("usage: strand-example-async-manager [--url URL] [--steps N] [--substeps K]\n");
			return 0;
		default: return 2;
		}
	}
	c = strand_client_new(url);
	for (int i = 0; i < ENVS; i++)
		if (strand_manager_create(c, "cartpole.so:CartPole", NULL, envs[i]) != 0)
			return fail(c);
	for (int i = 0; i < ENVS; i++) {
		json_t *k = json_pack("[i]", substeps);
		int rc = strand_manager_call(c, envs[i], "configure", k, calls[i]) != 0 ||
		         strand_manager_get(c, envs[i], calls[i], 30, &r) != 0;
		json_decref(k);
		if (rc)
			return fail(c);
		json_decref(r);
		if (strand_manager_call(c, envs[i], "reset", NULL, calls[i]) != 0 ||
		    strand_manager_get(c, envs[i], calls[i], 30, &r) != 0)
			return fail(c);
		json_decref(r);
	}
	srand((unsigned)time(NULL));

	/* Synchronously: each call waits for its result before the next. */
	t0 = now();
	for (int s = 0; s < steps; s++) {
		for (int i = 0; i < ENVS; i++) {
			json_t *action = json_pack("[i]", rand() % 2);
			if (strand_manager_call(c, envs[i], "step", action, calls[i]) != 0 ||
			    strand_manager_get(c, envs[i], calls[i], 30, &r) != 0)
				return fail(c);
			json_decref(action);
			int ended = done_of(r);
			json_decref(r);
			if (ended) {
				if (strand_manager_call(c, envs[i], "reset", NULL, calls[i]) != 0 ||
				    strand_manager_get(c, envs[i], calls[i], 30, &r) != 0)
					return fail(c);
				json_decref(r);
			}
		}
	}
	printf("Sync manager took %.3fs\n", now() - t0);

	/* Asynchronously: a call to every manager, then the handles' results. */
	t0 = now();
	for (int s = 0; s < steps; s++) {
		int ended[ENVS] = {0};
		for (int i = 0; i < ENVS; i++) {
			json_t *action = json_pack("[i]", rand() % 2);
			if (strand_manager_call(c, envs[i], "step", action, calls[i]) != 0)
				return fail(c);
			json_decref(action);
		}
		for (int i = 0; i < ENVS; i++) {
			if (strand_manager_get(c, envs[i], calls[i], 30, &r) != 0)
				return fail(c);
			ended[i] = done_of(r);
			json_decref(r);
		}
		for (int i = 0; i < ENVS; i++)
			if (ended[i] && strand_manager_call(c, envs[i], "reset", NULL, calls[i]) == 0 &&
			    strand_manager_get(c, envs[i], calls[i], 30, &r) == 0)
				json_decref(r);
	}
	printf("Async manager took %.3fs\n", now() - t0);
	for (int i = 0; i < ENVS; i++)
		strand_manager_shutdown(c, envs[i]);
	strand_client_free(c);
	return 0;
}

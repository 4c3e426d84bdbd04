/*
 * CartPole-v1 as a strand manager type (cartpole.so:CartPole): the classic
 * control problem of gym, same physics and limits, so that an AsyncManager
 * can hold a simulator's state as in the Fiber demo.
 *
 *   reset()             -> observation [x, x_dot, theta, theta_dot]
 *   step(action)        -> [observation, reward, done]   action 0 (left) or 1 (right)
 *   configure(substeps) -> integrate each step in that many finer steps
 *
 * With 1 substep (the default) this is gym's CartPole-v1 exactly. More
 * substeps integrate the same physics more finely, and give a step the
 * cost of a heavier simulator, which is what the AsyncManager demo is about.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strand_plugin.h"

typedef struct cartpole {
	double x, x_dot, theta, theta_dot;
	int steps;
	int substeps;
	int done;
	uint64_t rng;
} cartpole;

strand_manager_new_fn CartPole_new;
strand_manager_call_fn CartPole_call;
strand_manager_free_fn CartPole_free;

static double uniform(cartpole *c, double lo, double hi)
{
	c->rng ^= c->rng << 13, c->rng ^= c->rng >> 7, c->rng ^= c->rng << 17;
	return lo + (hi - lo) * (double)(c->rng >> 11) / 9007199254740992.0;
}

static int observation(const cartpole *c, char **out, const char *suffix)
{
	return asprintf(out, "%s[%.6f,%.6f,%.6f,%.6f]%s", suffix[0] ? "[" : "", c->x, c->x_dot, c->theta, c->theta_dot,
	                suffix) < 0;
}

void *CartPole_new(void)
{
	cartpole *c = calloc(1, sizeof(*c));
	struct timespec ts;

	if (!c)
		return NULL;
	clock_gettime(CLOCK_REALTIME, &ts);
	c->rng = ((uint64_t)ts.tv_nsec << 20 ^ (uint64_t)(uintptr_t)c) | 1;
	c->done = 1; /* reset() first, as gym asks */
	c->substeps = 1;
	return c;
}

void CartPole_free(void *self)
{
	free(self);
}

int CartPole_call(void *self, const char *method, const char *args, char **out)
{
	cartpole *c = self;

	if (strcmp(method, "reset") == 0) {
		c->x = uniform(c, -0.05, 0.05);
		c->x_dot = uniform(c, -0.05, 0.05);
		c->theta = uniform(c, -0.05, 0.05);
		c->theta_dot = uniform(c, -0.05, 0.05);
		c->steps = 0;
		c->done = 0;
		return observation(c, out, "");
	}
	if (strcmp(method, "configure") == 0) {
		int n = atoi(args + 1); /* args is "[N]" */
		c->substeps = n >= 1 && n <= 10000000 ? n : 1;
		return (*out = strdup("null")) == NULL;
	}
	if (strcmp(method, "step") == 0) {
		/* gym's CartPole-v1: Euler integration over tau */
		const double gravity = 9.8, masscart = 1.0, masspole = 0.1, length = 0.5, force_mag = 10.0;
		const double total_mass = masspole + masscart, polemass_length = masspole * length;
		const double tau = 0.02 / c->substeps;
		int action = atoi(args + 1); /* args is "[A]" */
		double force = action == 1 ? force_mag : -force_mag;
		char tail[64];

		if (c->done) {
			*out = strdup("step() after the episode ended: call reset()");
			return 1;
		}
		for (int k = 0; k < c->substeps; k++) {
			double costheta = cos(c->theta), sintheta = sin(c->theta);
			double temp = (force + polemass_length * c->theta_dot * c->theta_dot * sintheta) / total_mass;
			double thetaacc = (gravity * sintheta - costheta * temp) /
			                  (length * (4.0 / 3.0 - masspole * costheta * costheta / total_mass));
			double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
			c->x += tau * c->x_dot;
			c->x_dot += tau * xacc;
			c->theta += tau * c->theta_dot;
			c->theta_dot += tau * thetaacc;
		}
		c->steps++;
		c->done = c->x < -2.4 || c->x > 2.4 || c->theta < -12 * 2 * M_PI / 360 ||
		          c->theta > 12 * 2 * M_PI / 360 || c->steps >= 500;
		snprintf(tail, sizeof(tail), ",1.0,%s]", c->done ? "true" : "false");
		return observation(c, out, tail);
	}
	if (asprintf(out, "CartPole has no method %s", method) < 0)
		*out = NULL;
	return 1;
}

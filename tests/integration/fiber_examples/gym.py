"""Stands in for gym, which Debian does not package: CartPole-v1 in pure
Python with gym's physics (the cart-pole of Barto, Sutton and Anderson),
enough for Fiber's AsyncManager demo (gym.make, reset, step,
action_space.sample). Its random numbers come from its own seeded
generator, so two environments given the same calls agree exactly."""

import math
import random


class Discrete:
    def __init__(self, n, rng):
        self.n, self._rng = n, rng

    def sample(self):
        return self._rng.randrange(self.n)


class CartPoleEnv:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def __init__(self, seed=0):
        self._rng = random.Random(seed)
        self.action_space = Discrete(2, random.Random(seed + 1))
        self.total_mass = self.masspole + self.masscart
        self.polemass_length = self.masspole * self.length
        self.state = None

    def reset(self):
        self.state = tuple(self._rng.uniform(-0.05, 0.05) for _ in range(4))
        return self.state

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.polemass_length * theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * xacc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        done = abs(x) > self.x_threshold or abs(theta) > self.theta_threshold
        return self.state, 1.0, done, {}


def make(name, seed=0):
    if name != "CartPole-v1":
        raise KeyError("this stand-in for gym has CartPole-v1 only, not %s" % name)
    return CartPoleEnv(seed)

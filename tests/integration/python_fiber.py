"""Fiber's own examples (its README, docs and examples/) run on strand with
only the import changed: `import strand.fiber as fiber`, `from
strand.fiber.managers import ...`. Each asserts exact results. gym's
CartPole comes from fiber_examples/gym.py (pure Python, gym's physics),
which the gateway's workers import too (python_pool.sh puts it on their
PYTHONPATH)."""

import io
import random
import sys
import time
import unittest
from contextlib import redirect_stdout
from functools import partial

import gym

import strand.fiber as fiber
from strand.fiber import Pipe, Pool, Process, SimpleQueue
from strand.fiber.managers import AsyncManager, BaseManager, SyncManager


# ---- README: Hello Fiber; Estimating Pi ---------------------------------


@fiber.meta(cpu=1)
def inside(p):
    x, y = random.random(), random.random()
    return x * x + y * y < 1


def estimate_pi():
    NUM_SAMPLES = int(1e6)
    pool = fiber.Pool(processes=4)
    results = pool.map(inside, range(0, NUM_SAMPLES))
    count = sum(results)
    pool.terminate()
    return len(results), 4.0 * count / NUM_SAMPLES


# ---- examples/basic_queue.py, the docs' Pipe -----------------------------


def foo(q, a, b):
    q.put(a + b)


def f(conn):
    conn.send([42, None, "hello"])
    conn.close()


# ---- examples/shared_data.py (the customized manager) -------------------


class MathsClass:
    def add(self, x, y):
        return x + y

    def mul(self, x, y):
        return x * y


class MyManager(BaseManager):
    pass


# ---- examples/async_manager.py ------------------------------------------

NUM_ENVS = 4
STEPS = 60


class EnvSyncManager(SyncManager):
    pass


class EnvAsyncManager(AsyncManager):
    pass


def run_envs(EnvManager, asynchronous):
    """async_manager.py's loop, its actions drawn from one seeded
    generator; returns every step's observation, reward and done."""
    create_cart_pole = partial(gym.make, "CartPole-v1")
    local_env = create_cart_pole()
    EnvManager.register("CartPoleEnv", create_cart_pole)

    managers = [EnvManager() for i in range(NUM_ENVS)]
    [manager.start() for manager in managers]

    envs = [manager.CartPoleEnv() for manager in managers]
    [env.reset() for env in envs]

    trace = []
    for i in range(STEPS):
        actions = [local_env.action_space.sample() for _ in range(len(envs))]
        if asynchronous:
            handles = [env.step(action) for env, action in zip(envs, actions)]
            results = [handle.get() for handle in handles]
        else:
            results = [env.step(action) for env, action in zip(envs, actions)]
        for j in range(len(results)):
            observation, reward, done, info = results[j]
            trace.append((j, observation, reward, done))
            if done:
                envs[j].reset()
    [manager.shutdown() for manager in managers]
    return trace


def local_trace():
    """The same run with the environments in this process."""
    local_env = gym.make("CartPole-v1")
    envs = [gym.make("CartPole-v1") for _ in range(NUM_ENVS)]
    [env.reset() for env in envs]
    trace = []
    for i in range(STEPS):
        actions = [local_env.action_space.sample() for _ in range(len(envs))]
        for j, (env, action) in enumerate(zip(envs, actions)):
            observation, reward, done, info = env.step(action)
            trace.append((j, observation, reward, done))
            if done:
                env.reset()
    return trace


# ---- error handling -------------------------------------------------------


class TaskError(Exception):
    pass


def fails_on_seven(x):
    if x == 7:
        raise TaskError("seven is not allowed")
    return x * 2


class FiberExamples(unittest.TestCase):
    def test_hello_fiber(self):
        p = fiber.Process(target=print, args=("Hello, Fiber!",))
        p.start()
        p.join()
        self.assertEqual(p.exitcode, 0)
        self.assertIn("Hello, Fiber!\n", p.logs())

    def test_estimating_pi(self):
        n, pi = estimate_pi()
        self.assertEqual(n, 1000000)
        self.assertTrue(3.13 < pi < 3.15, pi)

    def test_meta_sizes_the_process(self):
        p = Process(target=inside, args=(0,))
        p.start()
        p.join()
        view = p._gw.request("GET", "/v1/processes/%s" % p.id)
        self.assertEqual(view["spec"]["resources"], {"cpu": 1})

    def test_process_and_simple_queue(self):
        q = SimpleQueue()
        p = Process(target=foo, args=(q, 42, 21))
        p.start()
        self.assertEqual(q.get(timeout=60), 63)
        p.join()
        self.assertEqual(p.exitcode, 0)

    def test_pipe(self):
        parent_conn, child_conn = Pipe()
        p = Process(target=f, args=(child_conn,))
        p.start()
        self.assertEqual(parent_conn.recv(timeout=60), [42, None, "hello"])
        p.join()
        self.assertEqual(p.exitcode, 0)

    def test_manager_dict_and_list(self):
        with fiber.Manager() as manager:
            d = manager.dict()
            l = manager.list(range(10))
            d[1] = "1"
            d["2"] = 2
            d[0.25] = None
            l.reverse()
            self.assertEqual(d.copy(), {1: "1", "2": 2, 0.25: None})
            self.assertEqual(list(l), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
            self.assertEqual(str(d), "{1: '1', '2': 2, 0.25: None}")
            # A managed list inside a managed dict stays managed.
            d[3] = manager.list([1])
            d[3][0] += 1
            self.assertEqual(list(d[3]), [2])

    def test_customized_manager(self):
        MyManager.register("Maths", MathsClass)
        with MyManager() as manager:
            maths = manager.Maths()
            self.assertEqual(maths.add(4, 3), 7)
            self.assertEqual(maths.mul(7, 8), 56)

    def test_async_manager_cartpole(self):
        expected = local_trace()
        self.assertEqual(run_envs(EnvSyncManager, False), expected)
        self.assertEqual(run_envs(EnvAsyncManager, True), expected)
        # The demo's episodes end and restart along the way.
        self.assertTrue(any(done for _, _, _, done in expected))

    def test_pool_error_handling(self):
        pool = Pool(processes=2)
        try:
            self.assertEqual(pool.map(fails_on_seven, range(5)), [0, 2, 4, 6, 8])
            with self.assertRaises(TaskError) as caught:
                pool.map(fails_on_seven, range(10))
            self.assertEqual(str(caught.exception), "seven is not allowed")
            self.assertIn("in fails_on_seven", str(caught.exception.__cause__))
            # The pool lives on after a task's exception.
            self.assertEqual(pool.apply(fails_on_seven, (4,)), 8)
        finally:
            pool.terminate()


if __name__ == "__main__":
    sys.exit(unittest.main(verbosity=2))

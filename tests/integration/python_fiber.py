"""Fiber's own examples (its README, docs and examples/) run on strand with
only the import changed: `import strand.fiber as fiber`, `from
strand.fiber.managers import ...`. Each asserts exact results. gym's
CartPole comes from fiber_examples/gym.py (pure Python, gym's physics),
which the gateway's workers import too (python_pool.sh puts it on their
PYTHONPATH)."""

import collections
import io
import multiprocessing
import multiprocessing.connection
import os
import pickle
import random
import sys
import tempfile
import time
import unittest
from contextlib import redirect_stderr, redirect_stdout
from functools import partial

import gym

import strand
import task_children

import strand.fiber as fiber
from strand.fiber import Pipe, Pool, Process, SimpleQueue
from strand.fiber.managers import AsyncManager, BaseManager, SyncManager

# python_docker.sh and python_k8s.sh run IN_CONTAINERS with every worker,
# process and manager in a container of the backend named here.
if os.environ.get("STRAND_TEST_BACKEND"):
    strand.init(backend=os.environ["STRAND_TEST_BACKEND"], image=os.environ["STRAND_TEST_IMAGE"])
IN_CONTAINERS = [
    "FiberExamples." + name
    for name in (
        "test_hello_fiber",
        "test_estimating_pi",
        "test_process_and_simple_queue",
        "test_pipe",
        "test_manager_dict_and_list",
        "test_proxies_inside_a_process",
        "test_proxies_inside_a_pool_task",
        "test_async_manager_cartpole",
        "test_pool_error_handling",
    )
] + ["TaskChildren.test_multiprocessing_children_of_a_task", "FiberSurface.test_ring_sgd_without_torch"]


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


def prints_three():
    print("one")
    print("two", file=sys.stderr)
    sys.stdout.write("three, no newline")


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


# ---- examples/shared_data.py (the standard manager, from a Process) -----


def bump_shared(ns, ls, di):
    """shared_data.py's f: managed objects changed inside a Process."""
    ns.x += 1
    ns_z = ns.z
    ns_z[0] += 1
    ns.z = ns_z
    ls[0] += 1
    ls[1][0] += 1  # unmanaged, not assigned back: the change stays here
    ls[2][0] += 1  # managed: the change reaches its manager
    di["n"] += 1


def calls_from_a_task(args):
    """A pool task's calls on proxies it was given: a value past 1 MiB
    both ways, a method that raises, and an AsyncManager's handle."""
    d, calc, big = args
    d["big"] = big
    back = d["big"]
    try:
        d["missing"]
        raised = None
    except KeyError as e:
        raised = repr(e)
    handle = calc.add(40, 2)
    return len(back), back[:4] == big[:4], raised, handle.ready(), handle.get()


class Calculator:
    def add(self, x, y):
        return x + y


class CalcManager(AsyncManager):
    pass


CalcManager.register("Calculator", Calculator)


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


HELLO_PROGRAM = """
import strand.fiber as fiber

if __name__ == "__main__":
    p = fiber.Process(target=print, args=("Hello, Fiber!",))
    p.start()
    p.join()
"""


class FiberExamples(unittest.TestCase):
    def test_hello_fiber_as_a_program_says_nothing_else(self):
        # Run to its exit as a program of its own: the one line its Process
        # printed on stdout, nothing on stderr.
        import subprocess

        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        done = subprocess.run(
            [sys.executable, "-c", HELLO_PROGRAM], env=env, capture_output=True, text=True, timeout=120
        )
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        self.assertRegex(done.stdout, r"^\(r-[0-9a-f]{16}\) Hello, Fiber!\n$")

    def test_hello_fiber(self):
        # What it prints is shown in the program before join() returns,
        # after its id, as a pool's output is; and stays in its log.
        out = io.StringIO()
        with redirect_stdout(out):
            p = fiber.Process(target=print, args=("Hello, Fiber!",))
            p.start()
            p.join()
            shown = out.getvalue()
        self.assertEqual(p.exitcode, 0)
        self.assertEqual(shown, "(%s) Hello, Fiber!\n" % p.id)
        self.assertIn("Hello, Fiber!\n", p.logs())

    def test_a_process_output_both_streams_and_its_last_line(self):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            p = Process(target=prints_three)
            p.start()
            p.join()
            shown = (out.getvalue(), err.getvalue())
        self.assertEqual(p.exitcode, 0)
        self.assertEqual(shown, ("(%s) one\n(%s) three, no newline\n" % (p.id, p.id), "(%s) two\n" % p.id))
        # Its queue is gone once every line was shown.
        with self.assertRaises(strand.StrandError) as gone:
            p._gw.request("GET", "/v1/queues/%s" % p._lines.id)
        self.assertEqual(gone.exception.status, 404)

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

    def test_cpu_per_job_sizes_a_job_and_a_workers_share(self):
        # A Process is a Fiber job of cpu_per_job CPUs and mem_per_job
        # MiB (@meta over them); a Pool's workers are Fiber's cpu_per_job
        # to a job (fewer in a smaller pool), each sized as its share.
        def resources(kind, made):
            view = made._gw.request("GET", "/v1/%s/%s" % (kind, made.id))
            asked = view["spec"].get("resources") if kind == "processes" else view.get("resources")
            return {k: v for k, v in (asked or {}).items() if v} or None  # a pool's shows "gpu": 0

        fiber.init(cpu_per_job=3, mem_per_job=3000)
        try:
            plain = Process(target=prints_three)
            marked = Process(target=inside, args=(0,))
            for p in (plain, marked):
                p.start()
            for p in (plain, marked):
                p.join()
            self.assertEqual(resources("processes", plain), {"cpu": 3, "memory_mb": 3000})
            self.assertEqual(resources("processes", marked), {"cpu": 1, "memory_mb": 3000})
            # (What they ask, not what runs: the local backend makes
            # memory_mb an address-space limit, which a sanitizer's
            # shadow memory is past.)
            for processes, share in ((2, {"cpu": 1.5, "memory_mb": 1500}), (4, {"cpu": 1, "memory_mb": 1000})):
                pool = Pool(processes)
                try:
                    self.assertEqual(resources("pools", pool), share)
                finally:
                    pool.terminate()
        finally:
            fiber.reset()
        pool = Pool(1)
        try:
            self.assertIsNone(resources("pools", pool))
        finally:
            pool.terminate()

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
            # Printed, it shows the inner proxy as multiprocessing does
            # (the manager's repr of the dict reprs the proxy it holds).
            self.assertRegex(str(d), r"^\{1: '1', '2': 2, 0\.25: None, 3: <ListProxy object, typeid 'list' at 0x[0-9a-f]+>\}$")
            self.assertRegex(repr(l), r"^<ListProxy object, typeid 'list' at 0x[0-9a-f]+>$")

    def test_proxies_inside_a_process(self):
        with fiber.Manager() as manager:
            ns = manager.Namespace()
            ns.x, ns.z = 1, [1]
            ls = manager.list([1, [1], manager.list([1])])
            di = manager.dict({"n": 1})
            p = Process(target=bump_shared, args=(ns, ls, di))
            p.start()
            p.join()
            self.assertEqual(p.exitcode, 0, p.logs())
            self.assertEqual((ns.x, ns.z), (2, [2]))
            self.assertEqual((ls[0], ls[1], list(ls[2])), (2, [1], [2]))
            self.assertEqual(di["n"], 2)

    def test_proxies_inside_a_pool_task(self):
        big = os.urandom(3 << 20)  # past 1 MiB pickled: a value, both ways
        calc_manager = CalcManager()
        calc_manager.start()
        try:
            with fiber.Manager() as manager:
                d = manager.dict()
                calc = calc_manager.Calculator()
                pool = Pool(1)
                try:
                    got = pool.apply(calls_from_a_task, ((d, calc, big),))
                finally:
                    pool.terminate()
                self.assertEqual(got, (3 << 20, True, "KeyError('missing')", True, 42))
                self.assertEqual(d["big"], big)
        finally:
            calc_manager.shutdown()

    def test_a_call_on_a_manager_gone_says_so(self):
        manager = fiber.Manager()
        d = manager.dict()
        manager.shutdown()
        pool = Pool(1)
        try:
            with self.assertRaises(strand.RemoteError) as raised:
                pool.apply(len, (d,))
        finally:
            pool.terminate()
        self.assertIn("a call on manager %s failed" % manager.id, str(raised.exception))

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


# ---- Fiber's surface: its modules and names --------------------------------


def name_of_current(q):
    q.put((fiber.current_process().name, fiber.current_process().authkey))


def names_of_current(_):
    """What strand's and multiprocessing's current_process() say here."""
    mine = multiprocessing.current_process()
    return fiber.current_process().name, mine.name, mine._identity


def names_to(q):
    q.put(names_of_current(None))


def pid_of_current(q):
    q.put(fiber.current_process().pid)


def wait_for_word(q_in, q_out):
    q_out.put(q_in.get(timeout=60))


def echo_until_none(q_in, q_out, tag):
    while (item := q_in.get(timeout=60)) is not None:
        q_out.put((tag, item))


def flaky(x):
    """Fails about a third of its runs: error_handling runs it again."""
    if random.random() < 0.35:
        raise TaskError("flaked on %d" % x)
    return x


def ring_initializer(ring):
    global RING_SEEN
    master = ring.members[0]
    RING_SEEN = (ring.rank, master.ip, master.port)


def ring_member(q, rank, size):
    q.put((rank, size, RING_SEEN))


class TaskChildren(unittest.TestCase):
    """A task's own processes reach the queues and managers it was given
    (through its runtime), and what they print is the pool's output."""

    def test_multiprocessing_children_of_a_task(self):
        with fiber.Manager() as manager:
            for method in ("fork", "spawn"):
                q, d = SimpleQueue(), manager.dict()
                pool = Pool(1)
                try:
                    self.assertEqual(pool.apply(task_children.with_children, ((q, d, method),)), [0, 0])
                finally:
                    pool.terminate()
                self.assertEqual(sorted(q.get(timeout=60) for _ in range(2)), [("child", 0), ("child", 1)])
                self.assertEqual(d.copy(), {0: 0, 1: 1}, method)

    def test_a_process_waits_for_its_children(self):
        reader, writer = Pipe()
        p = Process(target=task_children.leaves_a_child, args=(writer,))
        p.start()
        self.assertEqual(reader.recv(timeout=60), b"from the child")
        p.join()
        self.assertEqual(p.exitcode, 0)

    def test_subprocesses_print_to_the_pool_output(self):
        pool = Pool(1)
        try:
            self.assertEqual(pool.apply(task_children.with_subprocesses, (None,)), "done")
            self.assertEqual(pool.apply(abs, (-3,)), 3)  # the runtime goes on
            deadline = time.monotonic() + 30
            while True:
                page = pool._gw.request("GET", "/v1/pools/%s/logs" % pool.id)
                texts = [line["text"] for line in page["lines"]]
                if "read:." in texts or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        finally:
            pool.terminate()
        for text in ("from a subprocess", "from a shell", "read:."):
            self.assertIn(text, texts)


class FiberSurface(unittest.TestCase):
    def test_modules_as_fiber_has_them(self):
        import strand.fiber.config
        import strand.fiber.experimental
        import strand.fiber.managers
        import strand.fiber.meta
        import strand.fiber.pool
        import strand.fiber.process
        import strand.fiber.queues

        self.assertIs(strand.fiber.pool.Pool, fiber.Pool)
        self.assertIs(strand.fiber.process.Process, fiber.Process)
        self.assertIs(strand.fiber.queues.SimpleQueue, fiber.SimpleQueue)
        # Fiber's two kinds of queue, each a SimpleQueue.
        self.assertTrue(issubclass(strand.fiber.queues.SimpleQueuePush, fiber.SimpleQueue))
        self.assertTrue(issubclass(strand.fiber.queues.SimpleQueuePull, fiber.SimpleQueue))
        self.assertIs(strand.fiber.experimental.Ring, strand.fiber.experimental.ring.Ring)
        self.assertEqual(fiber.cpu_count(), os.cpu_count())
        for name in ("Process", "Pool", "SimpleQueue", "Pipe", "Manager", "current_process", "active_children",
                     "cpu_count", "get_context", "init", "reset", "meta"):
            self.assertTrue(callable(getattr(fiber, name)), name)

    def test_a_push_queue_deals_in_turn(self):
        # Fiber's SimpleQueuePush deals its items to its readers in turn:
        # four readers get exactly a quarter each, and each item once.
        import strand.fiber.queues

        q_in, q_out = strand.fiber.queues.SimpleQueuePush(), strand.fiber.queues.SimpleQueuePush()
        self.assertIsInstance(q_in, SimpleQueue)
        readers = [Process(target=echo_until_none, args=(q_in, q_out, i)) for i in range(4)]
        for p in readers:
            p.start()
        gw = strand.gateway.default()
        deadline = time.monotonic() + 60
        while gw.request("GET", "/v1/queues/%s" % q_in.id)["waiting_readers"] < 4:
            self.assertLess(time.monotonic(), deadline, "the four readers did not ask within 60 s")
            time.sleep(0.05)
        for item in range(400):
            q_in.put(item)
        got = [q_out.get(timeout=60) for _ in range(400)]
        for _ in readers:
            q_in.put(None)  # one each, in turn
        for p in readers:
            p.join()
            self.assertEqual(p.exitcode, 0)
        self.assertEqual(sorted(item for _, item in got), list(range(400)))
        self.assertEqual(sorted(collections.Counter(tag for tag, _ in got).items()), [(i, 100) for i in range(4)])

    def test_simple_queue_kind_follows_use_push_queue(self):
        import strand.fiber.queues

        push = SimpleQueue()
        self.assertIsInstance(push, strand.fiber.queues.SimpleQueuePush)
        gw = strand.gateway.default()
        self.assertEqual(gw.request("GET", "/v1/queues/%s" % push.id)["kind"], "turns")
        fiber.config.use_push_queue = False
        try:
            pull = SimpleQueue()
        finally:
            fiber.config.use_push_queue = True
        self.assertIsInstance(pull, strand.fiber.queues.SimpleQueuePull)
        self.assertEqual(gw.request("GET", "/v1/queues/%s" % pull.id)["kind"], "queue")
        # A queue handed to a Process keeps its kind.
        self.assertIs(type(pickle.loads(pickle.dumps(push))), strand.fiber.queues.SimpleQueuePush)

    def test_current_process_and_children(self):
        main = fiber.current_process()
        self.assertEqual(main.name, "MainProcess")
        q = SimpleQueue()
        p = Process(target=name_of_current, args=(q,), name="reporter")
        p.start()
        self.assertEqual(q.get(timeout=60), ("reporter", main.authkey))  # the authkey is inherited
        p.join()
        # Its pid is the one its caller sees (on the local backend, the
        # host's, which its sandbox's pid namespace hides from it).
        by_pid = Process(target=pid_of_current, args=(q,))
        by_pid.start()
        self.assertEqual(q.get(timeout=60), by_pid.pid)
        self.assertIsInstance(by_pid.pid, int)
        by_pid.join()
        go, back = SimpleQueue(), SimpleQueue()
        waiting = Process(target=wait_for_word, args=(go, back))
        waiting.start()
        self.assertIn(waiting, fiber.active_children())
        self.assertNotIn(p, fiber.active_children())
        go.put("done")
        self.assertEqual(back.get(timeout=60), "done")
        # Its sentinel is ready once it has ended, as multiprocessing's.
        self.assertEqual(multiprocessing.connection.wait([waiting.sentinel], timeout=60), [waiting.sentinel])
        self.assertEqual(waiting.exitcode, 0)
        self.assertEqual(fiber.active_children(), [])

    def test_multiprocessing_names_a_process_and_a_pool_worker(self):
        # As in multiprocessing's child and pool worker: programs tell their
        # workers apart by current_process()._identity (a GPU each, say).
        q = SimpleQueue()
        p = Process(target=names_to, args=(q,))
        p.start()
        number = int(p.name.split("-")[1])
        self.assertEqual(q.get(timeout=60), (p.name, p.name, (number,)))
        p.join()
        named = Process(target=names_to, args=(q,), name="reporter")
        named.start()
        self.assertEqual(q.get(timeout=60), ("reporter", "reporter", (number + 1,)))
        named.join()
        pool = Pool(2)
        try:
            seen = set(pool.map(names_of_current, range(40), chunksize=1))
        finally:
            pool.terminate()
        self.assertTrue(seen)
        for name, mp_name, identity in seen:
            self.assertIn(identity, [(1,), (2,)])
            self.assertEqual((name, mp_name), ("PoolWorker-%d" % identity[0],) * 2)

    def test_get_context_and_timeout(self):
        ctx = fiber.get_context("spawn")
        self.assertEqual(ctx.get_start_method(), "spawn")
        pool = ctx.Pool(1)
        try:
            self.assertEqual(pool.map(abs, [-1, -2]), [1, 2])
            slow = pool.apply_async(time.sleep, (3,))
            with self.assertRaises(multiprocessing.TimeoutError):
                slow.get(0.2)
            self.assertIsNone(slow.get(60))
        finally:
            pool.terminate()

    def test_config(self):
        import logging
        import warnings

        cwd = os.getcwd()
        with tempfile.TemporaryDirectory() as root:
            os.chdir(root)
            try:
                with open(".fiberconfig", "w") as f:
                    f.write("[default]\nlog_level = debug\nkubernetes_namespace = ml\n")
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    fiber.reset()
                self.assertEqual(fiber.config.log_level, logging.DEBUG)
                self.assertEqual(fiber.config.get_dict()["kubernetes_namespace"], "ml")
                self.assertEqual(fiber.config.get_object().log_level, logging.DEBUG)
                with open("other_config", "w") as f:
                    f.write("[default]\nimage = demo:1\nmem_per_job = 512\nipc_active = false\n")
                other = fiber.config.Config(conf_file="other_config")  # read as Fiber's Config reads one
                self.assertEqual((other.image, other.mem_per_job, other.ipc_active), ("demo:1", 512, False))
                self.assertTrue(any("'log_level' has no meaning on strand" in str(w.message) for w in caught))
                with self.assertRaises(ValueError):
                    fiber.init(no_such_key=1)
                # What the settings say of images reaches strand's defaults
                # as the package is imported.
                gw = strand.gateway.default()
                was = gw.image
                with open(".fiberconfig", "a") as f:
                    f.write("default_image = demo:2\n")
                fiber.config.init()
                fiber._apply_settings()
                self.assertEqual(gw.image, "demo:2")
                gw.image = was
                with open(".fiberconfig", "a") as f:
                    f.write("bogus = 1\n")
                with self.assertRaises(ValueError) as bad:
                    fiber.reset()
                self.assertIn('unknown config key "bogus"', str(bad.exception))
            finally:
                os.chdir(cwd)
        fiber.reset()
        self.assertEqual(fiber.config.log_level, logging.INFO)

    def test_meta_on_a_pool_function_is_said(self):
        import warnings

        pool = fiber.Pool(1)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.assertEqual(pool.map(inside, [0])[0] in (True, False), True)
                pool.apply(inside, (0,))
            said = [str(w.message) for w in caught if "(@meta)" in str(w.message)]
            self.assertEqual(len(said), 1)  # once a pool
            self.assertIn("asks {'cpu': 1} (@meta), but a Pool's workers are sized when the pool is made", said[0])
        finally:
            pool.terminate()

    def test_error_handling_runs_failed_tasks_again(self):
        pool = fiber.Pool(2, error_handling=True)
        try:
            pool.start_workers()
            pool.wait_until_workers_up()
            self.assertEqual(pool.map(flaky, range(60), chunksize=1), list(range(60)))
            self.assertEqual(sorted(pool.imap_unordered(flaky, range(30))), list(range(30)))
        finally:
            pool.terminate()

    def test_ring_sgd_without_torch(self):
        # examples/python/ring_sgd.py: Fiber's ring example, its all-reduce
        # over sockets; every member ends with the same fitted line.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
        import ring_sgd
        from strand.fiber.experimental import Ring

        q = SimpleQueue()
        Ring(3, partial(ring_sgd.run_sgd, report=q), ring_sgd.ring_init).run()
        got = sorted(q.get(timeout=60) for _ in range(3))
        self.assertEqual([rank for rank, _, _ in got], [0, 1, 2])
        self.assertEqual(len({(w, b) for _, w, b in got}), 1)  # the very same floats
        _, w, b = got[0]
        self.assertAlmostEqual(w, 3, delta=0.05)
        self.assertAlmostEqual(b, 2, delta=0.05)

    def test_ring(self):
        from strand.fiber.experimental import Ring

        q = SimpleQueue()
        Ring(3, partial(ring_member, q), ring_initializer).run()
        got = sorted(q.get(timeout=60) for _ in range(3))
        self.assertEqual([(rank, size, seen[0]) for rank, size, seen in got], [(0, 3, 0), (1, 3, 1), (2, 3, 2)])
        masters = {seen[1:] for _, _, seen in got}
        self.assertEqual(len(masters), 1)  # one master address and port for all
        ip, port = masters.pop()
        self.assertTrue(ip and port > 0)


if __name__ == "__main__":
    names = sys.argv[1:] or (IN_CONTAINERS if os.environ.get("STRAND_TEST_BACKEND") else [])
    sys.exit(unittest.main(verbosity=2, argv=sys.argv[:1] + names))

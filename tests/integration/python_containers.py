"""The Python client's scenarios with every worker, process and manager in
a container of strand-worker-python, on the backend STRAND_TEST_BACKEND
names (python_docker.sh and python_k8s.sh build the image and start the
gateway): a program with its own package and data files, a map of a
closure, an exception raised again, a Process with a SimpleQueue and a
Pipe, a Manager's dict, an AsyncManager's handles, values of 64 MiB each way and a map over 100
MB of distinct values, large queue items and a shared object, a named map
counted and failed by input, and a killed program's pool ended. Exact
results."""

import hashlib
import os
import sys
import tempfile
import unittest

import code_project
import strand

strand.init(backend=os.environ["STRAND_TEST_BACKEND"], image=os.environ["STRAND_TEST_IMAGE"])


class Boom(Exception):
    pass


def explode(x):
    raise Boom("boom %d" % x)


def _sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def explode_some(x):
    if x == 13:
        raise Boom("input %d" % x)
    return -x


def relay_big(q, out):
    out.put(q.get(timeout=60)[::-1])


# A program killed outright: its pool ends with its lease (10 s).
KILLED_PROGRAM = """
import json, os, time
import strand
strand.init(backend=os.environ["STRAND_TEST_BACKEND"], image=os.environ["STRAND_TEST_IMAGE"])
pool = strand.Pool(1)
print(json.dumps({"pool": pool.id}), flush=True)
time.sleep(300)
"""


def add_to(q, a, b):
    q.put(a + b)


def echo_twice(conn):
    conn.send(conn.recv(timeout=60) * 2)


class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n


class CounterManager(strand.AsyncManager):
    pass


CounterManager.register("Counter", Counter)


class PythonInContainers(unittest.TestCase):
    def test_program_with_its_code_and_data(self):
        # Fetched from the hub by each container: no file system shared.
        with tempfile.TemporaryDirectory() as root:
            code_project.check(self, root)

    def test_pool(self):
        k = 3
        with strand.Pool(2) as pool:
            self.assertEqual(pool.map(lambda x: x * k, range(100)), [x * 3 for x in range(100)])
            self.assertEqual(sorted(pool.imap_unordered(abs, range(-5, 5))), sorted(abs(x) for x in range(-5, 5)))
            with self.assertRaises(Boom) as caught:
                pool.apply(explode, (7,))
            self.assertEqual(str(caught.exception), "boom 7")
            view = pool._gw.request("GET", "/v1/pools/%s" % pool.id)
            self.assertEqual(
                (view["backend"], view["image"]), (os.environ["STRAND_TEST_BACKEND"], os.environ["STRAND_TEST_IMAGE"])
            )

    def test_process_queue_and_pipe(self):
        q = strand.SimpleQueue()
        p = strand.Process(target=add_to, args=(q, 42, 21))
        p.start()
        self.assertEqual(q.get(timeout=60), 63)
        p.join()
        self.assertEqual(p.exitcode, 0)
        a, b = strand.Pipe()
        p = strand.Process(target=echo_twice, args=(b,))
        p.start()
        a.send("ab")
        self.assertEqual(a.recv(timeout=60), "abab")
        p.join()
        self.assertEqual(p.exitcode, 0)

    def test_named_map_counts_and_fails_by_input(self):
        gw = strand.gateway.default()
        with strand.Pool(2) as pool:
            r = pool.map_async(explode_some, range(40), chunksize=10, name="scores")
            with self.assertRaises(Boom) as caught:
                r.get(timeout=120)
            self.assertIn("(strand: input 13 of the map)", caught.exception.__notes__)
            job = gw.request("GET", "/v1/jobs/%s" % r._job)
            self.assertEqual((job["name"], job["total"], job["done"], job["failed"]), ("scores", 40, 40, 1))
            failures = gw.request("GET", "/v1/jobs/%s/failures" % r._job)["items"]
            self.assertEqual([(f["index"], f["task"]) for f in failures], [(13, 1)])

    def test_a_killed_program_ends_its_pool(self):
        import json
        import signal
        import subprocess
        import time

        gw = strand.gateway.default()
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        child = subprocess.Popen([sys.executable, "-c", KILLED_PROGRAM], env=env, stdout=subprocess.PIPE)
        pool = json.loads(child.stdout.readline())["pool"]
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        deadline = time.time() + 60
        while gw.request("GET", "/v1/pools/" + pool)["state"] != "terminated" and time.time() < deadline:
            time.sleep(0.5)
        self.assertEqual(gw.request("GET", "/v1/pools/" + pool)["state"], "terminated")

    def test_large_items_and_shared_objects(self):
        # A 12 MB item to a Process in a container and one back; an
        # object put once and taken by every task.
        data = os.urandom(12 << 20)
        q, out = strand.SimpleQueue(), strand.SimpleQueue()
        q.put(data)
        p = strand.Process(target=relay_big, args=(q, out))
        p.start()
        self.assertEqual(out.get(timeout=120), data[::-1])
        p.join()
        self.assertEqual(p.exitcode, 0)
        ref = strand.put(data)
        with strand.Pool(2) as pool:
            self.assertEqual(pool.map(lambda i: (_sha256_hex(ref), i), range(8), chunksize=1),
                             [(_sha256_hex(data), i) for i in range(8)])
        ref.delete()

    def test_large_values_each_way(self):
        # Uploaded to the gateway, fetched by each container from the hub
        # with its grant, and results stored back: no file system shared.
        big = os.urandom(64 << 20)
        values = [os.urandom(10 << 20) for _ in range(10)]
        with strand.Pool(2) as pool:
            self.assertEqual(pool.apply(bytes, (big,)), big)
            digests = pool.map(_sha256_hex, values)
        self.assertEqual(digests, [hashlib.sha256(v).hexdigest() for v in values])

    def test_managers(self):
        with strand.Manager() as m:
            d = m.dict()
            d["x"] = {1, 2}
            self.assertEqual(d.copy(), {"x": {1, 2}})
        cm = CounterManager()
        cm.start()
        c = cm.Counter()
        self.assertEqual([h.get(60) for h in [c.add(i) for i in range(4)]], [0, 1, 3, 6])
        cm.shutdown()


if __name__ == "__main__":
    sys.exit(unittest.main(verbosity=2))

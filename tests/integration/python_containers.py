"""The Python client's scenarios with every worker, process and manager in
a container of strand-worker-python, on the backend STRAND_TEST_BACKEND
names (python_docker.sh and python_k8s.sh build the image and start the
gateway): a program with its own package and data files, a map of a
closure, an exception raised again, a Process with a SimpleQueue and a
Pipe, a Manager's dict, an AsyncManager's handles, values of 64 MiB each way and a map over 100
MB of distinct values. Exact results."""

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

"""strand.Pool against a real gateway (python_pool.sh starts it), run with
Debian's /usr/bin/python3 and its python3-cloudpickle: Python functions,
lambdas and closures as tasks, multiprocessing's Pool interface, exact
results, and a task's exception raised again with its remote traceback."""

import base64
import hashlib
import io
import json
import os
import pickle
import subprocess
import sys
import time
import unittest
import zipfile

import code_project
import strand


def square(x):
    return x * x


def _sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


LIMIT = 1
SEEN = [1]  # a list: what a function reading it sends is pickled each time


def over_limit(x):
    return x > LIMIT


def first_seen(x):
    return SEEN[0]


def _digest_and(pair):
    data, i = pair
    return _sha256_hex(data), i


def _len_later(data):
    time.sleep(0.5)
    return len(data)


class Boom(Exception):
    pass


class TwoPartBoom(Exception):
    """An exception whose __init__ its args (the message alone) do not fit:
    unpickling it calls TwoPartBoom("...") and fails."""

    def __init__(self, what, code):
        super().__init__(what)
        self.code = code


class Point:
    """A class of the script itself (its __main__), as arguments and results."""

    def __init__(self, x, y):
        self.x, self.y = x, y


def norm1(p):
    return abs(p.x) + abs(p.y)


def moved(p):
    return Point(p.x + 1, p.y)


def explode(x):
    if x == 3:
        raise Boom("task %d exploded" % x)
    return x


def explode_in_two_parts(x):
    raise TwoPartBoom("task %d exploded" % x, 7)


def makes_a_pool(x):
    return strand.Pool(1).map(abs, [x])


def print_lines(n):
    for i in range(n):
        print("line", i)
    return n


def _refuse_to_load():
    raise ValueError("this value does not load here")


class Unloadable:
    """A result the worker pickles and the caller cannot unpickle."""

    def __reduce__(self):
        return (_refuse_to_load, ())


def unloadable_at_3(x):
    return Unloadable() if x == 3 else x


def allocator_settings(_):
    """In a task: the GLIBC_TUNABLES the runtime started with, the one in
    its environment now, and what a program it starts is given."""
    with open("/proc/self/environ", "rb") as f:
        started = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e).get(b"GLIBC_TUNABLES", b"")
    child = subprocess.run(["sh", "-c", "echo ${GLIBC_TUNABLES-none}"], capture_output=True, text=True).stdout
    return started.decode(), os.environ.get("GLIBC_TUNABLES"), child.strip()


def explode_some(x):
    """Inputs 3 and 137 fail alone; 160 takes its whole task with it."""
    if x in (3, 137):
        raise Boom("input %d exploded" % x)
    if x == 160:
        raise SystemExit("input 160 ends its task")
    return -x


class WithPool(unittest.TestCase):
    """Cases sharing one pool of 2 workers."""

    @classmethod
    def setUpClass(cls):
        cls.pool = strand.Pool(2)

    @classmethod
    def tearDownClass(cls):
        cls.pool.terminate()


class PoolTest(WithPool):

    def test_map_exact(self):
        self.assertEqual(self.pool.map(square, range(500)), [x * x for x in range(500)])

    def test_the_runtime_keeps_its_freed_memory_and_a_task_s_programs_do_not(self):
        # The worker starts strand's Python runtime with the allocator it
        # has itself (worker/runtime.c); the runtime takes the setting out
        # of the environment it hands on.
        started, now, child = self.pool.apply(allocator_settings, (0,))
        self.assertIn("glibc.malloc.trim_threshold=67108864", started)
        self.assertIsNone(now)
        self.assertEqual(child, "none")

    def test_a_function_is_pickled_again_only_when_it_may_differ(self):
        # A pool keeps a function's pickle while what the pickle is made
        # of is the same unchangeable objects; a global it reads rebound,
        # or one it reads that may change in place (a list), and it is
        # pickled again: the bytes sent are those a new pickle would be.
        global LIMIT
        from strand import pool as pool_module

        made = []
        real = pool_module._context

        def counted(*args):
            made.append(args[2])
            return real(*args)

        pool_module._context = counted
        try:
            self.assertEqual([self.pool.apply(over_limit, (3,)) for _ in range(3)], [True] * 3)
            self.assertEqual(made, [over_limit])  # pickled once, sent three times
            # A map's context is another (its runner): once for two maps.
            self.assertEqual([self.pool.map(over_limit, [0, 3]) for _ in range(2)], [[False, True]] * 2)
            self.assertEqual(made, [over_limit] * 2)
            LIMIT = 2
            self.pool.apply(over_limit, (3,))
            self.pool.apply(over_limit, (3,))
            self.assertEqual(made, [over_limit] * 3)
            self.assertEqual([self.pool.apply(first_seen, (0,)) for _ in range(2)], [1, 1])
            self.assertEqual(made[3:], [first_seen] * 2)
        finally:
            pool_module._context = real
            LIMIT = 1

    def test_map_sent_in_parts(self):
        # More tasks than a request brings go in parts; made small here.
        from strand import pool as pool_module

        part = pool_module.PART
        pool_module.PART = 7
        try:
            self.assertEqual(self.pool.map(square, range(50), chunksize=2), [x * x for x in range(50)])
        finally:
            pool_module.PART = part

    def test_map_of_large_values_chunked_by_bytes(self):
        # 20 MB in 2,000 values: multiprocessing's default chunk of 250
        # would be a 2.5 MB task argument; chunks go by bytes too, and a
        # job's parts as well (made small here), so each fits.
        from strand import pool as pool_module

        values = [os.urandom(10240) for _ in range(2000)]
        digests = self.pool.map(_sha256_hex, values)
        self.assertEqual(digests, [hashlib.sha256(v).hexdigest() for v in values])
        part_bytes = pool_module.PART_BYTES
        pool_module.PART_BYTES = 3 << 20
        try:
            megabytes = [os.urandom(1 << 20) for _ in range(12)]
            self.assertEqual(self.pool.map(len, megabytes, chunksize=12), [1 << 20] * 12)
        finally:
            pool_module.PART_BYTES = part_bytes

    def test_values_of_any_size_travel_as_uploads(self):
        # Past 1 MiB pickled, an argument is uploaded as a value (its
        # bytes, stored once) and the task names it: 64 MiB to an apply,
        # and a map over 100 MB of distinct values, exact.
        gw = strand.gateway.default()
        held = gw.request("GET", "/v1/values")["total"]
        big = os.urandom(64 << 20)
        self.assertEqual(self.pool.apply(_sha256_hex, (big,)), hashlib.sha256(big).hexdigest())
        values = [os.urandom(10 << 20) for _ in range(10)]
        self.assertEqual(self.pool.map(_sha256_hex, values), [hashlib.sha256(v).hexdigest() for v in values])
        # And back: results of 64 MiB and 10 MB, exact. Results are gone
        # from the gateway once read, and a job's arguments once its
        # results are.
        self.assertEqual(self.pool.apply(bytes, (big,)), big)
        self.assertEqual(self.pool.map(bytes, values, chunksize=1), values)
        r = self.pool.apply_async(bytes, (big,))
        self.assertEqual(r.get(timeout=60), big)
        self.assertEqual(r.get(timeout=60), big)
        self.assertEqual(gw.request("GET", "/v1/values")["total"], held)
        # Two tasks of the same value: it is stored once (one task's
        # pickled chunk, 64 MiB and a few bytes), and uploaded once.
        r = self.pool.map_async(_len_later, [big, big], chunksize=1)
        grown = gw.request("GET", "/v1/values")["total"] - held
        self.assertGreater(grown, 64 << 20)
        self.assertLess(grown, (64 << 20) + 4096)
        self.assertEqual(r.get(timeout=60), [64 << 20, 64 << 20])
        self.assertEqual(gw.request("GET", "/v1/values")["total"], held)

    def test_put_once_taken_by_many(self):
        # strand.put: 20 MB stored once; tasks take the Ref (in arguments,
        # a closure, an apply) and get the object, unpickled once per
        # runtime; in the caller it stays a Ref; delete() removes it.
        gw = strand.gateway.default()
        held = gw.request("GET", "/v1/values")["total"]
        weights = os.urandom(20 << 20)
        ref = strand.put(weights)
        self.assertIsInstance(ref, strand.Ref)
        self.assertEqual(strand.put(weights), ref)  # the same bytes: one value
        grown = gw.request("GET", "/v1/values")["total"] - held
        self.assertGreater(grown, 20 << 20)
        self.assertLess(grown, (20 << 20) + 4096)
        digest = hashlib.sha256(weights).hexdigest()
        self.assertEqual(self.pool.map(_digest_and, [(ref, i) for i in range(40)], chunksize=1),
                         [(digest, i) for i in range(40)])
        self.assertEqual(self.pool.map(lambda i: (_sha256_hex(ref), i), range(6)), [(digest, i) for i in range(6)])
        self.assertEqual(self.pool.apply(_sha256_hex, (ref,)), digest)
        # The same object for every task of a runtime: unpickled once.
        self.assertLessEqual(len(set(self.pool.map(lambda i: id(ref), range(20), chunksize=1))), 2)
        import pickle

        self.assertEqual(pickle.loads(pickle.dumps(ref)), ref)  # in the caller, a Ref stays one
        self.assertEqual(ref.get(), weights)
        self.assertEqual(gw.request("GET", "/v1/values")["total"] - held, grown)
        ref.delete()
        self.assertEqual(gw.request("GET", "/v1/values")["total"], held)

    def test_a_value_over_the_cap_is_refused_before_it_is_sent(self):
        gw = self.pool._gw
        gw._value_max = 2 << 20  # the gateway's cap as the client knows it, made small
        try:
            with self.assertRaises(strand.StrandError) as caught:
                self.pool.apply(len, (os.urandom(3 << 20),))
        finally:
            gw._value_max = None
        self.assertEqual(caught.exception.status, 413)
        self.assertIn("over the gateway's 2097152 byte cap (--max-value-bytes)", caught.exception.detail)

    def test_applies_wake_no_output_follower(self):
        # The pool's output follower waits in the gateway for output only:
        # applies that print nothing (two commits each) do not wake the
        # gateway's thread of parked requests to look at it (its context
        # switches, from /proc).
        pid = strand.gateway.default().request("GET", "/healthz")["pid"]

        def resumer_switches():
            for tid in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                    if f.read().strip() != "resumer":
                        continue
                with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                    fields = dict(line.split(":", 1) for line in f)
                return int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])
            self.fail("no thread named resumer")

        self.pool.apply(square, (1,))
        before = resumer_switches()
        for i in range(200):
            self.assertEqual(self.pool.apply(square, (i,)), i * i)
        self.assertLess(resumer_switches() - before, 20)  # 400 before: every commit woke it

    def test_a_job_says_what_it_runs(self):
        gw = strand.gateway.default()

        def function_of(job):
            return gw.request("GET", "/v1/jobs/%s" % job)["function"]

        r = self.pool.map_async(square, range(3))
        self.assertEqual(r.get(timeout=60), [0, 1, 4])
        self.assertEqual(function_of(r._job), "rt:pickle:__main__.square")
        r = self.pool.map_async(lambda x: -x, [1])
        self.assertEqual(r.get(timeout=60), [-1])
        self.assertEqual(function_of(r._job),
                         "rt:pickle:__main__.PoolTest.test_a_job_says_what_it_runs.<locals>.<lambda>")
        self.assertEqual(self.pool.apply(divmod, (7, 2)), (3, 1))
        newest = gw.request("GET", "/v1/pools/%s/jobs" % self.pool.id)["jobs"][0]
        self.assertEqual(newest["function"], "rt:pickle:builtins.divmod")

        # A name the gateway would refuse whole is made one it takes: cut
        # to its 200 characters, '?' for what is not printable ASCII.
        def long_named(x):
            return x + 1

        long_named.__qualname__ = "\u00e9t\u00e9 " + "n" * 300
        r = self.pool.map_async(long_named, [1])
        self.assertEqual(r.get(timeout=60), [2])
        self.assertEqual(function_of(r._job), ("rt:pickle:__main__.?t??" + "n" * 300)[:203])

    def test_a_job_may_be_named(self):
        gw = strand.gateway.default()
        r = self.pool.map_async(square, range(3), name="squares \u00e9t\u00e9")
        self.assertEqual(r.get(timeout=60), [0, 1, 4])
        self.assertEqual(gw.request("GET", "/v1/jobs/%s" % r._job)["name"], "squares \u00e9t\u00e9")
        self.assertEqual(self.pool.apply(divmod, (7, 2), name="one divmod"), (3, 1))
        newest = gw.request("GET", "/v1/pools/%s/jobs" % self.pool.id)["jobs"][0]
        self.assertEqual(newest["name"], "one divmod")
        self.assertEqual(self.pool.map(square, [2], name=None), [4])

    def test_lambda_and_closure(self):
        k = 7
        self.assertEqual(self.pool.map(lambda x: x + k, [1, 2, 3]), [8, 9, 10])

    def test_instances_of_the_scripts_own_classes(self):
        # pickle names them __main__.Point, which a worker's runtime lacks.
        self.assertEqual(self.pool.map(norm1, [Point(1, -2), Point(3, 4)]), [3, 7])
        got = self.pool.apply(moved, (Point(1, 2),))
        self.assertIs(type(got), Point)  # the caller's own class, not a copy of it
        self.assertEqual((got.x, got.y), (2, 2))
        # A task an input, pickled by one pickler: a Point among them goes
        # by value and the plain inputs after it still pickle.
        mixed = [Point(1, -2), 5, Point(3, 4), -6, "ab"]
        self.assertEqual(list(self.pool.imap(lambda v: norm1(v) if isinstance(v, Point) else v, mixed)),
                         [3, 5, 7, -6, "ab"])

    def test_values_python_cannot_put_in_json(self):
        out = self.pool.map(lambda x: (x, {x}, b"\x00\xff" * x), [1, 2])
        self.assertEqual(out, [(1, {1}, b"\x00\xff"), (2, {2}, b"\x00\xff\x00\xff")])

    def test_starmap_apply_async(self):
        self.assertEqual(self.pool.starmap(pow, [(2, 3), (3, 2)]), [8, 9])
        self.assertEqual(self.pool.apply(divmod, (17, 5)), (3, 2))
        r = self.pool.apply_async(square, (12,))
        r.wait(30)
        self.assertTrue(r.ready())
        self.assertTrue(r.successful())
        self.assertEqual(r.get(1), 144)

    def test_imap_in_order_and_unordered(self):
        self.assertEqual(list(self.pool.imap(square, range(50))), [x * x for x in range(50)])
        self.assertEqual(sorted(self.pool.imap_unordered(square, range(50))), [x * x for x in range(50)])

    def test_exception_raised_again_with_remote_traceback(self):
        with self.assertRaises(Boom) as caught:
            self.pool.map(explode, range(5))
        self.assertEqual(str(caught.exception), "task 3 exploded")
        cause = str(caught.exception.__cause__)
        self.assertIn("remote traceback:", cause)
        self.assertIn("in explode", cause)
        r = self.pool.apply_async(explode, (3,))
        r.wait(30)
        self.assertFalse(r.successful())
        self.assertRaises(Boom, r.get)

    def test_an_exception_that_cannot_be_unpickled_says_what_it_was(self):
        # multiprocessing's result thread dies on it and its map hangs.
        with self.assertRaises(strand.pool.RemoteError) as caught:
            self.pool.map(explode_in_two_parts, [4])
        text = str(caught.exception)
        self.assertTrue(text.startswith("TwoPartBoom: task 4 exploded\n\nremote traceback:\n"), text)
        self.assertIn("in explode_in_two_parts", text)
        self.assertTrue(text.endswith("(the exception itself could not be unpickled here: TypeError: "
                                      "TwoPartBoom.__init__() missing 1 required positional argument: 'code')"), text)
        self.assertNotIn(strand.pool.EXCEPTION_MARK, text)

    def test_a_task_that_makes_a_pool_is_told_why_it_cannot(self):
        # Its sandbox holds no API token: not a refused connection to a
        # default URL, but what to do instead.
        with self.assertRaises(RuntimeError) as caught:
            self.pool.apply(makes_a_pool, (-1,))
        self.assertEqual(
            str(caught.exception),
            "strand: a task (or a process it started) cannot make pools, processes, managers or queues: "
            "make them in the program and pass them to it, or name a gateway with strand.init(url, token)",
        )
        self.assertIn("in makes_a_pool", str(caught.exception.__cause__))

    def test_a_failing_input_fails_alone(self):
        gw = strand.gateway.default()
        r = self.pool.map_async(explode_some, range(200), chunksize=50)
        r.wait(60)
        self.assertFalse(r.successful())
        with self.assertRaises(Boom) as caught:
            r.get()
        self.assertEqual(str(caught.exception), "input 3 exploded")
        self.assertIn("(strand: input 3 of the map)", caught.exception.__notes__)
        self.assertIn("in explode_some", str(caught.exception.__cause__))
        # Counted by input: 2 failed alone, 50 with the task that ended.
        job = gw.request("GET", "/v1/jobs/%s" % r._job)
        self.assertEqual((job["total"], job["done"], job["failed"]), (200, 200, 52))
        self.assertEqual(job["tasks"], {"total": 4, "done": 4, "failed": 3})
        failures = gw.request("GET", "/v1/jobs/%s/failures" % r._job)["items"]
        self.assertEqual([(f["index"], f["task"], f["inputs"]) for f in failures],
                         [(3, 0, 1), (137, 2, 1), (150, 3, 50)])
        self.assertTrue(failures[0]["error"].startswith("Boom: input 3 exploded\n\nremote traceback:"))
        self.assertTrue(failures[2]["error"].startswith("SystemExit: input 160 ends its task"))
        # The rest of each chunk ran: imap gives every value before the
        # first failure, then raises it, saying which input it was.
        values = self.pool.imap(explode_some, range(140), chunksize=50)
        self.assertEqual([next(values) for _ in range(3)], [0, -1, -2])
        with self.assertRaises(Boom) as caught:
            next(values)
        self.assertIn("(strand: input 3 of the map)", caught.exception.__notes__)
        values = self.pool.imap(explode_some, range(6))  # a task an input
        self.assertEqual([next(values) for _ in range(3)], [0, -1, -2])
        with self.assertRaises(Boom) as caught:
            next(values)
        self.assertEqual(str(caught.exception), "input 3 exploded")
        self.assertIn("(strand: the task from input 3 of the map)", caught.exception.__notes__)
        self.assertIn("in explode_some", str(caught.exception.__cause__))
        values = self.pool.imap(explode_some, range(4, 137), chunksize=50)
        self.assertEqual(list(values), [-x for x in range(4, 137)])
        with self.assertRaises(SystemExit) as caught:
            self.pool.starmap(explode_some, [(x,) for x in range(150, 170)], chunksize=10)
        self.assertIn("(strand: the task from input 10 of the map)", caught.exception.__notes__)

    def test_a_value_the_caller_cannot_unpickle(self):
        # Raised where it came, after the values before it, saying which
        # task it was: in imap (a value a task) and in map (chunks).
        values = self.pool.imap(unloadable_at_3, range(6))
        self.assertEqual([next(values) for _ in range(3)], [0, 1, 2])
        with self.assertRaises(ValueError) as caught:
            next(values)
        self.assertEqual(str(caught.exception), "this value does not load here")
        self.assertIn("(strand: the task from input 3 of the map)", caught.exception.__notes__)
        with self.assertRaises(ValueError) as caught:
            self.pool.map(unloadable_at_3, range(10), chunksize=2)
        self.assertIn("(strand: the task from input 2 of the map)", caught.exception.__notes__)

    def test_function_the_runtime_cannot_unpickle(self):
        # A module only the caller can import: its function is pickled by
        # reference, so the runtime fails to load it, for every task.
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "only_here.py"), "w") as f:
                f.write("def triple(x):\n    return 3 * x\n")
            sys.path.insert(0, folder)
            try:
                import only_here

                with self.assertRaises(ModuleNotFoundError) as caught:
                    self.pool.map(only_here.triple, range(3))
            finally:
                sys.path.remove(folder)
        self.assertEqual(str(caught.exception), "No module named 'only_here'")
        self.assertIn("remote traceback:", str(caught.exception.__cause__))
        self.assertEqual(self.pool.map(square, [4]), [16])  # the pool lives on

    def test_result_that_cannot_be_pickled(self):
        import threading

        with self.assertRaises(TypeError) as caught:
            self.pool.apply(threading.Lock)
        self.assertEqual(str(caught.exception), "cannot pickle '_thread.lock' object")

    def test_get_timeout(self):
        r = self.pool.apply_async(time.sleep, (2,))
        self.assertRaises(TimeoutError, r.get, 0.01)
        self.assertIsNone(r.get(30))

    def test_refused_request(self):
        with self.assertRaises(strand.StrandError) as caught:
            strand.Pool(0)
        self.assertEqual(caught.exception.status, 400)
        self.assertIn("processes", caught.exception.detail)


class ConnectionTest(WithPool):
    """One keep-alive connection a thread, opened again when the gateway
    closed it, and a forked process's own."""

    def test_kept_and_opened_again_after_idle(self):
        local = strand.gateway.default()._local
        self.assertEqual(self.pool.apply(square, (3,)), 9)
        sock = local.line.sock
        self.assertEqual(self.pool.apply(square, (4,)), 16)
        self.assertIs(local.line.sock, sock)
        time.sleep(3)  # past python_pool.sh's --http-idle 2: the gateway closed it
        self.assertEqual(self.pool.apply(square, (5,)), 25)
        self.assertIsNot(local.line.sock, sock)

    def test_nothing_that_ends_a_line_goes_into_a_request(self):
        gw = strand.gateway.default()
        for path in ("/v1/pools/p-1\r\nX-Injected: 1", "/v1/pools/p 1", "/v1/pools/\x7f"):
            with self.assertRaises(ValueError):
                gw.request("GET", path)
        self.assertIn("pools", gw.request("GET", "/v1/pools"))

    def test_forked_child_has_its_own_connection(self):
        self.assertEqual(self.pool.apply(square, (2,)), 4)
        pid = os.fork()
        if pid == 0:  # both send at once: on one socket, answers would cross
            try:
                ok = [self.pool.apply(square, (i,)) for i in range(30)] == [i * i for i in range(30)]
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
        mine = [self.pool.apply(square, (-i,)) for i in range(30)]
        _, status = os.waitpid(pid, 0)
        self.assertEqual(mine, [i * i for i in range(30)])
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)


class HttpsTest(unittest.TestCase):
    """An https:// gateway (a throwaway self-signed certificate): reached
    when its CA is given, refused when not."""

    def test_trusted_only_with_its_ca(self):
        import random
        import shutil
        import ssl
        import subprocess
        import tempfile

        if "STRAND_TEST_BIN" not in os.environ or not shutil.which("openssl"):
            self.skipTest("run by python_pool.sh, with openssl")
        d = tempfile.mkdtemp(prefix="strand-https-")
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
            check=True, capture_output=True)
        port = random.randrange(10000, 32000, 2)  # below the ephemeral range, as lib.sh's
        with open(os.path.join(d, "gateway.log"), "w") as log:
            gateway = subprocess.Popen(
                [os.path.join(os.environ["STRAND_TEST_BIN"], "strand-gateway"), "--db", os.path.join(d, "strand.db"),
                 "--http", "127.0.0.1:%d" % port, "--hub", "tls+tcp://127.0.0.1:%d" % (port + 1),
                 "--hub-server-name", "localhost", "--tls-cert", cert, "--tls-key", key],
                stderr=log,
                env={k: v for k, v in os.environ.items() if k not in ("STRAND_TOKEN", "STRAND_TOKEN_FILE")})
        try:
            url = "https://127.0.0.1:%d" % port
            token = os.path.join(d, "strand.token")
            for _ in range(100):
                if os.path.exists(token):
                    probe = strand.gateway.Gateway(url, ca_file=cert)
                    try:
                        probe.request("GET", "/healthz")
                        break
                    except OSError:
                        pass
                    finally:
                        probe.close()
                time.sleep(0.05)
            with open(token) as f:
                secret = f.read().strip()
            gw = strand.gateway.Gateway(url, token=secret, ca_file=cert)
            self.assertEqual(gw.request("GET", "/v1/pools"), {"pools": [], "next_cursor": None})
            self.assertEqual(gw.request("GET", "/v1/pools"), {"pools": [], "next_cursor": None})  # on the same connection
            # Bodies over TLS, which has no sendmsg: one under JOIN_MAX in
            # one write, one over it a piece at a time; every byte in, in order.
            queue = gw.request("POST", "/v1/queues")["id"]
            small = [base64.b64encode(os.urandom(3000)) for _ in range(5)]
            large = [base64.b64encode(os.urandom(400000)) for _ in range(4)]
            self.assertGreater(sum(map(len, large)), strand.gateway.JOIN_MAX)
            for items in (small, large):
                gw.request("POST", "/v1/queues/%s/items" % queue, {"items": items})
                got = gw.request("POST", "/v1/queues/%s/take?max=100" % queue)["items"]
                self.assertEqual(got, [item.decode() for item in items])
            gw.close()
            with self.assertRaises(ssl.SSLCertVerificationError):
                strand.gateway.Gateway(url, token=secret).request("GET", "/v1/pools")
        finally:
            gateway.terminate()
            gateway.wait()
            shutil.rmtree(d)


class QueueTest(WithPool):
    """Queues and pipes made in the caller and passed to tasks."""

    def test_tasks_put_the_caller_gets(self):
        q = strand.SimpleQueue()
        self.pool.map(lambda i: q.put({"i": i, "sq": i * i}), range(6))
        got = sorted((q.get(timeout=10) for _ in range(6)), key=lambda d: d["i"])
        self.assertEqual(got, [{"i": i, "sq": i * i} for i in range(6)])
        self.assertTrue(q.empty())
        self.assertRaises(TimeoutError, q.get, 0.2)

    def test_the_caller_puts_a_task_gets(self):
        q = strand.SimpleQueue()
        q.put(("hello", b"\x00"))
        self.assertEqual(self.pool.apply(lambda: q.get(timeout=10)), ("hello", b"\x00"))
        # Nothing there: the task's get times out, as the caller's would.
        self.assertEqual(self.pool.apply(lambda: _timed_out(q)), "timed out")

    def test_empty_in_a_task_and_close(self):
        q = strand.SimpleQueue()
        self.assertTrue(self.pool.apply(q.empty))
        for i in range(5):
            q.put(i)
        q.flush()
        self.assertEqual(self.pool.apply(_drain, (q,)), [0, 1, 2, 3, 4])
        self.assertTrue(q.empty())
        # close(): what was put goes first; then this process's calls are
        # refused, the queue lives on for the others.
        q.put("last")
        q.close()
        q.close()
        for call in (lambda: q.put(1), lambda: q.get(timeout=1), q.empty):
            with self.assertRaises(OSError) as e:
                call()
            self.assertEqual(str(e.exception), "handle is closed")
        self.assertEqual(self.pool.apply(_drain, (q,)), ["last"])

    def test_a_closed_queue_gives_back_what_it_read_ahead(self):
        q = strand.SimpleQueue()
        for i in range(50):
            q.put(i)
        self.assertEqual([q.get(timeout=10) for _ in range(2)], [0, 1])
        q.close()
        self.assertEqual(self.pool.apply(_drain, (q,)), list(range(2, 50)))

    def test_pipe_connections_as_multiprocessing(self):
        import multiprocessing

        a, b = strand.Pipe()
        self.assertEqual((a.readable, a.writable, b.readable, b.writable, a.closed), (True, True, True, True, False))
        self.assertFalse(a.poll())
        self.assertFalse(a.poll(0.3))
        b.send({"k": 1})
        self.assertTrue(a.poll(10))
        self.assertTrue(a.poll())  # still there: poll took nothing
        self.assertEqual(a.recv(), {"k": 1})
        # Bytes go as they are; those of a send are its pickle.
        b.send_bytes(b"0123456789", 2, 5)
        self.assertEqual(a.recv_bytes(), b"23456")
        b.send([1, 2])
        self.assertEqual(pickle.loads(a.recv_bytes()), [1, 2])
        b.send_bytes(memoryview(bytearray(b"abcdef")))
        buffer = bytearray(10)
        self.assertEqual(a.recv_bytes_into(buffer, 3), 6)
        self.assertEqual(bytes(buffer), b"\x00\x00\x00abcdef\x00")
        b.send_bytes(b"0123456789")
        with self.assertRaises(multiprocessing.BufferTooShort) as e:
            a.recv_bytes_into(bytearray(4))
        self.assertEqual(e.exception.args[0], b"0123456789")
        b.send_bytes(b"too long")
        with self.assertRaises(OSError) as e:
            a.recv_bytes(3)
        self.assertEqual(str(e.exception), "bad message length")
        for bad, words in (
            (lambda: b.send_bytes(b"ab", -1), "offset is negative"),
            (lambda: b.send_bytes(b"ab", 3), "buffer length < offset"),
            (lambda: b.send_bytes(b"ab", 1, 2), "buffer length < offset + size"),
            (lambda: b.send_bytes(b"ab", 0, -1), "size is negative"),
        ):
            with self.assertRaises(ValueError) as e:
                bad()
            self.assertEqual(str(e.exception), words)
        # Large bytes travel as a value, as they are.
        big = os.urandom(3 << 20)
        b.send_bytes(big)
        self.assertEqual(a.recv_bytes(), big)
        with b:
            pass
        self.assertTrue(b.closed)
        with self.assertRaises(OSError) as e:
            b.send(1)
        self.assertEqual(str(e.exception), "handle is closed")

    def test_a_simplex_pipe_receives_first_sends_second(self):
        r, w = strand.Pipe(duplex=False)
        self.assertEqual((r.readable, r.writable, w.readable, w.writable), (True, False, False, True))
        w.send("one way")
        self.assertEqual(r.recv(timeout=10), "one way")
        with self.assertRaises(OSError) as e:
            r.send(1)
        self.assertEqual(str(e.exception), "connection is read-only")
        with self.assertRaises(OSError) as e:
            w.recv()
        self.assertEqual(str(e.exception), "connection is write-only")
        # The ends keep their direction in a task.
        self.pool.apply(lambda: w.send("from a task"))
        self.assertEqual(r.recv(timeout=10), "from a task")

    def test_poll_and_bytes_in_a_task(self):
        a, b = strand.Pipe()
        done = self.pool.apply_async(_polls_and_bytes, (b,))
        self.assertEqual(a.recv(timeout=60), "ready")
        a.send_bytes(b"abc")
        self.assertEqual(a.recv_bytes(), b"cba")
        a.send_bytes(b"1234")
        self.assertEqual(a.recv(timeout=60), (False, True, 4, b"\x00\x001234\x00\x00"))
        a.send("left")
        self.assertTrue(done.get(60))
        self.assertTrue(b.poll(10))  # the task's poll left it in the pipe
        self.assertEqual(b.recv(), "left")

    def test_items_of_any_size_both_ways(self):
        gw = strand.gateway.default()
        before = gw.request("GET", "/v1/values")["total"]
        big = os.urandom(20 << 20)
        q, out = strand.SimpleQueue(), strand.SimpleQueue()
        q.put(big)
        q.put(big)  # the same bytes again: an item of its own, read once too
        self.assertEqual(self.pool.apply(_relay_big, (q, out)), (_sha256_hex(big), _sha256_hex(big)))
        self.assertEqual(out.get(timeout=30), big[::-1])
        a, b = strand.Pipe()
        r = self.pool.apply_async(lambda: b.send(b.recv(timeout=30) + b"!"))
        a.send(big[:12 << 20])
        self.assertEqual(a.recv(timeout=30), big[:12 << 20] + b"!")
        self.assertIsNone(r.get(30))
        # Each item was a value, removed once read.
        self.assertEqual(gw.request("GET", "/v1/values")["total"], before)

    def test_puts_go_in_order_and_reach_the_queue_before_exit(self):
        # put() returns once its item is pickled; a thread sends them, as
        # multiprocessing's feeder does: in order, many a request.
        q = strand.SimpleQueue()
        for i in range(5000):
            q.put(i)
        self.assertFalse(q.empty())  # what was put counts at once
        self.assertEqual([q.get(timeout=10) for _ in range(5000)], list(range(5000)))
        self.assertTrue(q.empty())
        # A program that puts and exits at once: its items are all there.
        program = "import base64, pickle, sys, strand\n" \
                  "q = pickle.loads(base64.b64decode(sys.argv[1]))\n" \
                  "for i in range(3000):\n    q.put(('from the child', i))\n"
        import pickle
        import subprocess

        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        done = subprocess.run([sys.executable, "-c", program, base64.b64encode(pickle.dumps(q)).decode()],
                              env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual([q.get(timeout=10) for _ in range(3000)], [("from the child", i) for i in range(3000)])
        self.assertRaises(TimeoutError, q.get, 0.2)

    def test_gets_read_ahead_and_a_reader_that_ends_gives_back_the_rest(self):
        import pickle
        import subprocess

        gw = strand.gateway.default()
        q = strand.SimpleQueue()
        for i in range(3000):
            q.put(i)
        q.flush()
        requests = []
        send = gw._send
        gw._send = lambda method, path, *a, **k: requests.append(path) or send(method, path, *a, **k)
        try:
            self.assertEqual([q.get(timeout=10) for _ in range(1000)], list(range(1000)))
        finally:
            del gw._send
        takes = [p for p in requests if "/take" in p]
        # A loop of gets takes ahead: far fewer takes than items (a round
        # trip each before), and each tells the last hold used.
        self.assertLess(len(takes), 100, takes)
        self.assertTrue(all("&lease=" in p for p in takes), takes)
        self.assertTrue(all("&used=" in p for p in takes[1:]), takes)
        info = gw.request("GET", "/v1/queues/%s" % q.id)
        # Read ahead and not used yet: held, not gone (the hold has the used
        # ones of its batch too, until the next take says so).
        self.assertEqual(info["size"] + info["held"] - q._read.got, 2000)

        # A reader that gets some and exits: what it read ahead and had not
        # used is back at the head, in order; one killed outright gives
        # back its whole batch when its lease ends, the items it had got
        # among them (it could not say it used them): nothing is lost.
        q = strand.SimpleQueue()
        for i in range(3000):
            q.put(i)
        q.flush()
        program = "import base64, pickle, sys, strand\n" \
                  "q = pickle.loads(base64.b64decode(sys.argv[1]))\n" \
                  "got = [q.get(timeout=10) for _ in range(int(sys.argv[2]))]\n" \
                  "print(got[0], got[-1], strand.gateway.default().lease(), q._read.got, flush=True)\n" \
                  "if sys.argv[3] == 'kill':\n    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n"
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        shipped = base64.b64encode(pickle.dumps(q)).decode()
        done = subprocess.run([sys.executable, "-c", program, shipped, "50", "exit"], env=env,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.split()[:2], ["0", "49"])
        info = gw.request("GET", "/v1/queues/%s" % q.id)
        self.assertEqual((info["size"], info["held"]), (2950, 0))
        done = subprocess.run([sys.executable, "-c", program, shipped, "30", "kill"], env=env,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, -9, done.stderr)
        first, last, lease, used = done.stdout.split()
        self.assertEqual((first, last), ("50", "79"))
        # Its last batch began here; those before it were told used.
        batch = int(last) - int(used) + 1
        info = gw.request("GET", "/v1/queues/%s" % q.id)
        self.assertGreater(info["held"], 0)
        self.assertEqual(info["size"] + info["held"], 3000 - batch)
        gw.request("DELETE", "/v1/leases/" + lease)  # as its running out would
        self.assertEqual([q.get(timeout=10) for _ in range(200)], list(range(batch, batch + 200)))

        # A multiprocessing child ends by os._exit, past atexit: it gives
        # back what it read ahead all the same, at once.
        import multiprocessing

        q._read.settle()  # what this program read ahead, back: the child reads from batch + 200
        first = batch + 200
        child = multiprocessing.get_context("fork").Process(target=_get_some, args=(q, 40))
        child.start()
        child.join(60)
        self.assertEqual(child.exitcode, 0)
        info = gw.request("GET", "/v1/queues/%s" % q.id)
        self.assertEqual((info["size"], info["held"]), (3000 - first - 40, 0))
        self.assertEqual([q.get(timeout=10) for _ in range(3000 - first - 40)], list(range(first + 40, 3000)))
        self.assertRaises(TimeoutError, q.get, 0.2)

    def test_a_get_of_under_a_second_waits_between_takes(self):
        # A take waits whole seconds: with under one left, a get looks
        # again every 10 ms, not as fast as the gateway answers.
        gw = strand.gateway.default()
        q = strand.SimpleQueue()
        queue_id = q.id  # (so shared: a queue of the program's own waits in it)
        requests = []
        send = gw._send
        gw._send = lambda method, path, *a, **k: requests.append(path) or send(method, path, *a, **k)
        try:
            self.assertRaises(TimeoutError, q.get, 0.3)
        finally:
            del gw._send
        # (this queue's: another test's reader may still take from its own)
        takes = [p for p in requests if p.startswith("/v1/queues/%s/take" % queue_id)]
        self.assertGreater(len(takes), 1)
        self.assertLessEqual(len(takes), 31)

    def test_an_idle_queue_holds_no_thread(self):
        # Its feeder thread goes once idle, and the next put starts another.
        import threading

        q = strand.SimpleQueue()
        q.put(1)
        self.assertTrue(q.flush(30))
        feeder = q._fed.thread
        self.assertIsNotNone(feeder)
        feeder.join(30)
        self.assertFalse(feeder.is_alive())
        self.assertNotIn(feeder, threading.enumerate())
        q.put(2)
        self.assertEqual([q.get(timeout=10), q.get(timeout=10)], [1, 2])

    def test_a_put_that_failed_is_raised_by_the_next_call(self):
        q = strand.SimpleQueue()
        strand.gateway.default().request("DELETE", "/v1/queues/%s" % q.id)
        q.put(1)
        with self.assertRaises(strand.StrandError) as failed:
            q.flush(30)
        self.assertEqual(failed.exception.status, 404)
        self.assertTrue(q.flush(30))  # said once

    def test_a_queue_of_the_programs_own_stays_in_it_until_handed_on(self):
        import threading

        gw = strand.gateway.default()
        q = strand.SimpleQueue()
        requests = []
        send = gw._send
        gw._send = lambda method, path, *a, **k: requests.append(path) or send(method, path, *a, **k)
        try:
            for i in range(200):
                q.put({"i": i})
                self.assertEqual(q.get(timeout=5), {"i": i})
            self.assertTrue(q.empty())
            self.assertRaises(TimeoutError, q.get, 0.05)
            got = []
            reader = threading.Thread(target=lambda: got.extend(q.get(timeout=30) for _ in range(300)))
            reader.start()
            for i in range(300):
                q.put(i)
            reader.join(60)
            self.assertEqual(got, list(range(300)))
            item = [1, 2]
            q.put(item)
            item.append(3)  # a put is a copy, as multiprocessing's pickle
            self.assertEqual(q.get(), [1, 2])
            for i in range(5):
                q.put(i)
        finally:
            del gw._send
        # No other process could have it: not one request about it (the
        # threads of earlier tests' managers and pools may ask meanwhile).
        self.assertEqual([p for p in requests if q._id in p], [])
        # Handed on to a task: what was put goes first, in order.
        q.put("after")
        self.assertEqual(self.pool.apply(_drain, (q,)), [0, 1, 2, 3, 4, "after"])

        # A get waiting here when the queue is handed on takes from the
        # gateway's queue, within what is left of its timeout.
        q = strand.SimpleQueue()
        got = []
        reader = threading.Thread(target=lambda: got.append(q.get(timeout=30)))
        reader.start()
        time.sleep(0.2)
        queue_id = q.id
        gw.request("POST", "/v1/queues/%s/items" % queue_id,
                   {"item": base64.b64encode(pickle.dumps("by REST")).decode()})
        reader.join(60)
        self.assertEqual(got, ["by REST"])

        # A fork hands it on first: parent and child share one queue, its
        # items in the gateway's, not a copy in each.
        import multiprocessing

        q = strand.SimpleQueue()
        for i in range(4):
            q.put(i)
        child = multiprocessing.get_context("fork").Process(target=_get_some, args=(q, 3))
        child.start()
        child.join(60)
        self.assertEqual(child.exitcode, 0)
        self.assertEqual(q.get(timeout=10), 3)
        self.assertRaises(TimeoutError, q.get, 0.2)

        # Past OWN_BYTES held, the items go to the gateway's queue, in
        # order: the program's memory holds no more.
        q = strand.SimpleQueue()
        own_bytes = strand.queues.OWN_BYTES
        strand.queues.OWN_BYTES = 10 * len(pickle.dumps(("x", 0), pickle.HIGHEST_PROTOCOL))
        try:
            for i in range(30):
                q.put(("x", i))
        finally:
            strand.queues.OWN_BYTES = own_bytes
        # (its id not read here: that alone would hand it on)
        deadline = time.monotonic() + 30
        while gw.request("GET", "/v1/queues/%s" % q._id)["size"] < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(gw.request("GET", "/v1/queues/%s" % q._id)["size"], 30)
        self.assertEqual([q.get(timeout=10) for _ in range(30)], [("x", i) for i in range(30)])

    def test_a_programs_queues_and_pipes_end_with_it(self):
        # As its pools do: the gateway deletes them when the program that
        # made them ends, unless detached.
        import subprocess

        program = "import strand\n" \
                  "q, d = strand.SimpleQueue(), strand.SimpleQueue(detached=True)\n" \
                  "a, b = strand.Pipe()\n" \
                  "q.put(1)\n" \
                  "a.send(2)\n" \
                  "print(q.id, a.pipe, d.id, flush=True)\n"
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        queue, pipe, detached = done.stdout.split()
        gw = strand.gateway.default()
        for path in ("/v1/queues/" + queue, "/v1/pipes/" + pipe):
            with self.assertRaises(strand.StrandError) as gone:
                gw.request("GET", path)
            self.assertEqual(gone.exception.status, 404)
        self.assertEqual(gw.request("GET", "/v1/queues/" + detached)["size"], 0)
        gw.request("DELETE", "/v1/queues/" + detached)

    def test_pipe_between_caller_and_task(self):
        a, b = strand.Pipe()
        r = self.pool.apply_async(lambda: b.send(b.recv(timeout=10) * 2))
        a.send(21)
        self.assertEqual(a.recv(timeout=10), 42)
        self.assertIsNone(r.get(10))


def _relay_big(q, out):
    """Two large items got (read once each), one of its own put back."""
    a, b = q.get(timeout=30), q.get(timeout=30)
    out.put(a[::-1])
    return _sha256_hex(a), _sha256_hex(b)


def _get_some(q, n):
    """A multiprocessing child's gets (it leaves by os._exit)."""
    for _ in range(n):
        q.get(timeout=10)


def _timed_out(q):
    try:
        q.get(timeout=0.2)
        return "got something"
    except TimeoutError:
        return "timed out"


def _drain(q):
    """A task that empties a queue as multiprocessing's workers do."""
    got = []
    while not q.empty():
        got.append(q.get(timeout=10))
    return got


def _polls_and_bytes(c):
    """A task's end of a pipe: polls (the caller sent nothing yet, then
    one message), bytes both ways, a message polled and left."""
    first = c.poll()
    c.send("ready")
    waited = c.poll(30)
    data = c.recv_bytes()
    c.send_bytes(bytearray(b"xx" + data[::-1] + b"yy"), 2, len(data))
    buffer = bytearray(8)
    n = c.recv_bytes_into(buffer, 2)
    c.send((first, waited, n, bytes(buffer)))
    return c.poll(30)  # the caller's last message stays in the pipe


def _exits(code):
    os._exit(code)


class ContextTest(unittest.TestCase):
    def test_with_and_close_join(self):
        with strand.Pool(1) as p:
            self.assertEqual(p.map(str, [1]), ["1"])
        p = strand.Pool(1)
        p.map(square, [1])
        p.close()
        p.join()
        self.assertRaises(ValueError, p.map, square, [1])
        p.terminate()


def _sleep_forever():
    time.sleep(300)


class Worker(strand.Process):
    """A subclass whose run() is the work, as with multiprocessing."""

    def __init__(self, q):
        super().__init__()
        self.q = q

    def run(self):
        self.q.put("ran in %s" % type(self).__name__)


def _raise():
    raise Boom("in a process")


def _put_digest(q, data):
    q.put(hashlib.sha256(data).hexdigest())


class ProcessTest(unittest.TestCase):
    def test_terminate_join_timeout_is_alive(self):
        p = strand.Process(target=_sleep_forever)
        self.assertIsNone(p.exitcode)
        p.start()
        self.assertTrue(p.is_alive())
        p.join(timeout=0.5)  # returns with the process still running
        self.assertTrue(p.is_alive())
        self.assertIsNone(p.exitcode)
        self.assertIsInstance(p.pid, int)
        p.terminate()
        self.assertFalse(p.is_alive())
        self.assertEqual(p.exitcode, -15)

    def test_large_arguments(self):
        # Past what one exec string holds (128 KiB): 400 KB of data.
        q = strand.SimpleQueue()
        data = bytes(range(256)) * 1600
        p = strand.Process(target=_put_digest, args=(q, data))
        p.start()
        self.assertEqual(q.get(timeout=60), hashlib.sha256(data).hexdigest())
        p.join(60)
        self.assertEqual(p.exitcode, 0)

    def test_large_items_both_ways(self):
        # A Process gets a 12 MB item and sends one of its own back, each
        # a value read once.
        gw = strand.gateway.default()
        before = gw.request("GET", "/v1/values")["total"]
        q, out = strand.SimpleQueue(), strand.SimpleQueue()
        data = os.urandom(12 << 20)
        q.put(data)
        p = strand.Process(target=_relay_big, args=(q, out))
        q.put(b"small")
        p.start()
        self.assertEqual(out.get(timeout=60), data[::-1])
        p.join(60)
        self.assertEqual(p.exitcode, 0)
        self.assertEqual(gw.request("GET", "/v1/values")["total"], before)

    def test_exit_codes_and_tracebacks_as_multiprocessing_children_end(self):
        import re
        from contextlib import redirect_stderr

        def ended(target, *args):
            said = io.StringIO()
            with redirect_stderr(said):
                p = strand.Process(target=target, args=args)
                p.start()
                p.join()
            prefix = r"\(%s\) " % p.id
            return p, [re.sub(prefix, "", l) for l in said.getvalue().splitlines() if re.match(prefix, l)]

        # Raised: 1, and "Process NAME:" and the traceback on the program's
        # stderr (multiprocessing's child prints them), and in its log.
        p, said = ended(_raise)
        self.assertEqual(p.exitcode, 1)
        self.assertEqual(said[:2], ["Process %s:" % p.name, "Traceback (most recent call last):"])
        self.assertTrue(said[-1].endswith("Boom: in a process"), said)  # its module's name before it but for __main__
        self.assertIn("Boom: in a process", p.logs())
        # sys.exit's code is the exit code; a text is said on stderr, and 1.
        for code, exitcode, words in ((3, 3, []), (0, 0, []), (None, 0, []), ("leaving now", 1, ["leaving now"])):
            p, said = ended(sys.exit, code)
            self.assertEqual((p.exitcode, said), (exitcode, words), code)
        # os._exit's code too, though the runtime ended under it.
        for code in (4, 0):
            p, _ = ended(_exits, code)
            self.assertEqual(p.exitcode, code)

    def test_subclass_run(self):
        q = strand.SimpleQueue()
        w = Worker(q)
        w.start()
        self.assertEqual(q.get(timeout=60), "ran in Worker")
        w.join()
        self.assertEqual(w.exitcode, 0)
        view = strand.gateway.default().request("GET", "/v1/processes/%s" % w.id)
        self.assertEqual(view["spec"]["function"], "rt:pickle:__main__.Worker.run")
        self.assertRaises(AssertionError, w.start)


def _set_tag(tag):
    global TAG
    TAG = tag


def _tagged(x):
    return (TAG, x)


class ChunkTest(unittest.TestCase):
    def test_chunks_initializer_and_empty(self):
        with strand.Pool(2, _set_tag, ("init",)) as pool:
            # Default chunks (about four a worker), explicit ones, single.
            self.assertEqual(pool.map(_tagged, range(1001)), [("init", x) for x in range(1001)])
            self.assertEqual(pool.map(_tagged, range(10), chunksize=3), [("init", x) for x in range(10)])
            self.assertEqual(sorted(pool.imap_unordered(square, range(20), chunksize=4)), [x * x for x in range(20)])
            self.assertEqual(pool.map(square, []), [])
            self.assertEqual(pool.map_async(square, range(7)).get(60), [x * x for x in range(7)])
            self.assertEqual(pool.map_async(square, []).get(60), [])
            self.assertEqual(pool.apply(pow, (2,), {"exp": 5}), 32)


class SlicedInputsTest(WithPool):
    def test_a_range_or_tuple_goes_as_its_slices(self):
        # A range, tuple or list is chunked as it is, each chunk a slice
        # of it (a range's pickle is its three numbers); anything else is
        # made a list first. The values are the same either way.
        from strand import pool as pool_module

        sent = []
        real = pool_module._chunk_tasks

        def kept(items, chunksize, *rest):
            sent.append(items)
            return real(items, chunksize, *rest)

        pool_module._chunk_tasks = kept
        try:
            stepped = range(10, -7, -3)
            self.assertEqual(self.pool.map(square, stepped, chunksize=2), [x * x for x in stepped])
            self.assertIs(sent[-1], stepped)
            self.assertEqual(self.pool.map(square, range(100000)), [x * x for x in range(100000)])
            self.assertEqual(type(sent[-1]), range)
            numbers = tuple(range(0, 60, 7))
            self.assertEqual(self.pool.starmap(pow, tuple((x, 2) for x in numbers)), [x * x for x in numbers])
            self.assertEqual(type(sent[-1]), tuple)
            self.assertEqual(list(self.pool.imap(square, range(5))), [0, 1, 4, 9, 16])
            self.assertEqual(type(sent[-1]), range)
            self.assertEqual(self.pool.map(square, (x for x in range(4))), [0, 1, 4, 9])
            self.assertEqual(sent[-1], [0, 1, 2, 3])
        finally:
            pool_module._chunk_tasks = real
        # Each of the 8 default chunks of range(100000) is a range: a few
        # dozen bytes of pickle, not 12,500 numbers' worth.
        tasks, counts = real(range(100000), 12500)
        self.assertEqual(counts, [12500] * 8)
        firsts = [pickle.loads(base64.b64decode(t))[0][0] for t in tasks]
        self.assertEqual(firsts, [range(i, i + 12500) for i in range(0, 100000, 12500)])
        self.assertTrue(all(len(t) < 100 for t in tasks), [len(t) for t in tasks])


class RuntimeTest(unittest.TestCase):
    def test_a_pickled_argument_read_with_json_escapes(self):
        # The runtime reads a pickle task's base64 as it is, but a REST
        # client's JSON writer may escape the "/" base64 holds (as \/ or
        # \u002f): read as JSON then.
        from strand import runtime

        data = bytes(range(256)) * 3
        text = base64.b64encode(data).decode()
        self.assertIn("/", text)
        self.assertEqual(runtime._base64_text(json.dumps(text).encode()), data)
        for escaped in ("\\/", "\\u002f", "\\u002F"):
            self.assertEqual(runtime._base64_text(json.dumps(text).replace("/", escaped).encode()), data)


class DumperTest(unittest.TestCase):
    def test_one_pickler_for_many_values(self):
        # The runtime's results and a map's inputs are pickled by one
        # pickler kept from call to call: each value's bytes stand alone.
        from strand import _pickling

        dump = _pickling.Dumper().dumps
        shared = [1, 2, 3]
        first, again = dump([shared, shared]), dump([shared, shared])
        self.assertEqual(first, again)  # nothing of the first call's memo in the second
        self.assertEqual(pickle.loads(first), [[1, 2, 3], [1, 2, 3]])
        for plain in (None, True, -5, 2.5, "text", b"\x00\xff"):
            self.assertEqual(pickle.loads(dump(plain)), plain)
        k = 3
        self.assertEqual(pickle.loads(dump(lambda x: x + k))(1), 4)  # by value, then the plain pickler again
        got = pickle.loads(dump(Point(1, 2)))  # the script's own class, by value
        self.assertEqual((got.x, got.y), (1, 2))
        big = dump(b"x" * (_pickling.Dumper.KEPT_BYTES + 1))  # a buffer let go after it
        self.assertEqual(len(pickle.loads(big)), _pickling.Dumper.KEPT_BYTES + 1)
        self.assertEqual(dump((7, "seven")), pickle.dumps((7, "seven"), pickle.HIGHEST_PROTOCOL))


def _loaded(names):
    return sorted(name for name in names if name in sys.modules)


class LeanRuntimeTest(WithPool):
    def test_a_runtime_imports_none_of_the_clients_modules(self):
        # What a pool's tasks run lives apart from the client (HTTP, TLS,
        # code packages): a runtime that imported them spent some 50 ms of
        # CPU in its first task.
        client = ["strand.pool", "strand.gateway", "strand._code", "ssl"]
        self.assertEqual(self.pool.map(_loaded, [client] * 4, chunksize=1), [[]] * 4)
        self.assertEqual(self.pool.apply(_loaded, (client,)), [])


class _Sent:
    """While in it, the requests gw sends, as (method, path), in the list
    it gives."""

    def __init__(self, gw):
        self.gw, self.sent = gw, []

    def __enter__(self):
        request = self.gw.request

        def counting(method, path, *args, **kwargs):
            self.sent.append((method, path))
            return request(method, path, *args, **kwargs)

        self.gw.request = counting
        return self.sent

    def __exit__(self, *exc):
        del self.gw.request


def _lines_asked(sent):
    """The requests for a pool's or manager's lines at once (wait=0, a
    drain's; the output follower's long polls wait)."""
    return [path for _, path in sent if "/logs?" in path and "wait=0" in path]


def _put_later(q, item):
    time.sleep(0.5)
    q.put(item)


def _hold_then_release(lock, held, go, log):
    with lock:
        held.set()
        go.wait(60)
        log.append("released")


def _work_then_done(q, n):
    for _ in range(n):
        q.get()
        q.task_done()


class ManagerTest(unittest.TestCase):
    def test_waits_do_not_hold_up_the_manager(self):
        import queue

        with strand.Manager() as m:
            # A get that waits for a put from a Process (the manager runs
            # one call at a time: a get waiting inside it held up that put).
            q = m.Queue()
            p = strand.Process(target=_put_later, args=(q, "came"))
            p.start()
            self.assertEqual(q.get(timeout=60), "came")
            p.join()
            self.assertRaises(queue.Empty, q.get, True, 0.2)
            self.assertRaises(queue.Empty, q.get_nowait)
            self.assertRaises(queue.Empty, q.get, False)
            self.assertRaises(ValueError, q.get, True, -1)
            full = m.Queue(1)
            full.put(1)
            self.assertRaises(queue.Full, full.put, 2, True, 0.2)
            self.assertRaises(queue.Full, full.put_nowait, 2)
            # A lock and events shared with a Process, which holds the lock
            # until told to let go.
            lock, held, go, log = m.Lock(), m.Event(), m.Event(), m.list()
            self.assertFalse(held.wait(0.1))
            p = strand.Process(target=_hold_then_release, args=(lock, held, go, log))
            p.start()
            self.assertTrue(held.wait(60))
            self.assertFalse(lock.acquire(timeout=0.1))
            self.assertFalse(lock.acquire(False))
            go.set()
            with lock:  # waits for its release
                self.assertEqual(list(log), ["released"])
            p.join()
            self.assertEqual(p.exitcode, 0)
            # Semaphores count; a bounded one refuses a release too many.
            s = m.Semaphore(2)
            self.assertEqual([s.acquire(timeout=0.1) for _ in range(3)], [True, True, False])
            s.release()
            self.assertTrue(s.acquire(False))
            b = m.BoundedSemaphore(1)
            self.assertRaises(ValueError, b.release)
            # A joinable queue's join waits for every task_done.
            jq = m.JoinableQueue()
            for i in range(3):
                jq.put(i)
            p = strand.Process(target=_work_then_done, args=(jq, 3))
            p.start()
            jq.join()
            self.assertEqual(jq.qsize(), 0)
            p.join()
            self.assertFalse(hasattr(m, "RLock"))


    def test_a_synchronous_call_is_one_request(self):
        # A proxy's call waits for its result in the call's own request
        # (POST .../calls?wait=), with no read of it after, and asks for
        # no output when its method printed nothing.
        gw = strand.gateway.default()
        with strand.Manager() as m:
            d = m.dict()
            with _Sent(gw) as sent:
                d["a"] = 1
                self.assertEqual((d["a"], len(d)), (1, 1))
            # (the manager's output follower and the lease may ask
            # meanwhile: only its calls and lines count)
            calls = [s for s in sent if "/calls" in s[1] or ("/logs?" in s[1] and "wait=0" in s[1])]
            self.assertEqual(calls, [("POST", "/v1/managers/%s/calls?wait=30" % m.id)] * 3)

    def test_namespace_value_queue(self):
        with strand.Manager() as m:
            ns = m.Namespace()
            ns.x = 1
            ns.y = [1]
            ns.x += 1
            self.assertEqual((ns.x, ns.y), (2, [1]))
            self.assertRaises(AttributeError, lambda: ns.missing)
            v = m.Value("i", 5)
            v.value += 3
            self.assertEqual(v.value, 8)
            q = m.Queue()
            q.put("a")
            self.assertEqual((q.qsize(), q.get()), (1, "a"))

    def test_async_manager_handles_and_errors(self):
        class Counter:
            def __init__(self, start):
                self.n = start

            def add(self, k):
                if k < 0:
                    raise ValueError("negative step %d" % k)
                self.n += k
                return self.n

        class CounterManager(strand.AsyncManager):
            pass

        CounterManager.register("Counter", Counter)
        m = CounterManager()
        m.start()
        try:
            c = m.Counter(10)
            handles = [c.add(k) for k in range(5)]
            self.assertEqual([h.get(60) for h in handles], [10, 11, 13, 16, 20])
            bad = c.add(-1)
            bad.wait(60)
            self.assertTrue(bad.ready())
            with self.assertRaises(ValueError) as caught:
                bad.get()
            self.assertEqual(str(caught.exception), "negative step -1")
            self.assertEqual(c.add(0).get(60), 20)
        finally:
            m.shutdown()
        self.assertRaises(RuntimeError, m.dict)

    def test_manager_values_of_any_size(self):
        # A 20 MB argument and a 20 MB result, each a value of its own,
        # gone once the call is done and its result read.
        gw = strand.gateway.default()
        before = gw.request("GET", "/v1/values")["total"]
        with strand.Manager() as m:
            d = m.dict()
            big = os.urandom(20 << 20)
            d["big"] = big
            self.assertEqual(d["big"], big)
            self.assertEqual(len(d), 1)
        self.assertEqual(gw.request("GET", "/v1/values")["total"], before)


class CodeTest(unittest.TestCase):
    """The program's own code and data reach its workers: its folder (as
    their working directory) and the modules it imports from elsewhere."""

    def test_program_with_package_module_and_data(self):
        import tempfile

        with tempfile.TemporaryDirectory() as root:
            project = code_project.check(self, root)
            # A task writes into its worker's copy, never the caller's
            # folder (no backend shares a file system with the caller).
            self.assertFalse(os.path.exists(os.path.join(project, "out.txt")))

    def test_same_files_same_package(self):
        import tempfile

        with tempfile.TemporaryDirectory() as root:
            project = code_project.make(root)
            first = code_project.run(project, project)["code"]
            self.assertEqual(code_project.run(project, project)["code"], first)
            gw = strand.gateway.default()
            size = gw.request("GET", "/v1/code/" + first)["size"]
            from strand import _code

            data = _code.build(project)
            names = zipfile.ZipFile(io.BytesIO(data)).namelist()
            self.assertGreater(size, 0)
            self.assertIn("mypkg/helpers.py", names)
            self.assertIn("data/words.txt", names)
            self.assertNotIn("strand.token", names)
            self.assertNotIn("build/big.bin", names)
            self.assertEqual(data, _code.build(project))

    def test_run_from_another_folder(self):
        import tempfile

        with tempfile.TemporaryDirectory() as root:
            project = code_project.make(root)
            elsewhere = os.path.join(root, "elsewhere")
            os.makedirs(os.path.join(elsewhere, "data"))
            with open(os.path.join(elsewhere, "data", "words.txt"), "w") as f:
                f.write("from elsewhere")
            # As multiprocessing: the caller's folder is the workers', and
            # the script's own package still imports.
            out = code_project.run(project, elsewhere)
            self.assertEqual(out["triples"], [0, 3, 6, 9, 12, 15])
            self.assertEqual(out["data"], ["from", "elsewhere"])

    def test_zipped_again_only_once_a_file_changed(self):
        import tempfile
        from unittest import mock

        from strand import _code

        with tempfile.TemporaryDirectory() as root, mock.patch.dict(
            os.environ, {"STRAND_CACHE_DIR": os.path.join(root, "cache")}
        ):
            project = os.path.join(root, "project")
            os.makedirs(project)
            with open(os.path.join(project, "value.txt"), "w") as f:
                f.write("one")

            def program():  # a program's first pool: a gateway object of its own
                gw = strand.gateway.Gateway()
                gw.working_dir = project
                return _code.ensure(gw)

            packs = []
            real_pack = _code._Plan.pack

            def counted(plan):
                packs.append(plan)
                return real_pack(plan)

            with mock.patch.object(_code._Plan, "pack", counted):
                first = program()
                self.assertEqual(len(packs), 1)
                self.assertEqual(program(), first)
                self.assertEqual(len(packs), 1)  # the same files: not zipped again
                with open(os.path.join(project, "value.txt"), "w") as f:
                    f.write("two")  # the same size, maybe the same mtime
                second = program()
                self.assertEqual(len(packs), 2)
            self.assertNotEqual(second, first)
            self.assertEqual(second, hashlib.sha256(_code.build(project)).hexdigest())  # what is there now

    def test_over_the_cap_says_how_to_ship_less(self):
        import tempfile

        from strand import _code

        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "big.bin"), "wb") as f:
                f.write(b"x" * 100000)
            with self.assertRaises(_code.CodeTooLarge) as caught:
                _code.build(root, max_bytes=50000)
            self.assertIn("over 50000 bytes", str(caught.exception))
            self.assertIn("strand.init(working_dir=None)", str(caught.exception))
            # Left out, it is no longer counted.
            data = _code.build(root, excludes=["*.bin"], max_bytes=50000)
            self.assertTrue(data is None or "big.bin" not in zipfile.ZipFile(io.BytesIO(data)).namelist())


# A program that makes a pool, a Process and a detached pool, says their
# ids and then ends as MODE says: exits, raises, waits to be interrupted
# (Ctrl-C) or killed.
LEASE_PROGRAM = """
import json, sys, time
import strand
pool = strand.Pool(1)
kept = strand.Pool(1, detached=True)
proc = strand.Process(target=time.sleep, args=(300,))
proc.start()
print(json.dumps({"pool": pool.id, "kept": kept.id, "process": proc.id}), flush=True)
if sys.argv[1] == "raise":
    raise RuntimeError("the program fails")
if sys.argv[1] == "wait":
    time.sleep(300)
"""


class LeaseTest(unittest.TestCase):
    """What a program makes ends with it, however it ends, unless made
    detached."""

    def ends_as(self, mode, signal_number=None):
        import subprocess

        gw = strand.gateway.default()
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        child = subprocess.Popen(
            [sys.executable, "-c", LEASE_PROGRAM, mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        made = json.loads(child.stdout.readline())
        if signal_number is not None:
            child.send_signal(signal_number)
        child.communicate(timeout=60)
        # Its lease is deleted at its end, or (killed) runs out in 10 s.
        deadline = time.time() + 40
        while time.time() < deadline:
            states = (
                gw.request("GET", "/v1/pools/" + made["pool"])["state"],
                gw.request("GET", "/v1/processes/" + made["process"])["state"],
            )
            if states == ("terminated", "exited"):
                break
            time.sleep(0.2)
        self.assertEqual(states, ("terminated", "exited"))
        self.assertEqual(gw.request("GET", "/v1/pools/" + made["kept"])["state"], "active")
        gw.request("DELETE", "/v1/pools/" + made["kept"])
        return child.returncode

    def test_normal_exit(self):
        self.assertEqual(self.ends_as("exit"), 0)

    def test_exception(self):
        self.assertEqual(self.ends_as("raise"), 1)

    def test_ctrl_c(self):
        import signal

        # Python runs its exit handlers, then ends by the signal itself.
        self.assertEqual(self.ends_as("wait", signal.SIGINT), -signal.SIGINT)

    def test_kill_9(self):
        import signal

        self.assertEqual(self.ends_as("wait", signal.SIGKILL), -signal.SIGKILL)


# A program whose tasks print: each line must reach its stdout or stderr
# once, after its worker's id, before the program goes on.
OUTPUT_PROGRAM = """
import sys
import strand

def shout(x):
    print("line", x)
    print("warn", x, file=sys.stderr)
    return x

def fail(x):
    print("before failing", x)
    raise ValueError("boom")

def unfinished(x):
    sys.stdout.write("no newline %d" % x)
    return x

with strand.Pool(2) as pool:
    print("result", pool.map(shout, range(6)))
    try:
        pool.apply(fail, (7,))
    except ValueError:
        print("caught")
    print("applied", pool.apply(shout, (9,)))
    pool.apply(unfinished, (8,))
"""


MANAGER_OUTPUT_PROGRAM = """
import strand

class Talker:
    def say(self, x):
        print("said", x)
        return x * 2

class TalkerManager(strand.AsyncManager):
    pass

TalkerManager.register("Talker", Talker)
m = TalkerManager()
m.start()
t = m.Talker()
print("result", t.say(21).get(60))
print("result", t.say(4).get(60))
m.shutdown()
"""


class OutputTest(unittest.TestCase):
    """What tasks print reaches the program that submitted them."""

    def test_a_managers_prints_reach_the_program_before_its_results(self):
        import subprocess

        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        done = subprocess.run(
            [sys.executable, "-c", MANAGER_OUTPUT_PROGRAM], env=env, capture_output=True, text=True, timeout=120
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout.splitlines()
        self.assertEqual(len(out), 4, out)
        self.assertRegex(out[0], r"^\(w-[0-9a-f]{16}\) said 21$")
        self.assertEqual(out[1], "result 42")
        self.assertRegex(out[2], r"^\(w-[0-9a-f]{16}\) said 4$")
        self.assertEqual(out[3], "result 8")

    def test_a_manager_call_asks_for_its_output_only_when_it_printed(self):
        class Echo:
            def say(self, x):
                print(x)
                return x

            def same(self, x):
                return x

        class EchoManager(strand.AsyncManager):
            pass

        EchoManager.register("Echo", Echo)
        gw = strand.gateway.default()
        m = EchoManager()
        m.start()
        try:
            e = m.Echo()
            handle = e.say("hello")
            handle.wait(60)
            view = gw.request("GET", "/v1/managers/%s/calls/%s" % (m.id, handle._call))
            lines = gw.request("GET", "/v1/managers/%s/logs" % m.id)
            self.assertEqual([l["text"] for l in lines["lines"]], ["hello"])
            self.assertEqual(view["output_last"], lines["next"])
            handle.get(60)
            with _Sent(gw) as sent:
                self.assertEqual([e.same(x).get(60) for x in range(5)], list(range(5)))
            self.assertEqual(_lines_asked(sent), [])
        finally:
            m.shutdown()

    def test_prints_reach_the_program_once(self):
        import re
        import subprocess

        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(strand.__file__)))
        done = subprocess.run(
            [sys.executable, "-c", OUTPUT_PROGRAM], env=env, capture_output=True, text=True, timeout=120
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        worker = r"\(w-[0-9a-f]{16}\) "
        out = done.stdout.splitlines()
        err = done.stderr.splitlines()
        for x in range(6):
            self.assertEqual(len([l for l in out if re.fullmatch(worker + "line %d" % x, l)]), 1, out)
            self.assertEqual(len([l for l in err if re.fullmatch(worker + "warn %d" % x, l)]), 1, err)
        # A map's lines come before the program goes on.
        last_line = max(i for i, l in enumerate(out) if re.search(" line [0-5]$", l))
        self.assertLess(last_line, out.index("result [0, 1, 2, 3, 4, 5]"))
        self.assertEqual(len([l for l in out if re.fullmatch(worker + "before failing 7", l)]), 1)
        self.assertLess(next(i for i, l in enumerate(out) if "before failing" in l), out.index("caught"))
        # An apply's too.
        self.assertEqual(len([l for l in out if re.fullmatch(worker + "line 9", l)]), 1, out)
        self.assertLess(next(i for i, l in enumerate(out) if " line 9" in l), out.index("applied 9"))
        self.assertEqual(len([l for l in err if re.fullmatch(worker + "warn 9", l)]), 1, err)
        self.assertEqual(len([l for l in out if re.fullmatch(worker + "no newline 8", l)]), 1, out)
        self.assertEqual(len(out), 6 + 1 + 1 + 1 + 2 + 1)

    def test_thousands_of_lines_all_come_before_the_result(self):
        # A pull brings at most 1,024 lines: the result waits for those
        # after them, which go at once (not a pull a second, behind it).
        from contextlib import redirect_stdout

        shown = io.StringIO()
        with strand.Pool(1) as pool:
            with redirect_stdout(shown):
                self.assertEqual(pool.map(print_lines, [5000]), [5000])
                lines = shown.getvalue().splitlines()
        self.assertEqual([l.split(") ", 1)[1] for l in lines], ["line %d" % i for i in range(5000)])

    def test_a_program_behind_its_pools_lines_is_waited_for(self):
        # A slow terminal: the program shows the lines slower than its task
        # prints them and falls more than the 10,000 kept behind; the
        # worker waits for it, as a child printing to a full pipe does.
        from contextlib import redirect_stderr, redirect_stdout

        class SlowTerminal(io.StringIO):
            def write(self, text):
                time.sleep(0.0002)
                return super().write(text)

        shown, said = SlowTerminal(), io.StringIO()
        with strand.Pool(1) as pool:
            with redirect_stdout(shown), redirect_stderr(said):
                self.assertEqual(pool.map(print_lines, [15000]), [15000])
                lines = shown.getvalue().splitlines()
        self.assertEqual([l.split(") ", 1)[1] for l in lines], ["line %d" % i for i in range(15000)])
        self.assertNotIn("were gone", said.getvalue())

    def test_a_reader_is_told_of_lines_gone_before_it_read_them(self):
        # A pool no program follows (detached) is not waited for: past the
        # 10,000 lines kept, the oldest go, and a reader from before them
        # is told so.
        from contextlib import redirect_stdout

        gw = strand.gateway.default()
        pool = strand.Pool(1, detached=True)
        try:
            with redirect_stdout(io.StringIO()):
                self.assertEqual(pool.apply(print_lines, (12000,)), 12000)
            page = gw.request("GET", "/v1/pools/%s/logs?after=0&limit=1" % pool.id)
            self.assertTrue(page["missed"])
            oldest = int(page["lines"][0]["text"].split()[1])  # 10,000 to 11,000 kept, as pulls brought them
            self.assertTrue(1000 <= oldest <= 2000, oldest)
            page = gw.request("GET", "/v1/pools/%s/logs?after=%d&limit=1" % (pool.id, page["next"]))
            self.assertEqual((page.get("missed"), page["lines"][0]["text"]), (None, "line %d" % (oldest + 1)))
        finally:
            pool.terminate()

    def test_lines_gone_before_they_were_shown_are_counted(self):
        # The gateway keeps a pool's newest lines: a program that fell
        # that far behind says how many it could not show.
        import threading
        from contextlib import redirect_stderr, redirect_stdout

        import strand.output

        follower = strand.output.Output.__new__(strand.output.Output)  # no thread: a page is given
        follower.pool_id, follower.shown, follower.lock = "p-0123456789abcdef", 2, threading.Lock()
        lines = [{"seq": n, "stream": "stdout", "worker": "w-1", "text": "t%d" % n} for n in (2, 6, 9)]
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            follower._show({"lines": lines[:2], "next": 6})  # numbers skip other pools' lines
            follower._show({"lines": lines[2:], "next": 9, "missed": True})
            follower._show({"lines": lines[2:], "next": 9, "missed": True})  # shown by the other reader
        self.assertEqual(
            err.getvalue(),
            "(strand) lines of p-0123456789abcdef were gone before they could be shown: "
            "the gateway keeps each one's newest 10,000\n",
        )
        self.assertEqual(out.getvalue(), "(w-1) t6\n(w-1) t9\n")
        self.assertEqual(follower.shown, 9)

    def test_logs_by_worker_and_followed(self):
        import threading

        gw = strand.gateway.default()
        with strand.Pool(2) as pool:
            pool.map(print, range(20), chunksize=1)
            page = gw.request("GET", "/v1/pools/%s/logs" % pool.id)
            lines = page["lines"]
            self.assertEqual(sorted(l["text"] for l in lines), sorted(str(x) for x in range(20)))
            self.assertEqual({l["stream"] for l in lines}, {"stdout"})
            self.assertEqual(page["next"], lines[-1]["seq"])
            one = lines[0]["worker"]
            mine = gw.request("GET", "/v1/pools/%s/logs?worker=%s" % (pool.id, one))["lines"]
            self.assertEqual(mine, [l for l in lines if l["worker"] == one])
            self.assertEqual(gw.request("GET", "/v1/pools/%s/logs?tail=5" % pool.id)["lines"], lines[-5:])
            with self.assertRaises(strand.StrandError) as e:
                gw.request("GET", "/v1/pools/%s/logs?tail=5&limit=5" % pool.id)
            self.assertEqual(e.exception.detail, "give 'limit' (the first lines) or 'tail' (the newest), not both")
            # A follower waits for the next line.
            got = []
            follower = threading.Thread(
                target=lambda: got.append(
                    gw.request("GET", "/v1/pools/%s/logs?after=%d&wait=30" % (pool.id, page["next"]), timeout=60)
                )
            )
            follower.start()
            time.sleep(0.5)
            pool.apply(print, ("later",))
            follower.join(60)
            self.assertEqual([l["text"] for l in got[0]["lines"]], ["later"])
        with self.assertRaises(strand.StrandError) as e:
            gw.request("GET", "/v1/pools/p-0000000000000000/logs")
        self.assertEqual(e.exception.status, 404)

    def test_work_asks_for_its_output_only_when_its_tasks_printed(self):
        gw = strand.gateway.default()
        with strand.Pool(2) as pool:
            # A job's last results page says where its pool's output ends,
            # and so does an apply's answer.
            printing = pool.map_async(print, ["a", "b", "c"], chunksize=1)
            printing.get(60)
            page = gw.request("GET", "/v1/jobs/%s/results?wait=30" % printing._job)
            self.assertTrue(page["complete"])
            lines = gw.request("GET", "/v1/pools/%s/logs" % pool.id)
            self.assertEqual(sorted(l["text"] for l in lines["lines"]), ["a", "b", "c"])
            self.assertEqual(page["output_last"], lines["next"])
            apply = "/v1/pools/%s/apply?wait=30" % pool.id
            answer = gw.request("POST", apply, {"function": "rt:builtins:print", "arg": "f"})
            lines = gw.request("GET", "/v1/pools/%s/logs" % pool.id)
            self.assertEqual(lines["lines"][-1]["text"], "f")
            self.assertEqual(answer["output_last"], lines["next"])
            answer = gw.request("POST", apply, {"function": "rt:builtins:abs", "arg": -2})
            self.assertEqual((answer["value"], answer["output_last"]), (2, lines["next"]))
            # ... only on its last page.
            slow = pool.apply_async(time.sleep, (2,))
            self.assertNotIn("output_last", gw.request("GET", "/v1/jobs/%s/results?wait=0" % slow._job))
            slow.get(60)
            # A map whose tasks printed nothing asks for no lines when it
            # returns (the follower's long polls aside); one whose tasks
            # printed shows them before it returns.
            with _Sent(gw) as sent:
                self.assertEqual(pool.map(abs, range(-50, 50)), [abs(x) for x in range(-50, 50)])
                self.assertEqual(pool.apply(abs, (-3,)), 3)
            self.assertEqual(_lines_asked(sent), [])
            shown = io.StringIO()
            real_stdout, sys.stdout = sys.stdout, shown
            try:
                pool.map(print, ["d", "e"], chunksize=1)
            finally:
                sys.stdout = real_stdout
            texts = [l.split(" ", 1)[1] for l in shown.getvalue().splitlines()]
            self.assertEqual(sorted(t for t in texts if t in ("d", "e")), ["d", "e"])


if __name__ == "__main__":
    sys.exit(unittest.main(verbosity=2))

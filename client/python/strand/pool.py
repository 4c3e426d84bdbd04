"""strand.Pool: multiprocessing.Pool's interface over a strand gateway. Each
worker runs strand's Python runtime; functions and arguments travel as
cloudpickle bytes (rt:pickle), results come back the same way, and a task's
exception is raised again in the caller with the remote traceback."""

import base64
import threading

import cloudpickle

from . import gateway as _gateway

EXCEPTION_MARK = "strand-pickled-exception: "
PAGE = 10000
WAIT_S = 30


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (its __cause__)."""

    def __str__(self):
        return self.args[0]


class RemoteError(Exception):
    """A task failed in a way that is not a Python exception (a runtime
    that died, a timeout, a cancelled task), or one that cannot be unpickled."""


def _payload(func_bytes, args, kwds):
    """One task: the function pickled once per call (bytes, which pickle
    again as a copy), with this task's arguments."""
    return base64.b64encode(cloudpickle.dumps((func_bytes, tuple(args), dict(kwds)))).decode("ascii")


def _error(text):
    """The exception a failed task's error text stands for."""
    head, mark, pickled = text.rpartition(EXCEPTION_MARK)
    if mark:
        try:
            exc = cloudpickle.loads(base64.b64decode(pickled.strip()))
            exc.__cause__ = RemoteTraceback(head.rstrip())
            return exc
        except Exception:  # unpicklable here: the text still says what it was
            pass
    return RemoteError(text)


def _value(item):
    if not item.get("ok"):
        raise _error(item.get("error", "failed"))
    return cloudpickle.loads(base64.b64decode(item["value"]))


class AsyncResult:
    """multiprocessing's AsyncResult: get, wait, ready, successful."""

    def __init__(self, pool, job, single, callback=None, error_callback=None):
        self._pool, self._job, self._single = pool, job, single
        self._event = threading.Event()
        self._items = None
        self._callback, self._error_callback = callback, error_callback
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self):
        try:
            self._items = list(self._pool._results(self._job, "input"))
        except Exception as e:  # the gateway went away: get() says so
            self._items = e
        self._event.set()
        try:
            value = self.get(0)
            if self._callback:
                self._callback(value)
        except Exception as e:
            if self._error_callback:
                self._error_callback(e)

    def ready(self):
        return self._event.is_set()

    def wait(self, timeout=None):
        self._event.wait(timeout)

    def successful(self):
        if not self.ready():
            raise ValueError("the result is not ready")
        return not isinstance(self._items, Exception) and all(i.get("ok") for i in self._items)

    def get(self, timeout=None):
        if not self._event.wait(timeout):
            raise TimeoutError("the result is not ready after %s s" % timeout)
        if isinstance(self._items, Exception):
            raise self._items
        values = [_value(i) for i in self._items]
        return values[0] if self._single else values


class Pool:
    def __init__(self, processes=None, backend=None, image=None, max_attempts=None, gateway=None):
        self._gw = gateway or _gateway.default()
        spec = {"runtime": "python"}
        if processes is not None:
            spec["processes"] = processes
        backend = backend or getattr(self._gw, "backend", None)
        image = image or getattr(self._gw, "image", None)
        if backend:
            spec["backend"] = backend
        if image:
            spec["image"] = image
        if max_attempts:
            spec["max_attempts"] = max_attempts
        self.id = self._gw.request("POST", "/v1/pools", spec)["id"]
        self._state = "running"

    # ---- submitting -----------------------------------------------------
    def _submit(self, func, arg_tuples):
        if self._state != "running":
            raise ValueError("Pool not running")
        func_bytes = cloudpickle.dumps(func)
        args = [_payload(func_bytes, a, {}) for a in arg_tuples]
        return self._gw.request("POST", "/v1/pools/%s/map" % self.id, {"function": "rt:pickle", "args": args})["id"]

    def _results(self, job, order):
        """Each result item of job, paged with long polls."""
        cursor = ""
        while True:
            page = self._gw.request(
                "GET",
                "/v1/jobs/%s/results?order=%s&cursor=%s&limit=%d&wait=%d" % (job, order, cursor, PAGE, WAIT_S),
            )
            for item in page["items"]:
                yield item
            if page.get("complete"):
                return
            cursor = page["next_cursor"]

    # ---- multiprocessing.Pool -------------------------------------------
    def apply(self, func, args=(), kwds=None):
        return self.apply_async(func, args, kwds).get()

    def apply_async(self, func, args=(), kwds=None, callback=None, error_callback=None):
        if self._state != "running":
            raise ValueError("Pool not running")
        job = self._gw.request(
            "POST", "/v1/pools/%s/map" % self.id, {"function": "rt:pickle", "args": [_payload(cloudpickle.dumps(func), args, kwds or {})]}
        )["id"]
        return AsyncResult(self, job, True, callback, error_callback)

    def map(self, func, iterable, chunksize=None):
        return [_value(i) for i in self._results(self._submit(func, [(x,) for x in iterable]), "input")]

    def map_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        return AsyncResult(self, self._submit(func, [(x,) for x in iterable]), False, callback, error_callback)

    def starmap(self, func, iterable, chunksize=None):
        return [_value(i) for i in self._results(self._submit(func, [tuple(a) for a in iterable]), "input")]

    def imap(self, func, iterable, chunksize=1):
        for item in self._results(self._submit(func, [(x,) for x in iterable]), "input"):
            yield _value(item)

    def imap_unordered(self, func, iterable, chunksize=1):
        for item in self._results(self._submit(func, [(x,) for x in iterable]), "completion"):
            yield _value(item)

    def close(self):
        if self._state == "running":
            self._gw.request("POST", "/v1/pools/%s/close" % self.id)
            self._state = "closed"

    def terminate(self):
        if self._state != "terminated":
            self._gw.request("DELETE", "/v1/pools/%s" % self.id)
            self._state = "terminated"

    def join(self):
        if self._state == "running":
            raise ValueError("Pool is still running (close or terminate it first)")
        # A closed pool's workers stop once its queued work is done.
        while self._state == "closed":
            if self._gw.request("GET", "/v1/pools/%s" % self.id)["state"] not in ("active", "closing"):
                break
            threading.Event().wait(0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.terminate()

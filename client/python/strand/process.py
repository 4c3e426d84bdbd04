"""strand.Process: multiprocessing.Process over a strand gateway. start()
runs the process's run() (by default target(*args, **kwargs)) once in
strand's Python runtime, as a gateway Process (POST /v1/processes,
function rt:pickle:MODULE.QUALNAME of its target, or of run); its
resources come from strand.meta on the target. Queues and pipes passed to
it work there: the process reaches the gateway through its
strand-worker."""

import base64
import itertools
import os
import signal
import sys
import threading
import time
import weakref

from . import _code, _pickling, _worker
from . import process_output as _output
from . import gateway as _gateway
from .meta import resources_of
from .queues import SimpleQueue

WAIT_S = 30
_counter = itertools.count(1)
_children = weakref.WeakSet()  # the Processes this program started (active_children)
_children_lock = threading.Lock()


class _MainProcess:
    """What current_process() is in the program itself (multiprocessing's
    _MainProcess): its name, pid and authkey, which its Processes inherit."""

    name = "MainProcess"
    daemon = False
    exitcode = None

    def __init__(self):
        self.authkey = os.urandom(32)
        self.ident = self.pid = os.getpid()

    def is_alive(self):
        return True

    def __repr__(self):
        return "<_MainProcess name=%r pid=%d>" % (self.name, self.pid)


_current = _MainProcess()


def current_process():
    """The Process this code runs in: in a Process's run(), that Process;
    in a pool's task, its worker's runtime process (PoolWorker-N, the
    pool's Nth worker, as multiprocessing's current_process() says there
    too); elsewhere the program's own."""
    global _current
    if isinstance(_current, _MainProcess) and _worker.inside() and _current.name == "MainProcess":
        number = _worker.pool_worker_number()
        _current.name = "PoolWorker-%d" % number if number else "StrandPoolWorker-%d" % os.getpid()
        _current.ident = _current.pid = os.getpid()
    return _current


def active_children():
    """The Processes this program started that still run (each asked of
    the gateway); ended ones are forgotten, as multiprocessing's are."""
    with _children_lock:
        started = list(_children)
    alive = [p for p in started if p.is_alive()]
    with _children_lock:
        for p in started:
            if p not in alive:
                _children.discard(p)
    return alive


def _run_process(process):
    """The body that runs remotely: the process object's own run(), with
    current_process() that object, its pid as the caller sees it: the
    host's pid on the local backend (its sandbox shows another), else its
    id (STRAND_POOL_ID: a process's worker serves it as its own pool).
    What it prints also goes to its caller (_output)."""
    global _current
    host_pid = os.environ.get("STRAND_HOST_PID", "")
    process._pid_inside = int(host_pid) if host_pid.isdigit() else os.environ.get("STRAND_POOL_ID")
    _current = process
    _worker.name_current_process(process.name, process._identity)  # as in multiprocessing's child
    lines = _output.Sender(process._lines) if process._lines is not None else None
    try:
        _worker.exit_code = _exit_code(process)
    finally:
        if lines is not None:
            lines.close()


def _exit_code(process):
    """Runs the process as multiprocessing's child does: its exit code is
    sys.exit's (a text said on stderr, and 1), or 1 with "Process NAME:"
    and the traceback on stderr when run raised, where its caller sees
    them. The runtime exits with it once the process's children ended."""
    try:
        process.run()
        return 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        sys.stderr.write("%s\n" % (e.code,))
        return 1
    except BaseException:
        import traceback

        sys.stderr.write("Process %s:\n" % process.name)
        traceback.print_exc()
        return 1


class Process:
    """multiprocessing.Process: run() (target(*args, **kwargs) unless
    overridden) in a process of its own on the gateway's backend, with the
    program's code and data (docs/python.md); what it prints is shown in
    this program. It ends with the program unless detached."""

    def __init__(
        self, group=None, target=None, name=None, args=(), kwargs=None, *, daemon=None, gateway=None, detached=False
    ):
        if group is not None:
            raise ValueError("group must be None (as in multiprocessing)")
        self._target, self._args, self._kwargs = target, tuple(args), dict(kwargs or {})
        self._identity = (next(_counter),)  # multiprocessing's, for a child of the program
        self.name = name or "Process-%d" % self._identity
        self.daemon = bool(daemon)
        self.authkey = current_process().authkey  # inherited, as multiprocessing's
        self._gw = gateway
        self._detached = detached  # it outlives the program (no lease)
        self.id = None
        self._view = None
        self._sentinel = None
        self._lines = None  # the queue its output comes back on (process_output)
        self._shown = None

    def __getstate__(self):
        # What runs remotely: the process's function and arguments, never
        # the caller's gateway connection (its token stays here).
        state = dict(self.__dict__)
        state["_gw"] = None
        state["_view"] = None
        state["_sentinel"] = None
        state["_shown"] = None
        return state

    def run(self):
        """What the process does; subclasses may override it."""
        if self._target:
            self._target(*self._args, **self._kwargs)

    def _resources(self, what):
        """What the process's job asks of its backend (the gateway's
        "resources"): what strand.meta marked what runs with, or None."""
        return resources_of(what)

    def start(self):
        """Starts the process on the gateway's backend: run() in a worker of
        its own, with the program's code and its own output shown here."""
        import cloudpickle

        if self.id is not None:
            raise AssertionError("cannot start a process twice")
        self._gw = self._gw or _gateway.default()
        if not self._detached:
            # What it prints comes back to this program through a queue of
            # its own (a detached one's stays in its log).
            self._lines = SimpleQueue(self._gw)
        payload = base64.b64encode(cloudpickle.dumps((_run_process, (self,), {}))).decode("ascii")
        what = self._target if self._target else type(self).run
        spec = {"function": _pickling.function_name(what), "arg": payload, "runtime": "python"}
        backend = getattr(self._gw, "backend", None)
        image = getattr(self._gw, "image", None)
        if backend:
            spec["backend"] = backend
        if image:
            spec["image"] = image
        resources = self._resources(what)
        if resources:
            spec["resources"] = resources
        code = _code.ensure(self._gw)
        if code:
            spec["code"] = code
        if not self._detached:
            spec["lease"] = self._gw.lease()
        self._view = self._gw.request("POST", "/v1/processes", spec)
        self.id = self._view["id"]
        if self._view.get("state") == "failed":
            raise OSError("strand: the process could not start: %s" % self._view.get("reason", "unknown"))
        with _children_lock:
            _children.add(self)
        if self._lines is not None:
            self._shown = _output.Receiver(self._lines, self.id)

    def _refresh(self, wait_s=0):
        if self.id is None:
            return None
        if self._view is None or self._view.get("state") == "running":
            path = "/v1/processes/%s" % self.id + ("?wait=%d" % wait_s if wait_s else "")
            self._view = self._gw.request("GET", path, timeout=wait_s + 30 if wait_s else None)
        return self._view

    def join(self, timeout=None):
        """Waits until the process has ended, or timeout seconds (None: no
        limit); every line it printed is shown before it returns."""
        if self.id is None:
            raise AssertionError("can only join a started process")
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._refresh()["state"] == "running":
            left = WAIT_S if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return
            self._refresh(max(1, min(WAIT_S, int(left + 0.999))))
        if self._shown is not None:
            self._shown.finish()  # every line it printed, before join returns

    def is_alive(self):
        """Whether it was started and has not ended."""
        return self.id is not None and self._refresh()["state"] == "running"

    @property
    def exitcode(self):
        """None while it runs; 0 when run() returned, sys.exit's or os._exit's
        code, 1 when it raised; -N when signal N ended it (terminate:
        -SIGTERM), as multiprocessing."""
        view = self._refresh() if self.id is not None else None
        if not view or view["state"] == "running":
            return None
        code = view.get("exit_code", -1)
        if view.get("terminated") and code != 0:
            return -signal.SIGTERM
        if code > 128:  # the local backend's 128 + signal
            return -(code - 128)
        return code

    @property
    def pid(self):
        """Its process id on the local backend; elsewhere the gateway's id."""
        inside = self.__dict__.get("_pid_inside")
        if inside is not None:
            return inside
        if self.id is None:
            return None
        return (self._view or {}).get("pid", self.id)

    @property
    def sentinel(self):
        """A file descriptor that becomes ready (end of file) once the
        process has ended: for multiprocessing.connection.wait and select,
        as multiprocessing's. A thread of its own waits on the gateway."""
        if self.id is None:
            raise ValueError("process not started")
        if self._sentinel is None:
            ready, done = os.pipe()
            self._sentinel = ready

            def wait_end():
                try:
                    self.join()
                finally:
                    os.close(done)

            threading.Thread(target=wait_end, daemon=True, name="strand-sentinel").start()
        return self._sentinel

    def terminate(self):
        """SIGTERM, then SIGKILL after 2 s; returns once it is gone."""
        if self.id is not None:
            self._view = self._gw.request("DELETE", "/v1/processes/%s" % self.id)
            if self._shown is not None:
                self._shown.finish(wait=False)  # killed: it sends no end mark

    kill = terminate

    def logs(self):
        """What it printed (stdout and stderr), kept after it ends."""
        return self._gw.request_text("GET", "/v1/processes/%s/logs" % self.id)

    def __repr__(self):
        state = "initial" if self.id is None else self._view.get("state", "?")
        return "<strand.Process name=%r id=%s %s>" % (self.name, self.id, state)

"""Inside a worker's Python runtime: the line to the worker, through which a
task's queue and pipe calls reach the gateway (frames 'Q' and 'A', docs/tasks.md,
"Runtimes"), set by strand.runtime while it runs tasks (None elsewhere);
and what the runtime keeps between tasks: functions unpickled once, the
initializers that ran."""

import collections
import itertools
import json
import os

from . import _pid, _relay

line = None  # strand.runtime's line to the worker, while it runs
exit_code = 0  # a Process's, as multiprocessing's child ends (strand.process): the runtime's

_functions = {}  # a task's function, by its pickled bytes: unpickled once per runtime
FUNCTIONS_KEPT = 64
_initialized = set()  # the pickled initializers that ran in this runtime


class InputsFailed(Exception):
    """Raised by a task of several inputs (a map's chunk) some of which
    failed alone: values, one an input (None where one failed), and
    failures, (offset, exception, traceback text) each. The runtime answers
    with the rest's values and each failure ('P', docs/tasks.md)."""

    def __init__(self, values, failures):
        super().__init__("%d of %d inputs failed" % (len(failures), len(values)))
        self.values, self.failures = values, failures


# The files of the values the running task's references name (strand.put:
# {sha256: path}, set by strand.runtime before its argument is unpickled),
# and the objects they held, unpickled once per runtime (the newest kept).
ref_files = {}
_resolved = collections.OrderedDict()
RESOLVED_KEPT = 16


def resolve(sha256):
    """What a strand.Ref unpickles as: in a worker, the object it names
    (the same object for every task of this runtime); elsewhere, the Ref."""
    if line is None:
        from .refs import Ref

        return Ref(sha256)
    if sha256 in _resolved:
        _resolved.move_to_end(sha256)
        return _resolved[sha256]
    path = ref_files.get(sha256)
    if path is None:
        raise RuntimeError("strand: the task names no file for the value %s" % sha256)
    obj = unpickle_file(path)
    _resolved[sha256] = obj
    while len(_resolved) > RESOLVED_KEPT:
        _resolved.popitem(last=False)
    return obj


def unpickle_file(path):
    """The object pickled in the file at path (a value's, in the worker's
    cache), read through a mapping of it: its bytes are copied once, into
    the object, not first into a buffer."""
    import mmap
    import pickle

    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return pickle.loads(b"")  # raises as an empty pickle does
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return pickle.loads(mapped)


def read_once_file(pickled):
    """Pickled bytes too large to go inline, in a file the worker stores as
    a value read once: 16 random bytes after them (which unpickling
    ignores) name it apart from equal bytes, so that its reader may remove
    it. What a call carries instead: {"$value_file": PATH}."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="strand-value-")
    with os.fdopen(fd, "wb") as f:
        f.write(pickled)
        f.write(os.urandom(16))
    return {"$value_file": path}


def pool_worker_number():
    """In a pool's worker, its number in the pool (1 for its first worker;
    one that replaced another has the next), else None."""
    number = os.environ.get("STRAND_WORKER_NUMBER", "")
    return int(number) if number.isdigit() else None


def name_current_process(name, identity):
    """What multiprocessing's current_process() says here: its name and its
    _identity (which programs use to tell workers apart: a GPU each, say),
    as in a multiprocessing child or pool worker."""
    import multiprocessing.process

    me = multiprocessing.process.current_process()
    me.name, me._identity = name, identity


def name_pool_worker():
    """A pool worker's runtime is multiprocessing's pool worker to its
    tasks: PoolWorker-N, _identity (N,)."""
    number = pool_worker_number()
    if number is not None:
        name_current_process("PoolWorker-%d" % number, (number,))


# A process a task started inherits the relay's path in its environment;
# read once (os.environ's lookup was 1.7 us of every queue put and get).
_task_child = _relay.ENV in os.environ


def inside():
    """In a worker's runtime, or a process a task of it started."""
    return line is not None or _task_child


_call_ids = itertools.count(1)


def call(op, **args):
    """One call: ("ok", item JSON text), ("empty", "") or ("error", why).
    From the runtime itself on its line (a 'Q' frame of its own id, which
    its answer carries); from a child of it through the runtime
    (_relay)."""
    if line is None or line.pid != _pid.current():
        return _relay.call(op, args)
    ident = next(_call_ids)
    line.send(b"Q", ident, op.encode(), json.dumps(args).encode(), now=True)
    _, _, status, item = line.answer(ident)
    return status.decode(), item.decode()


_main_globals = {"__name__": "__main__"}  # what the caller's __main__ functions share here


def _in_shared_main(function):
    """cloudpickle gives a function of the caller's __main__ (pickled by
    value) a globals dict of its own per pickle, so a global one such
    function sets (a pool's initializer) is not seen by the next. Here they
    share one, as they would in the caller's script: names the pickle
    brought are added where missing, never over what a function set."""
    import types

    if not isinstance(function, types.FunctionType) or function.__globals__.get("__name__") != "__main__":
        return function
    if function.__globals__ is _main_globals:
        return function
    for name, value in function.__globals__.items():
        _main_globals.setdefault(name, value)
    shared = types.FunctionType(
        function.__code__, _main_globals, function.__name__, function.__defaults__, function.__closure__
    )
    shared.__kwdefaults__ = function.__kwdefaults__
    shared.__dict__.update(function.__dict__)
    shared.__qualname__ = function.__qualname__
    return shared


def unpickle_function(pickled):
    """A function that came as cloudpickle bytes (a map sends it once per
    task), unpickled once per runtime."""
    function = _functions.get(pickled)
    if function is None:
        import cloudpickle

        if len(_functions) >= FUNCTIONS_KEPT:
            _functions.clear()
        function = _functions[pickled] = _in_shared_main(cloudpickle.loads(pickled))
    return function


def initialize(pickled, args):
    """A pool's initializer, once per runtime (its worker's process)."""
    if pickled not in _initialized:
        unpickle_function(pickled)(*args)
        _initialized.add(pickled)

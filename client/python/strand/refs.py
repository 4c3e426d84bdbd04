"""strand.put: an object stored once on the gateway as a value, and a
reference to it (Ref) that tasks take instead of the object itself, as
Ray's object store does. A map over a hundred tasks that each take the
same 50 MB of weights sends the weights once: each task's argument (or
its function's closure) names the value, the gateway grants each worker
that runs one the right to fetch it, each worker host fetches it once,
and each runtime unpickles it once and hands every task the same object.
In the caller a Ref stays a Ref.

A value put here stays until ref.delete(), or until the program ends
(its Refs are removed at exit, as its pools end)."""

import atexit
import contextlib
import threading

from . import _pickling, _worker
from . import gateway as _gateway

_collector = threading.local()  # the shas a pickle under way takes (collecting)
_put = {}  # this program's refs by name: removed at exit
_put_lock = threading.Lock()


class Ref:
    """A reference to an object put on the gateway (strand.put)."""

    __slots__ = ("sha256", "_gw")

    def __init__(self, sha256, gateway=None):
        self.sha256, self._gw = sha256, gateway

    def __reduce__(self):
        shas = getattr(_collector, "shas", None)
        if shas is not None:
            shas.add(self.sha256)
        return _worker.resolve, (self.sha256,)

    def __repr__(self):
        return "strand.Ref(%s)" % self.sha256[:12]

    def __eq__(self, other):
        return isinstance(other, Ref) and other.sha256 == self.sha256

    def __hash__(self):
        return hash(self.sha256)

    def get(self):
        """The object itself, fetched from the gateway."""
        import pickle

        return pickle.loads(self._gateway().get_value(self.sha256))

    def delete(self):
        """Removes the object from the gateway: tasks that take it after
        fail, saying the gateway holds no such value."""
        with _put_lock:
            _put.pop(self.sha256, None)
        self._gateway().request("DELETE", "/v1/values/" + self.sha256)

    def _gateway(self):
        return self._gw or _gateway.default()


def put(obj, gateway=None):
    """Stores obj on the gateway once (its pickled bytes, as a value) and
    returns a Ref to pass to tasks in its place."""
    if _worker.inside():
        raise RuntimeError("strand.put is called from the program that runs the pool, not from a task")
    gw = gateway or _gateway.default()
    ref = Ref(gw.put_value(_pickling.dumps(obj))["$value"], gateway)
    with _put_lock:
        if not _put:
            atexit.register(_remove_all)
        _put[ref.sha256] = ref
    return ref


def _remove_all():
    for ref in list(_put.values()):
        try:
            ref.delete()
        except Exception:  # the gateway went first: nothing to keep
            pass


@contextlib.contextmanager
def collecting():
    """The names of the Refs pickled within, as a set."""
    outer = getattr(_collector, "shas", None)
    _collector.shas = shas = set()
    try:
        yield shas
    finally:
        _collector.shas = outer
        if outer is not None:
            outer.update(shas)

"""Pickling for tasks, results and queue items: the standard library's
pickle where it can (plain data, functions and classes importable by name:
several times faster than cloudpickle's pure-Python pickler), cloudpickle
where it cannot (lambdas, closures, what the caller's script defines).
Both read back with pickle.loads.

pickle names a class or function of the caller's script __main__.NAME,
which a worker's runtime (its own __main__) lacks: where the standard
pickler meets one (reducer_override, called for every object but the
plain built-in types), the object is pickled again with cloudpickle,
which carries such definitions by value. (Searching the pickle's bytes
for "__main__" instead cost as much as pickling them: 0.7 s a GiB.)"""

import io
import pickle


class _NamesMain(Exception):
    pass


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj):
        try:
            main = getattr(obj, "__module__", None) == "__main__"
        except Exception:  # an object whose attributes misbehave: not the script's
            main = False
        if main:
            raise _NamesMain
        return NotImplemented


# What the standard pickler raises for an object cloudpickle takes.
_NOT_PICKLE = (_NamesMain, pickle.PicklingError, AttributeError, TypeError)


def _by_value(obj):
    import cloudpickle

    return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def dumps(obj):
    out = io.BytesIO()
    try:
        _Pickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
        return out.getvalue()
    except _NOT_PICKLE:
        return _by_value(obj)


class Dumper:
    """dumps by one pickler, kept from call to call: making a pickler cost
    more than pickling a small object (a map of 20,000 inputs a task, a
    runtime's results of no-ops). For one thread at a time."""

    KEPT_BYTES = 1 << 20  # a buffer grown past this is let go after its call
    # Values that cannot hold anything of the caller's script: pickle's own
    # dumps at once (a no-op's None, a number).
    PLAIN = frozenset((type(None), bool, int, float, str, bytes))

    def __init__(self):
        self._fresh()

    def _fresh(self):
        self.out = io.BytesIO()
        self.pickler = _Pickler(self.out, protocol=pickle.HIGHEST_PROTOCOL)

    def dumps(self, obj):
        if type(obj) in self.PLAIN:
            return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        try:
            self.pickler.dump(obj)
            data = self.out.getvalue()
        except _NOT_PICKLE:
            self._fresh()  # its state after a failure is unsure
            return _by_value(obj)
        if len(data) > self.KEPT_BYTES:
            self._fresh()
        else:
            self.out.seek(0)
            self.out.truncate()
            self.pickler.clear_memo()
        return data


def dumps_each(objs):
    """[dumps(obj) for obj in objs], by one pickler."""
    dump = Dumper().dumps
    return [dump(obj) for obj in objs]


# The gateway takes a runtime's function name as rt: and at most 200
# printable ASCII characters (common/function.c): rt:pickle: leaves this.
NAME_MAX = 200 - len("pickle:")


def function_name(func):
    """A pickled function's task name as the gateway shows it: rt:pickle:
    and the function's module and qualified name (rt:pickle:__main__.square),
    so that a job says what it runs; the runtime reads every rt:pickle:*
    task alike. Characters the gateway does not take become '?'."""
    module = getattr(func, "__module__", None) or "?"
    qualname = getattr(func, "__qualname__", None) or type(func).__qualname__
    name = "".join(c if " " < c < "\x7f" else "?" for c in "%s.%s" % (module, qualname))
    return "rt:pickle:" + name[:NAME_MAX]


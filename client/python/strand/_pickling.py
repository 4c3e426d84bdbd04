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
import sys
import types


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


# Types whose values cannot change (exactly these: a subclass may have
# attributes that can).
_IMMUTABLE = frozenset((type(None), bool, int, float, complex, str, bytes, range, type(Ellipsis)))


def _by_name(obj):
    """Whether cloudpickle pickles obj by its name (a module, or a function
    or class its module gives back by its qualified name): its pickle is
    the name, whatever it holds."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__ != "__main__"
    if not isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return False
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None or module.__name__ == "__main__":
        return False
    found = module
    for part in getattr(obj, "__qualname__", "<>").split("."):
        found = getattr(found, part, None)
    return found is obj


def _code_names(code, names):
    names.update(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_names(const, names)


def captured(func):
    """What cloudpickle's pickle of func is made of (its code, the globals
    it names, its defaults, closure, annotations and names), as a tuple of
    those objects, when each is a value that cannot change (a number, a
    string, a tuple of such) or is pickled by its name; None when one is
    not (a list, an object, a function of the script), whose pickle must be
    made again to hold what it holds now. Two calls that give tuples of the
    same objects (compared with `is`, the first kept alive meanwhile) give
    the same pickle."""
    import cloudpickle.cloudpickle as _cp

    # (Modules registered to go by value, or a cloudpickle that does not
    # say which: their functions and classes are not pickled by name.)
    if type(func) is not types.FunctionType or func.__dict__ or getattr(_cp, "_PICKLE_BY_VALUE_MODULES", True):
        return None
    names = set()
    _code_names(func.__code__, names)
    held = [func.__code__, func.__name__, func.__qualname__, func.__module__, func.__doc__]
    held += [func.__globals__[n] for n in sorted(names) if n in func.__globals__]
    held += func.__defaults__ or ()
    held += (func.__kwdefaults__ or {}).values()
    try:
        held += (cell.cell_contents for cell in func.__closure__ or ())
    except ValueError:  # a cell not yet set
        return None
    held += func.__annotations__.values()

    def fixed(value, depth=0):
        if type(value) in _IMMUTABLE or _by_name(value):
            return True
        return type(value) in (tuple, frozenset) and depth < 4 and all(fixed(v, depth + 1) for v in value)

    return tuple(held) if all(fixed(v) for v in held[1:]) else None

"""Pickling for tasks, results and queue items: the standard library's
pickle where it can (plain data, functions and classes importable by name:
several times faster than cloudpickle's pure-Python pickler), cloudpickle
where it cannot (lambdas, closures, what the caller's script defines).
Both read back with pickle.loads.

pickle names a class or function of the caller's script as __main__.NAME,
which a worker's runtime (its own __main__) lacks: a pickle that names
__main__ is made again with cloudpickle, which carries such definitions
by value. (A search of the bytes: one that merely holds the text
"__main__" goes the slower way, and arrives the same.)"""

import pickle

MAIN = b"__main__"


def dumps(obj):
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        if MAIN not in data:
            return data
    except (pickle.PicklingError, AttributeError, TypeError):
        pass
    import cloudpickle

    return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


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


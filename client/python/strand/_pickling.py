"""Pickling for tasks, results and queue items: the standard library's
pickle where it can (plain data, functions and classes importable by name:
several times faster than cloudpickle's pure-Python pickler), cloudpickle
where it cannot (lambdas, closures, what the caller's script defines).
Both read back with pickle.loads."""

import pickle


def dumps(obj):
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        import cloudpickle

        return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)

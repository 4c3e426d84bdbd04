"""What runs a pool's tasks in the worker's runtime: the functions a job's
context names (strand.pool pickles them by reference), apart from the
client's modules, which a runtime would otherwise import at its first task
(HTTP, TLS and hashing: some 50 ms of CPU a worker)."""

import itertools
import traceback

from . import _worker


def prepared(init, func_bytes):
    """In the worker's runtime: the task's function, after the pool's
    initializer (once per runtime)."""
    if init is not None:
        _worker.initialize(*init)
    return _worker.unpickle_function(func_bytes)


def each(function, items, star=False):
    """function on each of a chunk's items (func(*x) when star), in order:
    their values. An input whose call raised fails alone and the others run
    on: the chunk then raises _worker.InputsFailed, which the runtime
    answers with the values and each failure by its input."""
    if len(items) == 1 and not star:  # imap's chunk of one: no loop to set up
        try:
            return [function(items[0])]
        except Exception as e:
            raise _worker.InputsFailed([None], [(0, e, traceback.format_exc())]) from None
    values, failures = [], []
    while True:
        try:
            # extend keeps what it appended before a call raised (CPython
            # appends as it iterates): the failed input is the next
            rest = itertools.islice(items, len(values), None)
            values.extend(itertools.starmap(function, rest) if star else map(function, rest))
            break
        except Exception as e:
            failures.append((len(values), e, traceback.format_exc()))
            values.append(None)
    if failures:
        raise _worker.InputsFailed(values, failures)
    return values


def map_chunk(init, func_bytes, items):
    """One task of a map: func(x) for each x of its chunk, in order."""
    return each(prepared(init, func_bytes), items)


def starmap_chunk(init, func_bytes, items):
    """One task of a starmap: func(*x) for each x of its chunk."""
    return each(prepared(init, func_bytes), items, star=True)


def apply(init, func_bytes, args, kwargs):
    """An apply's task: [func(*args, **kwargs)]."""
    return [prepared(init, func_bytes)(*args, **kwargs)]

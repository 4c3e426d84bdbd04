"""strand for Python: multiprocessing's interface over a strand gateway.

    import strand
    strand.init(url="http://127.0.0.1:8080")      # or $STRAND_URL, $STRAND_TOKEN
    with strand.Pool(4) as pool:
        print(pool.map(lambda x: x * x, range(10)))

Functions run in strand's Python runtime (strand.runtime) on the pool's
workers; they and their arguments travel as cloudpickle bytes."""

# The project's version (CMakeLists.txt's project() must say the same).
__version__ = "0.3.0"

from .meta import meta

__all__ = [
    "init",
    "meta",
    "Pool",
    "AsyncResult",
    "StrandError",
    "RemoteError",
    "RemoteTraceback",
    "SimpleQueue",
    "Pipe",
    "Process",
    "Manager",
    "SyncManager",
    "AsyncManager",
    "BaseManager",
    "put",
    "Ref",
]

_lazy = {
    "init": "gateway",
    "StrandError": "gateway",
    "Pool": "pool",
    "AsyncResult": "pool",
    "RemoteError": "pool",
    "RemoteTraceback": "pool",
    "SimpleQueue": "queues",
    "Pipe": "queues",
    "Process": "process",
    "Manager": "managers",
    "SyncManager": "managers",
    "AsyncManager": "managers",
    "BaseManager": "managers",
    "put": "refs",
    "Ref": "refs",
}


def __getattr__(name):
    # The client needs cloudpickle and its sockets; the runtime (python3 -m
    # strand.runtime, which imports this package first) needs neither for
    # module:qualname tasks, and each import is time before its first task
    # (http.client alone was 40 of the runtime's 58 ms, python3 -X importtime).
    if name in _lazy:
        import importlib

        return getattr(importlib.import_module("." + _lazy[name], __name__), name)
    raise AttributeError("module 'strand' has no attribute %r" % name)

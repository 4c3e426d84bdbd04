"""strand for Python: multiprocessing's interface over a strand gateway.

    import strand
    strand.init(url="http://127.0.0.1:8080")      # or $STRAND_URL, $STRAND_TOKEN
    with strand.Pool(4) as pool:
        print(pool.map(lambda x: x * x, range(10)))

Functions run in strand's Python runtime (strand.runtime) on the pool's
workers; they and their arguments travel as cloudpickle bytes."""

from .gateway import StrandError, init

__all__ = ["init", "Pool", "AsyncResult", "StrandError", "RemoteError", "RemoteTraceback", "SimpleQueue", "Pipe"]


def __getattr__(name):
    # The client needs cloudpickle; the runtime (python3 -m strand.runtime,
    # which imports this package first) does not for module:qualname tasks.
    if name in ("Pool", "AsyncResult", "RemoteError", "RemoteTraceback"):
        from . import pool

        return getattr(pool, name)
    if name in ("SimpleQueue", "Pipe"):
        from . import queues

        return getattr(queues, name)
    raise AttributeError("module 'strand' has no attribute %r" % name)

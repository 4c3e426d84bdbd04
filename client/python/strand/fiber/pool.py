"""fiber.pool over strand: Pool, with Fiber's error_handling."""

from .. import pool as _pool
from . import config

__all__ = ["Pool", "ZPool", "ResilientZPool", "AsyncResult", "TimeoutError"]

AsyncResult = _pool.AsyncResult
TimeoutError = _pool.TimeoutError

# What error_handling gives a task whose function raised: runs again, up
# to this many in all (the gateway's own cap is 100).
ERROR_HANDLING_ATTEMPTS = 20


class Pool(_pool.Pool):
    """fiber.Pool(processes, initializer, initargs, maxtasksperchild,
    error_handling): strand.Pool with Fiber's settings (fiber.config's
    cpu_per_job and mem_per_job size each worker). error_handling=True
    runs a task whose function raised again, up to ERROR_HANDLING_ATTEMPTS
    in all (Fiber's ResilientZPool resubmits a failed task); a worker that
    dies loses its tasks to another in any case. maxtasksperchild has no
    meaning here: a worker's runtime lives as long as the worker."""

    def __init__(self, processes=None, initializer=None, initargs=(), maxtasksperchild=None, error_handling=False,
                 **kwargs):
        sizes = config.resources()
        kwargs.setdefault("cpu", sizes.get("cpu"))
        kwargs.setdefault("memory", sizes.get("memory"))
        if error_handling:
            kwargs.setdefault("retry_errors", True)
            kwargs.setdefault("max_attempts", ERROR_HANDLING_ATTEMPTS)
        super().__init__(processes, initializer, initargs, **kwargs)

    def start_workers(self):
        """Fiber starts a pool's workers lazily; a strand pool's start when
        it is made: nothing to do."""

    def wait_until_workers_up(self, timeout=300):
        """Waits until every worker of the pool has connected."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            view = self._gw.request("GET", "/v1/pools/%s" % self.id)
            if sum(w.get("state") == "connected" for w in view.get("workers", ())) >= self._processes:
                return
            time.sleep(0.05)
        raise TimeoutError("the pool's workers did not connect within %s s" % timeout)


ZPool = ResilientZPool = Pool

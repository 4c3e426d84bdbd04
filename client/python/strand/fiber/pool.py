"""fiber.pool over strand: Pool, with Fiber's error_handling."""

import warnings

from .. import pool as _pool
from ..meta import resources_of
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
    cpu_per_job and mem_per_job: each worker is sized as its share of a
    Fiber job). error_handling=True
    runs a task whose function raised again, up to ERROR_HANDLING_ATTEMPTS
    in all (Fiber's ResilientZPool resubmits a failed task); a worker that
    dies loses its tasks to another in any case. maxtasksperchild has no
    meaning here: a worker's runtime lives as long as the worker."""

    def __init__(self, processes=None, initializer=None, initargs=(), maxtasksperchild=None, error_handling=False,
                 **kwargs):
        # Fiber forks cpu_per_job workers in each job of cpu_per_job CPUs
        # and mem_per_job MiB; a strand worker is a job of its own, sized
        # as its share, so that the pool asks what Fiber's would in all (a
        # worker sized as a whole job would make Pool(64) with
        # cpu_per_job=8 ask 512 CPUs where Fiber's asks 64).
        sizes = config.resources(config.workers_per_job(processes))
        kwargs.setdefault("cpu", sizes.get("cpu"))
        kwargs.setdefault("memory", sizes.get("memory_mb"))
        if error_handling:
            kwargs.setdefault("retry_errors", True)
            kwargs.setdefault("max_attempts", ERROR_HANDLING_ATTEMPTS)
        super().__init__(processes, initializer, initargs, **kwargs)

    def _meta_said(self, func):
        """A function marked with @meta sizes the Process that runs it; a
        pool's workers were sized when it was made: said once a pool."""
        wants = resources_of(func)
        if wants and not getattr(self, "_meta_warned", False):
            self._meta_warned = True
            warnings.warn(
                "strand.fiber: %s asks %s (@meta), but a Pool's workers are sized when the pool is made: "
                "give Pool(cpu=, memory=, gpu=) or fiber.config's cpu_per_job and mem_per_job (docs/fiber.md)"
                % (getattr(func, "__qualname__", func), wants),
                stacklevel=3,
            )

    def _submit(self, func, *args, **kwargs):
        self._meta_said(func)
        return super()._submit(func, *args, **kwargs)

    def apply(self, func, *args, **kwargs):
        self._meta_said(func)
        return super().apply(func, *args, **kwargs)

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

"""Fiber's names over strand: a Fiber program runs with its import changed
to `import strand.fiber as fiber` (and `from strand.fiber.X import ...`
for Fiber's modules config, pool, process, queues, managers, meta and
experimental). fiber.init's settings are fiber.config's (backend and
image become strand.init's defaults); the gateway comes from $STRAND_URL
and $STRAND_TOKEN (or init(url=, token=, ca_file=))."""

import os

from . import config, experimental, managers, pool, process, queues
from ..managers import Manager
from .meta import meta  # the decorator, as fiber.meta is (its module: strand.fiber.meta)
from .pool import Pool
from .process import Process, active_children, current_process
from .queues import Pipe, SimpleQueue

__all__ = [
    "init",
    "reset",
    "meta",
    "Pool",
    "Process",
    "SimpleQueue",
    "Pipe",
    "Manager",
    "current_process",
    "active_children",
    "cpu_count",
    "get_context",
    "config",
    "managers",
    "pool",
    "process",
    "queues",
    "experimental",
]

_STRAND_KEYS = ("url", "token", "ca_file")


def init(**kwargs):
    """fiber.init(**settings): Fiber's settings (fiber.config) read again
    with these over them, and strand's defaults for new pools, processes
    and managers made from them. strand's own url=, token= and ca_file=
    say where the gateway is."""
    from .. import gateway as _gateway

    where = {k: kwargs.pop(k) for k in _STRAND_KEYS if k in kwargs}
    changed = config.init(**kwargs)
    gw = _gateway.init(
        url=where.get("url"),
        token=where.get("token"),
        ca_file=where.get("ca_file"),
        backend=config.backend_name(),
        image=config.image_name(),
    )
    return changed if not where else gw


def reset():
    """fiber.reset(): the settings as a file and the environment give them."""
    init()


def cpu_count():
    """The number of CPUs of this machine, as Fiber's cpu_count()
    (os.cpu_count())."""
    return os.cpu_count() or 1


class _Context:
    """What get_context() gives: multiprocessing's context surface, over
    strand (Fiber has one context; every start method is it)."""

    Process = Process
    Pool = Pool
    SimpleQueue = SimpleQueue
    Pipe = staticmethod(Pipe)
    Manager = staticmethod(Manager)
    current_process = staticmethod(current_process)
    active_children = staticmethod(active_children)
    cpu_count = staticmethod(cpu_count)

    def __init__(self, method=None):
        self._name = method or "strand"

    def get_context(self, method=None):
        """Another context of the same names (every method is the same
        here)."""
        return _Context(method)

    def get_start_method(self, allow_none=False):
        """The method the context was asked for ("strand" when none was)."""
        return self._name


def get_context(method=None):
    """multiprocessing.get_context(method): the same names, whatever the
    method (a strand process is always started anew by a worker)."""
    return _Context(method)


def _apply_settings():
    """What the settings a file and the environment give say of new pools,
    processes and managers, on the gateway strand uses by default: at
    import, as Fiber reads its settings then."""
    from .. import gateway as _gateway

    backend, image = config.backend_name(), config.image_name()
    if backend or image:
        gw = _gateway.default()
        gw.backend = backend or getattr(gw, "backend", None)
        gw.image = image or getattr(gw, "image", None)


config.init()
_apply_settings()

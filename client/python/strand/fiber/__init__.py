"""Fiber's names over strand: a Fiber program runs with its import changed
to `import strand.fiber as fiber` (and `from strand.fiber.X import ...`
for Fiber's modules config, pool, process, queues, managers, meta and
experimental). fiber.init's settings are fiber.config's (backend and
image become strand.init's defaults); the gateway comes from $STRAND_URL
and $STRAND_TOKEN (or init(url=, token=, ca_file=))."""

import importlib
import os

from . import config
from .meta import meta  # the decorator, as fiber.meta is (its module: strand.fiber.meta)

# The names below come at first use. A program's own modules import this
# package on every worker too, before its first task: importing all of it
# there was 40 ms of CPU a runtime (zipfile, ssl, configparser, logging;
# python3 -X importtime), four runtimes of a new Pool(4) on two cores.
_LAZY = {
    "experimental": (".experimental", None),
    "managers": (".managers", None),
    "pool": (".pool", None),
    "process": (".process", None),
    "queues": (".queues", None),
    "Manager": ("..managers", "Manager"),
    "Pool": (".pool", "Pool"),
    "Process": (".process", "Process"),
    "active_children": (".process", "active_children"),
    "current_process": (".process", "current_process"),
    "Pipe": (".queues", "Pipe"),
    "SimpleQueue": (".queues", "SimpleQueue"),
}

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


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    return _load(name)


def _load(name):
    module, attribute = _LAZY[name]
    found = importlib.import_module(module, __name__)
    if attribute is not None:
        found = getattr(found, attribute)
    globals()[name] = found  # asked once
    return found


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


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

    _NAMES = frozenset(
        ("Process", "Pool", "SimpleQueue", "Pipe", "Manager", "current_process", "active_children", "cpu_count")
    )

    def __init__(self, method=None):
        self._name = method or "strand"

    def __getattr__(self, name):
        if name not in self._NAMES:
            raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))
        return globals()[name] if name in globals() else _load(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | self._NAMES)

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

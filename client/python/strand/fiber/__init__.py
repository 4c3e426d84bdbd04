"""Fiber's names over strand: a Fiber program runs with its import changed
to `import strand.fiber as fiber` (and `from strand.fiber.managers import
AsyncManager` for `from fiber.managers import ...`). fiber.init's backend
and image become strand.init's; the gateway comes from $STRAND_URL and
$STRAND_TOKEN (or strand.init(url=, token=))."""

import os

from .. import init as _init
from ..managers import Manager
from ..meta import meta
from ..pool import Pool
from ..process import Process
from ..queues import Pipe, SimpleQueue
from . import managers

__all__ = ["init", "meta", "Pool", "Process", "SimpleQueue", "Pipe", "Manager", "managers", "cpu_count"]


def init(backend=None, image=None, **kwargs):
    """fiber.init(backend=, image=): the defaults for new pools, processes
    and managers. strand's own url=, token= and ca_file= are taken too;
    Fiber's other settings (log level, ...) have no strand meaning."""
    return _init(
        url=kwargs.get("url"), token=kwargs.get("token"), ca_file=kwargs.get("ca_file"), backend=backend, image=image
    )


def cpu_count():
    return os.cpu_count() or 1

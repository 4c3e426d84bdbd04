"""fiber.process over strand: Process, current_process, active_children."""

from .. import process as _process
from ..process import active_children, current_process
from . import config

__all__ = ["Process", "current_process", "active_children"]


class Process(_process.Process):
    """strand.Process sized as Fiber sizes a Process's job: fiber.config's
    cpu_per_job and mem_per_job, and what @meta on its target says over
    them."""

    def _resources(self, what):
        sizes = config.resources()
        sizes.update(super()._resources(what) or {})
        return sizes or None

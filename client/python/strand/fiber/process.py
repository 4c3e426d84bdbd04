"""fiber.process over strand: Process, current_process, active_children."""

from ..process import Process, active_children, current_process

__all__ = ["Process", "current_process", "active_children"]

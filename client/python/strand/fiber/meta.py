"""fiber.meta over strand: @meta(cpu=, memory=, gpu=) on a function sizes
the Process that runs it (strand.meta)."""

from ..meta import meta, resources_of

__all__ = ["meta", "resources_of"]

"""fiber.experimental over strand: Ring."""

from .ring import Ring, RingNode

__all__ = ["Ring", "RingNode"]

"""fiber.queues over strand: SimpleQueue and Pipe (their items travel
through the gateway; one past 1 MiB pickled goes as a value)."""

from ..queues import Connection, Pipe, SimpleQueue

__all__ = ["SimpleQueue", "Pipe", "Connection"]

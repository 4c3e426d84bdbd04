"""fiber.queues over strand: SimpleQueue and Pipe (their items travel
through the gateway; one past 1 MiB pickled goes as a value).

Fiber has two kinds of SimpleQueue: SimpleQueuePush sends each item to
its readers in turn as soon as it is put, SimpleQueuePull to the reader
that asks. Both names are strand's one SimpleQueue, which gives each item
to the reader that asks first: Pull's meaning; a Push queue's readers are
not served in strict turn (docs/fiber.md)."""

from ..queues import Connection, Pipe, SimpleQueue

SimpleQueuePush = SimpleQueue
SimpleQueuePull = SimpleQueue

__all__ = ["SimpleQueue", "SimpleQueuePush", "SimpleQueuePull", "Pipe", "Connection"]

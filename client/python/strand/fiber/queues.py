"""fiber.queues over strand: SimpleQueue and Pipe (their items travel
through the gateway; one past 1 MiB pickled goes as a value).

Fiber has two kinds of SimpleQueue: SimpleQueuePush deals its items to
its readers in turn (a gateway queue of kind "turns"), SimpleQueuePull
gives each to the reader that asks first. SimpleQueue() is one or the
other as fiber.config.use_push_queue says (True, Push, unless set)."""

from .. import queues as _queues
from ..queues import Connection, Pipe
from . import config


class SimpleQueue(_queues.SimpleQueue):
    """Fiber's SimpleQueue(): a SimpleQueuePush, or a SimpleQueuePull when
    fiber.config.use_push_queue is false; put(obj), get(timeout=None),
    empty(), as multiprocessing's."""

    def __new__(cls, gateway=None, turns=None, detached=False):
        if cls is SimpleQueue:
            cls = SimpleQueuePush if config.use_push_queue else SimpleQueuePull
        return super().__new__(cls)


class SimpleQueuePush(SimpleQueue):
    """Items dealt to the queue's readers in turn: with four readers, each
    gets every fourth item put, whether it reads fast or slowly. A reader
    that stops reading holds back its share (4,096 items at most; then the
    others get them), as a Fiber push socket's peer does."""

    _turns = True


class SimpleQueuePull(SimpleQueue):
    """Each item to the reader that asks first."""

    _turns = False


__all__ = ["SimpleQueue", "SimpleQueuePush", "SimpleQueuePull", "Pipe", "Connection"]

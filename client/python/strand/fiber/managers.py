"""fiber.managers over strand: BaseManager, SyncManager, AsyncManager."""

from ..managers import AsyncManager, BaseManager, SyncManager

__all__ = ["AsyncManager", "BaseManager", "SyncManager"]

"""Python policies on the host (the spec's ``select(step, store)``), replayed by the engine; per-step scores."""

from wpbjax.host.drive import PolicyError
from wpbjax.host.store import ActionType, ByteBudget, ByteMemoryStore, MemoryAction, Step, StoredItem

__all__ = ["ActionType", "ByteBudget", "ByteMemoryStore", "MemoryAction", "PolicyError", "Step", "StoredItem"]

"""A least-recently-used cache bounded by bytes: what the loader keeps of a store between reads.

The loader (`prior.trainers.reader`) reads a split piece by piece; pairs repeat their
sentences (SNLI's premises, a scale table's sentences in ~16 pairs each) and a shuffle window
reads each piece's values for several batches. Keeping what was read, up to a bound, makes each
read happen about once, and the bound — not the split's size — caps the memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class LruCache(Generic[T]):
    """Values by key, at most ``max_bytes`` of them (as ``size`` measures each) in total, the
    least recently used dropped first. A value larger than the bound is returned, not kept."""

    def __init__(self, max_bytes: int, size: Callable[[T], int]) -> None:
        self.max_bytes = max(0, int(max_bytes))
        self._size = size
        self._items: OrderedDict[Hashable, tuple[T, int]] = OrderedDict()
        self.nbytes = 0
        self.loads = 0  # misses that called ``load`` (tests and benchmarks count them)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def peek(self, key: Hashable) -> T | None:
        """The value of ``key`` when cached (marked as recently used), else None."""
        hit = self._items.get(key)
        if hit is None:
            return None
        self._items.move_to_end(key)
        return hit[0]

    def put(self, key: Hashable, value: T) -> T:
        """Keep ``value`` under ``key`` if it fits the bound; returns it."""
        size = int(self._size(value))
        if size > self.max_bytes or key in self._items:
            return value
        self._items[key] = (value, size)
        self.nbytes += size
        while self.nbytes > self.max_bytes and self._items:
            _, (_, dropped) = self._items.popitem(last=False)
            self.nbytes -= dropped
        return value

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The cached value of ``key``, else ``load()`` (kept when it fits)."""
        hit = self.peek(key)
        if hit is not None:
            return hit
        self.loads += 1
        return self.put(key, load())

    def clear(self) -> None:
        self._items.clear()
        self.nbytes = 0


__all__ = ["LruCache"]

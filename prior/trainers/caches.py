"""A least-recently-used cache bounded by bytes: what the loader keeps of a store between reads.

The loader (`prior.trainers.reader`) reads a split piece by piece; pairs repeat their
sentences (SNLI's premises, a scale table's sentences in ~16 pairs each) and a shuffle window
reads each piece's values for several batches. Keeping what was read, up to a bound, makes each
read happen about once, and the bound — not the split's size — caps the memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

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
        # of the values loaded: each key's size when first loaded, and how many loads were of a
        # key the bound had dropped before (a cache smaller than what its reader goes round)
        self.seen: dict[Hashable, int] = {}
        self.reloads = 0
        self._dropped: set[Hashable] = set()

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

    def put(self, key: Hashable, value: T, size: int | None = None) -> T:
        """Keep ``value`` under ``key`` if it fits the bound; returns it. ``size``: its size, when
        measured already. A value put, like one loaded, counts in ``seen`` and, put again after
        the bound dropped it, in ``reloads`` (what a reader fetched itself and keeps here)."""
        size = int(self._size(value)) if size is None else size
        self._count(key, size)
        return self._keep(key, value, size)

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The cached value of ``key``, else ``load()`` (kept when it fits)."""
        hit = self.peek(key)
        if hit is not None:
            return hit
        self.loads += 1
        value = load()
        size = int(self._size(value))
        self._count(key, size)
        return self._keep(key, value, size)

    def _count(self, key: Hashable, size: int) -> None:
        if key in self._items:
            return
        if key in self._dropped:
            self.reloads += 1
            self._dropped.discard(key)
        self.seen.setdefault(key, size)

    def _keep(self, key: Hashable, value: T, size: int) -> T:
        if key in self._items:
            return value
        if size > self.max_bytes:
            self._dropped.add(key)
            return value
        self._items[key] = (value, size)
        self.nbytes += size
        self._fit()
        return value

    def resize(self, max_bytes: int) -> None:
        """A new bound; the least recently used values dropped until the others fit it."""
        self.max_bytes = max(0, int(max_bytes))
        self._fit()

    def _fit(self) -> None:
        """Drop the least recently used values until the rest fit the bound."""
        while self.nbytes > self.max_bytes and self._items:
            old, (_, dropped) = self._items.popitem(last=False)
            self._dropped.add(old)
            self.nbytes -= dropped

    def recount(self) -> None:
        """Count afresh whether it goes round (``seen``, ``reloads``), its values kept: a cache
        whose bound grew is judged by what it does from then on."""
        self.seen.clear()
        self.reloads = 0
        self._dropped.clear()

    @property
    def thrashing(self) -> bool:
        """Whether its reader goes round more than it holds: every key it loaded loaded again,
        on average, after the bound dropped it."""
        return bool(self.seen) and self.reloads >= len(self.seen)

    def clear(self) -> None:
        """Drop every value; what was loaded before counts as never loaded (a reset, not the bound)."""
        self._items.clear()
        self.nbytes = 0
        self._dropped.clear()
        self.seen.clear()
        self.reloads = 0


def lend_spare(takers: Sequence[LruCache[Any]], lenders: Sequence[LruCache[Any]], *, margin: float = 0.1) -> int:
    """Move the bytes ``lenders`` do not use — each one's bound less what it holds and a
    ``margin`` of that — to ``takers``, and have the takers count afresh
    (:meth:`LruCache.recount`). The sum of the bounds stays the same. A lender should hold
    every value it can be asked for (its reader knows): what it holds is then all it needs. A
    taker's need is at least what it has loaded (``seen``, and the margin): the smallest
    shortfalls are met first, since an LRU cache that a reader goes round gains nothing until
    all of it fits; what is left is shared evenly. Returns the bytes moved (0: nothing to lend,
    nothing changed)."""
    lenders = [c for c in lenders if all(c is not t for t in takers)]
    spare = [max(0, c.max_bytes - int(c.nbytes * (1 + margin))) for c in lenders]
    total = sum(spare)
    if not takers or total <= 0:
        return 0
    for cache, lent in zip(lenders, spare):
        cache.resize(cache.max_bytes - lent)
    short = {id(c): max(0, int(sum(c.seen.values()) * (1 + margin)) - c.max_bytes) for c in takers}
    grow = dict.fromkeys(short, 0)
    left = total
    for cache in sorted(takers, key=lambda c: short[id(c)]):
        grow[id(cache)] = given = min(short[id(cache)], left)
        left -= given
    for i, cache in enumerate(takers):
        cache.resize(cache.max_bytes + grow[id(cache)] + left // len(takers) + (left % len(takers) if i == 0 else 0))
        cache.recount()
    return total


__all__ = ["LruCache", "lend_spare"]

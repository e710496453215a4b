"""A per-process cache of segment tables, bounded by bytes, least recently used out first.

Why: a build's feature task reads the parses of its pairs, and a pair's two sentences lie in
any of the parse segments (partitions are formed by key, pairs pick sentences at random). Each
task therefore reads every parse segment of the parse. With S segments and T tasks that is
S·T reads: on SICK split into 200-item partitions (94 segments, 50 tasks) reading took 7.4 of
the wup stage's 11.6 s. At QQP's size (~270 segments of 2,000) it would outweigh the work.
A worker that keeps the segments it has read reads each one once: S reads per worker.

Committed segments never change (a new write is a new segment id; `gc` removes a segment from
the catalog before its files), so an entry keyed by store, segment id and columns stays valid.
The bound is ``$PRIOR_SEGMENT_CACHE_MB`` (default 1024) per process; 0 switches the cache
off. About 0.5 KB per parsed sentence with all columns: QQP's 540k sentences fit in ~280 MB.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import polars as pl

from prior.errors import DataError

ENV_LIMIT = "PRIOR_SEGMENT_CACHE_MB"
DEFAULT_LIMIT_MB = 1024


def limit_bytes() -> int:
    """The bound from the environment (read on each call, so tests and users can change it);
    `DataError` (a ValueError) when it is not a number."""
    raw = os.environ.get(ENV_LIMIT, "")
    try:
        mb = float(raw) if raw else DEFAULT_LIMIT_MB
    except ValueError:
        raise DataError(f"{ENV_LIMIT}={raw!r} is not a number of megabytes") from None
    return max(0, int(mb * 1024 * 1024))


class SegmentCache:
    """Least-recently-used tables by key, at most `limit_bytes()` of them in total."""

    def __init__(self) -> None:
        self._tables: OrderedDict[Hashable, tuple[pl.DataFrame, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.reads = 0  # loads through `get` (misses), for tests and benchmarks

    def get(self, key: Hashable, load: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        """The cached table of ``key``, else ``load()`` (kept if it fits the bound)."""
        with self._lock:
            hit = self._tables.get(key)
            if hit is not None:
                self._tables.move_to_end(key)
                return hit[0]
        table = load()
        self.reads += 1
        size = int(table.estimated_size())
        limit = limit_bytes()
        with self._lock:
            if size <= limit and key not in self._tables:
                self._tables[key] = (table, size)
                self._bytes += size
            while self._bytes > limit and self._tables:
                _, (_, dropped) = self._tables.popitem(last=False)
                self._bytes -= dropped
        return table

    def clear(self) -> None:
        with self._lock:
            self._tables.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._tables)


PARSE_SEGMENTS = SegmentCache()

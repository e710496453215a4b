"""Where a split's keys lie in some segments, found while those segments' key columns are read.

A split's index (`prior.trainers.split_index`) needs, for each key of its split (a pair's, or a
sentence's), the segment and the row of its table that hold it, and a selection needs how many
of the split's keys an entry lacks (`prior.featurestore.numbered_split.NumberedCoverage`). Both
come from one pass over the segments' key columns (:func:`locate_keys`): the split's keys are
sorted (`prior.featurestore.key_index.KeyIndex`), each group of the segments' rows
(`prior.featurestore.segment_files.frame_groups`: up to 65,536 rows) is looked up among them as
it is read, and only the rows that hold a key of the split are kept, as its segment and item.

What it holds besides the answer is the split's sorted keys and one group of rows: never the
segments' whole key column, nor an index over it. An entry built for a whole dataset, read for
one of its splits, costs the split's keys, not the entry's (an index over the entry's keys took
28 bytes a key while the split's index was built, for every entry and the parse at once:
bench/RESULTS.md, "The split's index located while the segments are read").

Of a key held more than once, the first copy in segment order is the one located (a build
that wrote an item twice, a store compacted while another build ran), as a read of the entry
serves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from prior.featurestore.catalog import Segment
from prior.featurestore.fs import StoreFS
from prior.featurestore.key_index import KeyIndex
from prior.featurestore.segment_files import frame_groups


@dataclass(frozen=True)
class Located:
    """Where ``keys`` lie in ``segments``: item ``item[i]`` (its row in the segment's table) of
    ``segments[seg[i]]`` for the key at position ``i``, -1 for a key the segments do not hold;
    a key that ``keys`` holds more than once is located at its first position only (`of` finds
    every position; ``distinct``: ``keys`` holds none twice). ``lacking``: how many distinct
    keys the segments do not hold."""

    segments: tuple[Segment, ...]
    keys: pl.Series
    seg: np.ndarray  # int32 (keys,)
    item: np.ndarray  # int32 (keys,)
    lacking: int
    distinct: bool

    def of(self, keys: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        """(seg, item) of each of ``keys``, some of the keys located (all of them, a split's
        first pairs, the sentences of those); -1 for a key the segments do not hold. The
        located keys themselves, each once, are answered as they are: nothing looked up; other
        keys are looked up among them, sorted again."""
        if keys is self.keys and self.distinct:
            return self.seg, self.item
        at = KeyIndex(self.keys).find(keys)
        if bool((at < 0).any()):
            raise ValueError(f"{int((at < 0).sum())} keys asked of a Located that were not located")
        return self.seg[at], self.item[at]


def locate_keys(fs: StoreFS, segments: Sequence[Segment], inner: str, column: str, keys: pl.Series) -> Located:
    """Where ``keys`` (``UInt128``) lie in ``column`` of the ``inner`` table of ``segments``
    (module docstring). ``keys`` are sorted for this pass alone: a split's index locates its
    sentences twice (a sentence entry, the parse), and holding their sorted keys between the two
    would add 20 bytes a sentence to its peak for 25 ms saved at 500k. The files are checked as
    every read checks them; the first whose key column holds a value that is not a key is its
    `StoreError`."""
    index = KeyIndex(keys)
    seg = np.full(keys.len(), -1, dtype=np.int32)
    item = np.full(keys.len(), -1, dtype=np.int32)
    done = np.zeros(len(segments), dtype=np.int64)  # rows of each segment read so far
    for parts, joined in frame_groups(fs, segments, inner, [column], [column]):
        owners = np.array([k for k, _ in parts], dtype=np.int64)  # each segment once in a group
        heights = np.array([h for _, h in parts], dtype=np.int64)
        starts = np.cumsum(heights) - heights  # each part's first row in the group
        at = index.find(joined[column])
        rows = np.flatnonzero(at >= 0)
        # of a key held twice in the group its first row, of a key located before none
        rows = np.sort(rows[np.unique(at[rows], return_index=True)[1]])
        rows = rows[seg[at[rows]] < 0]
        part = np.searchsorted(starts, rows, side="right") - 1
        seg[at[rows]] = owners[part]
        item[at[rows]] = done[owners[part]] + rows - starts[part]
        done[owners] += heights
    return Located(tuple(segments), keys, seg, item, int((seg[index.position] < 0).sum()), len(index) == keys.len())


__all__ = ["Located", "locate_keys"]

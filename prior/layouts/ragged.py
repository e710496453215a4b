"""The one ragged-array type: many word vectors or word matrices of different sizes in one flat
array, with each item's offset and shape.

Item ``i`` is ``values[offsets[i]:offsets[i] + size]`` with ``rows[i]`` × ``cols[i]`` values
(row-major), or a vector of ``rows[i]`` values when ``cols[i]`` is -1. The store keeps exactly
these columns in a segment's index (``<component>.offset/.rows/.cols``) beside one flat Zarr
array, the store's reader returns them as a `Ragged`, and the trainers' grid builders gather
from them without a Python loop per item.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def item_starts(sizes: np.ndarray) -> np.ndarray:
    """Where each of items of ``sizes`` values, laid one after another, starts (int64, 0 first):
    the offsets of a compact ragged array."""
    starts = np.zeros(len(sizes), np.int64)
    if len(sizes) > 1:
        np.cumsum(sizes[:-1], out=starts[1:])
    return starts


def item_ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``arange(starts[k], starts[k] + counts[k])`` for every k, one after the other (int64): the
    positions of items that start at ``starts`` and hold ``counts`` values, gathered compactly."""
    counts = np.asarray(counts, np.int64)
    return np.repeat(np.asarray(starts, np.int64) - item_starts(counts), counts) + np.arange(int(counts.sum()))


@dataclass(frozen=True)
class Ragged:
    values: np.ndarray  # 1-D
    offsets: np.ndarray  # int64 (N,)
    rows: np.ndarray  # int64 (N,)
    cols: np.ndarray  # int64 (N,): -1 for a vector
    padded: bool = False  # values[0] is a fill value read by clipped gathers (see `with_fill`)

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def widths(self) -> np.ndarray:
        """Columns per row: a vector counts as ``rows`` × 1 (int64 (N,))."""
        widths: np.ndarray = np.where(self.cols < 0, 1, self.cols).astype(np.int64)
        return widths

    def sizes(self) -> np.ndarray:
        """Values per item (int64 (N,))."""
        sizes: np.ndarray = self.rows.astype(np.int64) * self.widths
        return sizes

    def get(self, i: int) -> np.ndarray:
        """Item ``i``: a view of the flat values, shaped (rows,) or (rows, cols)."""
        o, r, c = int(self.offsets[i]), int(self.rows[i]), int(self.cols[i])
        if c < 0:
            return self.values[o:o + r]
        return self.values[o:o + r * c].reshape(r, c)

    @classmethod
    def from_arrays(cls, arrays: Sequence[np.ndarray], dtype: np.dtype | type | None = None) -> Ragged:
        """One flat array of 1-D and 2-D ``arrays`` (of one dtype, or cast to ``dtype``)."""
        if dtype is None:
            dtype = np.result_type(*[np.asarray(a).dtype for a in arrays]) if arrays else np.float32
        rows = np.empty(len(arrays), np.int64)
        cols = np.empty(len(arrays), np.int64)
        for i, a in enumerate(arrays):
            a = np.asarray(a)
            if a.ndim == 1:
                rows[i], cols[i] = a.shape[0], -1
            elif a.ndim == 2:
                rows[i], cols[i] = a.shape
            else:
                raise ValueError(f"item {i} has {a.ndim} dimensions; a ragged array holds vectors and matrices")
        sizes = rows * np.where(cols < 0, 1, cols)
        offsets = item_starts(sizes)
        values = (np.concatenate([np.ascontiguousarray(a, dtype=dtype).ravel() for a in arrays])
                  if arrays else np.zeros(0, dtype=dtype))
        return cls(values, offsets, rows, cols)

    @classmethod
    def concat(cls, parts: Sequence[Ragged]) -> Ragged:
        """The items of ``parts`` one after the other (offsets shifted onto one flat array)."""
        if not parts:
            return cls.from_arrays([])
        bases = np.cumsum([0] + [len(p.values) for p in parts[:-1]])
        return cls(np.concatenate([p.values for p in parts]),
                   np.concatenate([p.offsets.astype(np.int64) + b for p, b in zip(parts, bases)]),
                   np.concatenate([p.rows for p in parts]).astype(np.int64),
                   np.concatenate([p.cols for p in parts]).astype(np.int64))

    def with_fill(self, fill: float) -> Ragged:
        """The same items with ``fill`` placed in front of the values (offsets shifted by one):
        a gather with a clipped negative index reads ``fill``. Idempotent."""
        if self.padded:
            return self
        values = np.concatenate([np.array([fill], dtype=self.values.dtype), self.values])
        return Ragged(values, self.offsets + 1, self.rows, self.cols, padded=True)

    def take(self, index: np.ndarray, chunk: int = 1 << 22) -> Ragged:
        """The items at ``index`` (int, each ≥ 0), in that order, as a new compact array:
        vectorized gathers of about ``chunk`` values each (so the gather's int64 positions
        stay small beside the values), no loop per item."""
        index = np.asarray(index, dtype=np.int64)
        sizes = self.sizes()[index]
        offsets = item_starts(sizes)
        total = int(sizes.sum())
        values = np.empty(total, dtype=self.values.dtype)
        # item boundaries about every ``chunk`` values
        cuts = np.unique(np.searchsorted(offsets, np.arange(0, total, max(chunk, 1)), side="right") - 1)
        for lo, hi in zip(cuts, [*cuts[1:], len(index)]):
            if hi <= lo:
                continue
            base, end = int(offsets[lo]), int(offsets[hi - 1] + sizes[hi - 1])
            starts = np.repeat(self.offsets[index[lo:hi]] - offsets[lo:hi], sizes[lo:hi])
            starts += np.arange(base, end, dtype=np.int64)
            values[base:end] = self.values[starts]
        return Ragged(values, offsets, self.rows[index].astype(np.int64), self.cols[index].astype(np.int64))

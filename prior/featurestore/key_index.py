"""Keys held as numbers, sorted once and looked up many at a time.

A split's index looks up the keys that segments hold among its split's pairs' or sentences'
keys (`prior.featurestore.located`), and numbers a split's sentences
(`prior.featurestore.numbered_split.KeyNumbering`). A Polars join or anti-join does either by
hashing both sides at once; at 500k keys its tables took about twice the memory of the keys
themselves, and that memory grows with the split (bench/RESULTS.md, "The split's index in less
memory"). :class:`KeyIndex` sorts the held keys' two 64-bit halves once and finds the wanted ones
by binary search, a chunk of them at a time: 20 bytes per held key while it lives, nothing
hashed.

Equal keys keep their first position. The keys are blake2b digests, so two different keys with
the same high half do not occur in practice; where they do (a crafted store), the index sorts by
both halves instead, and the answers are the same.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from prior.featurestore.key_numbers import key_halves

# keys looked up at a time by `KeyIndex.find`
FIND_CHUNK = 1 << 16


class KeyIndex:
    """The distinct keys of a ``UInt128`` Series, sorted, each with its first position in it."""

    def __init__(self, keys: pl.Series) -> None:
        hi, lo = key_halves(keys)
        # distinct high halves have one order, which numpy's unstable sort finds four times as
        # fast as a stable one; where some repeat (a key held twice), equal keys must keep their
        # order, and the keys are sorted again, stably
        order = np.argsort(hi)
        sorted_hi, sorted_lo = hi[order], lo[order]
        same_hi = sorted_hi[1:] == sorted_hi[:-1]
        if bool(same_hi.any()):
            order = np.argsort(hi, kind="stable")
            sorted_hi, sorted_lo = hi[order], lo[order]
            same_hi = sorted_hi[1:] == sorted_hi[:-1]
        if bool((same_hi & (sorted_lo[1:] != sorted_lo[:-1])).any()):  # two keys share a high half
            order = np.lexsort((lo, hi))  # stable too
            sorted_hi, sorted_lo = hi[order], lo[order]
            same_hi = sorted_hi[1:] == sorted_hi[:-1]
        del hi, lo
        first = np.ones(len(order), dtype=bool)
        first[1:] = ~(same_hi & (sorted_lo[1:] == sorted_lo[:-1]))  # of equal keys, the first
        del same_hi
        if not first.all():
            sorted_hi, sorted_lo, order = sorted_hi[first], sorted_lo[first], order[first]
        # distinct keys (an entry's, a split's pairs) keep the sorted arrays as they are
        self.hi, self.lo = sorted_hi, sorted_lo
        self.position = order.astype(np.int32) if len(order) < 2**31 else order

    def __len__(self) -> int:
        return len(self.hi)

    def joined(self, keys: pl.Series, first: int) -> KeyIndex | None:
        """This index and distinct ``keys`` it does not hold, key ``i`` of them at position
        ``first + i``: the new keys merged into the sorted ones (no key sorted again). None
        where a new key shares its high half with a held one (crafted stores only): the joined
        keys are then to be indexed anew."""
        new = KeyIndex(keys)
        return self.joined_sorted(new.hi, new.lo, new.position.astype(np.int64) + first)

    def joined_sorted(self, hi: np.ndarray, lo: np.ndarray, position: np.ndarray) -> KeyIndex | None:
        """`joined` for keys already sorted (by their halves ``hi``, ``lo``: as a `KeyIndex`
        holds them), distinct and none of them held, at ``position``: merged in, nothing sorted.
        None where a new key shares its high half with a held one (crafted stores only)."""
        at = np.searchsorted(self.hi, hi)
        if len(self.hi) and bool((self.hi[np.minimum(at, len(self.hi) - 1)] == hi).any()):
            return None
        joined = object.__new__(KeyIndex)
        joined.hi, joined.lo = np.insert(self.hi, at, hi), np.insert(self.lo, at, lo)
        if self.position.dtype == np.int32 and (not len(position) or int(position.max()) < 2**31):
            joined.position = np.insert(self.position, at, position.astype(np.int32)).astype(np.int32, copy=False)
        else:
            joined.position = np.insert(self.position.astype(np.int64), at, position.astype(np.int64))
        return joined

    def find(self, keys: pl.Series) -> np.ndarray:
        """For each of ``keys``, the first position of the same key in the keys the index was
        made of; -1 for a key it does not hold (int64, one per key). Looked up ``FIND_CHUNK``
        keys at a time: the search's arrays stay the size of a chunk, not of ``keys``."""
        found = np.empty(keys.len(), dtype=np.int64)
        for start in range(0, keys.len(), FIND_CHUNK):
            found[start:start + FIND_CHUNK] = self._find(keys.slice(start, FIND_CHUNK))
        return found

    def find_sorted(self, other: KeyIndex) -> np.ndarray:
        """`find` for the keys of ``other``, in the order they were given to it: looked up in
        their sorted order, which a binary search walks far faster than keys in any order."""
        found = np.empty(len(other), dtype=np.int64)
        found[other.position] = self._find_halves(other.hi, other.lo)
        return found

    def _find(self, keys: pl.Series) -> np.ndarray:
        """`_find_halves` of the keys in their sorted order: a binary search over half a
        million keys walks sorted ones about three times faster, their sort included."""
        hi, lo = key_halves(keys)
        order = np.argsort(hi)
        found = np.empty(len(hi), dtype=np.int64)
        found[order] = self._find_halves(hi[order], lo[order])
        return found

    def _find_halves(self, hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
        if not len(self.hi):
            return np.full(len(hi), -1, dtype=np.int64)
        at = np.searchsorted(self.hi, hi)
        at[at == len(self.hi)] = 0
        found = (self.hi[at] == hi) & (self.lo[at] == lo)
        # keys whose high half the index holds more than once (crafted stores only): the low half
        # decides among those
        for i in np.flatnonzero(~found & (self.hi[at] == hi)):
            start, stop = np.searchsorted(self.hi, hi[i], "left"), np.searchsorted(self.hi, hi[i], "right")
            j = start + int(np.searchsorted(self.lo[start:stop], lo[i]))
            if j < stop and self.lo[j] == lo[i]:
                at[i], found[i] = j, True
        return np.where(found, self.position[at], -1)


def distinct_keys(*columns: pl.Series) -> pl.Series:
    """The distinct values of the columns' concatenation, in the order they first appear in it
    (the first column's, then each next column's new ones). Each column is made distinct before
    they are joined, so the whole columns are never held joined (a split's sentences, ``key_a``
    then ``key_b``: two keys a pair joined, where each sentence occurs in several pairs)."""
    if not columns:
        raise ValueError("distinct_keys needs at least one column")
    return pl.concat([c.unique(maintain_order=True) for c in columns]).unique(maintain_order=True)


__all__ = ["KeyIndex", "distinct_keys"]

"""A split's rows as a training index needs them, read a group of files at a time: its pairs'
keys, each pair's two sentences as numbers, its labels as codes.

`checked_rows` gives a split's rows as one frame. A training split's index
(`prior.trainers.split_index`) reads five of its columns, keys as 128-bit numbers: 65 bytes a
pair (the three keys 48), and the whole frame held while the entries are selected
(bench/RESULTS.md: 31 MiB of frames at 500k pairs, RSS raised by twice that). What the index
keeps of a pair is its key until its entries are located, its two sentences' numbers and its
label. :func:`numbered_split` reads the same rows, checked against the split's manifest in the
same way (`prior.featurestore.splits.checked_read`), 16 files at a time
(`prior.featurestore.segment_files.frame_groups`), and keeps of each group only that: the pair
key (16 bytes), the two sentence numbers (4 each) and the label code (4): 28 bytes a pair, and
no frame of the whole split is ever held.

Sentences are numbered by first appearance, group by group: a group's new ``key_a`` values in
order, then its new ``key_b`` values (for a split of one group, the order of
``distinct_keys(key_a, key_b)``). The numbering is the split's own: a read that leaves pairs
out (`NumberedSplit.take`) numbers the sentences its pairs use again, in the same order.

Rows come in ``row`` order, each once: a split whose files do not (a row written by two
segments, files out of order) is read whole and sorted as `SegmentStore.pair_rows` does, then
numbered as one group.

Labels: a class label is its position among the split's recorded label names, a label that is
not one of them a code after those (``unknown_labels`` holds its text), a missing label -1; a
score is its value (float32). Whether such a split can be trained on is the reader's to say.

:class:`NumberedCoverage` is the selection's `Coverage` over such splits: an entry's coverage
is checked against the numbered split, never a frame of its rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from prior.featurestore.key_index import KeyIndex, distinct_keys
from prior.featurestore.key_numbers import KEY_NUMBER, key_numbers
from prior.featurestore.located import Located, locate_keys
from prior.featurestore.segment_files import frame_groups
from prior.featurestore.segments import PAIR_KEY_COLUMNS
from prior.featurestore.selection import Coverage
from prior.featurestore.splits import checked_read

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.entries import EntryInfo
    from prior.featurestore.segments import SegmentStore

# the columns of a split's rows a numbered read decodes
NUMBERED_COLUMNS = ("row", *PAIR_KEY_COLUMNS, "label")
MISSING_LABEL = -1


@dataclass(frozen=True)
class NumberedSplit:
    """A split's pairs in row order (module docstring): ``pair_key`` (``UInt128``), the numbers
    of their two sentences into ``sentences`` (their keys, ``UInt128``, sentence ``i`` at ``i``),
    and ``labels`` (codes into ``label_names`` then ``unknown_labels``, -1 for none; or float32
    scores; None for a split whose label kind is neither)."""

    dataset: str
    split: str
    pair_key: pl.Series
    sent_a: np.ndarray  # int32 (n,)
    sent_b: np.ndarray  # int32 (n,)
    sentences: pl.Series
    label_kind: str
    label_names: tuple[str, ...]
    labels: np.ndarray | None
    unknown_labels: tuple[str, ...] = ()

    @property
    def height(self) -> int:
        return len(self.sent_a)

    def take(self, keep: np.ndarray) -> NumberedSplit:
        """The pairs ``keep`` selects (a boolean mask, or positions in order), their sentences
        numbered again among those they use, in the order they had."""
        pick = np.flatnonzero(keep) if keep.dtype == bool else np.asarray(keep, dtype=np.int64)
        if len(pick) == self.height and bool((pick == np.arange(self.height)).all()):
            return self
        a, b = self.sent_a[pick], self.sent_b[pick]
        used = np.zeros(self.sentences.len(), dtype=bool)
        used[a], used[b] = True, True
        renumber = np.cumsum(used, dtype=np.int64) - 1
        return replace(self, pair_key=self.pair_key.gather(pick), sent_a=renumber[a].astype(np.int32),
                       sent_b=renumber[b].astype(np.int32), sentences=self.sentences.filter(pl.Series(used)),
                       labels=None if self.labels is None else self.labels[pick])

    def head(self, n: int) -> NumberedSplit:
        """The first ``n`` pairs (`take`)."""
        return self.take(np.arange(min(n, self.height), dtype=np.int64))


class KeyNumbering:
    """Numbers keys (``UInt128``) by first appearance over many calls: the numbers a key got
    stay its own. The keys numbered so far are held sorted in one `KeyIndex`, each call's new
    keys merged into it (`KeyIndex.joined`): a split's distinct sentences are found without
    hashing its whole key columns, and each group's keys are looked up once."""

    def __init__(self) -> None:
        self._keys: list[pl.Series] = []
        self._index: KeyIndex | None = None  # every key numbered, at its number
        self.count = 0

    def number(self, *columns: pl.Series) -> list[np.ndarray]:
        """Each column's numbers (int32), the keys no earlier call had numbered given the next
        numbers in the order of `distinct_keys` (each column's new ones in turn). The call's
        distinct keys are looked up among those numbered, the columns only among those."""
        group = distinct_keys(*columns)
        local = KeyIndex(group)
        numbers = self._index.find_sorted(local) if self._index is not None else np.full(group.len(), -1, np.int64)
        new = numbers < 0
        fresh = int(new.sum())
        if fresh:
            keys = group.filter(pl.Series(new))
            numbers[new] = np.arange(self.count, self.count + fresh)
            self._keys.append(keys)
            # the new keys in the call's sorted order (``local``'s), at their numbers: merged in
            # as they are, not sorted again
            picked = new[local.position]
            joined = None if self._index is None else self._index.joined_sorted(
                local.hi[picked], local.lo[picked], numbers[local.position[picked]])
            self.count += fresh
            # the keys in number order: a key's position is its number
            self._index = joined if joined is not None else KeyIndex(self.keys())
        return [numbers[local.find(c)].astype(np.int32) for c in columns]

    def keys(self) -> pl.Series:
        """Every key numbered, key ``i`` at ``i``."""
        if not self._keys:
            return pl.Series("key", [], dtype=KEY_NUMBER)
        keys = pl.concat(self._keys, rechunk=True)
        self._keys = [keys]
        return keys


class LabelCodes:
    """A split's labels as codes (module docstring), group by group."""

    def __init__(self, kind: str, names: Sequence[str]) -> None:
        self.kind, self.names = kind, tuple(names)
        self._code = {name: i for i, name in enumerate(self.names)}
        self.unknown: list[str] = []

    def __call__(self, raw: pl.Series) -> np.ndarray | None:
        if self.kind == "score":
            return raw.cast(pl.Float32).to_numpy()
        if self.kind != "class":
            return None
        text = raw.cast(pl.String)
        for value in text.drop_nulls().unique().to_list():
            if value not in self._code:
                self._code[value] = len(self._code)
                self.unknown.append(value)
        codes = text.replace_strict(list(self._code), list(self._code.values()), default=None,
                                    return_dtype=pl.Int32)
        return codes.fill_null(MISSING_LABEL).to_numpy()


def numbered_split(store: SegmentStore, dataset: str, split: str) -> NumberedSplit:
    """The split's rows as numbers (module docstring), checked against its manifest and the
    later records of its builds (`ShortSplitError` when some are missing)."""
    return checked_read(store, dataset, split, lambda: _read(store, dataset, split))


def _read(store: SegmentStore, dataset: str, split: str) -> NumberedSplit:
    segments = store.split_segments(dataset, split)
    meta = segments[-1].meta if segments else {}  # the label kind and names recorded with the split's pairs
    kind, names = str(meta.get("label_kind", "class")), tuple(meta.get("labels", ()))
    groups = (joined for _, joined in frame_groups(store.fs, segments, "pairs.parquet", NUMBERED_COLUMNS,
                                                   PAIR_KEY_COLUMNS))
    numbered = _numbered_groups(groups, dataset, split, kind, names)
    if numbered is None:  # rows out of order or written twice: read whole and sorted, one group
        rows = store.pair_rows(dataset, split, numbers=True, columns=NUMBERED_COLUMNS)
        numbered = _numbered_groups([rows], dataset, split, kind, names)
    assert numbered is not None
    return numbered


def _numbered_groups(groups: Iterable[pl.DataFrame], dataset: str, split: str, kind: str,
                     names: tuple[str, ...]) -> NumberedSplit | None:
    """What a numbered split keeps of ``groups`` (frames of `NUMBERED_COLUMNS`, keys as
    numbers, in file order); None where their rows are not in increasing order."""
    numbering, labels = KeyNumbering(), LabelCodes(kind, names)
    pair_keys: list[pl.Series] = []
    a_parts: list[np.ndarray] = []
    b_parts: list[np.ndarray] = []
    label_parts: list[np.ndarray] = []
    last = None
    for frame in groups:  # a pairs file holds at least one row (`SegmentStore.write_pairs`)
        row = frame["row"]
        if (last is not None and row[0] <= last) or (frame.height > 1 and not bool((row.diff().drop_nulls() > 0).all())):
            return None
        last = row[-1]
        pair_keys.append(frame["pair_key"])
        sent_a, sent_b = numbering.number(frame["key_a"], frame["key_b"])
        a_parts.append(sent_a)
        b_parts.append(sent_b)
        codes = labels(frame["label"])
        if codes is not None:
            label_parts.append(codes)
    empty = np.zeros(0, dtype=np.int32)
    return NumberedSplit(
        dataset, split,
        pl.concat(pair_keys, rechunk=False) if pair_keys else pl.Series("pair_key", [], dtype=KEY_NUMBER),
        np.concatenate(a_parts) if a_parts else empty, np.concatenate(b_parts) if b_parts else empty,
        numbering.keys(), kind, names,
        (np.concatenate(label_parts) if label_parts else empty) if kind in ("class", "score") else None,
        tuple(labels.unknown))


def leave_out_numbered(numbered: NumberedSplit, skipped: dict[str, str]) -> tuple[NumberedSplit, dict[str, int]]:
    """`prior.featurestore.splits.leave_out_skipped` for a numbered split: the pairs without a
    sentence of ``skipped`` (key → reason), and how many were left out per reason (a pair counts
    under its first sentence's reason)."""
    if not skipped or numbered.height == 0:
        return numbered, {}
    keys = key_numbers(pl.Series("key", list(skipped), dtype=pl.String), strict=False)  # a value that is no key: none
    reasons = list(dict.fromkeys(skipped.values()))
    reason_of = np.array([reasons.index(r) for r in skipped.values()], dtype=np.int64)
    known = keys.is_not_null().to_numpy()
    at = KeyIndex(numbered.sentences).find(keys.filter(pl.Series(known)))
    why = np.full(numbered.sentences.len(), -1, dtype=np.int64)  # a sentence's reason, -1: not skipped
    why[at[at >= 0]] = reason_of[known][at >= 0]
    first = np.where(why[numbered.sent_a] >= 0, why[numbered.sent_a], why[numbered.sent_b])
    out = first >= 0
    if not out.any():
        return numbered, {}
    counts = np.bincount(first[out], minlength=len(reasons))
    return numbered.take(~out), {reasons[i]: int(n) for i, n in enumerate(counts) if n}


class NumberedCoverage(Coverage):
    """`Coverage` over numbered splits (module docstring): the keys of a split held as numbers,
    the split never held as a frame, and an entry's coverage found by locating the split's keys
    in the entry's segments as they are read (`prior.featurestore.located`): no index over the
    entry's keys is made. What a split's index needs of an entry that holds the split, where
    each key lies, is kept for it (`take_located`)."""

    def __init__(self, store: SegmentStore) -> None:
        super().__init__(store)
        self._numbered: dict[tuple[str, str], NumberedSplit] = {}
        self._served: dict[tuple[str, str, str], tuple[NumberedSplit, dict[str, int]]] = {}
        self._located: dict[tuple[str, str, str], Located] = {}

    def numbered(self, dataset: str, split: str) -> NumberedSplit:
        """The split's rows as numbers (`numbered_split`), read once per selection."""
        if (dataset, split) not in self._numbered:
            self._numbered[dataset, split] = numbered_split(self.store, dataset, split)
        return self._numbered[dataset, split]

    def served_numbered(self, dataset: str, split: str, parse: str | None) -> tuple[NumberedSplit, dict[str, int]]:
        """The split's pairs a read that uses ``parse`` serves, and those left out by reason."""
        if parse is None:
            return self.numbered(dataset, split), {}
        if (dataset, split, parse) not in self._served:  # asked by each entry's coverage, then by the index
            self._served[dataset, split, parse] = leave_out_numbered(self.numbered(dataset, split), self.skipped(parse))
        return self._served[dataset, split, parse]

    def _columns(self, dataset: str, split: str, scope: str, parse: str | None) -> list[pl.Series]:
        served, _ = self.served_numbered(dataset, split, parse)
        return [served.pair_key] if scope == "pair" else [served.sentences]

    def located(self, segments: Sequence[Segment], inner: str, column: str, dataset: str, split: str,
                scope: str, parse: str | None) -> Located:
        """Where the keys of ``scope`` (pairs or sentences) of the split a read of ``parse``
        serves lie in ``column`` of the ``inner`` table of ``segments`` (`locate_keys`)."""
        return locate_keys(self.store.fs, segments, inner, column, self._columns(dataset, split, scope, parse)[0])

    def entry_located(self, entry: EntryInfo, dataset: str, split: str) -> Located:
        """Where the split's keys lie in ``entry``'s segments; kept for `take_located` when the
        entry holds all of them."""
        key = (entry.key, dataset, split)
        if key in self._located:
            return self._located[key]
        found = self.located(self.store.entry_segments(entry), "index.parquet", "key", dataset, split, entry.scope,
                             entry.parse)
        if not found.lacking:
            self._located[key] = found
        return found

    def take_located(self, entry: EntryInfo, dataset: str, split: str) -> Located:
        """`entry_located`, no longer kept here (for its last reader)."""
        found = self.entry_located(entry, dataset, split)
        self._located.pop((entry.key, dataset, split), None)
        return found

    def lacking(self, entry: EntryInfo, dataset: str, split: str) -> int:
        """How many distinct keys of the split the entry lacks (`entry_located`)."""
        return self.entry_located(entry, dataset, split).lacking

    def forget_split(self, dataset: str, split: str) -> None:
        super().forget_split(dataset, split)
        self._numbered.pop((dataset, split), None)
        self._served = {k: v for k, v in self._served.items() if k[:2] != (dataset, split)}
        self._located = {k: v for k, v in self._located.items() if k[1:] != (dataset, split)}


__all__ = ["NUMBERED_COLUMNS", "KeyNumbering", "LabelCodes", "NumberedCoverage", "NumberedSplit",
           "leave_out_numbered", "numbered_split"]

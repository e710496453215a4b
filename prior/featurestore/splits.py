"""A split as readers get it: every row its manifest records, less the pairs its build skipped.

**Manifests.** Each pairs segment's record carries the split's *manifest* as it stands after
that commit (``meta["manifest"]``: ``rows``, the number of distinct rows the split then holds,
and ``segments``, the ids of the split's earlier pairs segments of the same source that it is
made of besides this one). It is written with the commit, in the same atomic step. The latest
pairs segment of a split's current source speaks for the split: a segment it lists that is
not in the catalog (a record dropped or deleted), or fewer distinct rows than it records, means
the split is short. Compaction keeps this true: a merged segment lists, in ``replaces``, every
segment it stands for (`prior.featurestore.compact`), and a listed segment replaced by one
present is not missing. A short split is never read: :func:`split_rows` raises
`ShortSplitError` naming what is missing and the build that restores it, and ``verify``
reports it (`prior.featurestore.maintenance`).

**Skipped pairs.** A sentence that a build could not parse (over the word limit, or the parser
failed on it) is recorded as skipped, with its reason, in that build's parses segment
(`SegmentStore.skipped_sentences`). A pair with such a sentence has no parse and no feature
under that parse, and no rebuild of the same settings can add one, so a read that uses the
parse leaves the pair out and counts it (:attr:`SplitRows.skipped`, :attr:`SplitRows.note`)
instead of demanding a rebuild. A sentence that a later build parsed (a higher word limit) is
no longer skipped.

:func:`split_rows` is the one read of a split's rows behind every reader: ``Store.pairs``,
``Store.frame``, ``Store.scan``, the export, entry selection and the trainers' loader.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from prior.featurestore.catalog import MANIFEST
from prior.featurestore.rebuild import ShortSplitError, restore_recipe
from prior.featurestore.recipe import render

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.segments import SegmentStore


def manifest_of(segment: Segment) -> dict[str, Any]:
    """A pairs segment's manifest (checked with its record: `prior.featurestore.catalog`)."""
    return dict(segment.meta[MANIFEST])


@dataclass(frozen=True)
class SplitShape:
    """What a split's latest manifest records against what the catalog holds."""

    dataset: str
    split: str
    expected: int  # rows the latest manifest records
    held: int  # distinct rows the split's present segments hold
    missing: tuple[str, ...] = ()  # segment ids it lists that are neither in the catalog nor replaced

    @property
    def short(self) -> bool:
        return bool(self.missing) or self.held < self.expected

    def describe(self) -> str:
        gone = (f"; its pairs segment(s) {', '.join(self.missing)} are not in the catalog (dropped or deleted)"
                if self.missing else "")
        return f"{self.dataset}/{self.split} holds {self.held} of the {self.expected} rows its manifest records{gone}"


def split_shape(segments: list[Segment], held: int) -> SplitShape:
    """The shape of a split whose current pairs ``segments`` (oldest first, at least one) hold
    ``held`` distinct rows."""
    latest = segments[-1]
    manifest = manifest_of(latest)
    present = {s.id for s in segments}
    replaced = {r for s in segments for r in s.meta.get("replaces") or ()}
    missing = tuple(i for i in manifest["segments"] if i not in present and i not in replaced)
    return SplitShape(latest.target["dataset"], latest.target["split"], int(manifest["rows"]), held, missing)


def short_split(store: SegmentStore, shape: SplitShape) -> ShortSplitError:
    recipe = restore_recipe(store, shape.dataset, shape.split)
    return ShortSplitError(f"{store.location}: {shape.describe()}, so a read would come back short; restore them "
                           f"with: {render(recipe)}", recipe=recipe)


def checked_rows(store: SegmentStore, dataset: str, split: str) -> pl.DataFrame:
    """The split's rows (`SegmentStore.pair_rows`), checked against its manifest:
    `ShortSplitError` when some are missing."""
    rows = store.pair_rows(dataset, split)
    shape = split_shape(store.split_segments(dataset, split), rows.height)
    if shape.short:
        raise short_split(store, shape)
    return rows


@dataclass(frozen=True)
class SplitRows:
    """The rows a read of one split serves (``row, pair_key, key_a, key_b, label, id``, by
    row), and the pairs left out because their build skipped a sentence (reason → pairs)."""

    dataset: str
    split: str
    rows: pl.DataFrame
    parse: str | None = None
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def skipped_pairs(self) -> int:
        return sum(self.skipped.values())

    @property
    def note(self) -> str:
        """``"3 pairs skipped at build: over the 256-word limit"``; empty when none were."""
        if not self.skipped:
            return ""
        if len(self.skipped) == 1:
            reason, n = next(iter(self.skipped.items()))
            return f"{n} pair{'s' * (n != 1)} of {self.dataset}/{self.split} skipped at build: {reason}"
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items(), key=lambda kv: -kv[1]))
        return f"{self.skipped_pairs} pairs of {self.dataset}/{self.split} skipped at build: {reasons}"


def leave_out_skipped(rows: pl.DataFrame, skipped: dict[str, str]) -> tuple[pl.DataFrame, dict[str, int]]:
    """``rows`` without the pairs that have a sentence of ``skipped`` (key → reason), and how
    many were left out per reason (a pair counts under its first sentence's reason)."""
    if not skipped or rows.is_empty():
        return rows, {}
    keys = pl.Series(list(skipped), dtype=pl.String)
    out = rows["key_a"].is_in(keys.implode()) | rows["key_b"].is_in(keys.implode())
    if not out.any():
        return rows, {}
    left = rows.filter(out)
    reasons = Counter(skipped.get(a) or skipped[b] for a, b in zip(left["key_a"].to_list(), left["key_b"].to_list()))
    return rows.filter(~out), dict(reasons)


def split_rows(store: SegmentStore, dataset: str, split: str, *, parse: str | None = None) -> SplitRows:
    """The split's rows for a read that uses ``parse`` (module docstring): every row its
    manifest records (`ShortSplitError` otherwise), less the pairs with a sentence that
    ``parse``'s build skipped, counted by reason. ``parse`` None: no pair is left out."""
    rows = checked_rows(store, dataset, split)
    if parse is None:
        return SplitRows(dataset, split, rows)
    kept, skipped = leave_out_skipped(rows, store.skipped_sentences(parse))
    return SplitRows(dataset, split, kept, parse, skipped)


__all__ = ["SplitRows", "SplitShape", "checked_rows", "leave_out_skipped", "manifest_of",
           "short_split", "split_rows", "split_shape"]

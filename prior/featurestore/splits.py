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

**The latest pairs record itself.** When the record that is gone is the latest one, the
manifest that speaks for the split is the one before it, which looks whole. So a build's later
records — its parses and feature segments, committed after its pairs — name the splits it read
(``meta["splits"]``: a :class:`SplitRef` per split, the split's latest pairs segment, the rows
its manifest records, the file it was read from and the recipe that reads those rows again).
A pairs segment such a record names that is not in the catalog, not replaced by one there
(compaction), and newer than every pairs segment of the split there, was the split's latest
(:func:`lost_pairs`): the split is short by its rows. Compaction keeps the newest reference of
each split in a merged record. It costs no read: the references come with the catalog. A
build step that commits pairs and then nothing (killed before its first parse, or every
sentence of its new rows parsed before and every feature item held) leaves no such record,
and losing its pairs record then goes unnoticed.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import polars as pl

from prior.errors import NotFoundError
from prior.featurestore.catalog import MANIFEST, SPLITS
from prior.featurestore.rebuild import ShortSplitError, pairs_recipe, restore_recipe
from prior.featurestore.recipe import Recipe, read_recorded, render
from prior.hints import option

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.segments import SegmentStore


def manifest_of(segment: Segment) -> dict[str, Any]:
    """A pairs segment's manifest (checked with its record: `prior.featurestore.catalog`)."""
    return dict(segment.meta[MANIFEST])


@dataclass(frozen=True)
class SplitRef:
    """A split as a build saw it once its pairs were committed, as the build's later records
    name it (module docstring): its latest pairs segment, the rows that segment's manifest
    records, the ``source`` its rows were read from (the pairs target's checksum) and the
    ``recipe`` that reads those rows again (its dataset source, split and row limit)."""

    dataset: str
    split: str
    pairs: str
    rows: int
    source: str = ""
    recipe: Recipe | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dataset": self.dataset, "split": self.split, "pairs": self.pairs, "rows": self.rows}
        if self.source:
            out["source"] = self.source
        if self.recipe is not None:
            out["recipe"] = self.recipe.to_dict()
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SplitRef:
        """A reference as a catalog record holds it (checked with the record, `catalog.py`)."""
        return cls(str(raw["dataset"]), str(raw["split"]), str(raw["pairs"]), int(raw["rows"]),
                   str(raw.get("source") or ""), read_recorded(raw))


def split_refs(store: SegmentStore, dataset: str, splits: Iterable[str]) -> list[dict[str, Any]]:
    """What a build's later records carry (their meta ``"splits"``) of the ``splits`` of
    ``dataset`` it read, once their pairs are committed: one `SplitRef` each, as JSON."""
    store.refresh()
    out = []
    for split in splits:
        segs = store.split_segments(dataset, split)
        if not segs:  # a split that gave no row (--limit 0)
            continue
        latest = segs[-1]
        recipe = pairs_recipe(store, dataset, split)
        out.append(SplitRef(dataset, split, latest.id, int(manifest_of(latest)["rows"]),
                            str(latest.target["source_sha256"]),
                            None if recipe is None else recipe.with_(split=split)).to_dict())
    return out


Refs = dict[tuple[str, str], dict[str, dict[str, Any]]]


def later_refs(segments: Iterable[Segment]) -> Refs:
    """(dataset, split) → pairs segment id → the reference to it (as JSON) that ``segments``'
    records carry (module docstring). One pass over the records' meta: no file is read."""
    out: Refs = {}
    for s in segments:
        for raw in s.meta.get(SPLITS) or ():
            out.setdefault((raw["dataset"], raw["split"]), {}).setdefault(raw["pairs"], raw)
    return out


def newest_refs(metas: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The newest reference of each split among records' ``metas`` (what a merged record
    keeps: an older one says no more, :func:`lost_pairs`)."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for meta in metas:
        for raw in meta.get(SPLITS) or ():
            key = (raw["dataset"], raw["split"])
            if key not in newest or raw["pairs"] > newest[key]["pairs"]:
                newest[key] = raw
    return [newest[key] for key in sorted(newest)]


def lost_pairs(segments: Sequence[Segment], dataset: str, split: str, refs: Refs | None = None) -> tuple[SplitRef, ...]:
    """The pairs segments of ``dataset``/``split`` that later records name (``refs``:
    :func:`later_refs` of ``segments``, when already made) and that are gone: not among
    ``segments``, not replaced by one of them, and newer than each of the split's there (a
    gone older one is its latest manifest's to find, or belonged to a source that a later
    build replaced). Oldest first."""
    named = (later_refs(segments) if refs is None else refs).get((dataset, split))
    if not named:
        return ()
    mine = [s for s in segments if s.kind == "pairs" and s.target["dataset"] == dataset and s.target["split"] == split]
    present = {s.id for s in mine} | {r for s in mine for r in s.meta.get("replaces") or ()}
    latest = max((s.id for s in mine), default="")
    return tuple(SplitRef.from_dict(raw) for pid, raw in sorted(named.items()) if pid not in present and pid > latest)


def read_splits(store: SegmentStore) -> list[tuple[str, str]]:
    """Every (dataset, split) a read may name, sorted: those whose pairs the catalog holds
    (`SegmentStore.datasets`), and those whose every pairs record is gone while later records
    name them (a read of one is a `ShortSplitError`, never "no such split")."""
    segments = store.segments()
    held = set(store.datasets())
    refs = later_refs(segments)
    return sorted(held | {key for key in refs if key not in held and lost_pairs(segments, *key, refs)})


@dataclass(frozen=True)
class SplitShape:
    """What a split's latest manifest, and the later records of its builds, record against
    what the catalog holds."""

    dataset: str
    split: str
    expected: int  # rows the latest manifest (or the latest record that names a gone segment) records
    held: int  # distinct rows the split's present segments hold
    missing: tuple[str, ...] = ()  # segment ids it lists that are neither in the catalog nor replaced
    lost: tuple[SplitRef, ...] = ()  # its latest pairs segment(s), named by later records and gone
    source: str = ""  # the source of the rows it holds (its latest present segment's)

    @property
    def short(self) -> bool:
        return bool(self.missing) or bool(self.lost) or self.held < self.expected

    def describe(self) -> str:
        if self.lost:
            gone = ", ".join(ref.pairs for ref in self.lost)
            return (f"{self.dataset}/{self.split} holds {self.held} of the {self.expected} rows that the parse and "
                    f"feature records of its latest build name; its latest pairs segment(s) {gone} are not in the "
                    "catalog (dropped or deleted)")
        gone = (f"; its pairs segment(s) {', '.join(self.missing)} are not in the catalog (dropped or deleted)"
                if self.missing else "")
        return f"{self.dataset}/{self.split} holds {self.held} of the {self.expected} rows its manifest records{gone}"

    @property
    def replaced_source(self) -> bool:
        """Whether the rows that are gone were read from another source than those it holds
        (a build that replaced the split's content): restoring them takes a replacing build."""
        return bool(self.lost) and bool(self.source) and self.lost[-1].source not in ("", self.source)


def split_shape(segments: list[Segment], held: int, lost: Sequence[SplitRef] = ()) -> SplitShape:
    """The shape of a split whose current pairs ``segments`` (oldest first) hold ``held``
    distinct rows; ``lost``: its pairs segments that later records name and that are gone
    (:func:`lost_pairs`; the split has at least one segment or one of these)."""
    if not segments:
        ref = lost[-1]
        return SplitShape(ref.dataset, ref.split, ref.rows, held, lost=tuple(lost))
    latest = segments[-1]
    manifest = manifest_of(latest)
    present = {s.id for s in segments}
    replaced = {r for s in segments for r in s.meta.get("replaces") or ()}
    missing = tuple(i for i in manifest["segments"] if i not in present and i not in replaced)
    expected = max([int(manifest["rows"]), *(ref.rows for ref in lost)])
    return SplitShape(latest.target["dataset"], latest.target["split"], expected, held, missing, tuple(lost),
                      str(latest.target["source_sha256"]))


def short_split(store: SegmentStore, shape: SplitShape) -> ShortSplitError:
    recipe = shape_recipe(store, shape)
    return ShortSplitError(f"{store.location}: {shape.describe()}, so a read would come back short; restore them "
                           f"with: {restore_text(shape, recipe)}", recipe=recipe)


def shape_recipe(store: SegmentStore, shape: SplitShape) -> Recipe:
    """The build that restores a short split's rows: the source its lost latest pairs record
    was read with (its later records name it), else the one the store's pairs records give."""
    source = shape.lost[-1].recipe if shape.lost else None
    return restore_recipe(store, shape.dataset, shape.split, source=source)


def restore_text(shape: SplitShape, recipe: Recipe) -> str:
    """``recipe`` as the renderer writes it, and when the rows that are gone were read from
    another source than those the split holds, that the build must replace them."""
    if not shape.replaced_source:
        return render(recipe)
    return (f"{render(recipe)} with {option('replace')} (the rows that are gone were read from another file, "
            f"sha256 {shape.lost[-1].source[:12]}, than those the split holds now)")


def checked_rows(store: SegmentStore, dataset: str, split: str) -> pl.DataFrame:
    """The split's rows (`SegmentStore.pair_rows`), checked against its manifest and against the
    later records of its builds: `ShortSplitError` when some are missing (`checked_read`)."""
    return checked_read(store, dataset, split, lambda: store.pair_rows(dataset, split))


class HasHeight(Protocol):
    """What a split's read gives: a frame, or what a reader keeps of its rows."""

    @property
    def height(self) -> int: ...


Read = TypeVar("Read", bound=HasHeight)


def checked_read(store: SegmentStore, dataset: str, split: str, read: Callable[[], Read]) -> Read:
    """What ``read`` makes of the split's current rows (a frame, or what a reader keeps of them:
    `prior.featurestore.numbered_split`; its ``height`` is the distinct rows it read), checked
    against the split's manifest and against the later records of its builds: `ShortSplitError`
    when some are missing. A split found short is looked at once more in a fresh listing of the
    catalog (one listed while others committed may miss a record that another one it saw was
    committed after)."""
    for fresh in (False, True):
        if fresh:
            store.refresh()
        segments = store.split_segments(dataset, split)
        lost = lost_pairs(store.segments(), dataset, split)
        if not segments and not lost:
            raise NotFoundError(store.missing_split(dataset, split))
        rows = read() if segments else None
        shape = split_shape(segments, 0 if rows is None else rows.height, lost)
        if rows is not None and not shape.short:
            return rows
    raise short_split(store, shape)


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
        return skipped_note(self.dataset, self.split, self.skipped)


def skipped_note(dataset: str, split: str, skipped: dict[str, int]) -> str:
    """What a read says of the pairs of ``dataset``/``split`` it left out (reason → pairs):
    ``"3 pairs of snli/train skipped at build: over the 256-word limit"``; empty when none were."""
    if not skipped:
        return ""
    if len(skipped) == 1:
        reason, n = next(iter(skipped.items()))
        return f"{n} pair{'s' * (n != 1)} of {dataset}/{split} skipped at build: {reason}"
    reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items(), key=lambda kv: -kv[1]))
    return f"{sum(skipped.values())} pairs of {dataset}/{split} skipped at build: {reasons}"


def leave_out_skipped(rows: pl.DataFrame, skipped: dict[str, str]) -> tuple[pl.DataFrame, dict[str, int]]:
    """``rows`` without the pairs that have a sentence of ``skipped`` (key → reason), and how
    many were left out per reason (a pair counts under its first sentence's reason)."""
    if not skipped or rows.is_empty():
        return rows, {}
    why = dict(skipped)
    keys = pl.Series("key", list(skipped), dtype=pl.String)
    out = rows["key_a"].is_in(keys.implode()) | rows["key_b"].is_in(keys.implode())
    if not out.any():
        return rows, {}
    left = rows.filter(out)
    reasons = Counter(why.get(a) or why[b] for a, b in zip(left["key_a"].to_list(), left["key_b"].to_list()))
    return rows.filter(~out), dict(reasons)


def split_rows(store: SegmentStore, dataset: str, split: str, *, parse: str | None = None) -> SplitRows:
    """The split's rows for a read that uses ``parse`` (module docstring): every row its
    manifest records (`ShortSplitError` otherwise), less the pairs with a sentence that
    ``parse``'s build skipped, counted by reason. ``parse`` None: no pair is left out."""
    rows = checked_rows(store, dataset, split)
    return served_rows(rows, dataset, split, parse, store.skipped_sentences(parse) if parse else {})


def served_rows(rows: pl.DataFrame, dataset: str, split: str, parse: str | None,
                skipped: dict[str, str]) -> SplitRows:
    """What a read that uses ``parse`` serves of a split's checked ``rows``: all of them, less
    the pairs with a sentence of ``skipped`` (the sentences that parse's builds skipped → why)."""
    if parse is None:
        return SplitRows(dataset, split, rows)
    kept, left_out = leave_out_skipped(rows, skipped)
    return SplitRows(dataset, split, kept, parse, left_out)


__all__ = ["SplitRef", "SplitRows", "SplitShape", "checked_read", "checked_rows", "later_refs", "leave_out_skipped", "lost_pairs",
           "manifest_of", "newest_refs", "read_splits", "restore_text", "served_rows", "shape_recipe", "short_split",
           "skipped_note", "split_refs", "split_rows", "split_shape"]

"""Compaction: merge a table's or a feature entry's small segments into larger ones.

Many builds leave many small segments (one per split, partition and feature per build); every
read then lists, checks and opens one file per segment. Compaction rewrites runs of small
segments of one *group* as one segment each:

- pairs: one split's segments of its current source (older sources are not read and are left);
- sentences: all sentences segments;
- parses: one parse's segments (with the sentences their builds skipped);
- feature: one entry's segments (same recorded target).

Resources are content-keyed and never split, so they are left alone.

Atomicity follows the commit rules of the rest of the store (`catalog.py`): the merged
segment is written to a new folder claimed under the compaction's lease and committed with
``replaces`` (the merged ids) in its meta; only then are the merged segments' records removed,
one by one. Every segment keeps its rows or items (readers keep the first copy of a row or key,
and both copies are equal), so at every moment the catalog names every row once or twice and a
reader — one that listed the catalog before the compaction included — reads the same frames.
The replaced folders stay on disk, uncommitted, until ``prior store gc`` removes them (so a
reader that listed the catalog earlier still finds its files). A compaction killed after its
commit is finished by the next one: it first un-commits segments that a committed merged
segment replaces.

The merged segment's id carries the time of the run's first segment (its last for pairs and
parses, whose reads take the latest segment's source or parse), so ordering-sensitive reads
(the default parse, the split's current source, entries oldest first) are unchanged.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from prior.featurestore import keys as keymod
from prior.featurestore.catalog import CATALOG, SEGMENTS, SPLITS, Segment, commit_segment
from prior.featurestore.errors import StoreError
from prior.featurestore.lease import Lease, check_live, claim
from prior.featurestore.segment_files import indexed_items, read_arrays, read_parquet, write_parquet
from prior.featurestore.segments import SKIPPED, SegmentStore
from prior.featurestore.splits import newest_refs
from prior.featurestore.tensors import write_flat
from prior.hints import option
from prior.layouts.ragged import Ragged

TABLES = ("pairs", "sentences", "parses")
DEFAULT_MAX_ROWS = 250_000
_FILE = {"pairs": ("pairs.parquet", "row"), "sentences": ("sentences.parquet", "sent_key"),
         "parses": ("parses.parquet", "sent_key"), "feature": ("index.parquet", "key")}


@dataclass
class Merge:
    """One planned merge: ``segments`` (in catalog order) become one segment."""

    kind: str
    group: str  # what they belong to, for people: "pairs rte/train", "feature sdoi@1 3f2a…"
    segments: list[Segment]

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.segments)

    @property
    def bytes(self) -> int:
        return sum(f["size"] for s in self.segments for f in s.files.values())

    @property
    def files(self) -> int:
        return sum(len(s.files) for s in self.segments)


@dataclass
class CompactReport:
    merges: list[Merge]
    dry_run: bool
    committed: list[str] = field(default_factory=list)  # ids of the merged segments written
    uncommitted: list[str] = field(default_factory=list)  # ids whose records were removed
    finished: list[str] = field(default_factory=list)  # replaced ids an interrupted compaction had left committed
    replaced_bytes: int = 0  # bytes of the replaced folders, left for `prior store gc`


def _groups(store: SegmentStore, kinds: Sequence[str], feature: str | None) -> list[tuple[str, str, list[Segment]]]:
    """(kind, group name, segments in catalog order) of every group compaction may merge."""
    out: list[tuple[str, str, list[Segment]]] = []
    if "pairs" in kinds:
        for dataset, split in store.datasets():
            out.append(("pairs", f"pairs {dataset}/{split}", store.split_segments(dataset, split)))
    if "sentences" in kinds:
        out.append(("sentences", "sentences", store.segments("sentences")))
    if "parses" in kinds:
        by_parse: dict[str, list[Segment]] = {}
        for s in store.segments("parses"):
            by_parse.setdefault(keymod.canonical_json(s.target), []).append(s)
        out += [("parses", f"parses {segs[0].target['parse'][:12]}", segs) for segs in by_parse.values()]
    if "feature" in kinds:
        by_entry: dict[str, list[Segment]] = {}
        for s in store.segments("feature"):
            if feature is None or s.target["name"] == feature:
                by_entry.setdefault(keymod.canonical_json(s.target), []).append(s)
        out += [("feature", f"feature {segs[0].target['name']}@{segs[0].target['version']} "
                 f"{segs[0].target['entry'][:12]}", segs) for segs in by_entry.values()]
    return out


def plan(store: SegmentStore, *, kinds: Sequence[str] = (*TABLES, "feature"), feature: str | None = None,
         max_rows: int = DEFAULT_MAX_ROWS) -> list[Merge]:
    """The merges compaction would make: in each group, consecutive segments of fewer than
    ``max_rows`` rows, taken while their sum stays within ``max_rows``; runs of one are left."""
    if max_rows < 2:
        raise StoreError(f"{option('max_rows')} must be at least 2, not {max_rows}")
    if feature is not None and not any(s.target["name"] == feature for s in store.segments("feature")):
        held = sorted({s.target["name"] for s in store.segments("feature")})
        raise StoreError(f"{store.location} holds no entry of feature {feature!r} to compact; features it holds: "
                         f"{', '.join(held) or 'none'}")
    merges = []
    for kind, group, segs in _groups(store, kinds, feature):
        run: list[Segment] = []
        for s in [*segs, None]:
            if s is not None and s.rows < max_rows and sum(r.rows for r in run) + s.rows <= max_rows:
                run.append(s)
                continue
            if len(run) > 1:
                merges.append(Merge(kind, group, run))
            run = [s] if s is not None and s.rows < max_rows else []
    return merges


def _first_rows(table: pa.Table, column: str) -> pa.Table:
    """``table`` with each value of ``column`` kept once, its first row (order kept)."""
    keys = pl.Series(table.column(column).to_pylist())
    first = pl.DataFrame({"k": keys}).with_row_index("i").unique(subset=["k"], keep="first",
                                                                  maintain_order=True)["i"]
    return table.take(pa.array(first.to_numpy()))


def _merged_meta(merge: Merge) -> dict[str, Any]:
    """The merged segment's meta: for pairs the build's reading record (`prior.pipeline.build`
    reads the latest segment's and the widest read's), for features the dtypes."""
    segs = merge.segments
    meta = dict(segs[-1].meta)
    if merge.kind == "pairs":
        limits = [n for s in segs if isinstance(n := s.meta.get("limit"), int)]
        widest = max(segs, key=lambda s: s.meta["limit"] if isinstance(s.meta.get("limit"), int) else float("inf"))
        meta["limit"] = max(limits) if len(limits) == len(segs) else None
        for name in ("rows_read", "skipped", "skip_examples"):
            if name in widest.meta:
                meta[name] = widest.meta[name]
    if any(SPLITS in s.meta for s in segs):  # what the records name of their builds' splits
        meta[SPLITS] = newest_refs(s.meta for s in segs)
    # every segment it stands for, those the merged ones stood for included: a split's manifest
    # lists the segments it was made of (`prior.featurestore.splits`)
    meta["replaces"] = list(dict.fromkeys([*(s.id for s in segs), *(r for s in segs for r in s.meta.get("replaces") or ())]))
    return meta


def _writer(store: SegmentStore, merge: Merge) -> tuple[int, Callable[[str], list[str]], dict[str, Any]]:
    """(rows, write(folder) -> file names, meta) of the merged segment."""
    fs = store.fs
    meta = _merged_meta(merge)
    if merge.kind != "feature":
        inner, column = _FILE[merge.kind]
        tables = {inner: _first_rows(pa.concat_tables([read_parquet(fs, s, inner) for s in merge.segments],
                                                      promote_options="default"), column)}
        if skips := [read_parquet(fs, s, SKIPPED) for s in merge.segments if SKIPPED in s.files]:
            tables[SKIPPED] = _first_rows(pa.concat_tables(skips), "sent_key")  # a parse's skipped sentences

        def write_table(folder: str) -> list[str]:
            for name, table in tables.items():
                write_parquet(fs, f"{folder}/{name}", table)
            return list(tables)

        return tables[inner].num_rows, write_table, meta
    components = list(merge.segments[0].target["components"])
    indexes = [read_parquet(fs, s, "index.parquet") for s in merge.segments]
    parts: dict[str, list[Ragged]] = {c: [] for c in components}
    for s, idx in zip(merge.segments, indexes):
        arrays = read_arrays(fs, s, components)
        for c in components:
            parts[c].append(indexed_items(idx, arrays, c))
    index = _first_rows(pa.concat_tables([idx.select(["key"]) for idx in indexes]).append_column(
        "i", pa.array(np.arange(sum(idx.num_rows for idx in indexes), dtype=np.int64))), "key")
    take = np.asarray(index.column("i").to_numpy(), dtype=np.int64)
    columns: dict[str, Any] = {"key": index.column("key")}
    flats = {}
    for c in components:
        items = Ragged.concat(parts[c]).take(take)
        flats[c] = items.values
        columns.update({f"{c}.offset": pa.array(items.offsets), f"{c}.rows": pa.array(items.rows.astype(np.int32)),
                        f"{c}.cols": pa.array(items.cols.astype(np.int32))})
    meta["dtypes"] = {c: str(f.dtype) for c, f in flats.items()}

    def write_feature(folder: str) -> list[str]:
        write_flat(fs, f"{folder}/arrays", flats)
        write_parquet(fs, f"{folder}/index.parquet", pa.table(columns))
        return ["index.parquet", "arrays/zarr.json"]

    return len(take), write_feature, meta


def _merged_id(merge: Merge) -> str:
    """A new id at the time of the run's first segment (pairs, parses: its last)."""
    at = merge.segments[-1 if merge.kind in ("pairs", "parses") else 0].id.split("-")[0]
    return f"{at}-{uuid.uuid4().hex[:12]}"


def uncommit(store: SegmentStore, segment_id: str) -> None:
    """Remove a replaced segment's record (its folder is left for ``gc``)."""
    store.fs.remove_entry(CATALOG, f"{segment_id}.json")


def _finish_interrupted(store: SegmentStore) -> list[str]:
    """Un-commit segments that a committed merged segment replaces (a compaction killed after
    its commit); returns their ids."""
    committed = {s.id: s for s in store.segments(refresh=True)}
    done = []
    for s in list(committed.values()):
        for old in s.meta.get("replaces") or ():
            if old in committed and old != s.id and committed[old].kind == s.kind:
                uncommit(store, old)
                done.append(old)
    return done


def compact_store(store: SegmentStore, *, kinds: Sequence[str] = (*TABLES, "feature"), feature: str | None = None,
                  max_rows: int = DEFAULT_MAX_ROWS, dry_run: bool = False) -> CompactReport:
    """Merge small segments (see the module doc); ``dry_run`` only plans. Holds a lease like a
    build, so ``gc`` refuses to run meanwhile and never removes the folder being written."""
    if dry_run:
        return CompactReport(merges=plan(store, kinds=kinds, feature=feature, max_rows=max_rows), dry_run=True)
    lease = Lease(store.fs, "prior store compact").acquire()
    try:
        finished = _finish_interrupted(store)
        store.refresh()
        merges = plan(store, kinds=kinds, feature=feature, max_rows=max_rows)
        report = CompactReport(merges=merges, dry_run=False, finished=finished)
        for merge in merges:
            rows, write, meta = _writer(store, merge)
            sid = _merged_id(merge)
            claim(store.fs, lease.id, sid)
            required = write(f"{SEGMENTS}/{sid}")
            commit_segment(store.fs, sid, merge.kind, merge.segments[0].target, rows, meta, required=required,
                           lease=lease.id, ready=lambda: check_live(store.fs, lease.id))
            report.committed.append(sid)
            for s in merge.segments:
                uncommit(store, s.id)
                report.uncommitted.append(s.id)
            report.replaced_bytes += merge.bytes
        store.refresh()
        return report
    finally:
        lease.release()

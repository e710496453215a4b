"""The build's first stage: read a dataset's splits into the store (pairs and their sentences).

Which splits a build reads and from where is worked out once (:func:`split_sources`). A split
the store already holds as this build would read it (same file, same reading options, every
row asked for, every sentence present: :func:`held_split`) is taken from the store without
reading the file again. Otherwise the file is read, its rows checked against what the store
holds from it (:func:`stored_rows`: another source or other options is refused, unless
``replace``), and the new rows written. A split's new sentences are committed before its
pairs, so no kill leaves pairs that reference sentences the store lacks.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from prior.errors import DataError, NotFoundError, PriorError
from prior.featurestore import keys as K
from prior.featurestore.names import name_problem
from prior.featurestore.store import Store
from prior.hints import option
from prior.pipeline.build_options import BuildOptions
from prior.pipeline.build_report import BuildReport, SplitReport, StageReport
from prior.pipeline.build_run import Triple
from prior.pipeline.datasets import SPECS, SplitData, list_datasets, read_split
from prior.pipeline.datasets.api import Source, release_pairs, source_of
from prior.pipeline.datasets.resolve import data_dir_from_env

MAX_SKIP_EXAMPLES = 5  # skipped rows listed by file and row in a split's report (all are counted)


@dataclass
class Ingested:
    """What the read stage hands on: each split's (pair, a, b) keys, and the texts of the
    sentences read from files (a split taken from the store has its texts there)."""

    split_pairs: dict[str, list[Triple]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def sentence_keys(self) -> set[str]:
        return {k for triples in self.split_pairs.values() for _, a, b in triples for k in (a, b)}


class NoUsablePairsError(DataError):
    """A dataset file that gave no usable pair; ``counts``: its skipped rows per reason."""

    def __init__(self, message: str, *, counts: dict[str, int], file: str | None = None,
                 row: int | None = None) -> None:
        super().__init__(message, file=file, row=row)
        self.counts = counts


def split_sources(options: BuildOptions) -> dict[str, Source | None]:
    """Each split this build reads and its source (file and checksum; None: read from the hub),
    worked out once for the no-op record's digest and for reading."""
    splits = options.splits or default_splits(options.dataset, options.data_dir, hub=options.hub)
    return {split: source_of(options.dataset, split, data_dir=options.data_dir) for split in splits}


def default_splits(dataset: str, data_dir: Path | None = None, *, hub: bool = False) -> tuple[str, ...]:
    """Every split of a named dataset that can be read now from a local file (and, with
    ``hub``, from the Hugging Face hub); a file given by path is one split called "all"."""
    if dataset.lower() not in SPECS and Path(dataset).expanduser().is_file():
        return ("all",)
    if dataset.lower() not in SPECS:
        raise PriorError(f"unknown dataset {dataset!r} and no such file; known datasets: {', '.join(sorted(SPECS))}; "
                         f"or give a file's path as {option('dataset', 'FILE')} with its columns: "
                         f"{option('text_a', 'COL')} {option('text_b', 'COL')} {option('label', 'COL')}")
    spec = SPECS[dataset.lower()]
    info = next(i for i in list_datasets(data_dir=data_dir) if i.name == spec.name)
    found = tuple(s.split for s in info.splits if s.origin is not None and (hub or s.origin != "hub"))
    if not found:
        raise NotFoundError(f"no split of {info.name} has a local file here: " +
                            "; ".join(f"{s.split}: {s.location}" for s in info.splits) +
                            f". Pass {option('data_dir', 'DIR')} (or set PRIOR_DATA_DIR) to a directory holding a "
                            f"{spec.folders[0]}/ folder, give a file as {option('dataset', 'FILE')}, "
                            f"or download the splits from the Hugging Face hub with {option('hub')}")
    return found


def ingest(store: Store, options: BuildOptions, report: BuildReport, sources: dict[str, Source | None]) -> Ingested:
    """Read the splits (``sources``: `split_sources`), write new rows and new sentences, and
    add the "read" stage and each split to ``report``."""
    stage = StageReport("read")
    t0 = time.perf_counter()
    out = Ingested()
    have_sentences = store.sentence_keys()
    for split, source in sources.items():
        held = held_split(store, options, source, have_sentences) if source is not None else None
        if source is not None and held is not None:
            out.split_pairs[source.split] = _take_held(options, report, stage, source, held)
            continue
        data = read_split(options.dataset, split, data_dir=options.data_dir, limit=options.limit,
                          hub=options.hub or options.splits is not None, **options.read_kwargs())
        if not data.pairs and options.limit != 0:
            raise no_pairs(data)
        out.split_pairs[data.split] = _store_split(store, options, report, stage, data, out.texts, have_sentences)
    stage.seconds = time.perf_counter() - t0
    report.stages.append(stage)
    return out


def _take_held(options: BuildOptions, report: BuildReport, stage: StageReport, source: Source,
               held: tuple[list[Triple], dict[str, Any]]) -> list[Triple]:
    """A split the store holds: reported as read, every pair reused."""
    triples, meta = held
    report.dataset = options.name or source.dataset
    report.splits.append(SplitReport(split=source.split, location=source.location, pairs=len(triples),
                                     new_rows=0, skipped=dict(meta.get("skipped", {})),
                                     skip_examples=list(meta.get("skip_examples", [])),
                                     origin=str(meta.get("origin", "")), release_pairs=meta.get("release_pairs")))
    stage.items += len(triples)
    stage.reused += len(triples)
    stage.failed += sum(meta.get("skipped", {}).values())
    return triples


def _dataset_name(options: BuildOptions, data: SplitData) -> str:
    name = options.name or data.dataset
    if problem := name_problem(name):
        source = option("name") if options.name else data.location
        raise DataError(f"dataset name {name!r} (from {source}) {problem}; give another with {option('name')}")
    return name


def _store_split(store: Store, options: BuildOptions, report: BuildReport, stage: StageReport, data: SplitData,
                 texts: dict[str, str], have_sentences: set[str]) -> list[Triple]:
    """Write what the store lacks of a split read from its file; returns its (pair, a, b) keys."""
    name = _dataset_name(options, data)
    report.dataset = name
    triples = []
    for pair in data.pairs:
        ka, kb = K.sentence_key(pair.text_a), K.sentence_key(pair.text_b)
        texts.setdefault(ka, K.normalize_text(pair.text_a))
        texts.setdefault(kb, K.normalize_text(pair.text_b))
        triples.append((K.pair_key(ka, kb), ka, kb))
    reader = {"dataset": data.dataset, **options.read_kwargs()}
    have = stored_rows(store, name, data, reader, options.replace)
    new = [i for i, pair in enumerate(data.pairs) if pair.row not in have]
    # A split's sentences are committed before its pairs: pairs are never visible without the
    # sentences they reference, whenever a build is killed.
    if missing := sorted({k for _, a, b in triples for k in (a, b)} - have_sentences):
        store.write_sentences(missing, [texts[k] for k in missing])
        have_sentences.update(missing)
    split = SplitReport(split=data.split, location=data.location, pairs=len(data.pairs), new_rows=len(new),
                        skipped=data.skip_counts(),
                        skip_examples=[f"{s.file}:{s.row} [{s.field}] {s.reason}"
                                       for s in data.skipped[:MAX_SKIP_EXAMPLES]],
                        origin=data.origin,
                        release_pairs=release_pairs(data.dataset, data.split) if data.origin == "bundled" else None)
    if new:
        _write_pairs(store, options, name, data, triples, new, reader, split)
    report.splits.append(split)
    stage.items += len(data.pairs)
    stage.computed += len(new)
    stage.reused += len(data.pairs) - len(new)
    stage.failed += len(data.skipped)
    return triples


def _write_pairs(store: Store, options: BuildOptions, name: str, data: SplitData, triples: list[Triple],
                 new: list[int], reader: dict[str, Any], split: SplitReport) -> None:
    """Commit the split's ``new`` rows with what reads them again (the reading record, the
    recipe) and what they are (a bundled slice of how many pairs)."""
    pairs = [data.pairs[i] for i in new]
    data_dir = options.data_dir or (data_dir_from_env() if data.origin == "data_dir" else None)
    table = pa.table({
        "row": pa.array([p.row for p in pairs], pa.int64()),
        "pair_key": [triples[i][0] for i in new],
        "key_a": [triples[i][1] for i in new],
        "key_b": [triples[i][2] for i in new],
        "label": pa.array([p.label for p in pairs], pa.float64() if data.label_kind == "score" else pa.string()),
        "id": pa.array([p.id for p in pairs], pa.string()),
    })
    meta = {"location": data.location, "label_kind": data.label_kind, "labels": list(data.labels),
            "reader": reader, "limit": options.limit, "rows_read": len(data.pairs),
            "skipped": split.skipped, "skip_examples": split.skip_examples, "origin": data.origin,
            "recipe": options.source_recipe(data_dir).with_(split=data.split, limit=options.limit).to_dict()}
    if split.release_pairs is not None:
        meta["release_pairs"] = split.release_pairs
    store.write_pairs(name, data.split, table, source_sha256=data.source_sha256, meta=meta)


def no_pairs(data: SplitData) -> NoUsablePairsError:
    """A split that gave no usable pair: the real cause (its rows' problems, or no rows)."""
    if not data.skipped:
        return NoUsablePairsError(f"{data.dataset}/{data.split} has no rows (only a header, or nothing); give a "
                                  "file with at least one pair", counts={}, file=data.location)
    first, counts = data.skipped[0], data.skip_counts()
    causes = len(counts)
    columns = ", ".join(option(name) for name in ("text_a", "text_b", "label", "label_kind"))
    return NoUsablePairsError(f"none of the {len(data.skipped)} row(s) of {data.dataset}/{data.split} can be "
                              f"used, the first because of field {first.field!r}: {first.reason}"
                              + (f" ({causes} different causes)" if causes > 1 else "")
                              + f"; fix the file or its column options ({columns})",
                              counts=counts, file=first.file, row=first.row)


def held_split(store: Store, options: BuildOptions, source: Source, sentences: set[str]
               ) -> tuple[list[Triple], dict[str, Any]] | None:
    """The (pair, a, b) keys of a split the store already holds as this build would read it:
    the same file (checksum), the same reading options, every row the build's limit asks for
    (a full read, or a limit within the rows read before; all rows that read gave, none of
    their segments dropped) and every sentence those rows reference (``sentences``: the keys
    the store holds). None otherwise: then the file is read and checked as usual, and what is
    missing is written again."""
    name = options.name or source.dataset
    segs = store.split_segments(name, source.split)
    if not segs or options.replace:
        return None
    meta = segs[-1].meta
    reader = {"dataset": source.dataset, **options.read_kwargs()}
    if segs[-1].target["source_sha256"] != source.sha256 or meta.get("reader") != reader:
        return None
    limits = [s.meta.get("limit") for s in segs]
    read = max((n for n in limits if isinstance(n, int)), default=0)
    if None not in limits and (options.limit is None or options.limit > read):
        return None
    # what is committed, unchecked: a split that lacks rows is read again here (its repair), where
    # the checked read (`Store.split_rows`) would refuse it
    rows = store.pair_rows(name, source.split)
    widest = max(segs, key=lambda s: s.meta["limit"] if isinstance(s.meta.get("limit"), int) else math.inf)
    rows_read = widest.meta.get("rows_read")
    if not isinstance(rows_read, int) or rows.height < rows_read:  # a pairs segment was dropped
        return None
    if options.limit is not None:
        rows = rows.head(options.limit)
    key_a, key_b = rows["key_a"].to_list(), rows["key_b"].to_list()  # each column converted once
    if not set(key_a).union(key_b) <= sentences:
        return None  # sentences dropped (gc --drop-damaged): read the file again for their texts
    return list(zip(rows["pair_key"].to_list(), key_a, key_b)), meta


def stored_rows(store: Store, dataset: str, data: SplitData, reader: dict[str, Any], replace: bool) -> set[int]:
    """Rows of ``dataset``/``data.split`` the store already holds from this source, read this way.

    A split read before from a file with other content, or with other reading options (columns,
    label kind), is refused: its rows would be mixed with, or silently kept instead of, the new
    ones. ``replace`` makes the new source the split's content instead.
    """
    segs = store.split_segments(dataset, data.split)
    if not segs:
        return set()
    current = segs[-1]
    old_reader = current.meta.get("reader")
    sha = data.source_sha256
    changed = []
    if current.target["source_sha256"] != sha:
        changed.append(f"its source differs: the store's rows were read from "
                       f"{current.meta.get('location', '?')} (sha256 {current.target['source_sha256'][:12]}), "
                       f"this build reads {data.location} (sha256 {sha[:12]})")
    if old_reader is not None and old_reader != reader:
        diff = ", ".join(f"{k} {old_reader.get(k)!r} → {reader.get(k)!r}"
                         for k in sorted(set(old_reader) | set(reader)) if old_reader.get(k) != reader.get(k))
        changed.append(f"it was read with other options ({diff})")
    if changed and not replace:
        raise DataError(f"{dataset}/{data.split} in {store.location}: " + "; ".join(changed) + ". Build it under "
                        f"another name ({option('name', 'NAME')}), or replace the stored rows with {option('replace')}")
    if changed:
        return set()
    # the rows committed, unchecked: a split that lacks some gets exactly those written again
    return set(store.pair_rows(dataset, data.split)["row"].to_list())

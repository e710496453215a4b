"""The segment layer of the feature store: the file format, its reads and writes, and the records.

Everything that knows how a store lies on disk is here; the query modules (entry selection,
frames, lazy scans, export, missing-data reports) read through `SegmentStore`'s methods and the
readers below, and `prior.featurestore.store.Store` puts both together as the public store.

Layout below the store's root (a directory or an fsspec URL)::

    STORE.json                    format marker
    catalog/<segment>.json        committed segments (see catalog.py)
    segments/<segment>/           a segment's own files:
        pairs.parquet             kind "pairs":     one dataset split's rows (target: dataset, split)
        sentences.parquet         kind "sentences": sent_key, text
        parses.parquet            kind "parses":    one parse's records (target: parse id, fingerprint)
        index.parquet + arrays/   kind "feature":   keys, offsets and shapes; Zarr v3 flat arrays
        table.parquet + arrays/   kind "resource":  a content-keyed table (+ arrays): IDF, vocabularies

Per-sentence results are keyed by sentence key, per-pair results by pair key (keys.py).
A feature *entry* is ``name@version`` + resolved params + parse id (``keys.entry_key``).

Reads are checked (``checked.py``): a committed file is used only once it matches its catalog
record. Writes made under a lease (``lease.py``, ``open_store(..., lease=)``) claim their segment
before creating it and commit only while the lease is live, so ``gc`` never removes them.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from prior.errors import NotFoundError, PriorError
from prior.featurestore import keys as keymod
from prior.featurestore.catalog import MANIFEST, SEGMENTS, Segment, commit_segment, new_segment_id, read_catalog
from prior.featurestore.checked import damaged
from prior.featurestore.entries import EntryInfo, FeatureData, Resource
from prior.featurestore.errors import SegmentLostError, StoreError
from prior.featurestore.fs import StoreFS
from prior.featurestore.lease import check_live, claim
from prior.featurestore.names import check_name
from prior.featurestore.parse_columns import ANNOTATIONS, PARSE_COLUMNS
from prior.featurestore.recipe import Recipe, read_recorded, render
from prior.featurestore.ref import StoreRef
from prior.featurestore.segment_cache import PARSE_SEGMENTS
from prior.featurestore.segment_files import (
    held_annotations,
    indexed_items,
    key_items,
    parquet_writer,
    polars_frame,
    read_arrays,
    read_frames,
    read_parquet,
    read_parquet_where,
    source_of,
    write_parquet,
)
from prior.featurestore.tensors import flatten, write_flat
from prior.featurestore.tree import Misplaced
from prior.hints import option
from prior.layouts.ragged import Ragged

PAIR_KEY_COLUMNS = ("pair_key", "key_a", "key_b")  # a pairs table's key columns

FORMAT: dict[str, Any] = {"format": "prior-store", "version": 2}
#: the sentences a parses segment's build skipped, and why (`prior.featurestore.splits`)
SKIPPED = "skipped.parquet"


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:400]


def _reach_hint(location: str) -> str:
    """What to check when a store at a URL cannot be reached (nothing for a local directory)."""
    if "://" not in location or location.startswith("file://"):
        return ""
    return ("; check the URL, the endpoint and the credentials: fsspec storage options go in "
            f"{option('storage_option', 'KEY=VALUE')} or $PRIOR_STORAGE_OPTIONS (e.g. endpoint_url=…, key=…, "
            "secret=…, anon=true)")


#: the extra of `prior` that installs the fsspec backend of a URL scheme
BACKEND_EXTRAS = {"s3": "s3", "s3a": "s3"}


def _backend_missing(location: str, exc: BaseException) -> str | None:
    """The one line for a store URL whose fsspec backend is not installed (fsspec raises
    ImportError naming the package), else None."""
    if not isinstance(exc, ImportError) or "://" not in location:
        return None
    scheme = location.split("://", 1)[0].lower()
    extra = BACKEND_EXTRAS.get(scheme)
    install = f"pip install 'prior[{extra}]'" if extra else f"install the fsspec backend of {scheme}://"
    return f"the store at {location} needs the fsspec backend of {scheme}://, which is not installed: {install}"


class SegmentStore:
    """A store's segments at a directory or fsspec URL: its catalog and every kind of segment,
    written and read back. Cheap to open; reads the catalog lazily. `prior.featurestore.store.Store`
    adds the queries (entry selection, frames, scans) on top.

    Writers (``write_*``) each produce one segment and commit it; they may run in any process
    that can reach the store (Dask workers do). Readers see committed segments only.
    """

    def __init__(self, store: StoreRef | str | os.PathLike[str], *, create: bool = True,
                 lease: str | None = None) -> None:
        given = StoreRef.of(store)
        #: where the store is, with the fsspec options it was opened with (secrets included: a
        #: StoreRef never prints them): what a worker or another reader opens it again with
        self.ref = StoreRef(given.location, given.options())
        self.lease = lease  # writes claim their segments under this lease and commit only while it lives
        try:
            self.fs = StoreFS(self.ref)
            self.ref = self.ref.at(self.fs.url)
            self._open(create)
        except PriorError:
            raise
        except Exception as exc:  # noqa: BLE001 - a backend's error (permissions, credentials): one line
            if (missing := _backend_missing(str(given.location), exc)) is not None:
                raise StoreError(missing) from None
            if hasattr(self, "fs") and not self.fs.local:
                # fsspec keeps filesystem instances, with the credentials they found, for reuse:
                # a retry in this process (credentials set meanwhile) must start afresh
                type(self.fs.fs).clear_instance_cache()
            raise StoreError(f"cannot {'open or create' if create else 'open'} the store at {self.location} "
                             f"({_one_line(exc)}){_reach_hint(self.location)}") from None
        self._segments: list[Segment] | None = None

    def _open(self, create: bool) -> None:
        if not self.fs.exists("STORE.json"):
            started = self.fs.exists("catalog") or self.fs.exists(SEGMENTS)
            if not create:
                if started:
                    raise StoreError(f"{self.location} holds catalog/ or segments/ but no STORE.json: a first build "
                                     f"was interrupted; rerun `{render(Recipe(store=self.location))}` with that "
                                     "build's dataset to continue it")
                raise NotFoundError(f"no feature store at {self.location}; build one with `prior build "
                                    f"{option('dataset')}` (a name from `prior datasets`, or a file) "
                                    f"`{option('store', self.location)}`")
            self.fs.write_atomic("STORE.json", json.dumps(FORMAT).encode())
            self.fs.makedirs("catalog")
            self.fs.makedirs(SEGMENTS)
            return
        if not self.fs.is_file("STORE.json"):
            raise StoreError(Misplaced("STORE.json", "is a folder where the store's format file belongs",
                                       False).line(self.location))
        try:
            fmt = json.loads(self.fs.read_bytes("STORE.json"))
            known = fmt.get("format") == FORMAT["format"] and int(fmt.get("version", 0)) <= FORMAT["version"]
        except (ValueError, TypeError, AttributeError):
            raise StoreError(f"{self.location}/STORE.json is damaged; restore it as {json.dumps(FORMAT)}") from None
        if not known:
            raise StoreError(f"{self.location} holds an unknown store format {fmt}; upgrade prior")
        if int(fmt["version"]) < FORMAT["version"]:
            raise StoreError(f"{self.location} is a store of format version {fmt['version']}; convert it once, in "
                             f"place, with `prior store upgrade {option('store', self.location)}`")

    @property
    def location(self) -> str:
        """The store's directory or URL (``ref.location``)."""
        return str(self.ref.location)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"

    # ---------------------------------------------------------------- catalog
    def segments(self, kind: str | None = None, *, refresh: bool = False) -> list[Segment]:
        if self._segments is None or refresh:
            self._segments = read_catalog(self.fs)
        return [s for s in self._segments if kind is None or s.kind == kind]

    def refresh(self) -> None:
        self._segments = None

    def _write_segment(self, kind: str, target: dict[str, Any], rows: int, write: Callable[[str], Sequence[str]],
                       meta: dict[str, Any] | None = None) -> Segment:
        """Make a new segment: claim its id under the lease (if any), ``write(folder)`` its files
        (returning their names), commit. A folder removed before its commit (a forced gc) is
        written once more under a new id."""
        for attempt in (1, 2):
            sid = new_segment_id()
            ready = (lambda: check_live(self.fs, self.lease)) if self.lease else None  # type: ignore[arg-type]
            try:
                if self.lease:
                    claim(self.fs, self.lease, sid)
                required = write(f"{SEGMENTS}/{sid}")
                segment = commit_segment(self.fs, sid, kind, target, rows, meta, required=required,
                                         lease=self.lease or "", ready=ready)
            except SegmentLostError:
                if attempt == 2:
                    raise
                continue
            except PriorError:
                raise
            except Exception as exc:  # noqa: BLE001 - a backend's error (credentials expired, disk full): one line
                raise StoreError(f"cannot write a {kind} segment to the store at {self.location} "
                                 f"({_one_line(exc)}); what was committed before is kept, rerun to continue"
                                 f"{_reach_hint(self.location)}") from None
            if self._segments is not None:
                self._segments.append(segment)
            return segment
        raise AssertionError("unreachable")

    def segment_keys(self, segments: Iterable[Segment]) -> set[str]:
        """The keys stored in ``segments`` (sentence, parse or feature segments)."""
        column = {"sentences": ("sentences.parquet", "sent_key"), "parses": ("parses.parquet", "sent_key"),
                  "feature": ("index.parquet", "key")}
        keys: set[str] = set()
        for s in segments:
            inner, col = column[s.kind]
            keys.update(read_parquet(self.fs, s, inner, [col]).column(col).to_pylist())
        return keys

    # ---------------------------------------------------------------- pairs
    def write_pairs(self, dataset: str, split: str, table: pa.Table, *, source_sha256: str,
                    meta: dict[str, Any] | None = None) -> Segment | None:
        """Record a dataset split's rows (columns: row, pair_key, key_a, key_b, label, id)."""
        if table.num_rows == 0:
            return None
        required = {"row", "pair_key", "key_a", "key_b", "label"}
        check_name("dataset", dataset)
        check_name("split", split)
        if missing := required - set(table.column_names):
            raise StoreError(f"pairs table for {dataset}/{split} lacks columns {sorted(missing)}")
        meta = dict(meta or {})
        meta[MANIFEST] = self._manifest(dataset, split, source_sha256, meta.get("reader"), table.column("row"))
        return self._write_segment("pairs", {"dataset": dataset, "split": split, "source_sha256": source_sha256},
                                   table.num_rows, parquet_writer(self.fs, "pairs.parquet", table), meta)

    def _manifest(self, dataset: str, split: str, source_sha256: str, reader: Any, rows: Any) -> dict[str, Any]:
        """The split's manifest after a commit of ``rows`` read from this source
        (`prior.featurestore.splits`): the current segments it joins (none for a new source)
        and the distinct rows they hold with it. Read from a fresh catalog: what another
        process committed since this one last looked counts."""
        self.refresh()
        current = self.split_segments(dataset, split)
        if current and source_of(current[-1]) != keymod.canonical_json([source_sha256, reader]):
            current = []
        held = [read_parquet(self.fs, s, "pairs.parquet", ["row"]).column("row") for s in current]
        chunks = [c.cast(pa.int64()) for part in [*held, rows] for c in part.chunks]
        distinct = pa.chunked_array(chunks, type=pa.int64()).unique()
        return {"rows": len(distinct), "segments": [s.id for s in current]}

    def datasets(self) -> list[tuple[str, str]]:
        return sorted({(s.target["dataset"], s.target["split"]) for s in self.segments("pairs")})

    def split_segments(self, dataset: str, split: str) -> list[Segment]:
        """The pairs segments a split reads: those of its current source (the file's content
        and the reading options of its latest build; `prior build --replace` starts a new one)."""
        segs = [s for s in self.segments("pairs") if s.target["dataset"] == dataset and s.target["split"] == split]
        if not segs:
            return []
        current = source_of(segs[-1])
        return [s for s in segs if source_of(s) == current]

    def pair_rows(self, dataset: str, split: str, *, numbers: bool = False,
                  columns: Sequence[str] | None = None) -> pl.DataFrame:
        """The split's rows (row, pair_key, key_a, key_b, label, id), current source only;
        ``numbers``: the three keys as numbers (`prior.featurestore.key_numbers`); ``columns``:
        only these (``row`` among them: the rows' order), the others never read."""
        segs = self.split_segments(dataset, split)
        if not segs:
            raise NotFoundError(self.missing_split(dataset, split))
        if columns is not None and "row" not in columns:
            raise ValueError(f"pair_rows reads 'row' with any columns, got {list(columns)}")
        frames = read_frames(self.fs, segs, "pairs.parquet", columns,
                             numbers=[c for c in PAIR_KEY_COLUMNS if columns is None or c in columns] if numbers else ())
        df = pl.concat(frames, how="vertical_relaxed")
        if df.height > 1 and not bool((df["row"].diff().drop_nulls() > 0).all()):  # else sorted, distinct
            df = df.filter(pl.col("row").is_first_distinct()).sort("row")
        return df

    def pair_rows_of(self, segment: Segment) -> pl.DataFrame:
        """One pairs segment's rows."""
        return polars_frame(read_parquet(self.fs, segment, "pairs.parquet"))

    def missing_split(self, dataset: str, split: str) -> str:
        """Why ``dataset/split`` has no pairs, and the build line that adds it, replayed from
        what the store recorded of the dataset's other splits (a file's path, ``--name``,
        columns: a file is read again as the split asked for), or the datasets present."""
        known = ", ".join(f"{d}/{s}" for d, s in self.datasets()) or "none"
        message = f"{self.location} has no pairs of {dataset}/{split} (present: {known})"
        others = [s for s in self.segments("pairs") if s.target["dataset"] == dataset]
        recorded = read_recorded(others[-1].meta) if others else None
        if recorded is None or recorded.dataset is None:
            return message + (f"; build it first with `prior build` and {option('dataset')}, its name or file "
                              f"(`{option('name', dataset)}`)")
        return message + "; add it with: " + render(recorded.source().with_(split=split, store=self.location))

    # ---------------------------------------------------------------- sentences and parses
    def write_sentences(self, keys: Sequence[str], texts: Sequence[str]) -> Segment | None:
        if not keys:
            return None
        table = pa.table({"sent_key": pa.array(keys, pa.string()), "text": pa.array(texts, pa.string())})
        return self._write_segment("sentences", {}, len(keys), parquet_writer(self.fs, "sentences.parquet", table))

    def sentences(self) -> pl.DataFrame:
        frames = [polars_frame(read_parquet(self.fs, s, "sentences.parquet")) for s in self.segments("sentences")]
        if not frames:
            return pl.DataFrame(schema={"sent_key": pl.String, "text": pl.String})
        return pl.concat(frames).unique(subset=["sent_key"], keep="first", maintain_order=True)

    def sentence_keys(self) -> set[str]:
        return self.segment_keys(self.segments("sentences"))

    def write_parses(self, parse: str, fingerprint: Mapping[str, Any], keys: Sequence[str],
                     records: Sequence[Mapping[str, Sequence[Any]]], *, spec: str,
                     skipped: Mapping[str, str] | None = None, meta: Mapping[str, Any] | None = None,
                     annotations: Iterable[str] = ANNOTATIONS) -> Segment | None:
        """One segment of parse records; ``spec`` is the parser's spec (its ``parser`` option's
        value: recorded for build hints, not part of the parse id). ``skipped``: sentences this
        build could not parse → why (over the word limit, the parser failed), recorded in the same
        commit so that reads leave their pairs out (`prior.featurestore.splits`). ``meta``: the
        writer's own record (a build task's token). ``annotations``: those of `ANNOTATIONS` the
        records hold; the others are written as nulls and the segment's target lists the held
        ones, so that no read that needs them is served this segment (`parse_segments`)."""
        skipped = dict(skipped or {})
        if not keys and not skipped:
            return None
        if len(keys) != len(records):
            raise StoreError(f"{len(keys)} keys for {len(records)} parse records")
        held = set(annotations)
        if unknown := held - set(ANNOTATIONS):
            raise StoreError(f"unknown parse annotation(s) {sorted(unknown)}; known: {', '.join(ANNOTATIONS)}")
        columns: dict[str, Any] = {"sent_key": pa.array(keys, pa.string())}
        for col in PARSE_COLUMNS:
            typ = pa.list_(pa.int32()) if col == "heads" else pa.list_(pa.string())
            absent = col in ANNOTATIONS and col not in held
            columns[col] = pa.array([None if absent else list(r[col]) for r in records], typ)
        tables = {"parses.parquet": pa.table(columns)}
        if skipped:
            tables[SKIPPED] = pa.table({"sent_key": pa.array(list(skipped), pa.string()),
                                        "reason": pa.array(list(skipped.values()), pa.string())})

        def write(folder: str) -> list[str]:
            for name, table in tables.items():
                write_parquet(self.fs, f"{folder}/{name}", table)
            return list(tables)

        target = {"parse": parse, "fingerprint": dict(fingerprint), "spec": spec}
        if held != set(ANNOTATIONS):  # a complete record's target stays as it always was
            target["annotations"] = sorted(held)
        return self._write_segment("parses", target, len(keys), write, dict(meta or {}))

    def parse_ids(self) -> dict[str, dict[str, Any]]:
        """Parse id → parser fingerprint, for every parse in the store."""
        return {s.target["parse"]: s.target["fingerprint"] for s in self.segments("parses")}

    def parse_segments(self, parse: str, needs: Iterable[str] = ()) -> list[Segment]:
        """The segments of ``parse`` that hold every annotation of ``needs`` (of `ANNOTATIONS`),
        those holding every annotation first (then in commit order): a read that keeps each
        sentence's first record gets its most complete one."""
        wanted = frozenset(needs)
        segs = [s for s in self.segments("parses") if s.target["parse"] == parse and wanted <= held_annotations(s)]
        return sorted(segs, key=lambda s: held_annotations(s) != frozenset(ANNOTATIONS))

    def parsed_keys(self, parse: str, needs: Iterable[str] = ()) -> set[str]:
        """The sentences ``parse`` holds with every annotation of ``needs``."""
        return self.segment_keys(self.parse_segments(parse, needs))

    def skipped_sentences(self, parse: str) -> dict[str, str]:
        """Sentences the builds of ``parse`` skipped and no later build parsed → why (the
        reason recorded first). Reads the skip records, then only the parses segments that are
        newer than the oldest of them (a sentence is parsed after it was skipped, if ever)."""
        segs = [s for s in self.segments("parses") if s.target["parse"] == parse]
        holding = [s for s in segs if SKIPPED in s.files]
        if not holding:
            return {}
        skipped: dict[str, str] = {}
        for s in holding:
            table = read_parquet(self.fs, s, SKIPPED)
            for key, reason in zip(table.column("sent_key").to_pylist(), table.column("reason").to_pylist()):
                skipped.setdefault(key, reason)
        later = [s for s in segs if s.id > holding[0].id and s.rows]
        if later:
            wanted = pl.Series(list(skipped), dtype=pl.String)
            for s in later:
                found = read_parquet_where(self.fs, s, "parses.parquet", [], "sent_key", wanted)["sent_key"]
                for key in found.to_list():
                    skipped.pop(key, None)
        return skipped

    def parses(self, sentence_keys: Iterable[str] | None = None, parse: str | None = None,
               columns: Sequence[str] | None = None, *, cache: bool = False,
               needs: Iterable[str] = ()) -> pl.DataFrame:
        """Parse records (sent_key + list columns), of ``parse`` or the most recent parse;
        ``columns`` (of PARSE_COLUMNS) reads only those beside sent_key. ``cache``: keep the
        segments read in this process's bounded cache and reuse them (`segment_cache`; build
        workers do, as every feature task reads every parse segment). Each sentence's most complete
        record is returned; an annotation its builds did not make is null (`ANNOTATIONS`).
        ``needs``: annotations the caller reads: a sentence parsed only without one of them is
        left out (a build's feature reads with what it reads, and never gets a null)."""
        segs = self.segments("parses")
        if not segs:
            raise NotFoundError(f"{self.location} holds no parses yet; build a dataset into it with "
                                f"`prior build` and {option('dataset')} (a name from `prior datasets`, or a file)")
        if columns is not None and (unknown := set(columns) - set(PARSE_COLUMNS)):
            raise StoreError(f"unknown parse column(s) {sorted(unknown)}; known: {', '.join(PARSE_COLUMNS)}")
        wanted = None if columns is None else ["sent_key", *columns]
        parse = parse or segs[-1].target["parse"]
        keys = None if sentence_keys is None else pl.Series(list(sentence_keys), dtype=pl.String)
        frames = []
        for s in self.parse_segments(parse, needs):

            def load(s: Segment = s) -> pl.DataFrame:
                return polars_frame(read_parquet(self.fs, s, "parses.parquet", wanted))

            frame = PARSE_SEGMENTS.get((self.location, s.id, tuple(wanted or ())), load) if cache else load()
            # filtered per segment: a worker reading one partition's sentences never holds the
            # whole store's parses at once
            frames.append(frame if keys is None else frame.filter(pl.col("sent_key").is_in(keys)))
        if not frames and parse in self.parse_ids():
            raise NotFoundError(f"{self.location}: parse {parse} holds no sentence annotated with "
                                f"{', '.join(sorted(needs))} (its builds' features did not read them); "
                                "a build of a feature that reads them annotates its sentences again")
        if not frames:
            raise NotFoundError(f"{self.location} has no parse {parse}; present: {sorted(self.parse_ids())}")
        return pl.concat(frames).unique(subset=["sent_key"], keep="first", maintain_order=True)

    # ---------------------------------------------------------------- features
    def write_feature(self, entry: EntryInfo, keys: Sequence[str], items: Sequence[Mapping[str, np.ndarray]],
                      *, meta: Mapping[str, Any] | None = None) -> Segment | None:
        """One segment of an entry: ``items[i]`` maps every component to key i's array;
        ``meta``: the writer's own record (a build task's token)."""
        if not keys:
            return None
        if len(keys) != len(items):
            raise StoreError(f"{entry.spec}: {len(keys)} keys for {len(items)} items")
        columns: dict[str, Any] = {"key": pa.array(keys, pa.string())}
        flats = {}
        for comp in entry.components:
            check_name("component", comp)
            try:
                arrays = [np.asarray(item[comp]) for item in items]
            except KeyError:
                raise StoreError(f"{entry.spec}: an item lacks component {comp!r}") from None
            flats[comp], index_cols = flatten(comp, arrays)
            columns.update({k: pa.array(v) for k, v in index_cols.items()})

        def write(folder: str) -> list[str]:
            write_flat(self.fs, f"{folder}/arrays", flats)
            write_parquet(self.fs, f"{folder}/index.parquet", pa.table(columns))
            return ["index.parquet", "arrays/zarr.json"]

        return self._write_segment("feature", entry.target(), len(keys), write,
                                   {**(meta or {}), "dtypes": {c: str(f.dtype) for c, f in flats.items()}})

    def entries(self, name: str | None = None) -> list[EntryInfo]:
        """Entries present, oldest first (by their first segment)."""
        seen: dict[str, EntryInfo] = {}
        for s in self.segments("feature"):
            if name is None or s.target["name"] == name:
                seen.setdefault(s.target["entry"], EntryInfo.from_target(s.target))
        return list(seen.values())

    def existing_keys(self, entry: EntryInfo | str) -> set[str]:
        """The keys an entry's segments hold, as a set (`entry_keys`)."""
        return set(self.entry_keys(entry).to_list())

    def entry_keys(self, entry: EntryInfo | str) -> pl.Series:
        """The keys an entry's segments hold, as one string Series (duplicates kept)."""
        return self.entry_items(entry)[1]["key"]

    def entry_segments(self, entry: EntryInfo | str) -> list[Segment]:
        """An entry's feature segments, in catalog order."""
        key = entry if isinstance(entry, str) else entry.key
        return [s for s in self.segments("feature") if s.target["entry"] == key]

    def entry_items(self, entry: EntryInfo | str) -> tuple[list[Segment], pl.DataFrame]:
        """An entry's segments, and every key they hold with where it lies (`key_items`: key,
        seg, item; duplicates kept), from the key columns alone."""
        segs = self.entry_segments(entry)
        return segs, key_items(self.fs, segs, "index.parquet", "key")

    def load_feature(self, entry: EntryInfo | str) -> FeatureData:
        """All committed items of an entry, in memory (a few hundred bytes per item)."""
        key = entry if isinstance(entry, str) else entry.key
        segs = self.entry_segments(key)
        if not segs:
            raise NotFoundError(f"{self.location} has no feature entry {key}")
        info = EntryInfo.from_target(segs[0].target)
        parts_keys = []
        parts: dict[str, list[Ragged]] = {c: [] for c in info.components}
        for s in segs:
            idx = read_parquet(self.fs, s, "index.parquet")
            arrays = read_arrays(self.fs, s, info.components)
            parts_keys.append(np.asarray(idx.column("key").to_pylist(), dtype=object))
            for c in info.components:
                parts[c].append(indexed_items(idx, arrays, c))
        all_keys = np.concatenate(parts_keys)
        index: dict[str, int] = {}
        for i, k in enumerate(all_keys):
            index.setdefault(k, i)
        return FeatureData(entry=info, keys=all_keys, index=index,
                           components={c: Ragged.concat(p) for c, p in parts.items()})

    # ---------------------------------------------------------------- resources
    def write_resource(self, kind: str, table: pa.Table, *, arrays: Mapping[str, np.ndarray] | None = None,
                       meta: Mapping[str, Any] | None = None) -> str:
        """Store a content-keyed resource (an IDF table, a vocabulary + vectors); idempotent."""
        arrays = dict(arrays or {})
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        parts = [kind.encode(), sink.getvalue(), keymod.canonical_json(dict(meta or {})).encode()]
        for name in sorted(arrays):
            a = np.ascontiguousarray(arrays[name])
            parts += [name.encode(), str(a.dtype).encode(), str(a.shape).encode(), a.tobytes()]
        key = keymod.digest(b"\x00".join(parts))
        if any(s.target["key"] == key for s in self.segments("resource")):
            return key
        shapes = {check_name("array", name): list(np.shape(a)) for name, a in arrays.items()}

        def write(folder: str) -> list[str]:
            write_parquet(self.fs, f"{folder}/table.parquet", table)
            if not arrays:
                return ["table.parquet"]
            write_flat(self.fs, f"{folder}/arrays", {n: np.ascontiguousarray(a).ravel() for n, a in arrays.items()})
            return ["table.parquet", "arrays/zarr.json"]

        self._write_segment("resource", {"key": key, "kind": kind, "meta": dict(meta or {}), "shapes": shapes},
                            table.num_rows, write)
        return key

    def find_resources(self, kind: str, **meta: Any) -> list[str]:
        return [s.target["key"] for s in self.segments("resource")
                if s.target["kind"] == kind and all(s.target["meta"].get(k) == v for k, v in meta.items())]

    def read_resource(self, key: str) -> Resource:
        for s in self.segments("resource"):
            if s.target["key"] == key:
                table = read_parquet(self.fs, s, "table.parquet")
                shapes = s.target.get("shapes", {})
                flats = read_arrays(self.fs, s, list(shapes)) if shapes else {}
                try:
                    arrays = {n: flats[n].reshape(shapes[n]) for n in shapes}
                except (ValueError, TypeError) as exc:
                    raise damaged(s, "arrays/", f"does not have the recorded shapes ({exc})") from None
                return Resource(kind=s.target["kind"], key=key, table=table, arrays=arrays, meta=s.target["meta"])
        raise NotFoundError(f"{self.location} has no resource {key}")

    def size_bytes(self) -> int:
        return sum(f["size"] for s in self.segments() for f in s.files.values())


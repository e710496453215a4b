"""A lazy Polars view of a store: ``Store.scan`` returns a `pl.LazyFrame` with the columns and
rows of ``Store.frame`` for the same arguments, that reads at ``collect()`` only what the query
needs.

How (a Polars IO source, ``polars.io.plugins.register_io_source``): Polars hands the source the
columns a query uses and its filter; the source reads the store in stages, cheapest first, and
applies each part of the filter (each term of a top-level ``&``) as soon as the columns it names
are at hand, so later stages read only for the rows left:

1. the split's pair rows (``row, pair_key, key_a, key_b, label, id``), read when ``scan`` is
   called: selecting the entry needs them (`prior.featurestore.selection`), so a bad feature, dataset,
   split or parameter fails at ``scan``, not at ``collect``;
2. ``text_a``/``text_b``: the sentence segments holding the rows' sentences;
3. parse columns (``words_a`` …): the parse segments holding the rows' sentences, only the
   parse columns asked for;
4. feature columns: per entry, only the segments whose index holds a row's key, only the
   components asked for (a view's combined column, such as ``dep``, needs all of its entries).

A Parquet table (sentences, parses, a feature index) is read for the keys wanted: its key column
(``sent_key``, ``key``) is decoded, its other asked-for columns only for the matching rows; a
segment holding none of them is skipped, and no Zarr array of it is read. Of a feature array
only the pieces holding a matched item are decompressed, and only those items' values kept
(`prior.featurestore.tensors.read_flat_ranges`). The first read of a file in a process reads
it whole to check it against its catalog record (`prior.featurestore.checked`).
``head(n)`` stops after ``n`` rows once every filter term has been applied.

Choices: the LazyFrame reads the segments committed when ``scan`` was called (a snapshot: a
later build is not seen, a `gc --drop-damaged` in between makes its reads fail with the store's
repair message). A collected query is one DataFrame in memory, as ``Store.frame``; no
cross-call cache. Values equal ``Store.frame``'s: the first committed copy of a key is read,
rows are ordered by ``row``, matrices are lists of rows (`prior.featurestore.frame`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from prior.errors import NotFoundError
from prior.featurestore.errors import StoreError
from prior.featurestore.frame import view_entries
from prior.featurestore.missing import check_held
from prior.featurestore.parse_columns import PARSE_COLUMNS
from prior.featurestore.segment_files import read_arrays, read_items, read_parquet, read_parquet_where
from prior.featurestore.selection import Coverage, Request
from prior.featurestore.splits import SplitRows, leave_out_skipped
from prior.featurestore.tensors import nested_column, numpy_column
from prior.hints import option
from prior.layouts.kinds import SentenceVector, WordIds
from prior.layouts.ragged import Ragged
from prior.layouts.views import View, column_name, view_of

if TYPE_CHECKING:
    from prior.featurestore.catalog import Segment
    from prior.featurestore.entries import EntryInfo
    from prior.featurestore.segments import SegmentStore

TEXT_COLUMNS = ("text_a", "text_b")
_PARSE_TYPES: dict[str, pl.DataType] = {c: pl.List(pl.Int32 if c == "heads" else pl.String) for c in PARSE_COLUMNS}


def conjuncts(predicate: pl.Expr) -> list[pl.Expr]:
    """The terms of a top-level ``a & b & …`` (the form Polars gives chained ``filter`` calls),
    else the predicate itself. Filtering by each term in turn keeps the rows the whole keeps."""
    parts = predicate.meta.pop()
    if len(parts) == 2 and (parts[1] & parts[0]).meta.eq(predicate):
        return conjuncts(parts[1]) + conjuncts(parts[0])
    return [predicate]


def _apply(df: pl.DataFrame, pending: list[pl.Expr]) -> tuple[pl.DataFrame, list[pl.Expr]]:
    """``df`` filtered by every pending term whose columns it has; the terms still pending."""
    ready = [p for p in pending if set(p.meta.root_names()) <= set(df.columns)]
    if ready:
        df = df.filter(*ready)
    return df, [p for p in pending if not any(p is r for r in ready)]


def _polars_dtype(dtype: np.dtype) -> pl.DataType:
    return pl.Series(np.zeros(0, dtype=dtype)).dtype


def _first_copies(store: SegmentStore, segments: Sequence[Segment], inner: str, keys: pl.Series,
                  columns: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``sent_key`` and ``columns`` (name → type) of the rows of ``keys`` in the Parquet tables
    ``inner`` of ``segments``: the first copy of a key in catalog order, each file read for the
    keys still missing (`read_parquet_where`: its other columns are decoded for those rows only)."""
    remaining = keys.unique()
    frames = []
    for seg in segments:
        if remaining.is_empty():
            break
        frame = read_parquet_where(store.fs, seg, inner, list(columns), "sent_key", remaining)
        if frame.is_empty():
            continue
        frame = frame.unique(subset=["sent_key"], keep="first", maintain_order=True)
        frames.append(frame.cast(dict(columns)))  # type: ignore[arg-type]
        remaining = remaining.filter(~remaining.is_in(frame["sent_key"].implode()))
    if not frames:
        return pl.DataFrame(schema={"sent_key": pl.String(), **columns})
    return pl.concat(frames)


def _feature_items(store: SegmentStore, info: EntryInfo, segments: Sequence[Segment], keys: pl.Series,
                   components: Sequence[str]) -> tuple[list[str], dict[str, Ragged]]:
    """(the keys found, component → their `Ragged` items, in that order) for ``keys`` of one
    entry: the first copy of each key in catalog order, read from the segments whose index holds
    it (a segment without any is skipped after its index is read for them; its arrays are never
    read), only those items' values kept (`read_items`)."""
    remaining = keys.unique()
    found: list[str] = []
    parts: dict[str, list[Ragged]] = {c: [] for c in components}
    for seg in segments:
        if remaining.is_empty():
            break
        index_cols = [f"{c}.{part}" for c in components for part in ("offset", "rows", "cols")]
        hits = (read_parquet_where(store.fs, seg, "index.parquet", index_cols, "key", remaining)
                .unique(subset=["key"], keep="first", maintain_order=True))
        if hits.is_empty():
            continue
        items = read_items(store.fs, seg, hits.to_arrow(), components, np.arange(hits.height, dtype=np.int64))
        for c in components:
            parts[c].append(items[c])
        found += hits["key"].to_list()
        remaining = remaining.filter(~remaining.is_in(hits["key"].implode()))
    if not remaining.is_empty():  # selection checked coverage: only a concurrent gc gets here
        raise StoreError(f"entry {info.spec} {info.key[:12]} lost {remaining.len()} items while being read; "
                         "scan again")
    return found, {c: Ragged.concat(p) for c, p in parts.items()}


class SplitScan:
    """The IO source behind ``Store.scan``: the entries and segments of one read, chosen when it
    is made, and :meth:`read`, which Polars calls with the query's columns and filter."""

    def __init__(self, store: SegmentStore, feature: str, *, dataset: str, split: str,
                 request: Request | None = None) -> None:
        self.store, self.feature, self.dataset, self.split = store, feature, dataset, split
        self.view: View = view_of(feature)
        coverage = Coverage(store)
        self.entries = view_entries(store, feature, dataset=dataset, split=split, request=request,
                                    coverage=coverage)
        parses = store.segments("parses")
        if not parses:
            raise NotFoundError(f"{store.location} holds no parses yet; build a dataset into it with "
                                f"`prior build` and {option('dataset')} (a name from `prior datasets`, or a file)")
        self.parse = self.entries[0].parse or parses[-1].target["parse"]
        #: the split's rows as the read serves them: its pairs less those the parse's build skipped
        kept, skipped = leave_out_skipped(coverage.rows(dataset, split), coverage.skipped(self.parse))
        self.split_rows = SplitRows(dataset, split, kept, self.parse, skipped)
        self.rows = self.split_rows.rows
        self.parse_segments = store.parse_segments(self.parse)  # complete records first
        if not self.parse_segments:
            raise NotFoundError(f"{store.location} has no parse {self.parse}; present: {sorted(store.parse_ids())}")
        self.sentence_segments = store.segments("sentences")
        features = store.segments("feature")
        self.feature_segments = {e.key: [s for s in features if s.target["entry"] == e.key] for e in self.entries}
        #: gathered column → (entry, component, key column it is looked up by)
        self.gathered: dict[str, tuple[EntryInfo, str, str]] = {}
        for info in self.entries:
            sides = {"": "pair_key"} if info.scope == "pair" else {"_a": "key_a", "_b": "key_b"}
            for suffix, key_col in sides.items():
                for comp in info.components:
                    self.gathered[column_name(info.name, comp) + suffix] = (info, comp, key_col)
        self.combined = (self.view.column or feature) if self.view.combine is not None else None
        self.schema = self._schema()

    # ------------------------------------------------------------------ schema
    def _schema(self) -> pl.Schema:
        columns: dict[str, pl.DataType] = dict(self.rows.schema)
        columns.update({c: pl.String() for c in TEXT_COLUMNS})
        for side in ("a", "b"):
            columns.update({f"{c}_{side}": _PARSE_TYPES[c] for c in PARSE_COLUMNS})
        dtypes: dict[str, np.dtype] = {}
        types: dict[tuple[str, str], tuple[np.dtype, bool]] = {}
        for name, (info, comp, _) in self.gathered.items():
            if (info.key, comp) not in types:
                types[info.key, comp] = self._component_type(info, comp)
            dtype, matrix = types[info.key, comp]
            dtypes[name] = dtype
            inner = _polars_dtype(dtype)
            columns[name] = pl.List(pl.List(inner) if matrix else inner)
        if self.combined is not None:
            assert self.view.combine is not None
            empty = {n: Ragged.from_arrays([], d) for n, d in dtypes.items()}
            inner = _polars_dtype(self.view.combine(empty, dict(self.view.options)).values.dtype)
            vector = isinstance(self.view.layout, SentenceVector | WordIds)
            columns[self.combined] = pl.List(inner if vector else pl.List(inner))
        return pl.Schema(columns)

    def _component_type(self, info: EntryInfo, comp: str) -> tuple[np.dtype, bool]:
        """(dtype, whether items are matrices) of a component, from the entry's first segment:
        the dtype its record lists (else its array), matrix where the index gives columns."""
        first = self.feature_segments[info.key][0]
        recorded = first.meta.get("dtypes", {}).get(comp)
        dtype = np.dtype(recorded) if recorded else read_arrays(self.store.fs, first, [comp])[comp].dtype
        cols = numpy_column(read_parquet(self.store.fs, first, "index.parquet", [f"{comp}.cols"]), f"{comp}.cols")
        return dtype, bool((cols >= 0).any())

    def lazy(self) -> pl.LazyFrame:
        """A LazyFrame that reads through :meth:`read` (``explain()`` names the entries)."""
        from polars.io.plugins import register_io_source

        detail = (f"{self.feature} of {self.dataset}/{self.split}: entries "
                  + ", ".join(f"{e.spec} {e.key[:12]}" for e in self.entries) + f"; {self.store.location}")
        return register_io_source(self.read, schema=self.schema, validate_schema=True,
                                  explain_name="prior store", explain_detail=detail)

    # ------------------------------------------------------------------ reading
    def read(self, with_columns: list[str] | None, predicate: pl.Expr | None, n_rows: int | None,
             batch_size: int | None) -> Iterator[pl.DataFrame]:
        """The query's rows and columns, in stages (module docstring); batches of ``batch_size``."""
        wanted = list(with_columns) if with_columns is not None else list(self.schema)
        pending = conjuncts(predicate) if predicate is not None else []
        need = set(wanted) | {c for p in pending for c in p.meta.root_names()}

        def settle(frame: pl.DataFrame) -> tuple[pl.DataFrame, list[pl.Expr]]:
            frame, left = _apply(frame, pending)
            if not left and n_rows is not None:
                frame = frame.head(n_rows)
            return frame, left

        df, pending = settle(self.rows)
        if need & set(TEXT_COLUMNS):
            df, pending = settle(self._with_texts(df, need))
        if any(f"{c}_{side}" in need for c in PARSE_COLUMNS for side in "ab"):
            df, pending = settle(self._with_parses(df, need))
        if need & set(self.gathered) or (self.combined is not None and self.combined in need):
            df, pending = settle(self._with_features(df, need))
        if pending:  # every column is present by now
            raise StoreError(f"filter terms {pending} name columns this scan does not have")
        df = df.select(wanted)
        step = batch_size or max(df.height, 1)
        for start in range(0, max(df.height, 1), step):
            yield df.slice(start, step)

    def _with_texts(self, df: pl.DataFrame, need: set[str]) -> pl.DataFrame:
        sides = [s for s in "ab" if f"text_{s}" in need]
        keys = pl.concat([df[f"key_{s}"] for s in sides])
        texts = _first_copies(self.store, self.sentence_segments, "sentences.parquet", keys, {"text": pl.String()})
        check_held(self.store, self.dataset, self.split, keys, texts["sent_key"], entries=self.entries)
        for s in sides:
            df = df.join(texts.rename({"sent_key": f"key_{s}", "text": f"text_{s}"}), on=f"key_{s}",
                         how="left", maintain_order="left")
        return df

    def _with_parses(self, df: pl.DataFrame, need: set[str]) -> pl.DataFrame:
        columns = [c for c in PARSE_COLUMNS if f"{c}_a" in need or f"{c}_b" in need]
        sides = [s for s in "ab" if any(f"{c}_{s}" in need for c in columns)]
        keys = pl.concat([df[f"key_{s}"] for s in sides])
        parses = _first_copies(self.store, self.parse_segments, "parses.parquet", keys,
                               {c: _PARSE_TYPES[c] for c in columns})
        check_held(self.store, self.dataset, self.split, keys, parses["sent_key"], parse=self.parse,
                   entries=self.entries)
        for s in sides:
            df = df.join(parses.rename({c: f"{c}_{s}" for c in columns} | {"sent_key": f"key_{s}"}),
                         on=f"key_{s}", how="left", maintain_order="left")
        return df

    def _with_features(self, df: pl.DataFrame, need: set[str]) -> pl.DataFrame:
        names = list(self.gathered) if self.combined in need else [n for n in self.gathered if n in need]
        values: dict[str, Ragged] = {}
        for info in self.entries:
            mine = [n for n in names if self.gathered[n][0].key == info.key]
            if not mine:
                continue
            components = list(dict.fromkeys(self.gathered[n][1] for n in mine))
            key_cols = list(dict.fromkeys(self.gathered[n][2] for n in mine))
            keys = pl.concat([df[k] for k in key_cols])
            found, items = _feature_items(self.store, info, self.feature_segments[info.key], keys, components)
            position = pl.DataFrame({"key": found, "i": np.arange(len(found), dtype=np.int64)},
                                    schema={"key": pl.String(), "i": pl.Int64()})
            for n in mine:
                _, comp, key_col = self.gathered[n]
                idx = (df.select(pl.col(key_col).alias("key"))
                       .join(position, on="key", how="left", maintain_order="left")["i"].to_numpy())
                values[n] = items[comp].take(idx)
        if self.combined is not None and self.combined in need:
            assert self.view.combine is not None
            values[self.combined] = self.view.combine(values, dict(self.view.options))
        everything = np.arange(df.height)
        return df.with_columns([
            pl.Series(n, nested_column(v, everything)) if df.height else pl.Series(n, [], dtype=self.schema[n])
            for n, v in values.items()])


def scan_frame(store: SegmentStore, feature: str, *, dataset: str, split: str,
               request: Request | None = None) -> pl.LazyFrame:
    """The LazyFrame of ``Store.scan`` (module docstring)."""
    return SplitScan(store, feature, dataset=dataset, split=split, request=request).lazy()

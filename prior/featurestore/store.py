"""The feature store: open it, write segments, read pairs, parses, features and resources, and
query it as Polars frames.

Two layers: `prior.featurestore.segments` is the file format (segments, their reads and writes,
checks, the catalog, entry records; with `segment_files` and `entries` below it); the query modules (`selection`, `frame`, `scan`, `export`,
`missing`) work on its `SegmentStore`. `Store` is both together: a `SegmentStore` with the query
methods (``find_entry``, ``select``, ``pairs``, ``frame``, ``scan``); a read names what it wants
in one `Request` (``frame`` and ``scan`` take its fields as keywords). Imports run one way:
segments ← query modules ← this module.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import polars as pl

from prior.featurestore.entries import EntryInfo, FeatureData, Resource, make_entry
from prior.featurestore.frame import build_frame, pair_texts, view_entries
from prior.featurestore.parse_columns import PARSE_COLUMNS
from prior.featurestore.ref import StoreRef
from prior.featurestore.scan import scan_frame
from prior.featurestore.segment_files import indexed_items
from prior.featurestore.segments import FORMAT, SegmentStore
from prior.featurestore.selection import Coverage, Request, select_entry
from prior.featurestore.splits import SplitRows, split_rows
from prior.paths import default_store

__all__ = ["FORMAT", "PARSE_COLUMNS", "EntryInfo", "FeatureData", "Resource", "SegmentStore", "SplitRows", "Store",
           "indexed_items", "make_entry", "open_store"]


class Store(SegmentStore):
    """A feature store at a directory or fsspec URL. Cheap to open; reads the catalog lazily.

    Writers (``write_*``) each produce one segment and commit it; they may run in any process
    that can reach the store (Dask workers do). Readers see committed segments only.
    """

    def find_entry(self, name: str, request: Request | None = None, *, version: int | None = None,
                   dataset: str | None = None, split: str | None = None,
                   coverage: Coverage | None = None) -> EntryInfo:
        """The entry of feature ``name`` that ``request`` picks (`prior.featurestore.selection`):
        the default entry unless its ``params`` or ``entry`` (a key prefix) say otherwise; with
        ``dataset`` and ``split`` it must hold every item of that split. Errors list the candidates.
        ``coverage``: the selection's reads (the split's rows, the entries' keys), to reuse after."""
        return select_entry(self, name, dataset=dataset, split=split, version=version, request=request,
                            coverage=coverage)

    def select(self, feature: str, request: Request | None = None, *, dataset: str, split: str,
               coverage: Coverage | None = None) -> list[EntryInfo]:
        """The entries a read of ``feature`` with ``request`` uses (a view reads several): what
        ``frame`` and ``scan`` read. ``coverage`` as for ``find_entry``."""
        return view_entries(self, feature, dataset=dataset, split=split, request=request, coverage=coverage)

    def split_rows(self, dataset: str, split: str, *, parse: str | None = None) -> SplitRows:
        """The rows a read of ``dataset``/``split`` that uses ``parse`` serves (row, pair_key,
        key_a, key_b, label, id) and the pairs it leaves out, counted by reason, because their
        build skipped a sentence (``SplitRows.note``: "3 pairs … skipped at build: over the
        256-word limit"). A split that lacks rows its manifest records is a `ShortSplitError`
        naming the build that restores them (`prior.featurestore.splits`): the one read of a
        split's rows behind every reader."""
        return split_rows(self, dataset, split, parse=parse)

    def pairs(self, dataset: str, split: str, *, parse: str | None = None) -> pl.DataFrame:
        """Rows with their texts: row, pair_key, key_a, key_b, label, id, text_a, text_b, those
        of ``split_rows(dataset, split, parse=parse)``. Rows whose sentences the store does not
        hold are a `MissingDataError`, never null texts."""
        return pair_texts(self, dataset, split, parse)

    def frame(self, feature: str, *, dataset: str, split: str, params: Mapping[str, Any] | None = None,
              entry: str | None = None, parse: str | None = None) -> pl.DataFrame:
        """One row per pair: texts, label, both parses and the feature's matrices (nested lists).

        The entry read is the feature's default one unless ``params`` (e.g.
        ``{"preset": "uerbert-code"}``) or ``entry`` (a key prefix) pick another: the read's
        `Request`; it must hold every pair of the split (`prior.featurestore.selection`;
        `select` tells which entries)."""
        return build_frame(self, feature, dataset=dataset, split=split,
                           request=Request(params=params, entry=entry, parse=parse))

    def scan(self, feature: str, *, dataset: str, split: str, params: Mapping[str, Any] | None = None,
             entry: str | None = None, parse: str | None = None) -> pl.LazyFrame:
        """``frame(…)`` with the same arguments as a Polars LazyFrame: ``collect()`` gives the same
        frame, and a query reads only the segments and Parquet columns its filter and columns
        need (`prior.featurestore.scan`). The entry is selected, and bad arguments fail, here."""
        return scan_frame(self, feature, dataset=dataset, split=split,
                          request=Request(params=params, entry=entry, parse=parse))


def open_store(store: StoreRef | str | os.PathLike[str] | None = None, *, create: bool = True,
               lease: str | None = None) -> Store:
    """Open (or create) the store ``store`` names: a `StoreRef` (a location and its fsspec
    storage options, e.g. ``{"endpoint_url": …, "key": …, "secret": …}`` for S3), or a
    directory or URL opened with ``$PRIOR_STORAGE_OPTIONS`` (`prior.featurestore.ref`); no
    location: ``$PRIOR_STORE``, else ``$PRIOR_HOME/store``. ``lease``: the id of a build's lease
    (``lease.py``) that this store's writes belong to. A store that cannot be reached or read is
    a one-line `StoreError`, raised here."""
    return Store(StoreRef.of(store).or_at(default_store()), create=create, lease=lease)

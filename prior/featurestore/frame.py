"""The Polars view of a store: pairs joined with their parses and feature matrices.

Columns: ``row, pair_key, label, text_a, text_b`` (plus ``id``), for both sentences
``words_*, lemmas_*, upos_*, tags_*, heads_*, rels_*, ents_*`` (heads 1-based, 0 = root), then
the feature. A pair component becomes a column named after the entry (``wup``) or
``<entry>_<component>`` (``dep_trigram``); a sentence component becomes ``<name>_a`` and
``<name>_b`` (``sdoi_a``). Matrices are lists of rows; ``series[i].to_numpy()`` or
``np.array(series[i].to_list())`` gives the matrix back.

The entries read are chosen by `prior.featurestore.selection` (the default entry unless the
read's `Request`, its ``params`` or ``entry``, says otherwise) and must hold every pair of the
split, so a frame has no null feature values. The pairs whose build skipped a sentence (too
long to parse) are left out (`prior.featurestore.splits`; ``Store.split_rows`` counts them). :func:`view_entries` tells which entries a frame
reads.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from prior.featurestore.errors import StoreError
from prior.featurestore.missing import check_held
from prior.featurestore.parse_columns import PARSE_COLUMNS
from prior.featurestore.selection import Coverage, EntrySelectionError, Request, select_entry, split_params
from prior.featurestore.splits import split_rows
from prior.featurestore.tensors import nested_column
from prior.layouts.ragged import Ragged
from prior.layouts.views import column_name, view_of

if TYPE_CHECKING:
    from prior.featurestore.entries import EntryInfo
    from prior.featurestore.segments import SegmentStore


def view_entries(store: SegmentStore, feature: str, *, dataset: str, split: str, request: Request | None = None,
                 coverage: Coverage | None = None) -> list[EntryInfo]:
    """The entries a read of ``feature`` (an entry name or a view) uses for ``dataset``/``split``,
    chosen by the contract of `prior.featurestore.selection`: the ``request``'s ``params`` go to
    each of the view's entries that knows them, its ``entry`` (a key prefix) picks the first
    entry directly; the later entries of a view follow the first (same parse, and what the
    view's ``select`` says). ``coverage``: the selection's reads, to reuse afterwards (the
    split's rows)."""
    view = view_of(feature)
    asked = request or Request()
    if asked.entry and asked.params:
        raise EntrySelectionError("give either an entry key prefix or parameters, not both")
    coverage = coverage or Coverage(store)
    wanted = [None] * len(view.entries) if asked.entry else split_params(view.entries, asked.params, store.entries)
    chosen: list[EntryInfo] = []
    for i, name in enumerate(view.entries):
        if i == 0:
            each = Request(params=wanted[0], entry=asked.entry, parse=asked.parse)
        else:
            extra = view.select(name, chosen[0].params, dataset) if view.select is not None else {}
            each = Request(params={**(wanted[i] or {}), **extra}, parse=chosen[0].parse)
        chosen.append(select_entry(store, name, dataset=dataset, split=split, request=each,
                                   built_by=view.built_by, coverage=coverage))
    return chosen


def gather(store: SegmentStore, entries: Sequence[EntryInfo], pair_keys: Sequence[str], key_a: Sequence[str],
           key_b: Sequence[str]) -> dict[str, Ragged]:
    """The values of ``entries`` for the pairs (pair_keys[i], key_a[i], key_b[i]), one item per
    pair, by frame column name (`prior.layouts.views.column_name`): a pair component under its
    column, a sentence component under ``<column>_a`` and ``<column>_b``. Every pair must be
    held (the selection checked it)."""
    out: dict[str, Ragged] = {}
    for info in entries:
        data = store.load_feature(info)
        lookups = ({"": data.positions(list(pair_keys))} if info.scope == "pair" else
                   {"_a": data.positions(list(key_a)), "_b": data.positions(list(key_b))})
        for suffix, idx in lookups.items():
            if (idx < 0).any():  # selection checked coverage: only a concurrent gc gets here
                raise StoreError(f"entry {info.spec} {info.key[:12]} lost {int((idx < 0).sum())} items "
                                 "while being read; read again")
            for comp in info.components:
                out[column_name(info.name, comp) + suffix] = data.components[comp].take(idx)
    return out


def pair_texts(store: SegmentStore, dataset: str, split: str, parse: str | None = None) -> pl.DataFrame:
    """A split's rows with their texts: row, pair_key, key_a, key_b, label, id, text_a, text_b
    (``Store.pairs``): every row its manifest records, less the pairs with a sentence that
    ``parse``'s build skipped (`prior.featurestore.splits.split_rows`). Rows whose sentences
    the store does not hold are a `MissingDataError`, never null texts."""
    rows = split_rows(store, dataset, split, parse=parse).rows
    texts = store.sentences()
    check_held(store, dataset, split, itertools.chain(rows["key_a"], rows["key_b"]), texts["sent_key"])
    return (rows.join(texts.rename({"sent_key": "key_a", "text": "text_a"}), on="key_a", how="left")
                .join(texts.rename({"sent_key": "key_b", "text": "text_b"}), on="key_b", how="left")
                .sort("row"))


def build_frame(store: SegmentStore, feature: str, *, dataset: str, split: str,
                request: Request | None = None) -> pl.DataFrame:
    view = view_of(feature)
    entries = view_entries(store, feature, dataset=dataset, split=split, request=request)
    parse = entries[0].parse

    df = pair_texts(store, dataset, split, parse)
    keys = set(df["key_a"].to_list()) | set(df["key_b"].to_list())
    # every sentence's most complete record: null where its build did not annotate (`Store.parses`)
    parses = store.parses(keys, parse=parse).select(["sent_key", *PARSE_COLUMNS])
    check_held(store, dataset, split, keys, parses["sent_key"], parse=parse, entries=entries)
    for side in ("a", "b"):
        df = df.join(parses.rename({c: f"{c}_{side}" for c in PARSE_COLUMNS} | {"sent_key": f"key_{side}"}),
                     on=f"key_{side}", how="left")
    df = df.sort("row")
    values = gather(store, entries, df["pair_key"].to_list(), df["key_a"].to_list(), df["key_b"].to_list())
    if view.combine is not None:
        values[view.column or feature] = view.combine(values, dict(view.options))
    everything = np.arange(df.height)
    return df.with_columns([pl.Series(name, nested_column(ragged, everything)) for name, ragged in values.items()])

"""The Polars view of a store: pairs joined with their parses and feature matrices.

Columns: ``row, pair_key, label, text_a, text_b`` (plus ``id``), for both sentences
``words_*, lemmas_*, upos_*, tags_*, heads_*, rels_*, ents_*`` (heads 1-based, 0 = root), then
the feature. A pair component becomes a column named after the entry (``wup``) or
``<entry>_<component>`` (``dep_trigram``); a sentence component becomes ``<name>_a`` and
``<name>_b`` (``sdoi_a``). Matrices are lists of rows; ``series[i].to_numpy()`` or
``np.array(series[i].to_list())`` gives the matrix back. Pairs whose feature was not built are null.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from featurestore.tensors import nested_column
from featurestore.views import VIEWS, View

if TYPE_CHECKING:
    from featurestore.store import Store

PARSE_COLUMNS = ("words", "lemmas", "upos", "tags", "heads", "rels", "ents")


def column_name(entry_name: str, component: str) -> str:
    return entry_name if component == entry_name else f"{entry_name}_{component}"


def build_frame(store: Store, feature: str, *, dataset: str, split: str,
                params: Mapping[str, Any] | None = None, parse: str | None = None) -> pl.DataFrame:
    view = VIEWS.get(feature) or View(entries=(feature,))
    entries = []
    for i, name in enumerate(view.entries):
        if i == 0:
            wanted = params
        else:  # later entries: the view says which (e.g. the tf-idf of this dataset)
            wanted = view.select(name, entries[0], dataset) if view.select is not None else None
        entry = store.find_entry(name, params=wanted, parse=parse)
        parse = parse or entry.parse
        entries.append(entry)

    df = store.pairs(dataset, split)
    keys = set(df["key_a"].to_list()) | set(df["key_b"].to_list())
    parses = store.parses(keys, parse=parse).select(["sent_key", *PARSE_COLUMNS])
    for side in ("a", "b"):
        df = df.join(parses.rename({c: f"{c}_{side}" for c in PARSE_COLUMNS} | {"sent_key": f"key_{side}"}),
                     on=f"key_{side}", how="left")
    df = df.sort("row")

    columns = {}
    for entry in entries:
        data = store.load_feature(entry)
        if entry.scope == "pair":
            lookups = {"": data.positions(df["pair_key"].to_list())}
        else:
            lookups = {f"_{s}": data.positions(df[f"key_{s}"].to_list()) for s in ("a", "b")}
        for comp in entry.components:
            for suffix, idx in lookups.items():
                arr = nested_column(data.flat[comp], data.offsets[comp], data.rows[comp], data.cols[comp],
                                    np.asarray(idx))
                columns[column_name(entry.name, comp) + suffix] = pl.from_arrow(arr)
    df = df.with_columns(**{name: series for name, series in columns.items()})
    if view.derive is not None:
        df = view.derive(df, dict(view.options))
    return df

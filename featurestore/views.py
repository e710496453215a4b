"""Read-time views: features combined from several stored entries.

A view names the entries it joins (each by entry name) and derives extra columns from the
joined frame. ``Store.frame(name)`` uses the view registered under ``name`` when there is one,
else the entry of that name alone. Views are pure functions of stored values: a paper's
ablations become different views (or view options) of one build, never a rebuild.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from featurestore.errors import PriorError


@dataclass(frozen=True)
class View:
    entries: tuple[str, ...]
    derive: Callable[[pl.DataFrame, dict[str, Any]], pl.DataFrame] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    # Parameters that pick each later entry: (entry name, the first entry found, dataset) →
    # params for ``find_entry``. Used where a later entry depends on the dataset (DAFA's tf-idf
    # weights use the dataset's own IDF table) or must agree with the first entry's params.
    select: Callable[[str, Any, str], dict[str, Any]] | None = None


VIEWS: dict[str, View] = {}


def register_view(name: str, view: View) -> None:
    VIEWS[name] = view


# --------------------------------------------------------------------------- DAFA (`dep`)
def dafa_matrix(trigram: np.ndarray, subgraph: np.ndarray, tf_a: np.ndarray, tf_b: np.ndarray, *,
                use_trigram: bool = True, use_subgraph: bool = True, use_tfidf: bool = True) -> np.ndarray:
    """DAFA's final matrix (dafa.txt eq. 5): M_F = |M + S| · tf_A tf_Bᵀ, n×m float32.

    The switches give the paper's ablations from the same stored components: without the
    trigram matrix M (|S| · tf tfᵀ), without the subgraph matrix S (|M| · tf tfᵀ), without the
    tf-idf weights (|M + S|). With both M and S switched off the matrix is all zeros.
    Trainers call this directly on the arrays of ``FeatureData.get`` (trainers import only
    featurestore).
    """
    n, m = np.shape(trigram)
    base = np.zeros((n, m), dtype=np.float32)
    if use_trigram:
        base = base + np.asarray(trigram, dtype=np.float32)
    if use_subgraph:
        base = base + np.asarray(subgraph, dtype=np.float32)
    out = np.abs(base)
    if use_tfidf:
        out = out * np.outer(np.asarray(tf_a, dtype=np.float32), np.asarray(tf_b, dtype=np.float32))
    return out.astype(np.float32, copy=False)


DEP_OPTIONS: dict[str, Any] = {"trigram": True, "subgraph": True, "tfidf": True}


def _derive_dep(df: pl.DataFrame, options: dict[str, Any]) -> pl.DataFrame:
    """Add column ``dep`` (M_F, or the ablation ``options`` ask for) beside the components.

    Needs columns dep_trigram, dep_subgraph (pair entry ``dep``) and tfidf_a, tfidf_b
    (sentence entry ``tfidf``); a pair lacking any of them gets a null ``dep``.
    """
    opts = {**DEP_OPTIONS, **options}
    unknown = set(opts) - set(DEP_OPTIONS)
    if unknown:
        raise PriorError(f"unknown dep view options {sorted(unknown)}; known: {sorted(DEP_OPTIONS)}")
    out: list[list[list[float]] | None] = []
    for tri, sub, ta, tb in zip(df["dep_trigram"].to_list(), df["dep_subgraph"].to_list(),
                                df["tfidf_a"].to_list(), df["tfidf_b"].to_list()):
        if tri is None or sub is None or ta is None or tb is None:
            out.append(None)
            continue
        n, m = len(ta), len(tb)
        matrix = dafa_matrix(np.asarray(tri, dtype=np.float32).reshape(n, m),
                             np.asarray(sub, dtype=np.float32).reshape(n, m),
                             np.asarray(ta, dtype=np.float32), np.asarray(tb, dtype=np.float32),
                             use_trigram=opts["trigram"], use_subgraph=opts["subgraph"],
                             use_tfidf=opts["tfidf"])
        out.append(matrix.tolist())
    return df.with_columns(pl.Series("dep", out, dtype=pl.List(pl.List(pl.Float32))))


def select_dep(name: str, first: Any, dataset: str) -> dict[str, Any]:
    """The `tfidf` entry for a `dep` frame: the dataset's own IDF, words compared as in M and S."""
    if name != "tfidf":
        return {}
    return {"dataset": dataset, "compare": first.params.get("compare", "lower")}


register_view("dep", View(entries=("dep", "tfidf"), derive=_derive_dep, select=select_dep))
register_view("dep-no-trigram", View(entries=("dep", "tfidf"), derive=_derive_dep,
                                     options={"trigram": False}, select=select_dep))
register_view("dep-no-subgraph", View(entries=("dep", "tfidf"), derive=_derive_dep,
                                      options={"subgraph": False}, select=select_dep))
register_view("dep-no-tfidf", View(entries=("dep", "tfidf"), derive=_derive_dep,
                                   options={"tfidf": False}, select=select_dep))

"""Read-time views: features combined from several stored entries.

A view names the entries it joins (each by entry name) and derives extra columns from the
joined frame. ``Store.frame(name)`` uses the view registered under ``name`` when there is one,
else the entry of that name alone. Views are pure functions of stored values: a paper's
ablations become different views (or view options) of one build, never a rebuild.
"""

from __future__ import annotations

import itertools
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
    # The column ``derive`` adds that holds the view's matrix (the ablation views of `dep`
    # all write theirs to ``dep``); None: the column is named after the view.
    column: str | None = None
    # The `prior build --features` name that makes the view's entries (for error hints when
    # the store has none of them yet); None: the first entry's name.
    built_by: str | None = None
    # Further arguments a first build of the view's entries needs (an input file), for hints
    build_hint: tuple[str, ...] = ()


VIEWS: dict[str, View] = {}


def register_view(name: str, view: View) -> None:
    VIEWS[name] = view


# --------------------------------------------------------------------------- DAFA (`dep`)
def dafa_matrix(trigram: np.ndarray, subgraph: np.ndarray, tf_a: np.ndarray, tf_b: np.ndarray, *,
                use_trigram: bool = True, use_subgraph: bool = True, use_tfidf: bool = True) -> np.ndarray:
    """DAFA's final matrix (dafa.txt eq. 5): M_F = |M + S| · tf_A tf_Bᵀ, n×m float32.

    The switches give the paper's ablations (Table 8, Figure 4) from the same stored
    components: without the trigram matrix M, |S| · tf tfᵀ; without the subgraph matrix S,
    |M| · tf tfᵀ; without the tf-idf weights, |M + S|; any two of them off leaves the third
    alone (|M|, |S|, or tf_A tf_Bᵀ). Our choice where the paper gives no formula: with both M
    and S off the dependency factor is 1, so the matrix is tf_A tf_Bᵀ (Figure 4's
    "Dep_tf-idf" sub-module) rather than all zeros. All three off raises `PriorError`.
    Trainers call this directly on the arrays of ``FeatureData.get`` (trainers import only
    featurestore).
    """
    if not (use_trigram or use_subgraph or use_tfidf):
        raise PriorError("DAFA's matrix with trigram, subgraph and tf-idf all switched off has "
                         "nothing left: keep at least one")
    n, m = np.shape(trigram)
    if use_trigram or use_subgraph:
        base = np.zeros((n, m), dtype=np.float32)
        if use_trigram:
            base = base + np.asarray(trigram, dtype=np.float32)
        if use_subgraph:
            base = base + np.asarray(subgraph, dtype=np.float32)
        out = np.abs(base)
    else:
        out = np.ones((n, m), dtype=np.float32)
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


def dep_view_name(*, trigram: bool = True, subgraph: bool = True, tfidf: bool = True) -> str:
    """The view of an ablation: ``dep`` plus ``-no-<component>`` for each component left out,
    in the order trigram, subgraph, tfidf (``dep-no-trigram-no-tfidf`` = |S|)."""
    kept = {"trigram": trigram, "subgraph": subgraph, "tfidf": tfidf}
    return "dep" + "".join(f"-no-{name}" for name, keep in kept.items() if not keep)


def _register_dep_views() -> list[str]:
    """Register ``dep`` (M_F) and each ablation view (any of the three components left out,
    not all three); return their names, ``dep`` first."""
    names = []
    for keep in itertools.product((True, False), repeat=3):
        if not any(keep):
            continue
        switches = dict(zip(("trigram", "subgraph", "tfidf"), keep))
        name = dep_view_name(**switches)
        register_view(name, View(entries=("dep", "tfidf"), derive=_derive_dep,
                                 options={k: v for k, v in switches.items() if not v},
                                 select=select_dep, column="dep", built_by="dep"))
        names.append(name)
    return names


DEP_VIEWS: list[str] = _register_dep_views()
# tf-idf weights read alone are one entry; a build of `dep` makes them
register_view("tfidf", View(entries=("tfidf",), built_by="dep"))
# word ids of an embedding file's vocabulary: a build needs the file
register_view("emb", View(entries=("emb",), build_hint=("--embeddings", "EMB_FILE")))


def dep_switches(view: str) -> dict[str, bool]:
    """`dafa_matrix` keyword switches of a dep view name: ``"dep-no-tfidf"`` →
    ``{"use_trigram": True, "use_subgraph": True, "use_tfidf": False}``."""
    if view not in DEP_VIEWS:
        raise PriorError(f"unknown dep view {view!r}; choose one of {', '.join(DEP_VIEWS)}")
    left_out = VIEWS[view].options
    return {f"use_{part}": part not in left_out for part in ("trigram", "subgraph", "tfidf")}

"""Read-time views: features combined from several stored entries when they are read.

A view names the entries it joins (by entry name, the first is its main entry) and how their
values combine per pair. ``Store.frame(name)`` and the trainers' loader read a registered view
the same way: they select the view's entries (`prior.featurestore.selection`), gather each entry's
values for the pairs read into `Ragged` arrays named like the frame's columns
(:func:`column_name`: ``dep_trigram``, ``tfidf_a``, …) and call the view's ``combine``. Views
are pure numpy functions of stored values: a paper's ablations are other views of one build,
never a rebuild.

Registered here: DAFA's M_F (``dep``, dafa.txt eq. 5) and its ablations (``dep-no-…``, Table 8),
and two single-entry views that only carry build hints (``tfidf``, ``emb``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from prior.errors import PriorError
from prior.hints import option
from prior.layouts.kinds import Layout, PairMatrix
from prior.layouts.ragged import Ragged, item_starts

#: the gathered values of a view's entries for the pairs read: column name → one item per pair
Gathered = Mapping[str, Ragged]


@dataclass(frozen=True)
class View:
    entries: tuple[str, ...]
    #: per-pair values from the gathered entries and the view's options; None: the main entry
    #: is read as it is
    combine: Callable[[Gathered, dict[str, Any]], Ragged] | None = None
    #: the layout of what ``combine`` returns
    layout: Layout | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: parameters that pick each later entry: (entry name, the main entry's params, dataset) →
    #: params, where a later entry depends on the dataset (DAFA's tf-idf uses the dataset's own
    #: IDF table) or must agree with the main entry (words compared the same way)
    select: Callable[[str, Mapping[str, Any], str], dict[str, Any]] | None = None
    #: the frame column ``combine``'s values go to (the ablations of ``dep`` all write ``dep``);
    #: None: the view's name
    column: str | None = None
    #: the feature whose reads this view may replace (a trainer's ``--view dep-no-tfidf`` for a
    #: model that reads `dep`)
    variant_of: str | None = None
    #: the feature a build names to make the entries, and the input files a first build needs
    #: (input name → a placeholder), for the build an error names when nothing is built yet
    built_by: str | None = None
    build_inputs: Mapping[str, str] = field(default_factory=dict)


VIEWS: dict[str, View] = {}


def register_view(name: str, view: View) -> None:
    VIEWS[name] = view


def variants(feature: str) -> list[str]:
    """The registered views that may replace reads of ``feature`` (``View.variant_of``), sorted."""
    return sorted(n for n, v in VIEWS.items() if v.variant_of == feature)


def resolve_view(feature: str | None, view: str | None) -> str | None:
    """What a model reading ``feature`` reads when asked for ``view``: None (the feature as
    stored) for no view or the feature's own name, else ``view`` when it is a registered variant
    of ``feature``; `PriorError` naming the variants otherwise."""
    if view is None or view == feature:
        return None
    if feature is None:
        raise PriorError(f"view {view!r} replaces a stored feature, but this model reads none; drop {option('view')}")
    known = variants(feature)
    if view in known:
        return view
    if not known:
        raise PriorError(f"view {view!r} does not apply: this model reads {feature!r}, which has no registered "
                         "variant views")
    of = VIEWS[view].variant_of if view in VIEWS else None
    what = f"is a variant of {of!r}, not of {feature!r}" if of else "is not a registered variant view"
    raise PriorError(f"view {view!r} {what}; views of {feature!r}: {', '.join(known)}")


def view_of(name: str) -> View:
    """The view registered under ``name``, or the plain read of the entry of that name."""
    return VIEWS.get(name) or View(entries=(name,))


def column_name(entry_name: str, component: str) -> str:
    """A pair component's frame column: the entry's name (``wup``) or ``<entry>_<component>``
    (``dep_trigram``); a sentence component adds ``_a`` / ``_b``."""
    return entry_name if component == entry_name else f"{entry_name}_{component}"


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


#: values of M_F computed at once (their int64 indices are 8 bytes each: a bound on the memory)
_COMBINE_CHUNK = 1 << 20


def _combine_dep(values: Gathered, options: dict[str, Any]) -> Ragged:
    """M_F (or the ablation ``options`` ask for) per pair, from the columns dep_trigram,
    dep_subgraph (pair entry ``dep``) and tfidf_a, tfidf_b (sentence entry ``tfidf``):
    :func:`dafa_matrix` of many pairs at once (about a million values at a time), value for
    value the same float32 arithmetic."""
    opts = {**DEP_OPTIONS, **options}
    if unknown := set(opts) - set(DEP_OPTIONS):
        raise PriorError(f"unknown dep view options {sorted(unknown)}; known: {sorted(DEP_OPTIONS)}")
    if not (opts["trigram"] or opts["subgraph"] or opts["tfidf"]):
        raise PriorError("DAFA's matrix with trigram, subgraph and tf-idf all switched off has "
                         "nothing left: keep at least one")
    tri, sub, ta, tb = (values[c] for c in ("dep_trigram", "dep_subgraph", "tfidf_a", "tfidf_b"))
    sizes = tri.sizes()
    starts = item_starts(sizes)
    out = np.empty(int(sizes.sum()), dtype=np.float32)
    cuts = np.unique(np.searchsorted(starts, np.arange(0, len(out), _COMBINE_CHUNK), side="right") - 1)
    for lo, hi in zip(cuts, [*cuts[1:], len(tri)]):
        first, n = int(starts[lo]), int(sizes[lo:hi].sum())
        out[first:first + n] = _dafa_values(np.arange(lo, hi), sizes[lo:hi], tri, sub, ta, tb, opts)
    return Ragged(out, starts, tri.rows.astype(np.int64), tri.cols.astype(np.int64))


def _matrix_values(r: Ragged, items: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The values of ``items``' matrices (``sizes`` values each) one after another, float32: a
    view when they lie so in ``r`` (the pairs a window reads, in order), else gathered."""
    offsets = r.offsets[items].astype(np.int64)
    local = item_starts(sizes)
    first = int(offsets[0]) if len(offsets) else 0
    if np.array_equal(offsets - first, local) and np.array_equal(r.sizes()[items], sizes):
        run: np.ndarray = r.values[first:first + int(sizes.sum())].astype(np.float32, copy=False)
        return run
    place = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(offsets - local, sizes)
    gathered: np.ndarray = r.values[place].astype(np.float32, copy=False)
    return gathered


def _outer_values(items: np.ndarray, tri: Ragged, ta: Ragged, tb: Ragged) -> np.ndarray:
    """tf_A tf_Bᵀ of each of ``items``' pairs, one matrix after another (the matrices' shapes
    are ``tri``'s): row i of a pair's matrix is its A weight i times its B weights, read a
    matrix row at a time, without a division per value."""
    rows, cols = tri.rows[items].astype(np.int64), tri.widths[items]
    row_cols = np.repeat(cols, rows)  # each matrix row's width
    row_first = item_starts(rows)  # each pair's first matrix row
    in_pair = np.arange(len(row_cols), dtype=np.int64) - np.repeat(row_first, rows)  # a row's word of A
    a_rows = ta.values[np.repeat(ta.offsets[items].astype(np.int64), rows) + in_pair].astype(np.float32, copy=False)
    cell_first = item_starts(row_cols)  # each matrix row's first value
    b_at = np.repeat(np.repeat(tb.offsets[items].astype(np.int64), rows) - cell_first, row_cols)
    b_at += np.arange(len(b_at), dtype=np.int64)
    outer = np.repeat(a_rows, row_cols)
    outer *= tb.values[b_at].astype(np.float32, copy=False)
    return outer


def _dafa_values(items: np.ndarray, sizes: np.ndarray, tri: Ragged, sub: Ragged, ta: Ragged, tb: Ragged,
                 opts: dict[str, Any]) -> np.ndarray:
    """M_F's values of ``items`` (``sizes`` values each), one matrix after another: |M + S|
    (or the components kept), times tf_A tf_Bᵀ, as `dafa_matrix` computes them."""
    out: np.ndarray
    if opts["trigram"] and opts["subgraph"]:
        out = np.add(_matrix_values(tri, items, sizes), _matrix_values(sub, items, sizes))
        np.abs(out, out=out)
    elif opts["trigram"] or opts["subgraph"]:
        out = np.abs(_matrix_values(tri if opts["trigram"] else sub, items, sizes))
    else:
        out = np.ones(int(sizes.sum()), dtype=np.float32)
    if opts["tfidf"]:
        out *= _outer_values(items, tri, ta, tb)
    return out


def select_dep(name: str, first: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The `tfidf` entry of a `dep` read: the dataset's own IDF, words compared as in M and S,
    weighted as the `dep` entry names (``tfidf``: ramos or l2)."""
    if name != "tfidf":
        return {}
    return {"dataset": dataset, "compare": first.get("compare", "lower"),
            "weighting": first.get("tfidf", "ramos")}


def dep_view_name(*, trigram: bool = True, subgraph: bool = True, tfidf: bool = True) -> str:
    """The view of an ablation: ``dep`` plus ``-no-<component>`` for each component left out,
    in the order trigram, subgraph, tfidf (``dep-no-trigram-no-tfidf`` = |S|)."""
    kept = {"trigram": trigram, "subgraph": subgraph, "tfidf": tfidf}
    return "dep" + "".join(f"-no-{name}" for name, keep in kept.items() if not keep)


def _register_dep_views() -> list[str]:
    """Register ``dep`` (M_F) and each ablation view (any of the three components left out,
    not all three); return their names, ``dep`` first. In the token grid the DAFA model uses
    M_F + 1 ("we change the dimension of M_F by adding 1", dafa.txt §2.2) with 1 elsewhere."""
    names = []
    for keep in itertools.product((True, False), repeat=3):
        if not any(keep):
            continue
        switches = dict(zip(("trigram", "subgraph", "tfidf"), keep))
        name = dep_view_name(**switches)
        register_view(name, View(entries=("dep", "tfidf"), combine=_combine_dep,
                                 layout=PairMatrix("dep", neutral=1.0, shift=1.0),
                                 options={k: v for k, v in switches.items() if not v},
                                 select=select_dep, column="dep", variant_of="dep", built_by="dep"))
        names.append(name)
    return names


DEP_VIEWS: list[str] = _register_dep_views()
# tf-idf weights read alone are one entry; a build of `dep` makes them
register_view("tfidf", View(entries=("tfidf",), built_by="dep"))
# word ids of an embedding file's vocabulary: a build needs the file
register_view("emb", View(entries=("emb",), build_inputs={"embeddings": "EMB_FILE"}))

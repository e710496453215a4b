"""DAFA's dependency matrices (dafa.txt §2, eq. 1–4): the trigram matrix M and the subgraph matrix S.

Each word i of a sentence is the tail t of the trigram (head word h, relation r, t). Both
matrices are n×m for sentence A (n words) and B (m words), float32, stored as two components
of the pair entry ``dep``; the tf-idf weights are a separate sentence entry (`tfidf`) and
M_F = |M + S| · tf_A tf_Bᵀ is formed when the store is read (prior/layouts/views.py), so the
paper's ablations need no rebuild.

Choices where the paper is silent (each has a test in tests/test_features_dep.py):

- Words compare by their lowercased form, or by lowercased lemma with ``compare="lemma"``
  (prior/pipeline/features/forms.py); relations compare as exact strings.
- A root's head is the symbol ROOT. Two roots therefore have equal heads: s(h_A, h_B) = 1.
  ROOT never equals a word, whatever the word's spelling.
- Trigram (eq. 1–3): M[i,j] = (s(h_A^i, h_B^j) + s(t_A^i, t_B^j)) · r(r_A^i, r_B^j) with
  s ∈ {0, 1} and r = θ on equal relations else 1; θ = 2.0. A pair sharing only the relation
  scores 0 (the relation factor multiplies, it does not add).
- Subgraph (eq. 4): S[i,j] = 0 unless t_A^i = t_B^j and r_A^i = r_B^j; then
  S[i,j] = α + ν · Σ_{x child of A^i} Σ_{y child of B^j} S[x, y]: every pair of children
  counts, matching or not (non-matching pairs add 0). α = 1.0 and ν = 0.5 are our defaults.
  Computed bottom-up: rows of A in order of decreasing depth, so the rows of a word's
  children are complete before its own; each row is one vectorised step over B. Cost
  O(n · m · mean number of children), no recursion.
- A parse that is a forest (several roots) is handled the same way; heads that form a cycle
  raise `DataError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prior.errors import DataError, PriorError
from prior.layouts.kinds import PairMatrix
from prior.pipeline.features.base import FeatureBase
from prior.pipeline.features.forms import WordCompare, check_compare, word_forms
from prior.pipeline.parsers.base import Parse

ROOT = 0  # id of the ROOT head symbol; word forms get ids from 1

DEFAULT_THETA = 2.0
DEFAULT_ALPHA = 1.0
DEFAULT_NU = 0.5


def depths(heads: Sequence[int]) -> np.ndarray:
    """Depth of every word (a root has depth 0); raises `DataError` when heads form a cycle."""
    n = len(heads)
    depth = np.full(n, -1, dtype=np.int64)
    for start in range(n):
        path: list[int] = []
        node = start
        while depth[node] < 0:
            path.append(node)
            head = heads[node]
            if head == 0:
                depth[node] = 0
                path.pop()
                break
            node = head - 1
            if len(path) > n:
                raise DataError(f"heads {list(heads)} contain a cycle through word {start + 1}",
                                field="heads")
        base = depth[node]
        for offset, member in enumerate(reversed(path), start=1):
            depth[member] = base + offset
    return depth


def children(heads: Sequence[int]) -> list[list[int]]:
    """0-based children of every word, in word order."""
    kids: list[list[int]] = [[] for _ in heads]
    for i, head in enumerate(heads):
        if head:
            kids[head - 1].append(i)
    return kids


def _ids(forms_a: Sequence[str], forms_b: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Integer ids (from 1) for the forms of both sentences, equal ids for equal forms."""
    table: dict[str, int] = {}
    ids_a = np.array([table.setdefault(f, len(table) + 1) for f in forms_a], dtype=np.int64)
    ids_b = np.array([table.setdefault(f, len(table) + 1) for f in forms_b], dtype=np.int64)
    return ids_a, ids_b


def _head_ids(word_ids: np.ndarray, heads: Sequence[int]) -> np.ndarray:
    h = np.asarray(heads, dtype=np.int64)
    if h.size == 0:
        return h
    return np.where(h == 0, ROOT, word_ids[np.maximum(h - 1, 0)])


def _rel_ids(rels_a: Sequence[str], rels_b: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    return _ids(rels_a, rels_b)


def trigram_matrix(a: Parse, b: Parse, *, theta: float = DEFAULT_THETA,
                   compare: WordCompare = "lower") -> np.ndarray:
    """DAFA's M (eq. 1–3), n×m float32: (s(h, h') + s(t, t')) · (θ if r = r' else 1)."""
    ta, tb = _ids(word_forms(a, compare), word_forms(b, compare))
    ha, hb = _head_ids(ta, a.heads), _head_ids(tb, b.heads)
    ra, rb = _rel_ids(a.rels, b.rels)
    same = (ha[:, None] == hb[None, :]).astype(np.float64) + (ta[:, None] == tb[None, :])
    factor = np.where(ra[:, None] == rb[None, :], float(theta), 1.0)
    return (same * factor).astype(np.float32)


def subgraph_matrix(a: Parse, b: Parse, *, alpha: float = DEFAULT_ALPHA, nu: float = DEFAULT_NU,
                    compare: WordCompare = "lower") -> np.ndarray:
    """DAFA's S (eq. 4), n×m float32, computed bottom-up (see the module docstring)."""
    ta, tb = _ids(word_forms(a, compare), word_forms(b, compare))
    ra, rb = _rel_ids(a.rels, b.rels)
    n, m = len(ta), len(tb)
    match = (ta[:, None] == tb[None, :]) & (ra[:, None] == rb[None, :])
    s = np.zeros((n, m), dtype=np.float64)
    if n == 0 or m == 0 or not match.any():
        return s.astype(np.float32)
    kids_a = children(a.heads)
    child_b = np.zeros((m, m), dtype=np.float64)  # child_b[j, y] = 1 if y is a child of j
    for y, head in enumerate(b.heads):
        if head:
            child_b[head - 1, y] = 1.0
    depths(b.heads)  # validates B's tree
    for i in np.argsort(-depths(a.heads), kind="stable"):
        if not match[i].any():
            continue
        row = np.full(m, float(alpha))
        if kids_a[i]:
            below = s[kids_a[i]].sum(axis=0)          # (m,) Σ_x S[x, y]
            row += float(nu) * (child_b @ below)       # (m,) Σ_{y child of j} Σ_x S[x, y]
        s[i] = np.where(match[i], row, 0.0)
    return s.astype(np.float32)


class DepFeature(FeatureBase):
    """DAFA's pair feature ``dep``: components ``trigram`` (M) and ``subgraph`` (S), n×m float32.

    The `dep` feature set pairs it with `TfidfFeature` using the same ``compare`` choice.
    """

    name = "dep"
    version = 2  # 2: parameter ``tfidf``, the weighting of the `tfidf` entry read with it
    scope = "pair"
    components = ("trigram", "subgraph")
    layout = PairMatrix("trigram")  # read through the `dep` view (prior/layouts/views.py), which combines M, S and tf-idf

    def __init__(self, *, theta: float = DEFAULT_THETA, alpha: float = DEFAULT_ALPHA,
                 nu: float = DEFAULT_NU, compare: str = "lower", tfidf: str = "ramos") -> None:
        from prior.pipeline.features.tfidf import WEIGHTINGS

        if tfidf not in WEIGHTINGS:
            raise PriorError(f"unknown dep option tfidf={tfidf!r}; use one of {', '.join(WEIGHTINGS)}")
        self.tfidf = tfidf
        self.theta = float(theta)
        self.alpha = float(alpha)
        self.nu = float(nu)
        self.compare: WordCompare = check_compare(compare)

    def annotations(self) -> frozenset[str]:
        """Words, heads and relations; lemmas too where words compare by lemma."""
        return frozenset({"lemmas"}) if self.compare == "lemma" else frozenset()

    def params(self) -> dict[str, Any]:
        # ``tfidf`` does not change M or S: it names the weighting of the `tfidf` entry a read of
        # this entry pairs it with (prior/layouts/views.py, select_dep), so each weighting is its own key
        return {"theta": self.theta, "alpha": self.alpha, "nu": self.nu, "compare": self.compare,
                "tfidf": self.tfidf}

    def setup(self) -> None:
        """Nothing to load: the matrices are pure functions of the two parses."""

    def compute(self, items: Sequence[tuple[Parse, Parse]]) -> list[dict[str, np.ndarray]]:
        return [
            {
                "trigram": trigram_matrix(a, b, theta=self.theta, compare=self.compare),
                "subgraph": subgraph_matrix(a, b, alpha=self.alpha, nu=self.nu,
                                            compare=self.compare),
            }
            for a, b in items
        ]


def dep_feature_set(options: dict[str, Any]) -> list[Any]:
    """The `dep` feature set: tf-idf weights first (its IDF table is prepared first), then M and S.

    ``options`` (``prior build -o dep.NAME=VALUE``, all optional): theta, alpha, nu, compare (shared by
    both features, so words compare the same way in the matrices and in tf-idf), tfidf (the
    weighting: ``ramos``, the paper's, by default; ``l2``, scikit-learn's) and idf_split.
    """
    from prior.pipeline.features.tfidf import TfidfFeature

    opts = dict(options)
    known = {"theta", "alpha", "nu", "compare", "idf_split", "tfidf"}
    if unknown := set(opts) - known:
        raise PriorError(f"unknown dep options {sorted(unknown)}; known: {sorted(known)}")
    compare = opts.pop("compare", "lower")
    tfidf_opts = {"idf_split": opts.pop("idf_split")} if "idf_split" in opts else {}
    weighting = str(opts.pop("tfidf", "ramos"))
    return [TfidfFeature(compare=compare, weighting=weighting, **tfidf_opts),
            DepFeature(compare=compare, tfidf=weighting, **opts)]

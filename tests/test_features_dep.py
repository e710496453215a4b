"""DAFA's trigram and subgraph matrices on hand-built trees, values worked out by hand."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prior.errors import DataError, PriorError
from prior.pipeline.features.dep import DepFeature, depths, subgraph_matrix, trigram_matrix
from prior.pipeline.parsers.base import Parse


def mk(words: list[str], heads: list[int], rels: list[str],
       lemmas: list[str] | None = None) -> Parse:
    n = len(words)
    return Parse(words=tuple(words), lemmas=tuple(lemmas or [w.lower() for w in words]),
                 upos=("X",) * n, tags=("X",) * n, heads=tuple(heads), rels=tuple(rels),
                 ents=("",) * n)


# "the dog saw the cat" / "The cat saw the dog ." : repeated words, a shared root, swapped roles.
A1 = mk(["the", "dog", "saw", "the", "cat"], [2, 3, 0, 5, 3],
        ["det", "nsubj", "ROOT", "det", "dobj"])
B1 = mk(["The", "cat", "saw", "the", "dog", "."], [2, 3, 0, 5, 3, 3],
        ["det", "nsubj", "ROOT", "det", "dobj", "punct"])


def test_dep_trigram_by_hand() -> None:
    # heads A: dog saw ROOT cat saw; heads B: cat saw ROOT dog saw saw.
    # e.g. M[0,3]: the/det under "dog" vs the/det under "dog": (1 + 1) * θ = 4;
    # M[1,5]: dog/nsubj vs ./punct, both under "saw": (1 + 0) * 1 = 1;
    # M[2,2]: saw/ROOT vs saw/ROOT, both heads ROOT: (1 + 1) * θ = 4.
    expected = np.array([
        [2, 0, 0, 4, 0, 0],
        [0, 2, 0, 0, 2, 1],
        [0, 0, 4, 0, 0, 0],
        [4, 0, 0, 2, 0, 0],
        [0, 2, 0, 0, 2, 1],
    ], dtype=np.float32)
    got = trigram_matrix(A1, B1)
    assert got.dtype == np.float32 and got.shape == (5, 6)
    np.testing.assert_array_equal(got, expected)


def test_dep_trigram_theta_scales_only_equal_relations() -> None:
    got = trigram_matrix(A1, B1, theta=3.0)
    assert got[0, 3] == 6.0 and got[2, 2] == 6.0  # equal relations: (1 + 1) * 3
    assert got[1, 4] == 2.0 and got[1, 5] == 1.0  # different relations: factor 1


def test_dep_trigram_relation_alone_scores_zero() -> None:
    a = mk(["a", "x"], [2, 0], ["det", "ROOT"])
    b = mk(["b", "y"], [2, 0], ["det", "ROOT"])
    m = trigram_matrix(a, b)
    assert m[0, 0] == 0.0  # same relation, different head and tail: 0 * θ
    assert m[1, 1] == 2.0  # roots: heads are both ROOT (1), tails differ (0), times θ


def test_dep_root_symbol_never_equals_a_word() -> None:
    # A's root "ROOT" (a word spelt like the symbol) vs B's word whose head is the word "root".
    a = mk(["ROOT"], [0], ["ROOT"])
    b = mk(["root", "x"], [0, 1], ["ROOT", "dep"])
    m = trigram_matrix(a, b)
    # (A0, B1): A0's head is the ROOT symbol, B1's head is the word "root": s = 0; tails differ.
    assert m[0, 1] == 0.0
    assert m[0, 0] == 4.0  # tails "root" == "root" (lowercased) and both heads ROOT, times θ


def test_dep_forest_roots_match_each_other() -> None:
    a = mk(["Go", ".", "Stop", "."], [0, 1, 0, 3], ["ROOT", "punct", "ROOT", "punct"])
    b = mk(["Stop"], [0], ["ROOT"])
    m = trigram_matrix(a, b)
    np.testing.assert_array_equal(m[:, 0], [2.0, 0.0, 4.0, 0.0])


def test_dep_compare_lemma_option() -> None:
    a = mk(["dogs", "ran"], [2, 0], ["nsubj", "ROOT"], lemmas=["dog", "run"])
    b = mk(["Dog", "runs"], [2, 0], ["nsubj", "ROOT"], lemmas=["dog", "run"])
    lower = trigram_matrix(a, b)
    lemma = trigram_matrix(a, b, compare="lemma")
    assert lower[0, 0] == 0.0 and lower[1, 1] == 2.0
    assert lemma[0, 0] == 4.0 and lemma[1, 1] == 4.0
    assert subgraph_matrix(a, b)[1, 1] == 0.0  # "ran" != "runs"
    assert subgraph_matrix(a, b, compare="lemma")[1, 1] == 1.5  # run = run: 1 + 0.5 · S[dogs, Dog]
    with pytest.raises(PriorError, match="lower, lemma"):
        trigram_matrix(a, b, compare="stem")  # type: ignore[arg-type]


def test_dep_subgraph_leaves_and_shared_root() -> None:
    s = subgraph_matrix(A1, B1)
    expected = np.zeros((5, 6), dtype=np.float32)
    for i, j in [(0, 0), (0, 3), (3, 0), (3, 3)]:
        expected[i, j] = 1.0  # "the"/det leaves: α
    # saw/ROOT: α + ν · Σ over children {dog, cat} × {cat, dog, .}: none match (roles differ).
    expected[2, 2] = 1.0
    np.testing.assert_array_equal(s, expected)


def test_dep_subgraph_depth_three_chain() -> None:
    # A: very -advmod-> big -amod-> dog -nsubj-> barked (root): depth 3.
    a = mk(["very", "big", "dog", "barked"], [2, 3, 4, 0], ["advmod", "amod", "nsubj", "ROOT"])
    # B: a very big dog barked loudly: the same chain plus a det and a second advmod.
    b = mk(["a", "very", "big", "dog", "barked", "loudly"], [4, 3, 4, 5, 0, 5],
           ["det", "advmod", "amod", "nsubj", "ROOT", "advmod"])
    s = subgraph_matrix(a, b)
    # very: α = 1; big: 1 + .5·1 = 1.5; dog: 1 + .5·(S[big,a] + S[big,big]) = 1.75;
    # barked: 1 + .5·(S[dog,dog] + S[dog,loudly]) = 1.875.
    assert s[0, 1] == 1.0 and s[1, 2] == 1.5 and s[2, 3] == 1.75 and s[3, 4] == 1.875
    assert np.count_nonzero(s) == 4
    s2 = subgraph_matrix(a, b, alpha=2.0, nu=1.0)
    assert (s2[0, 1], s2[1, 2], s2[2, 3], s2[3, 4]) == (2.0, 4.0, 6.0, 8.0)


def test_dep_subgraph_sums_every_child_pair() -> None:
    # Two identical children on each side: 2 × 2 matching leaf pairs under the matching roots.
    a = mk(["x", "x", "r"], [3, 3, 0], ["dep", "dep", "ROOT"])
    b = mk(["X", "x", "r"], [3, 3, 0], ["dep", "dep", "ROOT"])
    s = subgraph_matrix(a, b)
    np.testing.assert_array_equal(s[:2, :2], np.ones((2, 2)))
    assert s[2, 2] == 1.0 + 0.5 * 4


def test_dep_subgraph_needs_equal_relation() -> None:
    a = mk(["dog", "ran"], [2, 0], ["nsubj", "ROOT"])
    b = mk(["dog", "ran"], [2, 0], ["dobj", "ROOT"])
    s = subgraph_matrix(a, b)
    assert s[0, 0] == 0.0 and s[1, 1] == 1.0


def test_dep_cycle_is_a_data_error() -> None:
    with pytest.raises(DataError, match="cycle"):
        depths([2, 1])
    bad = mk(["a", "b", "c"], [2, 1, 0], ["x", "y", "ROOT"])
    with pytest.raises(DataError, match="cycle"):
        subgraph_matrix(bad, bad)


def test_dep_depths() -> None:
    np.testing.assert_array_equal(depths([2, 3, 4, 0]), [3, 2, 1, 0])
    np.testing.assert_array_equal(depths([0, 1, 0, 3]), [0, 1, 0, 1])


def test_dep_empty_sentence() -> None:
    empty = mk([], [], [])
    assert trigram_matrix(empty, B1).shape == (0, 6)
    assert subgraph_matrix(A1, empty).shape == (5, 0)
    assert subgraph_matrix(empty, B1).shape == (0, 6)


def test_dep_feature_components_and_params() -> None:
    feature = DepFeature(nu=0.25)
    assert feature.scope == "pair" and feature.components == ("trigram", "subgraph")
    assert feature.params() == {"theta": 2.0, "alpha": 1.0, "nu": 0.25, "compare": "lower",
                                "tfidf": "ramos"}
    (out,) = feature.compute([(A1, B1)])
    np.testing.assert_array_equal(out["trigram"], trigram_matrix(A1, B1))
    np.testing.assert_array_equal(out["subgraph"], subgraph_matrix(A1, B1, nu=0.25))


# --- properties on random trees -----------------------------------------------------------

WORDS = ["a", "b", "c", "A"]
RELS = ["nsubj", "dobj", "ROOT"]


@st.composite
def parses(draw: st.DrawFn) -> Parse:
    n = draw(st.integers(0, 9))
    order = draw(st.permutations(range(n)))
    heads = [0] * n
    for pos, node in enumerate(order):  # each node's head comes earlier in `order`: no cycle
        if pos and draw(st.integers(0, 4)):
            heads[node] = order[draw(st.integers(0, pos - 1))] + 1
    words = [draw(st.sampled_from(WORDS)) for _ in range(n)]
    rels = [draw(st.sampled_from(RELS)) for _ in range(n)]
    return mk(words, heads, rels)


def naive_subgraph(a: Parse, b: Parse, alpha: float, nu: float) -> np.ndarray:
    """Eq. 4 read literally, by memoized recursion: an independent reference."""
    kids_a = [[x for x, h in enumerate(a.heads) if h == i + 1] for i in range(len(a))]
    kids_b = [[y for y, h in enumerate(b.heads) if h == j + 1] for j in range(len(b))]

    @functools.cache
    def s(i: int, j: int) -> float:
        if a.words[i].lower() != b.words[j].lower() or a.rels[i] != b.rels[j]:
            return 0.0
        return alpha + nu * sum(s(x, y) for x in kids_a[i] for y in kids_b[j])

    return np.array([[s(i, j) for j in range(len(b))] for i in range(len(a))],
                    dtype=np.float64).reshape(len(a), len(b))


@settings(max_examples=150, deadline=None)
@given(parses(), parses(), st.sampled_from([(1.0, 0.5), (0.5, 2.0)]))
def test_dep_subgraph_symmetric_and_matches_recursion(a: Parse, b: Parse,
                                                      an: tuple[float, float]) -> None:
    alpha, nu = an
    s_ab = subgraph_matrix(a, b, alpha=alpha, nu=nu)
    s_ba = subgraph_matrix(b, a, alpha=alpha, nu=nu)
    np.testing.assert_array_equal(s_ab, s_ba.T)
    np.testing.assert_allclose(s_ab, naive_subgraph(a, b, alpha, nu), rtol=1e-6)
    np.testing.assert_array_equal(trigram_matrix(a, b), trigram_matrix(b, a).T)

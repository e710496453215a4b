"""SG-Net's SDOI mask: ancestors-or-self per word (the paper), and the authors' span intervals,
on hand-built trees."""

from __future__ import annotations

import numpy as np
import pytest

from prior.errors import DataError, PriorError
from prior.featurestore.keys import entry_key, params_key
from prior.pipeline.features.base import Feature
from prior.pipeline.features.sdoi import SdoiFeature, sdoi_mask, span_interval_mask
from prior.pipeline.parsers.base import Parse


def make_parse(words: list[str], heads: list[int]) -> Parse:
    n = len(words)
    return Parse(words=tuple(words), lemmas=tuple(words), upos=("X",) * n, tags=("X",) * n,
                 heads=tuple(heads), rels=("dep",) * n, ents=("",) * n)


def test_sdoi_single_word_is_itself_only() -> None:
    m = sdoi_mask([0])
    assert m.dtype == np.uint8 and m.shape == (1, 1) and m[0, 0] == 1


def test_sdoi_empty_sentence() -> None:
    assert sdoi_mask([]).shape == (0, 0)


def test_sdoi_small_tree_by_hand() -> None:
    # "The cat sat down": The->cat, cat->sat, sat=root, down->sat
    m = sdoi_mask([2, 3, 0, 3])
    expected = np.array([
        [1, 1, 1, 0],   # The: itself, cat, sat
        [0, 1, 1, 0],   # cat: itself, sat
        [0, 0, 1, 0],   # sat: root, itself only
        [0, 0, 1, 1],   # down: sat, itself
    ], dtype=np.uint8)
    np.testing.assert_array_equal(m, expected)


def test_sdoi_chain_of_depth_five() -> None:
    # w5 -> w4 -> w3 -> w2 -> w1 (root): word k sees words 1..k
    m = sdoi_mask([0, 1, 2, 3, 4])
    np.testing.assert_array_equal(m, np.tril(np.ones((5, 5), dtype=np.uint8)))


def test_sdoi_chain_given_out_of_order() -> None:
    # root is the last word; heads point right: word i's ancestors are all words after it
    m = sdoi_mask([2, 3, 4, 5, 0])
    np.testing.assert_array_equal(m, np.triu(np.ones((5, 5), dtype=np.uint8)))


def test_sdoi_forest_has_no_cross_tree_links() -> None:
    # two sentences: [1 <- 2] and [4 <- 3, 5 -> 4]
    m = sdoi_mask([0, 1, 4, 0, 4])
    expected = np.array([
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [0, 0, 1, 1, 0],
        [0, 0, 0, 1, 0],
        [0, 0, 0, 1, 1],
    ], dtype=np.uint8)
    np.testing.assert_array_equal(m, expected)


def test_sdoi_rows_match_walking_up_the_tree() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        order = rng.permutation(n)
        heads = [0] * n
        for k in range(1, n):  # attach each word to an earlier word of a random order
            heads[order[k]] = int(order[rng.integers(0, k)]) + 1
        m = sdoi_mask(heads)
        for i in range(n):
            seen = {i}
            j = heads[i] - 1
            while j != -1:
                seen.add(j)
                j = heads[j] - 1
            assert set(np.flatnonzero(m[i])) == seen


def test_sdoi_cycle_is_a_data_error() -> None:
    with pytest.raises(DataError, match="cycle through words 1, 2, 3"):
        sdoi_mask([2, 3, 1])
    with pytest.raises(PriorError, match="cycle"):
        sdoi_mask([0, 3, 4, 2])  # word 1 is a root, 2 -> 3 -> 4 -> 2 loops


def test_sdoi_head_out_of_range_is_a_data_error() -> None:
    with pytest.raises(DataError, match="outside"):
        sdoi_mask([0, 7])


def test_sdoi_feature_protocol_and_compute() -> None:
    feature = SdoiFeature()
    assert isinstance(feature, Feature)
    assert (feature.name, feature.version, feature.scope, feature.components) == (
        "sdoi", 1, "sentence", ("sdoi",))
    feature.setup()
    parses = [make_parse(["The", "cat", "sat", "down"], [2, 3, 0, 4 - 1]), make_parse(["Hi"], [0])]
    out = feature.compute(parses)
    assert [list(o) for o in out] == [["sdoi"], ["sdoi"]]
    np.testing.assert_array_equal(out[0]["sdoi"], sdoi_mask([2, 3, 0, 3]))
    assert out[1]["sdoi"].tolist() == [[1]]


def test_sdoi_feature_params_are_stable() -> None:
    assert SdoiFeature().params() == SdoiFeature().params()
    assert SdoiFeature().params() == {"relation": "ancestor-or-self", "roots": "forest-per-tree",
                                      "dtype": "uint8"}


def test_sdoi_feature_names_the_sentence_with_a_cycle() -> None:
    bad = make_parse(["a", "b", "c"], [2, 3, 1])  # Parse allows it: only self-heads are refused
    with pytest.raises(DataError, match="sentence 1 of the batch \\('a b c'\\).*cycle"):
        SdoiFeature().compute([make_parse(["ok"], [0]), bad])


# ---------------------------------------------------------------- the authors' span intervals
# "the crew all ate lunch alone", parsed non-projectively: "alone" (a depictive of the subject)
# hangs on "crew" across "ate", and "all" hangs on "lunch" across "ate".
CREW_WORDS = ["the", "crew", "all", "ate", "lunch", "alone"]
CREW_HEADS = [2, 4, 5, 0, 4, 2]
# Intervals by hand: the [1,1], crew [1,6] (the, crew, alone), all [3,3], ate [1,6],
# lunch [3,5] (all, lunch), alone [6,6]. Row i sees column j iff i lies in j's interval.
CREW_SPAN = np.array([
    # the crew all ate lunch alone
    [1, 1, 0, 1, 0, 0],   # the: itself, crew, ate (= its ancestors)
    [0, 1, 0, 1, 0, 0],   # crew: itself, ate
    [0, 1, 1, 1, 1, 0],   # all: crew (unrelated: not its ancestor), ate, lunch, itself
    [0, 1, 0, 1, 1, 0],   # ate (root): crew and lunch, its own descendants
    [0, 1, 0, 1, 1, 0],   # lunch: crew (unrelated), ate, itself
    [0, 1, 0, 1, 0, 1],   # alone: crew, ate, itself
], dtype=np.uint8)


def test_sdoi_span_interval_on_a_non_projective_tree() -> None:
    span = span_interval_mask(CREW_HEADS)
    np.testing.assert_array_equal(span, CREW_SPAN)
    paper = sdoi_mask(CREW_HEADS)
    assert paper[3].tolist() == [0, 0, 0, 1, 0, 0]       # the paper: the root sees itself only
    extra = {(CREW_WORDS[i], CREW_WORDS[j]) for i, j in zip(*np.nonzero(span & ~paper))}
    assert extra == {("ate", "crew"), ("ate", "lunch"), ("lunch", "crew"), ("all", "crew")}
    assert not (paper & ~span).any()                      # every ancestor lies in the interval


def test_sdoi_span_interval_without_leaf_self_loops() -> None:
    span = span_interval_mask(CREW_HEADS, leaf_self_loops=False)
    leaves = [0, 2, 5]                                    # the, all, alone: one-word intervals
    expected = CREW_SPAN.copy()
    expected[:, leaves] = 0
    np.testing.assert_array_equal(span, expected)
    assert np.diag(span).tolist() == [0, 1, 0, 1, 1, 0]   # words with dependents keep theirs
    assert span[0].tolist() == [0, 1, 0, 1, 0, 0]         # a leaf still sees its ancestors


def test_sdoi_span_interval_equals_the_paper_on_projective_trees() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 25))
        heads = _random_projective_heads(rng, 1, n)
        np.testing.assert_array_equal(span_interval_mask(heads), sdoi_mask(heads))


def _random_projective_heads(rng: np.random.Generator, lo: int, hi: int, parent: int = 0) -> list[int]:
    """Heads (1-based) of a random projective tree over words lo..hi under ``parent``."""
    heads = [0] * (hi - lo + 1)

    def build(a: int, b: int, head: int) -> None:
        if a > b:
            return
        root = int(rng.integers(a, b + 1))
        heads[root - lo] = head
        build(a, root - 1, root)
        build(root + 1, b, root)

    build(lo, hi, parent)
    return heads


def test_sdoi_span_interval_reproduces_convert_span_example() -> None:
    # The heads and spans of the self-test in the authors' convert_span.py (1-based, inclusive).
    heads = [2, 3, 0, 7, 7, 7, 3, 7, 10, 8, 7, 13, 11, 13, 3]
    spans = [(1, 1), (1, 2), (1, 15), (4, 4), (5, 5), (6, 6), (4, 14), (8, 10), (9, 9), (9, 10),
             (11, 14), (12, 12), (12, 14), (14, 14), (15, 15)]
    m = span_interval_mask(heads)
    for j, (a, b) in enumerate(spans):
        assert np.flatnonzero(m[:, j]).tolist() == list(range(a - 1, b)), j


def test_sdoi_span_interval_checks_heads() -> None:
    assert span_interval_mask([]).shape == (0, 0)
    assert span_interval_mask([0], leaf_self_loops=False).tolist() == [[0]]
    with pytest.raises(DataError, match="cycle"):
        span_interval_mask([2, 3, 1])


def test_sdoi_relation_option_and_entry_keys() -> None:
    default = SdoiFeature()
    # The default's parameters, and so its entry key, are those of every sdoi entry built
    # before the relation option existed.
    assert params_key(default.params()) == params_key(
        {"relation": "ancestor-or-self", "roots": "forest-per-tree", "dtype": "uint8"})
    assert params_key(default.params()) == "4c0cd6d1eb6806971e516f63e48236a3"
    assert entry_key("sdoi", 1, default.params(), "p") == entry_key(
        "sdoi", 1, {"dtype": "uint8", "relation": "ancestor-or-self", "roots": "forest-per-tree"}, "p")
    span, no_leaf = SdoiFeature(relation="span-interval"), SdoiFeature("span-interval", leaf_self_loops=False)
    assert span.params() == {"relation": "span-interval", "leaf_self_loops": True,
                             "roots": "forest-per-tree", "dtype": "uint8"}
    assert len({params_key(f.params()) for f in (default, span, no_leaf)}) == 3
    parse = make_parse(CREW_WORDS, CREW_HEADS)
    np.testing.assert_array_equal(span.compute([parse])[0]["sdoi"], CREW_SPAN)
    np.testing.assert_array_equal(default.compute([parse])[0]["sdoi"], sdoi_mask(CREW_HEADS))
    assert no_leaf.compute([parse])[0]["sdoi"][0, 0] == 0
    with pytest.raises(PriorError, match="unknown relation 'subtree'"):
        SdoiFeature(relation="subtree")
    with pytest.raises(PriorError, match="span-interval only"):
        SdoiFeature(leaf_self_loops=False)
    with pytest.raises(PriorError, match="true or false"):
        SdoiFeature(relation="span-interval", leaf_self_loops="no")  # type: ignore[arg-type]

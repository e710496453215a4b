"""SG-Net's SDOI mask: ancestors-or-self per word, on hand-built trees."""

from __future__ import annotations

import numpy as np
import pytest

from featurestore.errors import DataError, PriorError
from pipeline.features.base import Feature
from pipeline.features.sdoi import SdoiFeature, sdoi_mask
from pipeline.parsers.base import Parse


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

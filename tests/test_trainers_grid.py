"""Grid placement of each feature on a hand-made pair: a word split into several pieces,
truncation and special tokens (FORMULAS.md, token grid conventions)."""

from __future__ import annotations

import numpy as np
import pytest

from prior.layouts.ragged import Ragged
from prior.trainers.grid import mask_grid, pair_grid, word_rows
from prior.trainers.tokens import encode_pairs
from tests.trainers_fixtures import tiny_tokenizer

A = ["the", "unbelievable", "cat"]  # "unbelievable" → un ##believ ##able
B = ["a", "dog", "sat"]
S = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6], [0.7, 0.8, 0.9]], dtype=np.float32)  # A × B


def encode(max_length: int = 64):
    enc = encode_pairs(tiny_tokenizer(), [A], [B], max_length)
    L = int(enc.lengths[0])
    return enc.seg[:, :L], enc.wid[:, :L], enc


def test_grid_positions_of_pieces_and_specials() -> None:
    seg, wid, enc = encode()
    tokens = tiny_tokenizer().convert_ids_to_tokens(enc.input_ids[0].tolist())
    assert tokens == ["[CLS]", "the", "un", "##believ", "##able", "cat", "[SEP]", "a", "dog", "sat", "[SEP]"]
    assert seg[0].tolist() == [-1, 0, 0, 0, 0, 0, -1, 1, 1, 1, -1]
    assert wid[0].tolist() == [-1, 0, 1, 1, 1, 2, -1, 0, 1, 2, -1]


def test_grid_pair_matrix_copied_to_every_piece_and_transposed() -> None:
    seg, wid, _ = encode()
    grid = pair_grid(seg, wid, Ragged.from_arrays([S], np.float32), np.array([0]))[0]
    T = grid.shape[0]
    pos_a = {0: [1], 1: [2, 3, 4], 2: [5]}
    pos_b = {0: [7], 1: [8], 2: [9]}
    for a, ps in pos_a.items():
        for b, qs in pos_b.items():
            for p in ps:
                for q in qs:
                    assert grid[p, q] == S[a, b]  # A × B block
                    assert grid[q, p] == S[a, b]  # B × A block holds Sᵀ
    cross = np.zeros((T, T), dtype=bool)
    cross[np.ix_([1, 2, 3, 4, 5], [7, 8, 9])] = True
    cross |= cross.T
    assert (grid[~cross] == 1.0).all()  # within a sentence, [CLS], [SEP]: neutral 1


def test_grid_truncation_cuts_the_feature_as_the_input() -> None:
    # 8 pieces: [CLS] the un ##believ [SEP] a dog [SEP] after longest_first truncation
    seg, wid, enc = encode(max_length=8)
    tokens = tiny_tokenizer().convert_ids_to_tokens(enc.input_ids[0, :8].tolist())
    assert tokens == ["[CLS]", "the", "un", "##believ", "[SEP]", "a", "dog", "[SEP]"]
    grid = pair_grid(seg, wid, Ragged.from_arrays([S], np.float32), np.array([0]))[0]
    assert grid[3, 6] == S[1, 1]  # the cut word keeps its value on its remaining pieces
    assert grid[1, 5] == S[0, 0] and grid[6, 2] == S[1, 1]
    assert grid.shape == (8, 8)


def test_grid_sdoi_mask_block_diagonal_with_self_loops() -> None:
    seg, wid, _ = encode()
    ma = np.array([[1, 1, 0], [0, 1, 0], [0, 1, 1]], dtype=np.uint8)  # "the"→unbelievable, cat→unbelievable
    mb = np.array([[1, 1, 1], [0, 1, 1], [0, 0, 1]], dtype=np.uint8)
    masks = Ragged.from_arrays([ma, mb], np.uint8)
    grid = mask_grid(seg, wid, masks, np.array([0]), np.array([1]))[0]
    T = grid.shape[0]
    assert grid[1, 2] and grid[1, 3] and grid[1, 4]  # the → all pieces of unbelievable
    assert grid[2, 3] and grid[4, 2]  # pieces of one word see each other (M[i, i] = 1)
    assert not grid[2, 1] and not grid[5, 1]  # no edge to "the"
    assert grid[5, 4]  # cat → unbelievable
    assert grid[7, 9] and not grid[9, 7]
    assert not grid[np.ix_([1, 2, 3, 4, 5], [7, 8, 9])].any()  # no cross-sentence attention
    for special in (0, 6, 10):
        row = np.zeros(T, dtype=bool)
        row[special] = True
        assert (grid[special] == row).all()  # specials attend to themselves only


def test_grid_word_rows_for_embeddings() -> None:
    seg, wid, _ = encode()
    ids = Ragged.from_arrays([np.array([5, -1, 7]), np.array([1, 2, 3])], np.int64)
    rows = word_rows(seg, wid, ids, np.array([0]), np.array([1]))[0]
    assert rows.tolist() == [-1, 5, -1, -1, -1, 7, -1, 1, 2, 3, -1]


def test_grid_padding_in_a_batch_is_neutral() -> None:
    enc = encode_pairs(tiny_tokenizer(), [A, ["the"]], [B, ["dog"]], 64)
    T = int(enc.lengths.max())
    seg, wid = enc.seg[:, :T], enc.wid[:, :T]
    mats = Ragged.from_arrays([S, np.array([[0.25]], dtype=np.float32)], np.float32)
    grid = pair_grid(seg, wid, mats, np.array([0, 1]))
    assert grid[1, 1, 3] == 0.25 and grid[1, 3, 1] == 0.25
    assert (grid[1, 5:, :] == 1).all() and (grid[1, :, 5:] == 1).all()
    m = mask_grid(seg, wid, Ragged.from_arrays([np.ones((3, 3)), np.ones((1, 1))], np.uint8),
                  np.array([0, 1]), np.array([0, 1]))
    assert (m[1, 7] == np.eye(T, dtype=bool)[7]).all()  # a pad position: itself only


def test_grid_word_beyond_stored_matrix_is_an_error() -> None:
    seg, wid, _ = encode()
    with pytest.raises(ValueError, match="different words"):
        pair_grid(seg, wid, Ragged.from_arrays([S[:2]], np.float32), np.array([0]))


def test_grid_agrees_with_align_expand() -> None:
    """The batch-vectorized gathers give what tests/reference_align.py gives pair by pair."""
    from tests.reference_align import expand_pair_to_pieces

    tok = tiny_tokenizer()
    enc = tok([A], [B], is_split_into_words=True)
    seg, wid, _ = encode()
    va, vb = np.array([3, -1, 7]), np.array([1, 2, 4])
    expected = expand_pair_to_pieces(enc.word_ids(0), enc.sequence_ids(0), va, vb, fill=-1)
    got = word_rows(seg, wid, Ragged.from_arrays([va, vb], np.int64), np.array([0]), np.array([1]))[0]
    assert got.tolist() == expected.tolist()

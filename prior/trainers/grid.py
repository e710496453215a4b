"""Word-level features → word-piece tensors in the ``[CLS] A [SEP] B [SEP]`` grid.

The store holds word-level values; a trainer aligns them to any tokenizer through the fast
tokenizer's ``word_ids`` (FORMULAS.md, "Token grid conventions"):

- every word piece takes its word's value (its row and its column in a matrix);
- special tokens and padding take the feature's neutral value: 1 for a multiplicative matrix
  (bert-sim, dafa), "itself only" for a mask (sgnet), a zero vector for embeddings (gibert);
- truncation cuts the feature exactly as it cuts the input: a kept piece keeps its word index,
  so values never shift (the bug of cropping a matrix's top-left corner cannot happen).

Token positions are described by two int arrays of shape (B, T): ``seg`` (0 = a piece of
sentence A, 1 = of B, -1 = special token or padding) and ``wid`` (the piece's word index in
its own sentence, -1 for special tokens and padding), from :func:`token_positions`.

Word-level values live in one ragged array (`prior.layouts.ragged.Ragged`: flat values with
per-item offsets and shapes); a batch's grid is filled once with the neutral value, then each
pair's blocks are gathered at its pieces' word indices: a loop over the batch's pairs, each
step vectorized, never a loop over cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prior.layouts.ragged import Ragged


def token_positions(word_ids: Sequence[int | None], sequence_ids: Sequence[int | None],
                    length: int) -> tuple[np.ndarray, np.ndarray]:
    """(seg, wid) rows of one encoded pair, padded with -1 to ``length``."""
    seg = np.full(length, -1, dtype=np.int8)
    wid = np.full(length, -1, dtype=np.int32)
    n = len(word_ids)
    seg[:n] = [-1 if s is None else s for s in sequence_ids]
    wid[:n] = [-1 if w is None else w for w in word_ids]
    wid[seg < 0] = -1
    return seg, wid


def _check_words(wid: np.ndarray, mask: np.ndarray, limit: np.ndarray, what: str) -> None:
    """Every word index used must exist in the stored matrix (else the store and the words
    disagree: a different parse, or a stale entry)."""
    if mask.any() and (wid[mask] >= np.broadcast_to(limit, wid.shape)[mask]).any():
        raise ValueError(f"a word piece points at a word beyond the stored {what}: the store's "
                         "feature was computed from different words than the parse read")


def _span(positions: np.ndarray) -> slice | np.ndarray:
    """The token positions of one sentence of a pair: a slice when they are consecutive (every
    ``[CLS] A [SEP] B [SEP]`` layout), else the positions."""
    if len(positions) and positions[-1] - positions[0] + 1 == len(positions):
        return slice(int(positions[0]), int(positions[-1]) + 1)
    return positions


def _item(ragged: Ragged, i: int) -> np.ndarray:
    """Item ``i`` of a (possibly padded) ragged array, as a matrix."""
    o, r, c = int(ragged.offsets[i]), int(ragged.rows[i]), int(ragged.cols[i])
    return ragged.values[o:o + r * c].reshape(r, c)


def pair_grid(seg: np.ndarray, wid: np.ndarray, pairs: Ragged, index: np.ndarray,
              neutral: float = 1.0) -> np.ndarray:
    """(B, T, T) float32 grid from per-pair n×m matrices (A words × B words).

    Cell (p, q) holds W[wid p, wid q] when p is in A and q in B, W[wid q, wid p] when p is in
    B and q in A (the transpose block), and ``neutral`` everywhere else (within a sentence,
    special tokens, padding). ``index`` (B,) selects the batch's pairs in ``pairs``.

    How: the grid is filled with ``neutral`` once, then each pair's A×B block is W gathered at
    its pieces' word indices (``W[wid_A][:, wid_B]``) and written with its transpose, so the
    work is the grid's one fill and the pairs' cross blocks (a per-batch loop over pairs, each
    step vectorized): at 128 pieces about 5× fewer passes than gathering every cell.
    """
    _check_words(wid, seg == 0, pairs.rows[index][:, None], "matrix rows")
    _check_words(wid, seg == 1, pairs.cols[index][:, None], "matrix columns")
    grid = np.full(seg.shape + seg.shape[1:], neutral, dtype=np.float32)  # (B, T, T)
    for i, p in enumerate(np.asarray(index).tolist()):
        a, b = np.flatnonzero(seg[i] == 0), np.flatnonzero(seg[i] == 1)
        if len(a) and len(b):
            block = _item(pairs, p)[np.ix_(wid[i, a], wid[i, b])]  # (|A pieces|, |B pieces|)
            rows, cols = _span(a), _span(b)
            grid[i][_cells(rows, cols)] = block
            grid[i][_cells(cols, rows)] = block.T
    return grid


def _cells(rows: slice | np.ndarray, cols: slice | np.ndarray) -> Any:
    """The index of a block of a (T, T) grid: slices, or an open mesh of positions."""
    if isinstance(rows, slice) and isinstance(cols, slice):
        return rows, cols
    r = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
    c = np.arange(cols.start, cols.stop) if isinstance(cols, slice) else cols
    return np.ix_(r, c)


def mask_grid(seg: np.ndarray, wid: np.ndarray, sentences: Ragged, index_a: np.ndarray,
              index_b: np.ndarray) -> np.ndarray:
    """(B, T, T) bool "may attend" grid from per-sentence n×n masks (SG-Net's SDOI).

    Block-diagonal: a piece of A sees A's mask at its word's row, a piece of B sees B's; no
    cross-sentence cell is set; [CLS], [SEP] and [PAD] attend to themselves only. ``index_a``
    and ``index_b`` (B,) select each pair's two sentences in ``sentences``. As :func:`pair_grid`:
    each sentence's block gathered at its pieces' word indices, on a grid of the diagonal.
    """
    B, T = seg.shape
    _check_words(wid, seg == 0, sentences.rows[index_a][:, None], "sentence A mask")
    _check_words(wid, seg == 1, sentences.rows[index_b][:, None], "sentence B mask")
    grid = np.broadcast_to(np.eye(T, dtype=bool), (B, T, T)).copy()  # every position sees itself
    for i in range(B):
        for side, which in ((0, index_a), (1, index_b)):
            pos = np.flatnonzero(seg[i] == side)
            if len(pos):
                span = _span(pos)
                grid[i][_cells(span, span)] |= _item(sentences, int(which[i]))[np.ix_(wid[i, pos], wid[i, pos])] != 0
    return grid


def word_rows(seg: np.ndarray, wid: np.ndarray, sentences: Ragged,
              index_a: np.ndarray, index_b: np.ndarray, missing: int = -1) -> np.ndarray:
    """(B, T) int64: for each piece, its word's entry in a per-sentence vector (e.g. an
    embedding vocabulary id); ``missing`` for special tokens and padding."""
    wid64 = wid.astype(np.int64)
    _check_words(wid, seg == 0, sentences.rows[index_a][:, None], "sentence A vector")
    _check_words(wid, seg == 1, sentences.rows[index_b][:, None], "sentence B vector")
    flat = np.where(seg == 0, sentences.offsets[index_a][:, None] + wid64,
                    sentences.offsets[index_b][:, None] + wid64)  # (B, T)
    out = np.full(seg.shape, missing, dtype=np.int64)
    words = seg >= 0
    out[words] = sentences.values[flat[words]]
    return out

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
per-item offsets and shapes); a batch's grid is one gather from the flat values at positions
computed from the pieces' word indices, for the whole batch at once: no loop over pairs or
cells.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def _flat_index(size: int) -> type[np.integer]:
    """The narrowest index type that reaches ``size`` values (int32 halves a gather's passes)."""
    return np.int32 if size < 2**31 - 1 else np.int64


def pair_grid(seg: np.ndarray, wid: np.ndarray, pairs: Ragged, index: np.ndarray,
              neutral: float = 1.0) -> np.ndarray:
    """(B, T, T) float32 grid from per-pair n×m matrices (A words × B words).

    Cell (p, q) holds W[wid p, wid q] when p is in A and q in B, W[wid q, wid p] when p is in
    B and q in A (the transpose block), and ``neutral`` everywhere else (within a sentence,
    special tokens, padding). ``index`` (B,) selects the batch's pairs in ``pairs``.

    How: one gather for the whole batch. A piece of A at word w stands for the row offset
    ``w·m`` of its pair's matrix, a piece of B for the column ``w``; a cross cell's value is
    at its pair's offset plus the two, in either order, so the grid is the flat values taken
    at ``offset + u[p] + u[q]`` where p and q lie in different sentences, and at the fill
    value (`Ragged.with_fill`) or ``neutral`` elsewhere: a few passes over B·T·T integers,
    no loop over pairs.
    """
    _check_words(wid, seg == 0, pairs.rows[index][:, None], "matrix rows")
    _check_words(wid, seg == 1, pairs.cols[index][:, None], "matrix columns")
    return _cross_gather(seg, wid, pairs, np.asarray(index, dtype=np.int64), neutral)


def _cross_gather(seg: np.ndarray, wid: np.ndarray, pairs: Ragged, index: np.ndarray, neutral: float) -> np.ndarray:
    """:func:`pair_grid`'s gather (its docstring)."""
    itype = _flat_index(len(pairs.values) + 1)
    cols = pairs.cols[index].astype(itype)[:, None]
    words = wid.astype(itype)
    u = np.where(seg == 0, words * cols, np.where(seg == 1, words, 0))  # (B, T)
    u += pairs.offsets[index].astype(itype)[:, None] * (seg == 0)  # the pair's offset, counted once (on A)
    seg8 = seg.astype(np.int8)
    cross = (seg8[:, :, None] + seg8[:, None, :]) == 1  # one piece in A, the other in B
    flat = u[:, :, None] + u[:, None, :]
    flat *= cross  # cells within a sentence read position 0
    grid = pairs.values.take(flat)
    filled = pairs.padded and len(pairs.values) and pairs.values[0] == np.float32(neutral)
    if not filled:  # position 0 is not the neutral value: set those cells
        grid = np.where(cross, grid, np.float32(neutral))
    return grid.astype(np.float32, copy=False)


def mask_grid(seg: np.ndarray, wid: np.ndarray, sentences: Ragged, index_a: np.ndarray,
              index_b: np.ndarray) -> np.ndarray:
    """(B, T, T) bool "may attend" grid from per-sentence n×n masks (SG-Net's SDOI).

    Block-diagonal: a piece of A sees A's mask at its word's row, a piece of B sees B's; no
    cross-sentence cell is set; [CLS], [SEP] and [PAD] attend to themselves only. ``index_a``
    and ``index_b`` (B,) select each pair's two sentences in ``sentences``. As :func:`pair_grid`:
    one gather for the whole batch, at ``offset + w_p·n + w_q`` where p and q lie in the same
    sentence, on a grid of the diagonal.
    """
    T = seg.shape[1]
    _check_words(wid, seg == 0, sentences.rows[index_a][:, None], "sentence A mask")
    _check_words(wid, seg == 1, sentences.rows[index_b][:, None], "sentence B mask")
    itype = _flat_index(len(sentences.values) + 1)
    words = wid.astype(itype)
    a, b = np.asarray(index_a, dtype=np.int64), np.asarray(index_b, dtype=np.int64)
    width = np.where(seg == 0, sentences.cols[a].astype(itype)[:, None], sentences.cols[b].astype(itype)[:, None])
    base = np.where(seg == 0, sentences.offsets[a].astype(itype)[:, None], sentences.offsets[b].astype(itype)[:, None])
    row = base + words * width  # where a piece's row starts in its sentence's mask
    same = (seg[:, :, None] == seg[:, None, :]) & (seg >= 0)[:, :, None]  # (B, T, T): one sentence
    flat = row[:, :, None] + words[:, None, :]
    np.multiply(flat, same, out=flat)
    grid: np.ndarray = (sentences.values.take(flat) != 0) & same
    grid |= np.eye(T, dtype=bool)  # every position sees itself
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

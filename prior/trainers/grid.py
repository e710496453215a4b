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

Word-level values of a whole split live in one ragged array (`prior.layouts.ragged.Ragged`: flat
values with per-item offsets and shapes), so building a batch's grids is a handful of
vectorized numpy gathers over (B, T, T), with no Python loop over cells or pairs.
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


_FAR = np.int64(2**29)  # "not in this sentence": sums with it stay negative


def _index_dtype(values: np.ndarray) -> type:
    return np.int32 if values.size < int(_FAR) else np.int64


def _starts(seg: np.ndarray, wid: np.ndarray, which: int, offsets: np.ndarray, cols: np.ndarray,
            it: type) -> tuple[np.ndarray, np.ndarray]:
    """(row start, column) of each piece in its sentence's matrix; −2^29 off the sentence."""
    inside = seg == which
    row: np.ndarray = np.where(inside, offsets[:, None] + wid * cols[:, None], -_FAR).astype(it)  # (B, T)
    col: np.ndarray = np.where(inside, wid, -_FAR).astype(it)  # (B, T)
    return row, col


def pair_grid(seg: np.ndarray, wid: np.ndarray, pairs: Ragged, index: np.ndarray,
              neutral: float = 1.0) -> np.ndarray:
    """(B, T, T) float32 grid from per-pair n×m matrices (A words × B words).

    Cell (p, q) holds W[wid p, wid q] when p is in A and q in B, W[wid q, wid p] when p is in
    B and q in A (the transpose block), and ``neutral`` everywhere else (within a sentence,
    special tokens, padding). ``index`` (B,) selects the batch's pairs in ``pairs``.

    How, in four passes over (B, T, T) with no boolean indexing: a piece of A contributes its
    row start ``off + 1 + wid·m`` (else −2^29), a piece of B its column ``wid`` (else −2^29);
    the cell index is max(row p, row q) + max(col p, col q), which is W's entry for the two
    cross blocks (the transpose comes for free) and negative elsewhere, where the clipped
    gather reads the ``neutral`` value placed in front of the flat values (`Ragged.with_fill`;
    pass one filled once per split to avoid re-padding per batch).
    """
    _check_words(wid, seg == 0, pairs.rows[index][:, None], "matrix rows")
    _check_words(wid, seg == 1, pairs.cols[index][:, None], "matrix columns")
    pairs = pairs.with_fill(neutral)
    it = _index_dtype(pairs.values)
    row, _ = _starts(seg, wid, 0, pairs.offsets[index], pairs.widths[index], it)
    _, col = _starts(seg, wid, 1, pairs.offsets[index], pairs.widths[index], it)
    flat = np.maximum(row[:, :, None], row[:, None, :])  # (B, T, T)
    flat += np.maximum(col[:, :, None], col[:, None, :])
    return np.take(pairs.values, flat, mode="clip").astype(np.float32, copy=False)


def mask_grid(seg: np.ndarray, wid: np.ndarray, sentences: Ragged, index_a: np.ndarray,
              index_b: np.ndarray) -> np.ndarray:
    """(B, T, T) bool "may attend" grid from per-sentence n×n masks (SG-Net's SDOI).

    Block-diagonal: a piece of A sees A's mask at its word's row, a piece of B sees B's; no
    cross-sentence cell is set; [CLS], [SEP] and [PAD] attend to themselves only. ``index_a``
    and ``index_b`` (B,) select each pair's two sentences in ``sentences``. Same gather trick
    as :func:`pair_grid`, with 0 ("not allowed") in front.
    """
    T = seg.shape[1]
    _check_words(wid, seg == 0, sentences.rows[index_a][:, None], "sentence A mask")
    _check_words(wid, seg == 1, sentences.rows[index_b][:, None], "sentence B mask")
    sentences = sentences.with_fill(0)
    it = _index_dtype(sentences.values)
    widths = sentences.widths
    row_a, col_a = _starts(seg, wid, 0, sentences.offsets[index_a], widths[index_a], it)
    row_b, col_b = _starts(seg, wid, 1, sentences.offsets[index_b], widths[index_b], it)
    flat = row_a[:, :, None] + col_a[:, None, :]  # (B, T, T) valid only for A×A cells
    np.maximum(flat, row_b[:, :, None] + col_b[:, None, :], out=flat)  # or B×B cells
    grid = np.take(sentences.values, flat, mode="clip") != 0
    grid |= np.eye(T, dtype=bool)  # every position sees itself (specials: only itself)
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

"""Word → word-piece alignment through a fast tokenizer's ``word_ids`` (numpy only).

The store holds one value per word; a model needs one per word piece. A fast tokenizer's
``encoding.word_ids()`` gives, for every piece, the index of the word it came from (``None``
for special tokens; with ``is_split_into_words=True`` the index is the position in the word
list given) and ``sequence_ids()`` tells sentence A (0) from B (1). Rules (FORMULAS.md, token
grid conventions; GiBERT's alignment):

- every piece of a word gets that word's value (a word split in several pieces repeats it);
- special tokens, padding and anything without a word get ``fill`` (0: a zero vector);
- a word the tokenizer drops (it yields no piece, e.g. a lone control character) simply
  has no position: the values of the other words keep their places;
- an id of -1 in a vocabulary lookup (a word without a vector) gives a zero vector.

Imports nothing but numpy, so trainers can use it (they import only featurestore).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _as_index(word_ids: Sequence[int | None] | np.ndarray) -> np.ndarray:
    return np.array([-1 if w is None else int(w) for w in word_ids], dtype=np.int64)


def expand_to_pieces(word_ids_of_pieces: Sequence[int | None] | np.ndarray, values: np.ndarray,
                     fill: float = 0) -> np.ndarray:
    """Per-piece values: ``out[p] = values[word_ids_of_pieces[p]]``; ``fill`` for None / -1.

    ``values`` has one leading row per word (any trailing shape: a weight, a vector);
    the result has one row per piece and the same trailing shape and dtype.
    """
    values = np.asarray(values)
    idx = _as_index(word_ids_of_pieces)
    if len(idx) and idx.max(initial=-1) >= len(values):
        raise IndexError(f"word id {int(idx.max())} for only {len(values)} word values: the "
                         "tokenizer was given other words than those the values belong to")
    out = np.full((len(idx), *values.shape[1:]), fill, dtype=values.dtype)
    present = idx >= 0
    out[present] = values[idx[present]]
    return out


def expand_pair_to_pieces(word_ids_of_pieces: Sequence[int | None], sequence_ids: Sequence[int | None],
                          values_a: np.ndarray, values_b: np.ndarray, fill: float = 0) -> np.ndarray:
    """Per-piece values of an encoded pair: pieces of A from ``values_a``, of B from ``values_b``."""
    idx = _as_index(word_ids_of_pieces)
    seq = _as_index(sequence_ids)
    a = expand_to_pieces(np.where(seq == 0, idx, -1), values_a, fill)
    b = expand_to_pieces(np.where(seq == 1, idx, -1), values_b, fill)
    return np.where((seq == 1).reshape(-1, *([1] * (a.ndim - 1))), b, a)


def lookup_vectors(ids: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Rows of an embedding ``table`` (V × d) for vocabulary ``ids``; -1 gives a zero vector."""
    ids = np.asarray(ids, dtype=np.int64)
    out = np.zeros((*ids.shape, table.shape[1]), dtype=table.dtype)
    present = ids >= 0
    out[present] = table[ids[present]]
    return out

"""Word pieces for stored words: every pair tokenized once, each piece keeping its word's index.

`encode_pairs` runs a fast tokenizer on the stored words, ``tokenizer(words_a, words_b,
is_split_into_words=True, truncation="longest_first")``, so that ``word_ids`` map each word
piece to the stored word index (``wid``) and its sentence (``seg``: 0 = A, 1 = B, -1 =
special token or padding). Truncation drops pieces from the end of the longer sentence;
every kept piece keeps its word index, so a feature is cut exactly as the input is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prior.featurestore.errors import PriorError
from prior.trainers.grid import token_positions


@dataclass(frozen=True)
class Encoded:
    """A split tokenized once: (N, L) arrays padded to the longest pair, and lengths."""

    input_ids: np.ndarray  # int32 (N, L)
    token_type_ids: np.ndarray  # int8 (N, L)
    lengths: np.ndarray  # int32 (N,)
    seg: np.ndarray  # int8 (N, L): 0 = A, 1 = B, -1 = special/pad
    wid: np.ndarray  # int32 (N, L): word index in its sentence, -1 = special/pad


def encode_pairs(tokenizer: Any, words_a: Sequence[Sequence[str]], words_b: Sequence[Sequence[str]],
                 max_length: int, chunk: int = 2048) -> Encoded:
    """Tokenize pairs of word lists with a fast tokenizer, keeping each piece's word index."""
    if not getattr(tokenizer, "is_fast", False):
        raise PriorError(f"{type(tokenizer).__name__} is not a fast tokenizer: word_ids are needed "
                         "to align word-level features; use a backbone with a tokenizer.json")
    ids: list[list[int]] = []
    types: list[list[int]] = []
    positions: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, len(words_a), chunk):
        a = [list(w) for w in words_a[start:start + chunk]]
        b = [list(w) for w in words_b[start:start + chunk]]
        enc = tokenizer(a, b, is_split_into_words=True, truncation="longest_first",
                        max_length=max_length, return_token_type_ids=True)
        for i in range(len(a)):
            row = enc["input_ids"][i]
            ids.append(row)
            types.append(enc["token_type_ids"][i])
            positions.append(token_positions(enc.word_ids(i), enc.sequence_ids(i), len(row)))
    n = len(ids)
    lengths = np.array([len(r) for r in ids], dtype=np.int32)
    L = int(lengths.max()) if n else 0
    input_ids = np.full((n, L), tokenizer.pad_token_id or 0, dtype=np.int32)
    token_type_ids = np.zeros((n, L), dtype=np.int8)
    seg = np.full((n, L), -1, dtype=np.int8)
    wid = np.full((n, L), -1, dtype=np.int32)
    for i, (row, tt, (s, w)) in enumerate(zip(ids, types, positions)):
        k = len(row)
        input_ids[i, :k] = row
        token_type_ids[i, :k] = tt
        seg[i, :k] = s
        wid[i, :k] = w
    return Encoded(input_ids, token_type_ids, lengths, seg, wid)

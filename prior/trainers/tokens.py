"""Word pieces for stored words: every distinct sentence tokenized once, each piece keeping its
word's index.

The result is what a fast tokenizer gives for each pair, ``tokenizer(words_a, words_b,
is_split_into_words=True, truncation="longest_first")``, with ``word_ids`` mapping each word
piece to the stored word index (``wid``) and its sentence (``seg``: 0 = A, 1 = B, -1 = special
token or padding). Truncation drops pieces from the end of the longer sentence; every kept piece
keeps its word index, so a feature is cut exactly as the input is.

A split has far fewer distinct sentences than pairs (SNLI: each premise in about three pairs),
so :func:`encode_indexed` tokenizes each distinct sentence once, without special tokens, and
assembles every pair's ``[CLS] A [SEP] B [SEP]`` row with numpy: the tokenizer's own
``longest_first`` rule (:func:`pair_budget`) and special tokens, filling preallocated compact
arrays a chunk of pairs at a time. It does so only for a tokenizer whose pair layout is BERT's
(checked on a probe pair, :func:`bert_pair_layout`); any other tokenizer encodes pair by pair
(:func:`encode_each`), which is also the reference the fast path is tested against.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from prior.errors import PriorError
from prior.featurestore.tensors import arrow_array, numpy_array
from prior.layouts.ragged import item_ranges, item_starts
from prior.trainers.grid import token_positions

#: how many sentences (or pairs) go to the tokenizer, or through numpy, at once
CHUNK = 4096


@dataclass(frozen=True)
class Encoded:
    """A split tokenized once: (N, L) arrays padded to the longest pair, and lengths."""

    input_ids: np.ndarray  # int32 (N, L)
    token_type_ids: np.ndarray  # int8 (N, L)
    lengths: np.ndarray  # int32 (N,)
    seg: np.ndarray  # int8 (N, L): 0 = A, 1 = B, -1 = special/pad
    wid: np.ndarray  # int32 (N, L): word index in its sentence, -1 = special/pad


def _check_fast(tokenizer: Any) -> None:
    if not getattr(tokenizer, "is_fast", False):
        raise PriorError(f"{type(tokenizer).__name__} is not a fast tokenizer: word_ids are needed "
                         "to align word-level features; use a backbone with a tokenizer.json")


def encode_pairs(tokenizer: Any, words_a: Sequence[Sequence[str]], words_b: Sequence[Sequence[str]],
                 max_length: int, chunk: int = CHUNK) -> Encoded:
    """Tokenize pairs of word lists with a fast tokenizer, keeping each piece's word index
    (each distinct word list once)."""
    position: dict[tuple[str, ...], int] = {}
    sentences: list[Sequence[str]] = []

    def index(side: Sequence[Sequence[str]]) -> np.ndarray:
        out = np.empty(len(side), dtype=np.int64)
        for i, words in enumerate(side):
            key = tuple(words)
            at = position.get(key)
            if at is None:
                at = position[key] = len(sentences)
                sentences.append(words)
            out[i] = at
        return out

    index_a, index_b = index(words_a), index(words_b)
    return encode_indexed(tokenizer, sentences, index_a, index_b, max_length, chunk=chunk)


def encode_indexed(tokenizer: Any, sentences: Sequence[Sequence[str]], index_a: np.ndarray,
                   index_b: np.ndarray, max_length: int, chunk: int = CHUNK) -> Encoded:
    """Pairs given as two indices into distinct ``sentences`` (word lists): pair i is
    (``sentences[index_a[i]]``, ``sentences[index_b[i]]``)."""
    _check_fast(tokenizer)
    index_a, index_b = np.asarray(index_a, dtype=np.int64), np.asarray(index_b, dtype=np.int64)
    layout = bert_pair_layout(tokenizer)
    if layout is None or max_length <= 3:
        return encode_each(tokenizer, [sentences[int(i)] for i in index_a],
                           [sentences[int(i)] for i in index_b], max_length, chunk)
    return assemble(sentence_pieces(tokenizer, sentences, chunk), index_a, index_b, max_length, layout,
                    tokenizer.pad_token_id or 0, chunk)


@dataclass(frozen=True)
class Pieces:
    """The word pieces of distinct sentences, flat: sentence i's pieces are
    ``ids[offsets[i]:offsets[i + 1]]``, each with its word index in ``wids``."""

    ids: np.ndarray  # int32, one spare 0 at the end (index 0 exists when no sentence has a piece)
    wids: np.ndarray  # int32, as ids
    offsets: np.ndarray  # int64 (S + 1,)

    def sentence(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Sentence ``i``'s (piece ids, word indices)."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.ids[lo:hi], self.wids[lo:hi]


def assemble(pieces: Pieces, index_a: np.ndarray, index_b: np.ndarray, max_length: int,
             layout: tuple[int, int], pad: int, chunk: int = CHUNK) -> Encoded:
    """``[CLS] A [SEP] B [SEP]`` rows of the pairs (``pieces`` sentence ``index_a[i]``,
    sentence ``index_b[i]``), truncated as the tokenizer's ``longest_first`` would
    (:func:`pair_budget`), ``layout`` being its (CLS id, SEP id) (:func:`bert_pair_layout`)."""
    cls_id, sep_id = layout
    ids, wids, offsets = pieces.ids, pieces.wids, pieces.offsets
    sizes = np.diff(offsets)
    keep_a, keep_b = pair_budget(sizes[index_a], sizes[index_b], max_length - 3)
    lengths = (keep_a + keep_b + 3).astype(np.int32)
    n = len(index_a)
    L = int(lengths.max()) if n else 0
    input_ids = np.full((n, L), pad, dtype=np.int32)
    token_type_ids = np.zeros((n, L), dtype=np.int8)
    seg = np.full((n, L), -1, dtype=np.int8)
    wid = np.full((n, L), -1, dtype=np.int32)
    for start in range(0, n, chunk):
        rows = slice(start, start + chunk)
        width = int(lengths[rows].max())  # the chunk's longest pair: its columns beyond stay padding
        j = np.arange(width, dtype=np.int64)[None, :]
        rows_w = (rows, slice(0, width))
        ka, kb = keep_a[rows, None], keep_b[rows, None]
        pos_a, pos_b = j - 1, j - ka - 2
        in_a = (pos_a >= 0) & (pos_a < ka)
        in_b = (pos_b >= 0) & (pos_b < kb)
        flat = np.where(in_a, offsets[index_a[rows], None] + pos_a,
                        np.where(in_b, offsets[index_b[rows], None] + pos_b, 0))
        word = in_a | in_b
        real = j < lengths[rows, None]
        input_ids[rows_w] = np.where(word, ids[flat], np.where(real, sep_id, pad))
        input_ids[rows, 0] = cls_id
        token_type_ids[rows_w] = (j >= ka + 2) & real
        seg[rows_w] = np.where(in_a, 0, np.where(in_b, 1, -1))
        wid[rows_w] = np.where(word, wids[flat], -1)
    return Encoded(input_ids, token_type_ids, lengths, seg, wid)


def pair_budget(size_a: np.ndarray, size_b: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """The pieces of A and of B that ``longest_first`` truncation keeps when a pair may hold
    ``budget`` pieces (max_length less the special tokens): nothing cut when both fit; else the
    longer one cut to what the shorter leaves, unless the shorter takes over half, when each
    keeps half (the longer one the odd piece; B when both are as long)."""
    a, b = np.asarray(size_a, dtype=np.int64), np.asarray(size_b, dtype=np.int64)
    short = np.minimum(a, b)
    keep_long = np.where(short > budget, short, np.maximum(short, budget - short))
    keep_short = short
    halves = keep_short + keep_long > budget
    keep_short = np.where(halves, budget // 2, keep_short)
    keep_long = np.where(halves, budget // 2 + budget % 2, keep_long)
    a_long = a > b  # the tokenizer swaps only when A is strictly longer
    keep_a = np.where(a_long, keep_long, keep_short)
    keep_b = np.where(a_long, keep_short, keep_long)
    fits = a + b <= budget
    return np.where(fits, a, np.minimum(a, keep_a)), np.where(fits, b, np.minimum(b, keep_b))


def bert_pair_layout(tokenizer: Any) -> tuple[int, int] | None:
    """(CLS id, SEP id) when the tokenizer lays a pair out as BERT does, ``[CLS] A [SEP] B
    [SEP]`` with type ids 0 up to the first [SEP] and 1 after it, and truncates on the right;
    None otherwise (checked on a probe pair against its own encoding)."""
    cls_id, sep_id = getattr(tokenizer, "cls_token_id", None), getattr(tokenizer, "sep_token_id", None)
    if cls_id is None or sep_id is None or getattr(tokenizer, "truncation_side", "right") != "right":
        return None
    if tokenizer.num_special_tokens_to_add(pair=True) != 3:
        return None
    a, b = ["the", "cat"], ["a", "dog", "sat"]
    bare = tokenizer([a, b], is_split_into_words=True, add_special_tokens=False)["input_ids"]
    pair = tokenizer([a], [b], is_split_into_words=True, return_token_type_ids=True)
    ids_a, ids_b = list(bare[0]), list(bare[1])
    if list(pair["input_ids"][0]) != [cls_id, *ids_a, sep_id, *ids_b, sep_id]:
        return None
    if list(pair["token_type_ids"][0]) != [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1):
        return None
    return int(cls_id), int(sep_id)


def sentence_pieces(tokenizer: Any, sentences: Sequence[Sequence[str]], chunk: int = CHUNK) -> Pieces:
    """Every sentence's word pieces without special tokens (:class:`Pieces`), by the fast
    tokenizer's backend, untruncated: a pair is cut to ``max_length`` afterwards, so
    transformers' warning about sequences longer than the model's maximum (meant for inputs
    that would reach the model whole) would be wrong here, and is never triggered."""
    backend = tokenizer.backend_tokenizer
    truncation, padding = backend.truncation, backend.padding
    backend.no_truncation()
    backend.no_padding()
    ids: list[list[int]] = []
    wids: list[list[int]] = []
    try:
        for start in range(0, len(sentences), chunk):
            words = [list(w) for w in sentences[start:start + chunk]]
            for enc in backend.encode_batch(words, is_pretokenized=True, add_special_tokens=False):
                ids.append(enc.ids)
                wids.append(enc.word_ids)
    finally:
        if truncation is not None:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)
    # flattened once, not an array per sentence: a loader worker tokenizes every distinct word
    # of the split this way (one word per "sentence"), 2.6x faster
    offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)), out=offsets[1:])
    total = int(offsets[-1])
    flat_ids = np.zeros(total + 1, dtype=np.int32)  # one spare 0 at the end (`Pieces.ids`)
    flat_wids = np.zeros(total + 1, dtype=np.int32)
    flat_ids[:total] = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int32, count=total)
    flat_wids[:total] = np.fromiter(itertools.chain.from_iterable(wids), dtype=np.int32, count=total)
    return Pieces(flat_ids, flat_wids, offsets)


class WordPieces:
    """Word pieces of distinct words, each word tokenized once and kept (at most ``max_words``).

    A fast tokenizer encodes a pre-split sentence word by word: each word is normalized,
    pre-tokenized and split into pieces on its own, and the sentence's encoding is the words'
    encodings one after the other (the ``tokenizers`` library's ``encode`` of a pre-tokenized
    input). So a sentence's pieces are its words' pieces, looked up, and a split with a few
    thousand distinct words among millions of word tokens is tokenized a word at a time:
    :meth:`sentences` assembles whole sentences with numpy (:func:`sentence_pieces` is the
    reference it is tested against)."""

    def __init__(self, tokenizer: Any, max_words: int = 1 << 18) -> None:
        _check_fast(tokenizer)
        self.tokenizer, self.max_words = tokenizer, max_words
        self.generation = -1
        self.clear()

    def clear(self) -> None:
        """Forget every word: the numbers given so far mean nothing from now on (``generation``
        counts the fresh starts, so that words kept as numbers elsewhere can be told stale)."""
        self.generation += 1
        self.known = _large_strings([])  # the known words, by number
        self.ids = np.zeros(0, dtype=np.int32)  # the known words' pieces, one after the other
        self.starts = np.zeros(0, dtype=np.int64)  # where word k's pieces start in ids
        self.counts = np.zeros(0, dtype=np.int64)  # word k's piece count

    def __len__(self) -> int:
        return len(self.known)

    def lookup(self, words: Sequence[str] | pa.Array) -> np.ndarray:
        """The numbers of distinct ``words`` (int64), tokenizing those not known yet. The known
        words are found by one vectorized lookup (Arrow's ``index_in``), not a dictionary
        lookup per word: a loader window holds thousands of distinct words."""
        values = _large_strings(words)
        if len(self.known) + len(values) > self.max_words:
            self.clear()  # a bound on the memory: start over rather than grow
        found = np.nan_to_num(numpy_array(pc.index_in(values, value_set=self.known)), nan=-1).astype(np.int64)
        missing = np.flatnonzero(found < 0)
        if len(missing):
            new = values.take(arrow_array(missing))
            pieces = _bare_pieces(self.tokenizer, [[w] for w in new.to_pylist()])
            first = len(self.counts)
            found[missing] = np.arange(first, first + len(missing))
            self.known = pa.concat_arrays([self.known, new])
            sizes = np.diff(pieces.offsets)
            self.starts = np.concatenate([self.starts, len(self.ids) + pieces.offsets[:-1]])
            self.counts = np.concatenate([self.counts, sizes])
            self.ids = np.concatenate([self.ids, pieces.ids[:-1]])
        return found

    def sentences(self, numbers: np.ndarray, word_counts: np.ndarray) -> Pieces:
        """The :class:`Pieces` of sentences given as their words' numbers (:meth:`lookup`), one
        sentence after the other, sentence i having ``word_counts[i]`` words."""
        numbers = np.asarray(numbers, dtype=np.int64)
        word_counts = np.asarray(word_counts, dtype=np.int64)
        sizes = self.counts[numbers]  # pieces per word token
        total = int(sizes.sum())
        ids = np.zeros(total + 1, dtype=np.int32)  # one spare 0 at the end (`Pieces.ids`)
        ids[:total] = self.ids[item_ranges(self.starts[numbers], sizes)]
        word_starts = item_starts(word_counts)
        in_sentence = np.arange(len(numbers), dtype=np.int64) - np.repeat(word_starts, word_counts)
        wids = np.zeros(total + 1, dtype=np.int32)
        wids[:total] = np.repeat(in_sentence, sizes)
        ends = np.cumsum(sizes)
        offsets = np.zeros(len(word_counts) + 1, dtype=np.int64)
        last = word_starts + word_counts - 1  # a sentence's last word token (-1 … when it has none)
        offsets[1:] = np.where(word_counts > 0, ends[np.maximum(last, 0)] if len(ends) else 0, 0)
        np.maximum.accumulate(offsets, out=offsets)  # a sentence without words ends where the one before did
        return Pieces(ids, wids, offsets)


def _large_strings(words: Sequence[str] | pa.Array) -> pa.Array:
    """``words`` as an Arrow ``large_string`` array (built through Polars: ``pa.array`` imports
    pandas where it is installed)."""
    if not isinstance(words, pa.Array):
        import polars as pl

        words = pl.Series(list(words), dtype=pl.String).to_arrow()
    return words.cast(pa.large_string())


def _bare_pieces(tokenizer: Any, sentences: Sequence[Sequence[str]]) -> Pieces:
    """:func:`sentence_pieces` of a few sentences, in one call of the backend."""
    return sentence_pieces(tokenizer, sentences, chunk=max(1, len(sentences)))


def encode_each(tokenizer: Any, words_a: Sequence[Sequence[str]], words_b: Sequence[Sequence[str]],
                max_length: int, chunk: int = CHUNK) -> Encoded:
    """Tokenize pair by pair (the tokenizer's own pair encoding): for any fast tokenizer."""
    _check_fast(tokenizer)
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

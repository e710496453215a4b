"""Pairs assembled from once-tokenized distinct sentences equal the tokenizer's own pair
encoding, array for array, on real sentences at lengths that cut A, B, both, and ties."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prior.layouts.ragged import Ragged
from prior.trainers import backbones
from prior.trainers.tokens import Encoded, bert_pair_layout, encode_each, encode_pairs, pair_budget
from tests.trainers_fixtures import tiny_tokenizer

DATA = Path(__file__).resolve().parents[1] / "data"
LENGTHS = (4, 5, 8, 9, 12, 17, 24, 33, 64, 128)


def _real_pairs() -> tuple[list[list[str]], list[list[str]]]:
    """SICK, SNLI and MRPC slices' pairs as whitespace words, plus each sentence paired with
    itself (ties) and a crossed pairing (short with long)."""
    a: list[list[str]] = []
    b: list[list[str]] = []
    with open(DATA / "sick" / "SICK_train.txt", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            a.append(row["sentence_A"].split())
            b.append(row["sentence_B"].split())
    with open(DATA / "snli" / "snli_1.0_dev.partial.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            a.append(rec["sentence1"].split())
            b.append(rec["sentence2"].split())
    with open(DATA / "mrpc" / "msr_paraphrase_train.txt", encoding="utf-8-sig") as f:
        for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if row[0] in ("0", "1"):
                a.append(row[3].split())
                b.append(row[4].split())
    n = len(a)
    crossed = list(reversed(b))
    return a + a[: n // 4] + a[: n // 4], b + a[: n // 4] + crossed[: n // 4]


@pytest.fixture(scope="module")
def pairs() -> tuple[list[list[str]], list[list[str]]]:
    return _real_pairs()


@pytest.fixture(scope="module")
def mini() -> Any:
    return backbones.load_tokenizer(backbones.resolve_backbone("mini"))


def _same(x: Encoded, y: Encoded) -> None:
    for name in ("input_ids", "token_type_ids", "lengths", "seg", "wid"):
        got, want = getattr(x, name), getattr(y, name)
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("max_length", LENGTHS)
def test_once_per_sentence_equals_pair_encoding(mini: Any, pairs: Any, max_length: int) -> None:
    a, b = pairs
    assert bert_pair_layout(mini) is not None
    _same(encode_pairs(mini, a, b, max_length, chunk=97), encode_each(mini, a, b, max_length))


def test_lengths_cover_every_truncation_case(mini: Any, pairs: Any) -> None:
    """The lengths above cut only A, only B, both, and pairs of equal size (the odd piece)."""
    a, b = pairs
    sizes = [np.array([len(x) for x in mini(s, is_split_into_words=True, add_special_tokens=False)["input_ids"]])
             for s in (a, b)]
    seen = set()
    for max_length in LENGTHS:
        ka, kb = pair_budget(sizes[0], sizes[1], max_length - 3)
        cut_a, cut_b = ka < sizes[0], kb < sizes[1]
        seen |= {"A"} if (cut_a & ~cut_b).any() else set()
        seen |= {"B"} if (cut_b & ~cut_a).any() else set()
        seen |= {"both"} if (cut_a & cut_b).any() else set()
        seen |= {"tie"} if (cut_a & (sizes[0] == sizes[1]) & ((max_length - 3) % 2 == 1)).any() else set()
        seen |= {"none"} if (~cut_a & ~cut_b).any() else set()
    assert seen == {"A", "B", "both", "tie", "none"}


@pytest.mark.parametrize("max_length", (9, 64))
def test_unknown_words_and_tiny_vocabulary(pairs: Any, max_length: int) -> None:
    a, b = pairs
    tok = tiny_tokenizer()
    _same(encode_pairs(tok, a[:300], b[:300], max_length), encode_each(tok, a[:300], b[:300], max_length))


class Counting:
    """A tokenizer that counts the sentences it is given (through its own call, or its
    backend's ``encode_batch``, which the loader tokenizes sentences with)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.items = 0
        self.calls = 0

    def __call__(self, text: Any, text_pair: Any = None, **kw: Any) -> Any:
        self.calls += 1
        self.items += len(text) + (len(text_pair) if text_pair is not None else 0)
        return self.inner(text, text_pair, **kw)

    @property
    def backend_tokenizer(self) -> Any:
        counting, backend = self, self.inner.backend_tokenizer

        class Backend:
            def encode_batch(self, batch: Any, **kw: Any) -> Any:
                counting.calls += 1
                counting.items += len(batch)
                return backend.encode_batch(batch, **kw)

            def __getattr__(self, name: str) -> Any:
                return getattr(backend, name)

        return Backend()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_each_distinct_sentence_tokenized_once(mini: Any, pairs: Any) -> None:
    a, b = pairs
    distinct = len({tuple(w) for w in a + b})
    tok = Counting(mini)
    enc = encode_pairs(tok, a, b, 32, chunk=100)
    probe = 2 + 2  # bert_pair_layout: two bare sentences, one pair
    assert tok.items == distinct + probe
    assert tok.calls == -(-distinct // 100) + 2
    assert enc.input_ids.shape[0] == len(a) < distinct * 2


def test_other_layouts_encode_pair_by_pair(mini: Any, pairs: Any) -> None:
    """A tokenizer that truncates on the left is not BERT's layout: its own pair encoding is used."""
    left = copy.deepcopy(mini)
    left.truncation_side = "left"
    assert bert_pair_layout(left) is None
    a, b = pairs
    got = encode_pairs(left, a[:200], b[:200], 12)
    _same(got, encode_each(left, a[:200], b[:200], 12))
    assert not np.array_equal(got.input_ids, encode_pairs(mini, a[:200], b[:200], 12).input_ids)


@pytest.mark.parametrize("chunk", (1, 2, 7, 1 << 22))
def test_ragged_take_in_chunks_equals_items(chunk: int) -> None:
    """`Ragged.take` (which the loader gathers a split's features with) copies each item whole,
    whatever the chunk of values it gathers at once, empty items included."""
    rng = np.random.default_rng(0)
    items = [rng.random((int(rng.integers(0, 5)), int(rng.integers(0, 4)))) if i % 3 else
             rng.random(int(rng.integers(0, 6))) for i in range(300)]
    ragged = Ragged.from_arrays(items)
    for index in (rng.integers(0, 300, 500), np.arange(300)[::-1], np.array([], dtype=np.int64)):
        got = ragged.take(index, chunk=chunk)
        assert len(got) == len(index) and got.values.size == sum(items[i].size for i in index)
        for j, i in enumerate(index):
            np.testing.assert_array_equal(got.get(j), items[i])


def test_ragged_take_holds_no_positions_for_every_value() -> None:
    """Taking a split's items allocates the result and about one chunk of int64 positions,
    not an int64 position per value (five times the float32 values at 500k pairs)."""
    import tracemalloc

    items = np.full(200_000 * 40, 0.5, dtype=np.float32)
    ragged = Ragged(items, np.arange(200_000, dtype=np.int64) * 40, np.full(200_000, 5, np.int64),
                    np.full(200_000, 8, np.int64))
    index = np.arange(200_000)[::-1].copy()
    tracemalloc.start()
    try:
        got = ragged.take(index, chunk=1 << 16)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got.values.size == items.size
    assert peak < 2 * items.nbytes, peak


def test_issue35_long_pair_that_truncates_prints_no_length_warning(mini: Any, caplog: pytest.LogCaptureFixture,
                                                                   capfd: pytest.CaptureFixture[str]) -> None:
    """A 5,001-word sentence is tokenized whole and then cut to max_length with its pair:
    transformers' "Token indices sequence length is longer than the specified maximum … indexing
    errors" warning (meant for a sequence fed to the model whole) must not appear."""
    import logging

    long = ["word"] * 5001
    caplog.set_level(logging.WARNING)
    enc = encode_pairs(mini, [long, ["a", "cat"]], [["a", "dog"], long], 128)
    assert enc.lengths.tolist() == [128, 128]
    printed = capfd.readouterr()
    assert "sequence length is longer" not in caplog.text + printed.out + printed.err


TRICKY = [["don't", "U.S.", "naïve", "Café", "e.g.", "3.14", "--", "(", "[SEP]", "[CLS]", "[UNK]", "##ing"],
          ["日本語", "Ελληνικά", "😀", "👍🏽", "\u200b", "", " ", "\t", "a" * 150, "ﬁne", "Ｆｕｌｌ"],
          [], ["x"], ["MiXeD", "CASE", "case", "Case"]]


@pytest.mark.parametrize("which", ["mini", "tiny"])
def test_word_pieces_equal_whole_sentences(mini: Any, pairs: Any, which: str) -> None:
    """Sentences assembled from each distinct word's pieces are the pieces the backend gives
    the whole pre-split sentence: ids and word indices, on real sentences and odd words (empty,
    invisible, unknown, special-token text, emoji, a word past the tokenizer's word length),
    with sentences of no words among them, through a word cache that fills and starts over."""
    from prior.trainers.tokens import WordPieces, sentence_pieces

    tok = mini if which == "mini" else tiny_tokenizer()
    a, b = pairs
    sentences = [*TRICKY, *a[:1500], *TRICKY[::-1], *b[:1500]]
    words = WordPieces(tok, max_words=3000)
    for start in range(0, len(sentences), 700):  # a reader's windows: the cache grows, then starts over
        part = sentences[start:start + 700]
        flat = [w for s in part for w in s]
        distinct = sorted(set(flat))
        numbers = words.lookup(distinct)[np.searchsorted(np.array(distinct, dtype=object), np.array(flat, dtype=object))]
        got = words.sentences(numbers, np.array([len(s) for s in part]))
        want = sentence_pieces(tok, part)
        assert np.array_equal(got.offsets, want.offsets)
        assert np.array_equal(got.ids, want.ids) and np.array_equal(got.wids, want.wids)
    assert len(words) <= 3000

"""Tiny building blocks for the trainers tests: a word-piece vocabulary, a random BERT config,
a backbone folder and a hand-written store (through the store's write API)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from transformers import BertConfig, BertModel, BertTokenizer

from prior.featurestore import keys as K
from prior.featurestore import open_store
from prior.featurestore.store import Store, make_entry
from prior.layouts.kinds import PairMatrix, SentenceMask, SentenceVector, WordIds

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog", "sat", "un",
         "##believ", "##able", "on", "mat", ".", "ran", "big", "small", "bird", "flew", "away"]
PARSE = "0" * 32


def tiny_tokenizer() -> Any:
    return BertTokenizer(vocab={w: i for i, w in enumerate(VOCAB)})


def tiny_config(**kw: Any) -> BertConfig:
    base = dict(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=37, max_position_embeddings=64, num_labels=2)
    base.update(kw)
    return BertConfig(**base)


def tiny_backbone(directory: Path) -> Path:
    """A random tiny BERT + tokenizer saved like a hub checkpoint."""
    import torch

    torch.manual_seed(0)
    BertModel(tiny_config()).save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return directory


# (words A, heads A, words B, heads B, label)
PAIRS = [
    (["the", "unbelievable", "cat", "sat"], [2, 4, 4, 0], ["a", "dog", "sat", "."], [2, 3, 0, 3], "1"),
    (["the", "bird", "flew", "away"], [2, 3, 0, 3], ["a", "big", "cat", "ran"], [3, 3, 4, 0], "0"),
    (["a", "small", "dog", "ran"], [3, 3, 4, 0], ["the", "dog", "ran", "away"], [2, 3, 0, 3], "1"),
    (["the", "cat", "sat", "on", "the", "mat"], [2, 3, 0, 3, 6, 4], ["a", "cat", "sat"], [2, 3, 0], "0"),
]


def pair_value(i: int, a: int, b: int) -> float:
    """The stored word-level value of pair i at (word a of A, word b of B): easy to check."""
    return float(100 * i + 10 * a + b) / 1000.0 + 0.5


def tiny_store(path: Path, features: tuple[str, ...] = ("wup", "dep", "sdoi", "emb"),
               dataset: str = "toy", splits: tuple[str, ...] = ("train", "test"),
               parser: dict[str, Any] | None = None) -> Store:
    store = open_store(path)
    texts: dict[str, list[str]] = {}
    heads: dict[str, list[int]] = {}
    for split in splits:
        rows = []
        for i, (wa, ha, wb, hb, label) in enumerate(PAIRS):
            ka, kb = K.sentence_key(" ".join(wa)), K.sentence_key(" ".join(wb))
            texts[ka], texts[kb], heads[ka], heads[kb] = wa, wb, ha, hb
            rows.append((i + 2, K.pair_key(ka, kb), ka, kb, label))
        store.write_pairs(dataset, split, pa.table({
            "row": pa.array([r[0] for r in rows], pa.int64()), "pair_key": [r[1] for r in rows],
            "key_a": [r[2] for r in rows], "key_b": [r[3] for r in rows],
            "label": pa.array([r[4] for r in rows], pa.string()), "id": pa.array([None] * len(rows), pa.string()),
        }), source_sha256="x" * 64, meta={"label_kind": "class", "labels": ["0", "1"]})
    keys = sorted(texts)
    store.write_sentences(keys, [" ".join(texts[k]) for k in keys])
    n = [len(texts[k]) for k in keys]
    store.write_parses(PARSE, parser or {"parser": "hand"}, keys, [
        {"words": texts[k], "lemmas": texts[k], "upos": ["X"] * m, "tags": ["X"] * m,
         "heads": heads[k], "rels": ["dep"] * m, "ents": [""] * m} for k, m in zip(keys, n)],
        spec="spacy" if (parser or {}).get("backend") == "spacy" else "biaffine")
    pair_keys = [K.pair_key(K.sentence_key(" ".join(p[0])), K.sentence_key(" ".join(p[2]))) for p in PAIRS]
    shapes = [(len(p[0]), len(p[2])) for p in PAIRS]
    mats = [np.array([[pair_value(i, a, b) for b in range(m)] for a in range(n_)], dtype=np.float32)
            for i, (n_, m) in enumerate(shapes)]
    if "wup" in features:
        e = make_entry("wup", 1, {}, PARSE, "pair", ("wup",), layout=PairMatrix("wup"))
        store.write_feature(e, pair_keys, [{"wup": m} for m in mats])
    if "dep" in features:
        e = make_entry("dep", 1, {}, PARSE, "pair", ("trigram", "subgraph"), layout=PairMatrix("trigram"))
        store.write_feature(e, pair_keys, [{"trigram": m, "subgraph": np.zeros_like(m)} for m in mats])
        t = make_entry("tfidf", 1, {"dataset": dataset, "compare": "lower", "weighting": "ramos"}, PARSE, "sentence", ("tfidf",),
                       layout=SentenceVector("tfidf"))
        store.write_feature(t, keys, [{"tfidf": np.ones(len(texts[k]), dtype=np.float32)} for k in keys])
    if "sdoi" in features:
        e = make_entry("sdoi", 1, {}, PARSE, "sentence", ("sdoi",), layout=SentenceMask("sdoi"))
        store.write_feature(e, keys, [{"sdoi": sdoi_of(heads[k])} for k in keys])
    if "emb" in features:
        words = sorted({w for k in keys for w in texts[k]} - {"unbelievable"})  # one OOV word
        vectors = np.arange(len(words) * 3, dtype=np.float32).reshape(len(words), 3) + 1
        vocab = store.write_resource("vocabulary", pa.table({"word": words}), arrays={"vectors": vectors})
        e = make_entry("emb", 1, {"vocabulary": vocab}, PARSE, "sentence", ("ids",),
                       layout=WordIds("ids", vocabulary_param="vocabulary"))
        lookup = {w: i for i, w in enumerate(words)}
        store.write_feature(e, keys, [{"ids": np.array([lookup.get(w, -1) for w in texts[k]], dtype=np.int32)}
                                      for k in keys])
    return store


def sdoi_of(heads: list[int]) -> np.ndarray:
    """Ancestor-or-self mask (reference implementation for the tests)."""
    n = len(heads)
    m = np.eye(n, dtype=np.uint8)
    for i in range(n):
        j = heads[i] - 1
        while j >= 0:
            m[i, j] = 1
            j = heads[j] - 1
    return m


WORDS = VOCAB[5:]  # the tiny vocabulary's words (no special tokens)


def many_pairs_store(path: Path, pairs: int = 120, sentences: int = 40, *, partition: int = 25,
                     dataset: str = "many", splits: tuple[str, ...] = ("train", "test"), seed: int = 0) -> Store:
    """A store of ``pairs`` pairs per split over ``sentences`` random sentences of the tiny
    vocabulary, written in partitions of ``partition`` rows as a build writes them (a pairs,
    sentences, parses and feature segment each), with all four layouts' entries (wup, dep +
    tfidf, sdoi, emb): for the loader's windows, pieces and lanes."""
    rng = np.random.default_rng(seed)
    texts = [[WORDS[j] for j in rng.integers(0, len(WORDS), int(rng.integers(2, 9)))] for _ in range(sentences)]
    keys = [K.sentence_key(" ".join(t) + f" #{i}") for i, t in enumerate(texts)]  # distinct keys
    store = open_store(path)
    vocab_words = sorted(set(WORDS))
    vectors = (np.arange(len(vocab_words) * 3, dtype=np.float32).reshape(-1, 3) + 1) / 10
    vocab = store.write_resource("vocabulary", pa.table({"word": vocab_words}), arrays={"vectors": vectors})
    lookup = {w: i for i, w in enumerate(vocab_words)}
    entries = {
        "wup": make_entry("wup", 1, {}, PARSE, "pair", ("wup",), layout=PairMatrix("wup")),
        "dep": make_entry("dep", 1, {}, PARSE, "pair", ("trigram", "subgraph"), layout=PairMatrix("trigram")),
        "tfidf": make_entry("tfidf", 1, {"dataset": dataset, "compare": "lower", "weighting": "ramos"}, PARSE,
                            "sentence", ("tfidf",), layout=SentenceVector("tfidf")),
        "sdoi": make_entry("sdoi", 1, {}, PARSE, "sentence", ("sdoi",), layout=SentenceMask("sdoi")),
        "emb": make_entry("emb", 1, {"vocabulary": vocab}, PARSE, "sentence", ("ids",),
                          layout=WordIds("ids", vocabulary_param="vocabulary")),
    }
    written: set[int] = set()
    for s_i, split in enumerate(splits):
        for start in range(0, pairs, partition):
            idx = np.arange(start, min(pairs, start + partition))
            # distinct pairs (a, b ≠ a) while pairs < sentences · (sentences - 1)
            a = [int((i + 7 * s_i) % sentences) for i in idx]
            b = [int((x + 1 + (i // sentences + s_i) % (sentences - 1)) % sentences) for i, x in zip(idx, a)]
            new = sorted({*a, *b} - written)
            written.update(new)
            if new:
                store.write_sentences([keys[s] for s in new], [" ".join(texts[s]) for s in new])
                store.write_parses(PARSE, {"parser": "hand"}, [keys[s] for s in new], [
                    {"words": texts[s], "lemmas": texts[s], "upos": ["X"] * len(texts[s]),
                     "tags": ["X"] * len(texts[s]), "heads": [0] * len(texts[s]), "rels": ["dep"] * len(texts[s]),
                     "ents": [""] * len(texts[s])} for s in new], spec="biaffine")
                store.write_feature(entries["tfidf"], [keys[s] for s in new],
                                    [{"tfidf": (np.arange(len(texts[s]), dtype=np.float32) + 1) / 4} for s in new])
                store.write_feature(entries["sdoi"], [keys[s] for s in new],
                                    [{"sdoi": np.tril(np.ones((len(texts[s]),) * 2, np.uint8))} for s in new])
                store.write_feature(entries["emb"], [keys[s] for s in new],
                                    [{"ids": np.array([lookup[w] for w in texts[s]], np.int32)} for s in new])
            pkeys = [K.pair_key(keys[x], keys[y]) for x, y in zip(a, b)]
            store.write_pairs(dataset, split, pa.table({
                "row": pa.array(idx + 2, pa.int64()), "pair_key": pkeys, "key_a": [keys[x] for x in a],
                "key_b": [keys[y] for y in b], "label": [str(int(i) % 2) for i in idx],
                "id": pa.array([None] * len(idx), pa.string())}),
                source_sha256=f"{split:x<64}"[:64], meta={"label_kind": "class", "labels": ["0", "1"]})
            mats = [np.full((len(texts[x]), len(texts[y])), (i % 97) / 100, np.float32)
                    + np.arange(len(texts[y]), dtype=np.float32)[None, :] / 1000 for i, x, y in zip(idx, a, b)]
            store.write_feature(entries["wup"], pkeys, [{"wup": m} for m in mats])
            store.write_feature(entries["dep"], pkeys, [{"trigram": m, "subgraph": m / 2} for m in mats])
    return store

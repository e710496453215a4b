"""A large store written straight through the store's API, for loader benchmarks (no parsing).

    python bench/synthetic_store.py STORE --pairs 500000 --sentences 63000

It lies out like a build's store: one pairs segment per partition of ``--partition`` rows
(``train`` of the dataset ``synth``, three classes), each partition's new sentences in their
own sentences and parse segments, and per partition one segment of each feature entry: DAFA's
``dep`` (trigram and subgraph matrices, n×m words) with the ``tfidf`` weights its view reads,
``wup`` (n×m) and ``sdoi`` (n×n masks per sentence). Sentences are 6–30 words drawn from the
``-mini`` backbone's vocabulary; pair i is (sentence i mod N, a hashed other sentence), so each
sentence appears in about 2·pairs/N pairs, as in `bench/scale.py`'s table. Values are random
(seeded): the store is for reading costs, not for training results. ``--splits`` adds small
``dev``/``test`` splits. A pair's ``id`` is null, or with ``--ids`` shaped like SNLI's pairID
(``4705552913.jpg#2r1n``, 19 characters): what the dataset's own ids cost a reader.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

LABELS = ("entailment", "neutral", "contradiction")
PARSE = "f" * 32
DATASET = "synth"


def _words(seed: int) -> list[str]:
    """Whole words of the -mini backbone's vocabulary (no ## pieces, letters only)."""
    from prior.trainers.backbones import mini_path

    vocab = (Path(mini_path()) / "vocab.txt").read_text(encoding="utf-8").split("\n")
    words = [w for w in vocab if w.isalpha() and w.isascii() and len(w) > 1]
    return words[:20000]


def _other(seed: int, i: int, n: int) -> int:
    h = int.from_bytes(hashlib.blake2b(f"{seed}\x00{i}".encode(), digest_size=8).digest(), "big")
    other = h % (n - 1)
    return other + (other >= i % n)


def make_store(path: str, pairs: int, sentences: int, *, partition: int = 2000, seed: int = 0,
               features: tuple[str, ...] = ("dep",), splits: tuple[tuple[str, int], ...] = (),
               ids: bool = False) -> None:
    """Write the store (module docstring)."""
    from prior.featurestore import keys as K
    from prior.featurestore import open_store
    from prior.featurestore.store import make_entry
    from prior.layouts.kinds import PairMatrix, SentenceMask, SentenceVector

    if Path(path).exists() and any(Path(path).iterdir()):
        # writing again into a store would add every pair a second time: a read of the split
        # then reads twice the rows it serves, and every cost measured on it is off
        raise SystemExit(f"{path} exists and is not empty: make a synthetic store in a new folder")
    rng = np.random.default_rng(seed)
    vocab = _words(seed)
    texts = [[vocab[j] for j in rng.integers(0, len(vocab), int(rng.integers(6, 31)))] for _ in range(sentences)]
    skeys = [K.sentence_key(" ".join(t)) for t in texts]
    store = open_store(path)
    dep = make_entry("dep", 1, {}, PARSE, "pair", ("trigram", "subgraph"), layout=PairMatrix("trigram"))
    tfidf = make_entry("tfidf", 1, {"dataset": DATASET, "compare": "lower", "weighting": "ramos"}, PARSE,
                       "sentence", ("tfidf",), layout=SentenceVector("tfidf"))
    wup = make_entry("wup", 1, {}, PARSE, "pair", ("wup",), layout=PairMatrix("wup"))
    sdoi = make_entry("sdoi", 1, {}, PARSE, "sentence", ("sdoi",), layout=SentenceMask("sdoi"))
    written: set[int] = set()
    for n_split, (split, count) in enumerate((("train", pairs), *splits)):
        for start in range(0, count, partition):
            idx = np.arange(start, min(count, start + partition))
            offset = 0 if split == "train" else 7919 * (len(written) + 1)
            a = [(int(i) + offset) % sentences for i in idx]
            b = [_other(seed + n_split, int(i) + offset, sentences) for i in idx]
            new = sorted({*a, *b} - written)
            written.update(new)
            if new:
                store.write_sentences([skeys[s] for s in new], [" ".join(texts[s]) for s in new])
                store.write_parses(PARSE, {"parser": "synthetic"}, [skeys[s] for s in new], [
                    {"words": texts[s], "lemmas": texts[s], "upos": ["X"] * len(texts[s]),
                     "tags": ["X"] * len(texts[s]), "heads": [0] * len(texts[s]), "rels": ["dep"] * len(texts[s]),
                     "ents": [""] * len(texts[s])} for s in new], spec="biaffine")
                if "dep" in features:
                    store.write_feature(tfidf, [skeys[s] for s in new],
                                        [{"tfidf": rng.random(len(texts[s]), dtype=np.float32)} for s in new])
                if "sdoi" in features:
                    store.write_feature(sdoi, [skeys[s] for s in new],
                                        [{"sdoi": np.tril(np.ones((len(texts[s]),) * 2, np.uint8))} for s in new])
            pkeys = [K.pair_key(skeys[x], skeys[y]) for x, y in zip(a, b)]
            labels = [LABELS[int(v)] for v in rng.integers(0, 3, len(idx))]
            pair_ids = ([f"{int(i) * 7 + 1000000000}.jpg#{int(i) % 5}r1{label[0]}" for i, label in zip(idx, labels)]
                        if ids else [None] * len(idx))
            store.write_pairs(DATASET, split, pa.table({
                "row": pa.array(idx + 2, pa.int64()), "pair_key": pkeys, "key_a": [skeys[x] for x in a],
                "key_b": [skeys[y] for y in b], "label": labels, "id": pa.array(pair_ids, pa.string())}),
                source_sha256=hashlib.sha256(f"{seed}{split}".encode()).hexdigest(),
                meta={"label_kind": "class", "labels": list(LABELS)})
            shapes = [(len(texts[x]), len(texts[y])) for x, y in zip(a, b)]
            if "dep" in features:
                store.write_feature(dep, pkeys, [
                    {"trigram": (rng.random(s, dtype=np.float32) < 0.1).astype(np.float32),
                     "subgraph": (rng.random(s, dtype=np.float32) < 0.05).astype(np.float32)} for s in shapes])
            if "wup" in features:
                store.write_feature(wup, pkeys, [{"wup": rng.random(s, dtype=np.float32)} for s in shapes])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store")
    ap.add_argument("--pairs", type=int, default=100_000)
    ap.add_argument("--sentences", type=int, default=63_000)
    ap.add_argument("--partition", type=int, default=2000)
    ap.add_argument("--features", default="dep")
    ap.add_argument("--splits", default="", help="e.g. dev:500,test:500")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ids", action="store_true", help="Pair ids shaped like SNLI's pairID (default: null).")
    args = ap.parse_args()
    extra = tuple((s.split(":")[0], int(s.split(":")[1])) for s in args.splits.split(",") if s)
    t0 = time.perf_counter()
    make_store(args.store, args.pairs, args.sentences, partition=args.partition, seed=args.seed,
               features=tuple(args.features.split(",")), splits=extra, ids=args.ids)
    print(f"{args.store}: {args.pairs} pairs in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()

"""Counter-fitting speed: the vectorised ``counterfit`` against the pair-by-pair reference.

Real input (dependency-based SGNS vectors trained on MRPC's parses, first 3,587 words)::

    export PRIOR_DATA_DIR=../shared/data PRIOR_NO_PROGRESS=1
    prior build --dataset mrpc --features sdoi --parser spacy --workers 1 --store STORE
    prior embed train --contexts dep --store STORE --out deps.vec
    python bench/counterfit.py --embeddings deps.vec --limit 3587 --reference [--sensitivity]

Synthetic input at vocabulary scale (deterministic 300-d vectors over real WordNet words)::

    python bench/counterfit.py --synthetic 20000 --mean-cosine 0.8    # skip-gram-like: dense VSP
    python bench/counterfit.py --synthetic 20000 --mean-cosine 0.0    # GloVe-like: sparse VSP

Constraints are WordNet's, found as ``prior embed counterfit`` finds them (not timed; their
time is printed). Timed: ``counterfit`` alone, with the paper's settings (``--iterations``
to change the number). With ``--reference`` the order is new, reference, new in this one
process, so a machine shared with other work slows both alike; the ratio is the reference's
time over the mean of the two new runs; the 1-minute load average is printed. Then a table
compares outputs: |cos_A(i, j) − cos_B(i, j)| over every word pair (max, quantiles, share
above 1e-4) and the final costs. ``--sensitivity`` adds the reference renormalising only the
words that moved (the vectorised code's one change), and the reference on the input moved
by one float32 ulp: how far the reference is from itself. The reference needs memory for
every directed VSP pair (about 40 bytes per pair, plus 2·d·4 bytes per pair of a chunk):
keep it to a few million pairs.

Synthetic vectors: the ``N`` single-word WordNet lemmas in most synsets (ties by name); word
``w`` gets ``√a·c + √(1−a)·unit(z_w + Σ_s e_s)`` normalised, with ``c`` one shared direction,
``z_w`` its own Gaussian and ``e_s`` one Gaussian per synset of ``w`` (so synonyms start
closer than other words), all from seed 0; ``a`` is ``--mean-cosine``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from prior.pipeline.embeddings.counterfit import (  # noqa: E402
    CounterfitResult,
    CounterfitSettings,
    counterfit,
    normalise,
    wordnet_constraints,
)
from prior.pipeline.embeddings.io import Embeddings, read_embeddings  # noqa: E402
from prior.pipeline.embeddings.make import without_spaced_words  # noqa: E402
from prior.pipeline.resources.wordnet import load_wordnet  # noqa: E402
from tests.counterfit_reference import reference_counterfit  # noqa: E402


def synthetic(wn: object, size: int, mean_cosine: float, dim: int = 300, seed: int = 0) -> Embeddings:
    """Deterministic vectors over the ``size`` most polysemous single-word WordNet lemmas."""
    synsets: dict[str, list[int]] = defaultdict(list)
    for number, synset in enumerate(wn.all_synsets()):  # type: ignore[attr-defined]
        for lemma in synset.lemmas():
            name = lemma.name().lower()
            if name.isalpha() and name.isascii():
                synsets[name].append(number)
    words = sorted(synsets, key=lambda w: (-len(synsets[w]), w))[:size]
    rng = np.random.default_rng(seed)
    shared = rng.normal(size=dim)
    shared /= np.linalg.norm(shared)
    own = rng.normal(size=(len(words), dim))
    topic: dict[int, np.ndarray] = {}
    for i, word in enumerate(words):
        for s in synsets[word]:
            if s not in topic:
                topic[s] = np.random.default_rng([seed, s]).normal(size=dim)
            own[i] += topic[s]
    own /= np.linalg.norm(own, axis=1, keepdims=True)
    vectors = np.sqrt(mean_cosine) * shared + np.sqrt(1.0 - mean_cosine) * own
    return Embeddings(words=words, vectors=normalise(vectors.astype(np.float32)), fmt="synthetic")


def timed(fn, *args, **kwargs):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0, time.process_time() - c0


def one_ulp(emb: Embeddings, seed: int = 0) -> Embeddings:
    """``emb`` with a random half of its components moved by one float32 ulp, up or down."""
    rng = np.random.default_rng(seed)
    towards = np.where(rng.random(emb.vectors.shape) < 0.5, -np.inf, np.inf).astype(np.float32)
    moved = np.nextafter(emb.vectors, towards)
    vectors = np.where(rng.random(emb.vectors.shape) < 0.5, moved, emb.vectors)
    return Embeddings(words=emb.words, vectors=vectors, fmt=emb.fmt)


def agreement(name: str, a: CounterfitResult, b: CounterfitResult, block: int = 1024) -> str:
    """|cos_a(i, j) − cos_b(i, j)| over all word pairs i < j: max, quantiles, share > 1e-4."""
    x, y = a.embeddings.vectors, b.embeddings.vectors
    parts = []
    for start in range(0, len(x), block):
        diff = np.abs(x[start:start + block] @ x.T - y[start:start + block] @ y.T)   # (b, V)
        rows = np.arange(start, min(start + block, len(x)))[:, None]
        parts.append(diff[rows < np.arange(len(x))[None, :]])
    d = np.concatenate(parts)
    q50, q99, q999 = np.quantile(d, [0.5, 0.99, 0.999])
    return (f"| {name} | {d.max():.1e} | {q50:.1e} | {q99:.1e} | {q999:.1e} | {(d > 1e-4).mean():.1%} "
            f"| {abs(a.costs[-1] - b.costs[-1]):.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--embeddings", help="embedding file (word2vec txt/bin, GloVe, fastText .vec)")
    src.add_argument("--synthetic", type=int, metavar="N", help="N synthetic words")
    ap.add_argument("--limit", type=int, help="first N words of --embeddings")
    ap.add_argument("--mean-cosine", type=float, default=0.8, help="synthetic: shared share a")
    ap.add_argument("--iterations", type=int, default=CounterfitSettings.iterations)
    for name, help_ in (("k1", "antonym"), ("k2", "synonym"), ("k3", "VSP")):
        ap.add_argument(f"--{name}", type=float, default=getattr(CounterfitSettings, name),
                        help=f"{help_} weight (--k1 0 --k2 0: nothing may move)")
    ap.add_argument("--reference", action="store_true", help="also time the reference (new, reference, new)")
    ap.add_argument("--sensitivity", action="store_true",
                    help="with --reference: also run the reference renormalising only moved words, "
                         "and on the input moved by one ulp")
    args = ap.parse_args()
    settings = CounterfitSettings(iterations=args.iterations, k1=args.k1, k2=args.k2, k3=args.k3)

    print(f"load average (1 min) {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    t0 = time.perf_counter()
    wn = load_wordnet()
    if args.embeddings:
        emb, _ = without_spaced_words(read_embeddings(args.embeddings, limit=args.limit))
        origin = f"{Path(args.embeddings).name} (first {len(emb)} words)"
    else:
        emb = synthetic(wn, args.synthetic, args.mean_cosine)
        origin = f"synthetic, mean-cosine share {args.mean_cosine}"
    syn, ant = wordnet_constraints(wn, vocabulary=emb.words)
    print(f"input: {len(emb)} words × {emb.dim}, {origin}; {len(syn)} synonym and {len(ant)} antonym "
          f"pairs from WordNet (input and constraints in {time.perf_counter() - t0:.1f} s, not timed); "
          f"{settings.iterations} iterations, k1 {settings.k1}, k2 {settings.k2}, k3 {settings.k3}")
    start = normalise(emb.vectors)

    def largest_move(result: CounterfitResult) -> str:
        return f"largest move of a word {float(np.abs(result.embeddings.vectors - start).max()):.2e}"

    new, wall, cpu = timed(counterfit, emb, syn, ant, settings)
    print(f"vectorised: {wall:.2f} s wall, {cpu:.2f} s CPU; {new.vsp_pairs:,} VSP pairs, "
          f"mean cosine {new.mean_cosine:.3f}, cost {new.costs[0]:.4f} → {new.costs[-1]:.4f}; "
          f"{largest_move(new)}")
    if not args.reference:
        print(f"load average (1 min) {os.getloadavg()[0]:.2f}")
        return
    ref, ref_wall, ref_cpu = timed(reference_counterfit, emb, syn, ant, settings)
    print(f"reference:  {ref_wall:.2f} s wall, {ref_cpu:.2f} s CPU; {ref.vsp_pairs:,} VSP pairs, "
          f"cost {ref.costs[0]:.4f} → {ref.costs[-1]:.4f}; {largest_move(ref)}")
    again, wall2, cpu2 = timed(counterfit, emb, syn, ant, settings)
    print(f"vectorised: {wall2:.2f} s wall, {cpu2:.2f} s CPU (again; identical output: "
          f"{np.array_equal(new.embeddings.vectors, again.embeddings.vectors)})")
    print(f"ratio reference / vectorised: {ref_wall / ((wall + wall2) / 2):.1f}× wall, "
          f"{ref_cpu / ((cpu + cpu2) / 2):.1f}× CPU; load average (1 min) {os.getloadavg()[0]:.2f}")
    rows = [agreement("vectorised vs reference", new, ref)]
    if args.sensitivity:
        moved = reference_counterfit(emb, syn, ant, settings, renormalise="moved")
        ulp = reference_counterfit(one_ulp(emb), syn, ant, settings)
        rows += [agreement("vectorised vs reference renormalising moved words only", new, moved),
                 agreement("reference vs reference renormalising moved words only", ref, moved),
                 agreement("reference vs reference on the input moved by one ulp", ref, ulp)]
    print("\n| outputs compared | max \\|Δcos\\| | median | 99 % | 99.9 % | pairs > 1e-4 | Δ final cost |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

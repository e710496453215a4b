"""Counter-fitting (Mrkšić et al., NAACL 2016): inject synonymy and antonymy into word vectors.

With V the original unit-length vectors, V' the new ones and d(u, w) = 1 − cos(u, w), the
cost is C(V') = k1·AR + k2·SA + k3·VSP, τ(x) = max(0, x):

- antonym repel     AR  = Σ_{(u,w) ∈ antonyms} τ(δ − d(v'_u, v'_w))
- synonym attract   SA  = Σ_{(u,w) ∈ synonyms} τ(d(v'_u, v'_w) − γ)
- vector space preservation
                    VSP = Σ_i Σ_{j ∈ N(i)} τ(d(v'_i, v'_j) − d(v_i, v_j)),
  N(i) the words within distance ρ of i in the original space.

Defaults are the paper's: k1 = k2 = k3 = 0.1, δ = 1.0, γ = 0.0, ρ = 0.2, 20 iterations.
Optimisation as the authors' code does it: every iteration takes, for each word, the mean of
the gradients of its active terms (a term is active while its τ is positive) with respect to
the word, scaled by that term's k, steps against it and renormalises every vector to unit
length. Pairs are used in both directions; a pair both synonym and antonym is dropped from
the synonyms and from the VSP pairs (as in the paper).

Option ``center`` (off by default; not in the paper) subtracts the mean vector before the
vectors are normalised. Skip-gram vectors trained with many negative samples all point in a
similar direction (Mimno & Thompson, EMNLP 2017); on such a space nearly every pair lies
within ρ, the VSP term gathers millions of pairs, and the per-word averaging dilutes the
synonym and antonym terms to nothing. ``mean_cosine`` (reported) shows when this applies:
GloVe or Paragram spaces sit near 0, small-corpus SGNS spaces near 0.9.

Our choices: constraints are WordNet's (`wordnet_constraints`: synonyms = two single-word
lemmas of one synset, antonyms = WordNet's lemma antonyms), not PPDB's, which is not
available offline. VSP neighbourhoods N(i) are computed only for words that occur in some
constraint (a word with no constraint and no constrained neighbour never moves, since all its
terms start at zero); words outside every constraint keep their (normalised) vector.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pipeline.embeddings.io import Embeddings


@dataclass(frozen=True)
class CounterfitSettings:
    k1: float = 0.1      # antonym repel weight
    k2: float = 0.1      # synonym attract weight
    k3: float = 0.1      # vector space preservation weight
    delta: float = 1.0   # antonyms are pushed at least this far apart (cosine distance)
    gamma: float = 0.0   # synonyms are pulled this close
    rho: float = 0.2     # VSP neighbourhood radius in the original space
    iterations: int = 20
    center: bool = False  # subtract the mean vector first (not in the paper; see module doc)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CounterfitResult:
    embeddings: Embeddings
    synonyms: int        # synonym pairs used (one direction)
    antonyms: int        # antonym pairs used (one direction)
    vsp_pairs: int       # VSP pairs (one direction)
    costs: list[float]   # C(V') before the first and after each iteration
    mean_cosine: float   # mean cosine over word pairs of the (centred) input: near 0 is healthy


def normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def _pair_array(pairs: Iterable[tuple[str, str]], index: dict[str, int]) -> np.ndarray:
    """Distinct unordered pairs of in-vocabulary, different words, as (P, 2) int64 (i < j)."""
    out = set()
    for a, b in pairs:
        i, j = index.get(a), index.get(b)
        if i is not None and j is not None and i != j:
            out.add((min(i, j), max(i, j)))
    return np.array(sorted(out), dtype=np.int64).reshape(-1, 2)


CHUNK = 1 << 17  # pairs handled at once (bounds memory: CHUNK × dim floats per array)


def _keys(pairs: np.ndarray, n: int) -> np.ndarray:
    return pairs[:, 0] * n + pairs[:, 1]


def vsp_pairs(unit: np.ndarray, words_of_interest: np.ndarray, rho: float,
              block: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i < j) with i or j in ``words_of_interest`` and original distance ≤ ρ; distances."""
    n = len(unit)
    found = []
    for start in range(0, len(words_of_interest), block):
        rows = words_of_interest[start:start + block]
        dist = 1.0 - unit[rows] @ unit.T                               # (b, V)
        r, c = np.nonzero(dist <= rho)
        i, j = rows[r], c
        keep = i != j
        found.append(np.minimum(i, j)[keep] * n + np.maximum(i, j)[keep])
    keys = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    pairs = np.stack([keys // n, keys % n], axis=1).astype(np.int64).reshape(-1, 2)
    return pairs, _distances(unit, pairs)


def _distances(vectors: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    out = np.empty(len(pairs), dtype=np.float32)
    for start in range(0, len(pairs), CHUNK):
        p = pairs[start:start + CHUNK]
        out[start:start + CHUNK] = 1.0 - np.einsum("pd,pd->p", vectors[p[:, 0]], vectors[p[:, 1]])
    return out


def _both_ways(pairs: np.ndarray) -> np.ndarray:
    return np.concatenate([pairs, pairs[:, ::-1]]) if len(pairs) else pairs


def cost(vectors: np.ndarray, syn: np.ndarray, ant: np.ndarray, vsp: np.ndarray,
         vsp_dist: np.ndarray, s: CounterfitSettings) -> float:
    """C(V') over one direction of each pair (vectors must be unit length)."""
    ar = np.maximum(0.0, s.delta - _distances(vectors, ant)).sum() if len(ant) else 0.0
    sa = np.maximum(0.0, _distances(vectors, syn) - s.gamma).sum() if len(syn) else 0.0
    vp = np.maximum(0.0, _distances(vectors, vsp) - vsp_dist).sum() if len(vsp) else 0.0
    return float(s.k1 * ar + s.k2 * sa + s.k3 * vp)


def counterfit(emb: Embeddings, synonyms: Iterable[tuple[str, str]],
               antonyms: Iterable[tuple[str, str]], settings: CounterfitSettings = CounterfitSettings(),
               progress: Callable[[int, float], None] | None = None) -> CounterfitResult:
    """Counter-fit ``emb`` to the constraints (module docstring); returns unit-length vectors."""
    import torch

    s = settings
    source = emb.vectors - emb.vectors.mean(axis=0, keepdims=True) if s.center else emb.vectors
    original = normalise(source)
    n = len(original)
    index = emb.index
    ant = _pair_array(antonyms, index)
    syn = _pair_array(synonyms, index)
    syn = syn[~np.isin(_keys(syn, n), _keys(ant, n))].reshape(-1, 2)
    involved = np.unique(np.concatenate([ant.ravel(), syn.ravel()])).astype(np.int64)
    if s.k3 > 0 and len(involved):
        vsp, vsp_dist = vsp_pairs(original, involved, s.rho)
        keep = ~np.isin(_keys(vsp, n), _keys(ant, n))
        vsp, vsp_dist = vsp[keep].reshape(-1, 2), vsp_dist[keep]
    else:
        vsp, vsp_dist = np.zeros((0, 2), np.int64), np.zeros(0, np.float32)

    terms = [(_both_ways(ant), None, s.k1, "ar"), (_both_ways(syn), None, s.k2, "sa"),
             (_both_ways(vsp), np.concatenate([vsp_dist, vsp_dist]) if len(vsp) else vsp_dist,
              s.k3, "vsp")]
    v = original.copy()
    costs = [cost(v, syn, ant, vsp, vsp_dist, s)]
    for it in range(s.iterations):
        update = torch.zeros(v.shape, dtype=torch.float32)
        count = np.zeros(n, dtype=np.float64)
        for all_pairs, all_base, k, kind in terms:
            if not len(all_pairs) or k == 0:
                continue
            for start in range(0, len(all_pairs), CHUNK):
                pairs = all_pairs[start:start + CHUNK]
                u, w = v[pairs[:, 0]], v[pairs[:, 1]]                     # (P, d)
                dot = np.einsum("pd,pd->p", u, w)
                dist = 1.0 - dot
                if kind == "ar":
                    active = dist < s.delta
                elif kind == "sa":
                    active = dist > s.gamma
                else:
                    active = dist > all_base[start:start + CHUNK]
                if not active.any():
                    continue
                # ∂d(u, w)/∂u on the unit sphere: u·(u·w) − w
                grad_d = u[active] * dot[active, None] - w[active]
                # AR descends on −d (push apart); SA and VSP descend on +d (pull together).
                step = (grad_d if kind == "ar" else -grad_d) * k
                rows = pairs[active, 0]
                update.index_add_(0, torch.from_numpy(rows), torch.from_numpy(step.astype(np.float32)))
                count += np.bincount(rows, minlength=n)
        moved = count > 0
        v[moved] += update.numpy()[moved] / count[moved, None].astype(np.float32)
        v = normalise(v)
        costs.append(cost(v, syn, ant, vsp, vsp_dist, s))
        if progress is not None:
            progress(it + 1, costs[-1])
    return CounterfitResult(embeddings=Embeddings(words=list(emb.words), vectors=v, fmt="counterfit"),
                            synonyms=len(syn), antonyms=len(ant), vsp_pairs=len(vsp), costs=costs,
                            mean_cosine=mean_cosine(original))


def mean_cosine(unit: np.ndarray, sample: int = 2000, seed: int = 0) -> float:
    """Mean cosine between distinct words (unit vectors), on a fixed random sample of words."""
    rows = unit
    if len(unit) > sample:
        rows = unit[np.random.default_rng(seed).choice(len(unit), sample, replace=False)]
    total = rows.sum(axis=0)
    k = len(rows)
    return float((total @ total - k) / max(k * (k - 1), 1))


def wordnet_constraints(wn: Any, vocabulary: Iterable[str] | None = None
                        ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Synonym and antonym pairs from an nltk WordNet reader, lowercased single words only.

    Synonyms: every two different single-word lemma names of one synset. Antonyms: each
    lemma's WordNet antonyms. With ``vocabulary``, pairs outside it are left out. Each pair once,
    sorted.
    """
    vocab = None if vocabulary is None else set(vocabulary)

    def ok(name: str) -> bool:
        return "_" not in name and " " not in name and (vocab is None or name in vocab)

    syn: set[tuple[str, str]] = set()
    ant: set[tuple[str, str]] = set()
    for synset in wn.all_synsets():
        lemmas = synset.lemmas()
        names = sorted({lem.name().lower() for lem in lemmas if ok(lem.name().lower())})
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                syn.add((a, b))
        for lem in lemmas:
            a = lem.name().lower()
            if not ok(a):
                continue
            for other in lem.antonyms():
                b = other.name().lower()
                if ok(b) and a != b:
                    ant.add((min(a, b), max(a, b)))
    return sorted(syn), sorted(ant)

"""The pair-by-pair counter-fitting implementation that the vectorised one replaced, kept as
the reference the tests and ``bench/counterfit.py`` compare against (same objective, same
Jacobi-style update: every iteration computes all gradients from the vectors at its start).

It gathers both words' vectors for every directed pair (P × d arrays, chunked) and finds the
VSP neighbourhoods as a sorted array of pair keys; its time and memory grow with the number
of VSP pairs (2.35 M pairs: minutes). Not part of the package: do not import it from there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from prior.pipeline.embeddings.counterfit import (
    CounterfitResult,
    CounterfitSettings,
    _inputs,
    _keys,
    mean_cosine,
    normalise,
)
from prior.pipeline.embeddings.io import Embeddings

CHUNK = 1 << 17  # pairs handled at once (bounds memory: CHUNK × dim floats per array)


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


def reference_counterfit(emb: Embeddings, synonyms: Iterable[tuple[str, str]],
               antonyms: Iterable[tuple[str, str]], settings: CounterfitSettings = CounterfitSettings(),
               progress: Callable[[int, float], None] | None = None,
               renormalise: str = "all") -> CounterfitResult:
    """The former ``prior.pipeline.embeddings.counterfit.counterfit``, unchanged with the default
    ``renormalise="all"``. ``renormalise="moved"`` renormalises only the words that moved, the
    one change of the vectorised implementation (its module docstring, "Switching terms")."""
    import torch

    s = settings
    original, ant, syn, involved = _inputs(emb, synonyms, antonyms, s)   # the same lines, moved
    n = len(original)
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
        if renormalise == "all":
            v = normalise(v)
        else:
            v[moved] = normalise(v[moved])
        costs.append(cost(v, syn, ant, vsp, vsp_dist, s))
        if progress is not None:
            progress(it + 1, costs[-1])
    return CounterfitResult(embeddings=Embeddings(words=list(emb.words), vectors=v, fmt="counterfit"),
                            synonyms=len(syn), antonyms=len(ant), vsp_pairs=len(vsp), costs=costs,
                            mean_cosine=mean_cosine(original))

"""Skip-gram with negative sampling over arbitrary (word, context) pairs — word2vecf in torch.

Levy & Goldberg (2014) train word2vecf on dependency contexts (depcontexts.py); this is the
same objective: for every observed pair maximise log σ(w·c) + Σ_{k negatives} log σ(−w·c_k),
negatives drawn from the context unigram distribution raised to 0.75. Words and contexts
have separate vocabularies (pairs whose word or context occurs fewer than ``min_count``
times are dropped); word vectors start uniform in ±0.5/d, context vectors at zero, and the
learning rate decays linearly from ``lr`` to ``min_lr`` as word2vec does. Updates are plain
SGD on mini-batches of pairs (rows of a batch that share a word add their updates). The
word vectors are the result; context vectors are discarded.

Defaults follow Levy & Goldberg where they state them (300 dimensions, 15 negative samples);
epochs and min_count suit the small corpora a store holds (thousands of sentences, not
Wikipedia): ``min_count=2``, 10 epochs. CPU only, ``threads`` torch threads (default 1).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from prior.errors import DataError
from prior.pipeline.embeddings import Progress
from prior.pipeline.embeddings.io import Embeddings


@dataclass(frozen=True)
class SgnsSettings:
    dim: int = 300
    negative: int = 15
    epochs: int = 10
    min_count: int = 2
    lr: float = 0.025
    min_lr: float = 1e-4
    batch_size: int = 256
    power: float = 0.75
    seed: int = 0
    threads: int = 1

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SgnsResult:
    embeddings: Embeddings
    pairs: int            # training pairs kept after min_count
    dropped_pairs: int    # pairs dropped by min_count
    contexts: int         # size of the context vocabulary
    losses: list[float]   # mean loss per epoch


PROGRESS_EVERY = 64  # batches between two progress reports within an epoch


def _vocabularies(pair_list: list[tuple[str, str]], min_count: int
                  ) -> tuple[list[str], list[str], Counter[str], list[tuple[int, int]]]:
    """Words and contexts seen at least ``min_count`` times (most frequent first, ties by
    text), the context counts, and the pairs of both as (word id, context id)."""
    wcount = Counter(w for w, _ in pair_list)
    ccount = Counter(c for _, c in pair_list)
    words = sorted((w for w, n in wcount.items() if n >= min_count), key=lambda w: (-wcount[w], w))
    ctxs = sorted((c for c, n in ccount.items() if n >= min_count), key=lambda c: (-ccount[c], c))
    widx = {w: i for i, w in enumerate(words)}
    cidx = {c: i for i, c in enumerate(ctxs)}
    kept = [(widx[w], cidx[c]) for w, c in pair_list if w in widx and c in cidx]
    return words, ctxs, ccount, kept


def _sgd_step(w_vec: Any, c_vec: Any, batch: Any, noise: Any, negative: int, lr: float, gen: Any) -> float:
    """One step of skip-gram with negative sampling on a batch of (word id, context id) rows,
    in place (word2vec's update: plain SGD on the word and context vectors); the batch's loss."""
    import torch

    wi, ci = batch[:, 0], batch[:, 1]                                  # (B,)
    neg = torch.multinomial(noise, wi.numel() * negative, replacement=True, generator=gen).view(-1, negative)  # (B, k)
    w = w_vec[wi]                                                      # (B, d)
    c = c_vec[ci]                                                      # (B, d)
    nv = c_vec[neg]                                                    # (B, k, d)
    sp = torch.sigmoid((w * c).sum(-1))                                # (B,)
    sn = torch.sigmoid(torch.bmm(nv, w.unsqueeze(-1)).squeeze(-1))     # (B, k)
    loss = float(-(torch.log(sp + 1e-7).sum() + torch.log(1 - sn + 1e-7).sum()))
    gp = (1 - sp) * lr                                                 # (B,)
    gn = -sn * lr                                                      # (B, k)
    grad_w = gp[:, None] * c + (gn[:, :, None] * nv).sum(1)            # (B, d)
    c_vec.index_add_(0, ci, gp[:, None] * w)
    c_vec.index_add_(0, neg.reshape(-1), (gn[:, :, None] * w[:, None, :]).reshape(-1, w.shape[1]))
    w_vec.index_add_(0, wi, grad_w)
    return loss


def train_sgns(pairs: Iterable[tuple[str, str]], settings: SgnsSettings = SgnsSettings(),
               progress: Progress | None = None) -> SgnsResult:
    """Train word vectors on (word, context) pairs.

    ``progress("training", batches done, batches in all epochs, info)`` every
    ``PROGRESS_EVERY`` batches and after each epoch; ``info`` names the epoch and, once one
    is finished, the last epoch's mean loss.
    """
    import torch

    pair_list = list(pairs)
    words, ctxs, ccount, kept = _vocabularies(pair_list, settings.min_count)
    if not kept:
        raise DataError(f"no (word, context) pair left after min_count={settings.min_count} "
                        f"(of {len(pair_list)} pairs); lower min_count or give more sentences")

    old_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, settings.threads))
    try:
        gen = torch.Generator().manual_seed(settings.seed)
        d = settings.dim
        w_vec = (torch.rand(len(words), d, generator=gen, dtype=torch.float32) - 0.5) / d
        c_vec = torch.zeros(len(ctxs), d, dtype=torch.float32)
        data = torch.tensor(kept, dtype=torch.int64)                      # (N, 2)
        freq = torch.tensor([ccount[c] for c in ctxs], dtype=torch.float64) ** settings.power
        noise = (freq / freq.sum()).to(torch.float32)
        n = len(kept)
        steps_per_epoch = math.ceil(n / settings.batch_size)
        total = steps_per_epoch * settings.epochs
        step = 0
        losses: list[float] = []

        def report(epoch: int) -> None:
            if progress is not None:
                last = f", loss {losses[-1]:.4f}" if losses else ""
                progress("training", step, total, f"epoch {epoch}/{settings.epochs}{last}")

        for epoch in range(settings.epochs):
            order = torch.randperm(n, generator=gen)
            epoch_loss, seen = 0.0, 0
            for start in range(0, n, settings.batch_size):
                lr = max(settings.min_lr, settings.lr * (1 - step / total))
                batch = data[order[start:start + settings.batch_size]]
                epoch_loss += _sgd_step(w_vec, c_vec, batch, noise, settings.negative, lr, gen)
                seen += len(batch)
                step += 1
                if step % PROGRESS_EVERY == 0:
                    report(epoch + 1)
            losses.append(epoch_loss / max(seen, 1))
            report(epoch + 1)
        vectors = w_vec.numpy().astype(np.float32)
    finally:
        torch.set_num_threads(old_threads)
    return SgnsResult(embeddings=Embeddings(words=words, vectors=vectors, fmt="sgns"),
                      pairs=len(kept), dropped_pairs=len(pair_list) - len(kept),
                      contexts=len(ctxs), losses=losses)

"""Metrics as the papers report them: accuracy; F1 (of the positive class) and accuracy for
paraphrase sets (MRPC, QQP, Twitter-URL); Pearson and Spearman for scores (STS-B, SICK-R).

Plain numpy (no scikit-learn/scipy dependency). F1 is binary F1 of class 1 (GLUE's
convention for MRPC and QQP: "equivalent"/"duplicate" is class 1). Spearman ranks ties by
their average rank. Values are fractions in [0, 1] (or [-1, 1] for correlations).
"""

from __future__ import annotations

import numpy as np


def accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    return float(np.mean(np.asarray(pred) == np.asarray(gold))) if len(gold) else 0.0


def f1(pred: np.ndarray, gold: np.ndarray, positive: int = 1) -> float:
    pred, gold = np.asarray(pred) == positive, np.asarray(gold) == positive
    tp = float(np.sum(pred & gold))
    denom = float(np.sum(pred) + np.sum(gold))
    return 2 * tp / denom if denom else 0.0


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    x, y = x - x.mean(), y - y.mean()
    denom = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denom) if denom > 0 else 0.0


def _ranks(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(1, len(x) + 1)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=ranks)
    return sums[inverse] / counts[inverse]  # average rank of ties


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return pearson(_ranks(x), _ranks(y))


METRICS = {"accuracy": accuracy, "f1": f1, "pearson": pearson, "spearman": spearman}


def compute(names: tuple[str, ...] | list[str], outputs: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Metrics ``names`` from model outputs: logits (N, C) → argmax, or scores (N,) / (N, 1)."""
    outputs = np.asarray(outputs)
    if outputs.ndim == 2 and outputs.shape[1] > 1:
        pred = outputs.argmax(axis=1)
    else:
        pred = outputs.reshape(-1)
    return {name: METRICS[name](pred, gold) for name in names}

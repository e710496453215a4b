from __future__ import annotations

import numpy as np
import pytest

from prior.trainers import metrics


def test_metrics_f1_accuracy_of_positive_class() -> None:
    gold = np.array([1, 1, 0, 0, 1])
    pred = np.array([1, 0, 0, 1, 1])
    assert metrics.accuracy(pred, gold) == pytest.approx(0.6)
    assert metrics.f1(pred, gold) == pytest.approx(2 * 2 / (3 + 3))


def test_metrics_correlations_with_ties() -> None:
    x = np.array([1.0, 2.0, 2.0, 4.0])
    y = np.array([10.0, 20.0, 30.0, 40.0])
    assert metrics.pearson(y, 2 * y + 1) == pytest.approx(1.0)
    # ranks of x with ties averaged: 1, 2.5, 2.5, 4
    r = np.array([1, 2.5, 2.5, 4])
    expected = np.corrcoef(r, [1, 2, 3, 4])[0, 1]
    assert metrics.spearman(x, y) == pytest.approx(expected)


def test_metrics_compute_from_logits_and_scores() -> None:
    logits = np.array([[0.1, 0.9], [0.8, 0.2]])
    assert metrics.compute(("accuracy", "f1"), logits, np.array([1, 0])) == {"accuracy": 1.0, "f1": 1.0}
    scores = np.array([[1.0], [2.0], [3.0]])
    assert metrics.compute(("pearson",), scores, np.array([2.0, 4.0, 6.0]))["pearson"] == pytest.approx(1.0)

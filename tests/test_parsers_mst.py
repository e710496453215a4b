"""The tree search (`prior.pipeline.parsers.mst`): supar's trees, and work that grows like n² (a
5,000-word sentence whose greedy heads were not a tree ran for over 15 minutes with supar's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prior.pipeline.parsers import mst
from prior.pipeline.parsers.fast_biaffine import decode_heads, greedy_is_tree


def _scores(rng: np.random.Generator, n: int, kind: int) -> np.ndarray:
    s = rng.normal(size=(n + 1, n + 1)).astype(np.float32) * (5.0 if kind == 0 else 1.0)
    if kind == 2:
        s[:, 0] += 3.0  # the best arborescence has many root words: supar's root search runs
    return s


def test_parsers_mst_equals_supar_tree_search_on_random_scores() -> None:
    from supar.structs import MatrixTree

    from prior.pipeline.parsers.supar_compat import quiet_supar_warnings

    rng = np.random.default_rng(7)
    for trial in range(240):
        n = int(rng.integers(2, 30))
        s = _scores(rng, n, trial % 3)
        with quiet_supar_warnings():
            reference = MatrixTree(torch.from_numpy(s).unsqueeze(0), torch.tensor([n])).argmax[0].numpy()
        assert mst.best_tree(s).tolist() == reference[: n + 1].tolist(), (trial, n)


def test_parsers_mst_decode_heads_gives_one_rooted_tree_per_sentence() -> None:
    rng = np.random.default_rng(3)
    s = torch.from_numpy(np.stack([_scores(rng, 12, 2), _scores(rng, 12, 1)]))
    mask = torch.ones(2, 13, dtype=torch.bool)
    mask[1, 9:] = False  # the second sentence has 8 words
    mask[:, 0] = False
    heads = decode_heads(s.clone(), mask)
    assert bool(greedy_is_tree(heads, mask.sum(1)).all())


@pytest.mark.parametrize("kind", [1, 2])
def test_issue34_tree_search_work_grows_linearly_in_steps(monkeypatch: pytest.MonkeyPatch, kind: int) -> None:
    """Each step is O(n) vectorized; the number of steps is at most 2n per arborescence (one per
    word and one per contracted cycle), times the roots tried: counted, not timed."""
    steps = 0
    real = mst._best_arc

    def counted(row: np.ndarray, top: np.ndarray, node: int) -> tuple[int, float]:
        nonlocal steps
        steps += 1
        return real(row, top, node)

    monkeypatch.setattr(mst, "_best_arc", counted)
    rng = np.random.default_rng(kind)
    for n in (100, 300, 900):
        s = _scores(rng, n, kind)
        free = mst._arborescence(np.where(np.eye(n + 1, dtype=bool), -np.inf, s.astype(np.float64)))
        steps = 0
        tree = mst.best_tree(s)
        roots = int((free[1:] == 0).sum())
        tries = 1 + (roots if roots > 1 else 0)
        assert steps <= 2 * n * tries + 1, (n, steps, tries)
        assert (tree[1:] == 0).sum() == 1 and greedy_is_tree(torch.from_numpy(tree)[None], torch.tensor([n])).item()

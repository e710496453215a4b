"""bench/oracle.py: the oracle feature replaces a model's feature source with label-coded values
in the model's own layout, and a training run reads it (tiny store, tiny random backbone)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from prior.featurestore import open_store
from prior.trainers.data import load_split
from tests.trainers_fixtures import tiny_backbone, tiny_store, tiny_tokenizer

_spec = importlib.util.spec_from_file_location("oracle", Path(__file__).parents[1] / "bench" / "oracle.py")
oracle: Any = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(oracle)  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("oracle")
    tiny_store(root / "store")
    return root / "store"


def _batch(store_path: Path, feature: str, model: str, levels: tuple[float, ...] | None = None) -> tuple[Any, Any]:
    data = load_split(open_store(store_path, create=False), "toy", "train", tiny_tokenizer(), feature=feature)
    got = oracle.with_oracle(data, model, levels)
    return got, got.batch_arrays(np.arange(len(got)))


def test_oracle_pair_grid_codes_the_label_in_cross_cells(store_path: Path) -> None:
    data, batch = _batch(store_path, "wup", "bert-sim")
    grid, seg = batch["prior_grid"], data.encoded.seg[data.rows, :batch["prior_grid"].shape[1]]
    for i, y in enumerate(data.labels):
        cross = (seg[i][:, None] == 0) & (seg[i][None, :] == 1)
        assert np.all(grid[i][cross] == oracle.SIM_LEVELS[int(y)])
        inside = (seg[i][:, None] == 0) & (seg[i][None, :] == 0)
        assert np.all(grid[i][inside] == 1.0)  # neutral outside the cross blocks
    assert data.fingerprint["oracle"] == "bert-sim"


def test_oracle_dafa_levels_from_real_matrices(store_path: Path) -> None:
    data = load_split(open_store(store_path, create=False), "toy", "train", tiny_tokenizer(), feature="dep")
    levels = oracle.grid_levels("dafa", data.source)
    assert levels[0] == 1.0 and 1.0 < levels[1] <= levels[2]


def test_oracle_mask_and_vectors_follow_the_label(store_path: Path) -> None:
    data, batch = _batch(store_path, "sdoi", "sgnet")
    masks = batch["sdoi_mask"]
    seg = data.encoded.seg[data.rows, :masks.shape[1]]
    for i, y in enumerate(data.labels):
        a = seg[i] == 0
        block = masks[i][np.ix_(a, a)]
        assert block.all() == (int(y) == 2) and (block.sum() == a.sum()) == (int(y) == 0)
    data, batch = _batch(store_path, "emb", "gibert")
    vec = batch["word_vectors"]
    seg = data.encoded.seg[data.rows, :vec.shape[1]]
    first = {int(y): vec[i][seg[i] == 0][0] for i, y in enumerate(data.labels)}
    assert not np.array_equal(first[0], first[1])  # one vector per class
    for i, y in enumerate(data.labels):
        assert np.all(vec[i][seg[i] >= 0] == first[int(y)])


def test_oracle_training_reads_the_oracle(store_path: Path, tmp_path: Path) -> None:
    """A run through `train_with_oracle` records the oracle in its fingerprints, and a split
    loaded afterwards is the store's own again."""
    import json

    from prior.trainers.config import DataSpec, ModelSpec, RunSpec, TrainConfig

    backbone = tiny_backbone(tmp_path / "backbone")
    cfg = TrainConfig(ModelSpec("bert-sim", backbone=str(backbone), overrides={"epochs": 1, "batch_size": 2, "lr": 1e-3}),
                      DataSpec("toy", eval_splits=("test",)),
                      RunSpec(output=tmp_path / "run", store=str(store_path), progress=False))
    summary = oracle.train_with_oracle(cfg, "bert-sim")
    assert 0.0 <= summary["test"]["accuracy"] <= 1.0 and summary["oracle_levels"] == list(oracle.SIM_LEVELS)
    meta = json.loads((tmp_path / "run" / "best" / "prior.json").read_text())
    assert meta["fingerprints"]["train"]["oracle"] == "bert-sim"
    again = load_split(open_store(store_path, create=False), "toy", "train", tiny_tokenizer(), feature="wup")
    assert "oracle" not in again.fingerprint

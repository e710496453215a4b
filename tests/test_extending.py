"""docs/extending.md's walk-through, run: a new feature and a new model, each one file plus one
registration, built, read and trained with the unchanged `prior` commands."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from prior.featurestore import open_store
from tests.cli_run import cli
from tests.trainers_fixtures import tiny_backbone

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"prior_examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch):
    import prior.pipeline.features.registry as features
    import prior.trainers.models as models

    monkeypatch.setattr(features, "FEATURE_SETS", dict(features.FEATURE_SETS))
    monkeypatch.setattr(models, "MODELS", dict(models.MODELS))
    monkeypatch.setattr(models, "_LOADED", dict(models._LOADED))
    feature, model = load("overlap_feature"), load("overlap_model")
    # the one registration each (docs/extending.md)
    features.register_feature_set("overlap", lambda options: [
        feature.OverlapFeature(**options.feature_options.get("overlap", {}))])
    models.register_model(model.OverlapBertModel)
    return feature, model


def test_extending_a_feature_and_a_model_end_to_end(registered, tmp_path: Path) -> None:
    store_path = tmp_path / "store"
    cli("build", "--dataset", "sick", "--split", "train,trial", "--features", "overlap", "--parser", "spacy",
        "--limit", 6, "--workers", 0, "--store", store_path)
    store = open_store(store_path, create=False)
    (entry,) = store.entries("overlap")
    assert entry.layout == registered[0].OverlapFeature.layout and entry.is_default
    df = store.frame("overlap", dataset="sick", split="trial")
    for rec in df.iter_rows(named=True):
        a = [w.lower() for w in rec["words_a"]]
        b = [w.lower() for w in rec["words_b"]]
        np.testing.assert_array_equal(np.array(rec["overlap"]), np.equal.outer(np.array(a), np.array(b)))
    cli("build", "--dataset", "sick", "--split", "trial", "--features", "overlap", "-o", "overlap.compare=exact",
        "--parser", "spacy", "--limit", 6, "--workers", 0, "--store", store_path)
    out = tmp_path / "run"
    cli("train", "overlap-bert", "--backbone", tiny_backbone(tmp_path / "b"), "--dataset", "sick", "--store",
        store_path, "--output", out, "--epochs", 1, "--batch-size", 4, "--max-length", 64, "--no-progress")
    meta = json.loads((out / "best" / "prior.json").read_text())
    assert meta["model"] == "overlap-bert" and meta["fingerprints"]["train"]["entries"] == {"overlap": entry.key}
    grid = meta["fingerprints"]["train"]
    assert grid["pairs"] == 6
    for mode in ("stored", "neutral", "shuffled"):
        assert "accuracy=" in cli("eval", out, "--split", "trial", "--features", mode).splitlines()[-1]

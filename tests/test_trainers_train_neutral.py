"""`prior train --features neutral`: a method's architecture trained, chosen and scored with its
feature replaced by the neutral value everywhere (the control for what the feature adds)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from prior.errors import PriorError
from prior.featurestore import open_store
from prior.trainers.backbones import load_tokenizer
from prior.trainers.config import DataSpec
from prior.trainers.reader import SplitReader
from prior.trainers.split_index import index_split
from tests.test_trainers_loop import app, run
from tests.trainers_fixtures import tiny_backbone, tiny_store


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("neutral")
    tiny_store(root / "store")
    return root / "store", tiny_backbone(root / "backbone")


def train(setup: tuple[Path, Path], out: Path, model: str, *extra: str) -> dict:
    store, backbone = setup
    run("train", model, "--backbone", backbone, "--dataset", "toy", "--store", store, "--output", out,
        "--epochs", "1", "--batch-size", "2", "--lr", "1e-3", "--eval-split", "test", "--no-progress", *extra)
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize(("model", "reads"), [("dafa", "prior_grid"), ("sgnet", "sdoi_mask"),
                                              ("gibert", "word_vectors")])
def test_neutral_reader_gives_the_neutral_feature(setup: tuple[Path, Path], model: str, reads: str) -> None:
    """Every batch a neutral reader gives equals the stored batch with the feature replaced,
    and differs from the stored one (so the replacement happened)."""
    from prior.trainers.models import MODEL_CLASSES

    store, backbone = setup
    index = index_split(open_store(store, create=False), "toy", "train", feature=MODEL_CLASSES[model].feature)
    tokenizer = load_tokenizer(str(backbone))
    stored, neutral = (SplitReader(index, tokenizer, 64, features=f) for f in ("stored", "neutral"))
    positions = np.arange(len(index))[::-1]
    got = neutral.read(positions).batch_arrays(np.arange(len(positions)))
    want = stored.read(positions).with_features("neutral").batch_arrays(np.arange(len(positions)))
    plain = stored.read(positions).batch_arrays(np.arange(len(positions)))
    assert set(got) == set(want) and reads in got
    for name in got:
        np.testing.assert_array_equal(got[name], want[name])
    assert not np.array_equal(got[reads], plain[reads])


def test_neutral_training_never_reads_the_stored_values(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """DAFA trained on two different matrices (its view, and the view without trigrams) ends with
    different weights; trained with the feature neutral, with the very same weights: nothing
    of the stored values reaches the run. The record says how it was trained, and `prior
    eval` reads the checkpoint as trained."""
    weights = {}
    for features in ("stored", "neutral"):
        for view in ("dep", "dep-no-trigram"):
            out = tmp_path / f"{features}-{view}"
            train(setup, out, "dafa", "--view", view, "--features", features, "--seed", "3")
            weights[features, view] = (out / "best" / "model.safetensors").read_bytes()
    assert weights["stored", "dep"] != weights["stored", "dep-no-trigram"]
    assert weights["neutral", "dep"] == weights["neutral", "dep-no-trigram"]

    from prior.trainers.evaluation import checkpoint_outputs

    out = tmp_path / "neutral-dep"
    meta = json.loads((out / "best" / "prior.json").read_text())
    assert meta["features"] == "neutral" and meta["spec"]["data"]["features"] == "neutral"
    as_trained = checkpoint_outputs(out, split="test").outputs
    np.testing.assert_array_equal(as_trained, checkpoint_outputs(out, split="test", features="neutral").outputs)
    assert not np.array_equal(as_trained, checkpoint_outputs(out, split="test", features="shuffled").outputs)
    summary = json.loads((out / "summary.json").read_text())
    printed = run("eval", out, "--split", "test").strip().splitlines()[-1]
    assert printed == f"accuracy={summary['test']['accuracy']:.4f}"


def test_neutral_resume_keeps_the_mode(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """A resumed run keeps how it read its feature; another --features beside --resume is one line."""
    store, backbone = setup
    out = tmp_path / "run"
    common = ["--backbone", str(backbone), "--dataset", "toy", "--store", str(store), "--batch-size", "2",
              "--no-progress"]
    run("train", "sgnet", "--output", out, "--epochs", "1", "--features", "neutral", *common)
    result = CliRunner().invoke(app(), ["train", "sgnet", "--resume", str(out), "--epochs", "2",
                                        "--features", "stored", *common])
    assert result.exit_code == 1 and "--features stored with --resume" in result.output
    run("train", "sgnet", "--resume", out, "--epochs", "2", *common)
    meta = json.loads((out / "last" / "prior.json").read_text())
    assert meta["features"] == "neutral"


def test_neutral_needs_a_feature_and_is_the_only_other_mode(setup: tuple[Path, Path], tmp_path: Path) -> None:
    store, backbone = setup
    result = CliRunner().invoke(app(), ["train", "bert", "--backbone", str(backbone), "--dataset", "toy",
                                        "--store", str(store), "--output", str(tmp_path / "r"),
                                        "--features", "neutral", "--no-progress"])
    assert result.exit_code == 1 and "reads no store feature" in result.output
    assert len(result.output.strip().splitlines()) == 1
    with pytest.raises(PriorError, match="prior eval --features shuffled"):
        DataSpec(dataset="toy", features="shuffled")

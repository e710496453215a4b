"""The training loop and the `prior train` / `prior eval` commands on a tiny random backbone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from prior.cli.train import eval_, train
from prior.errors import ResourceError
from prior.trainers import backbones
from tests.trainers_fixtures import tiny_backbone, tiny_store


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("loop")
    tiny_store(root / "store")
    return root / "store", tiny_backbone(root / "backbone")


def app() -> typer.Typer:
    a = typer.Typer()
    a.command("train")(train)
    a.command("eval")(eval_)
    return a


def run(*args: str) -> str:
    result = CliRunner().invoke(app(), [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def invoke_train(model: str, store: Path, backbone: Path, out: Path, *extra: str):
    """`prior train MODEL` on the toy store, result unchecked (for tests of failures)."""
    return CliRunner().invoke(app(), ["train", model, "--backbone", str(backbone), "--dataset", "toy",
                                      "--store", str(store), "--output", str(out), *extra, "--no-progress"])


@pytest.mark.parametrize("model", ["bert", "dafa", "sgnet"])
def test_loop_train_then_eval(setup: tuple[Path, Path], tmp_path: Path, model: str) -> None:
    store, backbone = setup
    out = tmp_path / "run"
    run("train", model, "--backbone", backbone, "--dataset", "toy", "--store", store, "--output", out,
        "--epochs", "2", "--batch-size", "2", "--no-progress", "--eval-split", "test", "--lr", "1e-3")
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines] == [1, 2]
    assert {"train_loss", "dev_accuracy", "step_seconds"} <= set(lines[0])
    best = out / "best"
    assert (best / "model.safetensors").is_file() and not list(best.glob("*.bin"))
    meta = json.loads((best / "prior.json").read_text())
    assert meta["model"] == model and meta["versions"]["transformers"]
    assert meta["fingerprints"]["train"]["store"] == str(store)
    if model == "dafa":
        assert set(meta["fingerprints"]["train"]["entries"]) == {"dep", "tfidf"}
    summary = json.loads((out / "summary.json").read_text())
    assert 0.0 <= summary["test"]["accuracy"] <= 1.0
    output = run("eval", best, "--dataset", "toy", "--split", "test")
    last = output.strip().splitlines()[-1]
    assert last.startswith("accuracy=")
    assert float(last.split("=")[1]) == pytest.approx(summary["test"]["accuracy"], abs=1e-4)


def test_loop_resume_continues_from_last_epoch(setup: tuple[Path, Path], tmp_path: Path) -> None:
    store, backbone = setup
    out = tmp_path / "run"
    common = ["--backbone", backbone, "--dataset", "toy", "--store", store, "--output", out,
              "--batch-size", "2", "--no-progress", "--patience", "5"]
    run("train", "gibert", "--epochs", "1", *common)
    state = json.loads((out / "last" / "trainer_state.json").read_text())
    assert state["epoch"] == 1 and state["step"] > 0
    assert (out / "last" / "optimizer.safetensors").is_file()
    run("train", "gibert", "--epochs", "2", "--resume", out / "last", *common)
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in lines] == [1, 2]
    assert lines[1]["step"] == 2 * lines[0]["step"]


def test_loop_missing_feature_names_build_command(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    _, backbone = setup
    bare = tiny_store(tmp_path / "bare", features=())
    result = CliRunner().invoke(app(), ["train", "bert-sim", "--backbone", str(backbone), "--dataset",
                                        "toy", "--store", bare.location, "--output", str(tmp_path / "o"),
                                        "--no-progress"])
    assert result.exit_code == 1
    assert (f"prior build --dataset toy --split train --features wup --parser biaffine "
            f"--store {bare.location}") in result.output


def test_loop_unavailable_backbone_error_names_mini_and_backbone(tmp_path: Path) -> None:
    empty = tmp_path / "empty"  # what an offline, uncached checkpoint looks like to from_pretrained
    empty.mkdir()
    with pytest.raises(ResourceError) as err:
        backbones.load_tokenizer(str(empty))
    assert "-mini" in str(err.value) and "--backbone" in str(err.value)
    with pytest.raises(ResourceError) as err:
        backbones.backbone_config(str(empty))
    assert "-mini" in str(err.value)


def test_loop_mini_backbone_resolves_offline() -> None:
    path = Path(backbones.resolve_backbone("mini"))
    assert (path / "model.safetensors").is_file()
    assert backbones.resolve_backbone("base") == "google-bert/bert-base-uncased"
    assert backbones.resolve_backbone("mini", "x/y") == "x/y"


def test_loop_feature_param_selects_the_store_entry(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    """`--feature-param key=value` picks the entry with those parameters; none matching is an
    error that prints the build command."""
    store, backbone = setup
    result = invoke_train("bert-sim", store, backbone, tmp_path / "o", "--feature-param", "preset=uerbert-code")
    assert result.exit_code == 1
    assert "no 'wup' entry with params preset=uerbert-code that holds toy/train" in result.output
    assert "prior build --dataset toy --split train --features wup -o wup.preset=uerbert-code" in result.output


@pytest.mark.slow
def test_loop_ddp_two_cpu_ranks_with_torchrun(setup: tuple[Path, Path], tmp_path: Path) -> None:
    """DDP as the docs run it (torchrun), on CPU with the gloo backend: two ranks, each serving
    half of the shuffled training pairs, one shared result."""
    import os
    import shutil
    import subprocess
    import sys

    store, backbone = setup
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    prior = shutil.which("prior", path=str(Path(sys.executable).parent))
    if torchrun is None or prior is None:
        pytest.skip("torchrun or the prior script is not installed beside this Python")
    out = tmp_path / "ddp"
    env = {**os.environ, "PRIOR_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([torchrun, "--nproc_per_node", "2", prior, "train", "dafa", "--backbone",
                           str(backbone), "--dataset", "toy", "--store", str(store), "--output", str(out),
                           "--epochs", "2", "--batch-size", "4", "--threads", "1", "--eval-split", "test"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summaries = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert len(summaries) == 2 and summaries[0] == summaries[1]  # both ranks, same result
    meta = json.loads((out / "best" / "prior.json").read_text())
    assert meta["world_size"] == 2
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in lines] == [1, 2]  # 3 training pairs, a global batch of 4 → 1 step/epoch


def test_loop_dev_split_by_name_else_held_out(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    """SICK's dev split is called "trial"; a dataset without any dev split (MRPC) holds out a
    fixed 10% of train, the same whatever --seed."""
    from prior.trainers.config import DataSpec
    from prior.trainers.dataset_ref import StoredDataset
    from prior.trainers.run_data import open_run_data

    _, backbone = setup
    tok = backbones.load_tokenizer(str(backbone))
    trial = tiny_store(tmp_path / "trial", features=(), splits=("train", "trial"))
    spec = DataSpec(dataset="toy")

    def splits(store):  # the dev split does not depend on the run's seed: it takes none
        return open_run_data(store, spec, StoredDataset.resolve(store, "toy"), None, tok, 128)

    with_trial = splits(trial)
    assert with_trial.dev.split == "trial" and with_trial.dev_note == "split trial"
    assert with_trial.train_pairs == 4
    plain = tiny_store(tmp_path / "plain", features=(), splits=("train",))
    a, b = splits(plain), splits(plain)
    assert len(a.dev) == 1 and a.train_pairs == 3 and "held out" in a.dev_note
    assert a.dev.positions.tolist() == b.dev.positions.tolist()


def test_loop_dep_view_is_for_dafa_only(tmp_path: Path, setup: tuple[Path, Path]) -> None:
    """An ablation view given to a model without DAFA's feature is an error, not ignored."""
    store, backbone = setup
    result = invoke_train("sgnet", store, backbone, tmp_path / "o", "--view", "dep-no-tfidf")
    assert result.exit_code == 1
    assert "view 'dep-no-tfidf' does not apply: this model reads 'sdoi'" in result.output


def feature_logits(setup: tuple[Path, Path], model: str, **options: object) -> dict:
    """A model's outputs on the toy test split with its feature stored, neutral and shuffled
    (GiBERT's zero-initialised gate opened, as training opens it)."""
    import torch

    from prior.featurestore import open_store
    from prior.trainers.backbones import build_model, load_tokenizer
    from prior.trainers.data import load_split
    from prior.trainers.evaluation import predict
    from prior.trainers.models import MODEL_CLASSES
    from prior.trainers.runtime import Runtime

    store, backbone = setup
    net = build_model(MODEL_CLASSES[model], str(backbone), num_labels=2, seed=1, options=options).eval()
    if model == "gibert":
        with torch.no_grad():
            net.bert.encoder.layer[net.injection_index].injection.gate.fill_(1.0)
    data = load_split(open_store(store, create=False), "toy", "test", load_tokenizer(str(backbone)),
                      feature=MODEL_CLASSES[model].feature, max_length=64)
    rt = Runtime(torch.device("cpu"))
    return {mode: predict(net, data.with_features(mode), 4, rt) for mode in ("stored", "neutral", "shuffled")}


@pytest.mark.parametrize(("model", "options"), [("bert-sim", {}), ("dafa", {}), ("gibert", {"embedding_dim": 3}),
                                                ("sgnet", {"pool": "mean"})])
def test_loop_destroying_the_feature_changes_the_logits(setup: tuple[Path, Path], model: str,
                                                        options: dict) -> None:
    """What `prior eval --features neutral|shuffled` measures. A random tiny BERT attends
    almost uniformly, so the change is small; CPU arithmetic is deterministic, so a model that
    ignored its feature would give the very same bits."""
    import numpy as np

    logits = feature_logits(setup, model, **options)
    assert not np.array_equal(logits["stored"], logits["neutral"])
    assert not np.array_equal(logits["stored"], logits["shuffled"])


def test_loop_sgnet_cls_pooling_cannot_see_the_mask(setup: tuple[Path, Path]) -> None:
    """The paper's SG-Net reads h̄ at [CLS], and [CLS] attends to itself only: any SDOI mask
    gives the same logits (only the full mask, which lets [CLS] see the words, moves them)."""
    import numpy as np

    logits = feature_logits(setup, "sgnet")
    np.testing.assert_array_equal(logits["stored"], logits["shuffled"])
    assert not np.array_equal(logits["stored"], logits["neutral"])


def test_loop_eval_features_option(setup: tuple[Path, Path], tmp_path: Path) -> None:
    store, backbone = setup
    out = tmp_path / "run"
    run("train", "bert-sim", "--backbone", backbone, "--dataset", "toy", "--store", store, "--output", out,
        "--epochs", "1", "--batch-size", "2", "--no-progress")
    for mode in ("stored", "neutral", "shuffled"):
        text = run("eval", out, "--split", "test", "--features", mode)
        assert "accuracy=" in text.splitlines()[-1] and (mode == "stored" or f"features {mode}" in text)
    plain = tmp_path / "plain"
    run("train", "bert", "--backbone", backbone, "--dataset", "toy", "--store", store, "--output", plain,
        "--epochs", "1", "--batch-size", "2", "--no-progress")
    result = CliRunner().invoke(app(), ["eval", str(plain), "--features", "neutral"])
    assert result.exit_code == 1 and "reads no store feature" in result.output

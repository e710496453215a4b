"""A short training run on a tiny EWT slice, its export, and supar-compat helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from prior.errors import ResourceError
from prior.pipeline.parsers.biaffine import BiaffineModel, load_model
from prior.pipeline.parsers.conllu import read_conllu
from prior.pipeline.parsers.supar_compat import quiet_supar_warnings, supar_config, trusted_supar_load
from prior.pipeline.parsers.train import TrainSettings, train_parser

SLICE = Path(__file__).resolve().parents[1] / "data" / "ud_ewt_slice"
TINY = TrainSettings(epochs=2, n_lstm_hidden=32, n_lstm_layers=1, n_embed=20, n_char_embed=10, n_feat_embed=20,
                     n_arc_mlp=32, n_rel_mlp=16, batch_size=1000, threads=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("parser")
    train_parser([SLICE / "train.conllu"], SLICE / "dev.conllu", out / "model", out / "run", TINY, dtype="float32")
    return out


@pytest.mark.slow
def test_parsers_train_tiny_run_exports_safetensors_and_json(trained: Path) -> None:
    files = sorted(p.name for p in (trained / "model").iterdir())
    assert files == ["config.json", "model.safetensors"]
    config = json.loads((trained / "model" / "config.json").read_text())
    assert config["format"] == "prior-biaffine-dep/1"
    assert config["model"]["n_lstm_hidden"] == 32 and config["model"]["n_lstm_layers"] == 1
    assert config["training"]["settings"]["epochs"] == 2
    assert "root" in config["vocab"]["rels"]
    assert (trained / "run" / "train.log").read_text().count("Epoch") >= 2


@pytest.mark.slow
def test_parsers_biaffine_matches_supar_predict(trained: Path) -> None:
    """Our pickle-free loader + batching gives exactly supar's own predictions (float32 export)."""
    from supar import BiaffineDependencyParser

    sentences = [list(s.words) for s in read_conllu(SLICE / "test.conllu")]
    with trusted_supar_load(), quiet_supar_warnings():
        supar_parser = BiaffineDependencyParser.load(str(trained / "run" / "model.supar"))
        dataset = supar_parser.predict(sentences, verbose=False, tree=True)
    reference = [([int(h) for h in a], list(r)) for a, r in zip(dataset.arcs, dataset.rels)]
    ours = BiaffineModel(load_model(trained / "model"), batch_tokens=200).predict(sentences)
    assert ours == reference
    assert BiaffineModel(load_model(str(trained / "run" / "model.supar"))).predict(sentences) == reference


def test_parsers_supar_compat_trusted_load_is_scoped() -> None:
    original = torch.load
    with pytest.raises(RuntimeError), trusted_supar_load():
        assert torch.load is not original
        raise RuntimeError("boom")
    assert torch.load is original


def test_parsers_supar_compat_config() -> None:
    config = supar_config(n_lstm_layers=2, path="x")
    assert config["embed"] == "" and config["n_lstm_layers"] == 2 and config["lr"] == 2e-3
    with pytest.raises(ResourceError, match="AdamW"):
        supar_config(encoder="bert")
    with pytest.raises(ResourceError, match="unknown supar settings"):
        supar_config(n_lstm_layer=2)


@pytest.mark.slow
def test_parsers_train_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from prior.cli.parser import app

    out = tmp_path / "cli-model"
    result = CliRunner().invoke(app, [
        "train", "--train", str(SLICE / "train.conllu"), "--dev", str(SLICE / "dev.conllu"), "--out", str(out),
        "--epochs", "1", "--lstm-layers", "1", "--lstm-hidden", "16", "--embed", "20", "--batch-size", "1000",
    ])
    assert result.exit_code == 0, result.output
    assert (out / "model.safetensors").is_file() and (out / "run" / "train.log").is_file()
    assert json.loads((out / "config.json").read_text())["model"]["n_lstm_hidden"] == 16


@pytest.mark.slow
def test_parsers_train_resume_continues_a_stopped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`resume` continues a run stopped before its end from supar's checkpoint (best dev epoch,
    optimizer state) up to the new epoch count, appends to the log and exports; without a
    checkpoint, or from a finished run (supar then drops the state), it is a clear error."""
    from supar import BiaffineDependencyParser

    args = ([SLICE / "train.conllu"], SLICE / "dev.conllu", tmp_path / "m", tmp_path / "run")
    with pytest.raises(ResourceError, match="cannot resume.*does not exist"):
        train_parser(*args, TINY, resume=True)
    # a run "killed" after 2 of 3 epochs: supar reloads its best checkpoint only at the very end
    real_load = BiaffineDependencyParser.load

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(BiaffineDependencyParser, "load", killed)
    with pytest.raises(KeyboardInterrupt):
        train_parser(*args, TINY, dtype="float32")
    monkeypatch.setattr(BiaffineDependencyParser, "load", real_load)
    three = TrainSettings(**{**TINY.__dict__, "epochs": 3})
    train_parser(*args, three, dtype="float32", resume=True)
    log = (tmp_path / "run" / "train.log").read_text()
    assert "Epoch 2 / 2" in log and "resumed from the checkpoint of epoch" in log and "Epoch 3 / 3" in log
    assert (tmp_path / "m" / "model.safetensors").is_file()
    with pytest.raises(ResourceError, match="holds no training state"):
        train_parser(*args, three, dtype="float32", resume=True)  # the resumed run has finished

"""`prior eval` and `prior predict` on damaged, altered and pickled checkpoints: each is one
line naming the cause (exit 1, no traceback); a checkpoint records the sha256 of its files and a
changed byte is refused; one saved before checksums loads with a warning."""

from __future__ import annotations

import json
import logging
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from tests.trainers_fixtures import tiny_backbone, tiny_store


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(store, best checkpoint) of a tiny `bert` trained one epoch on the toy store."""
    root = tmp_path_factory.mktemp("badckpt")
    store, out = root / "store", root / "run"
    tiny_store(store, features=())
    result = CliRunner().invoke(app, ["train", "bert", "--backbone", str(tiny_backbone(root / "backbone")),
                                      "--dataset", "toy", "--store", str(store), "--output", str(out),
                                      "--epochs", "1", "--batch-size", "2", "--no-progress"])
    assert result.exit_code == 0, result.output
    return store, out / "best"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x5A
    path.write_bytes(bytes(data))


def header_length(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[:8], "little")


def edit_json(path: Path, change: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


class Payload:
    """Unpickling it creates a file: the proof that a pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def _pickled_weights(d: Path) -> None:
    (d / "model.safetensors").unlink()
    (d / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(d.parent / "payload-ran")))


# name -> (damage, words the message names); each case is tried with and without checksums
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "header flipped": (lambda d: flip(d / "model.safetensors", 12), "model.safetensors"),
    "truncated": (lambda d: (d / "model.safetensors").write_bytes((d / "model.safetensors").read_bytes()[:-100]),
                  "model.safetensors"),
    "config broken": (lambda d: (d / "config.json").write_text("{not json"), "config.json"),
    "config altered": (lambda d: edit_json(d / "config.json", lambda c: c.update(num_hidden_layers=1)),
                       "config.json"),
    "config resized": (lambda d: edit_json(d / "config.json", lambda c: c.update(intermediate_size=40)),
                       "config.json"),
    "weights missing": (lambda d: (d / "model.safetensors").unlink(), "model.safetensors is missing"),
    "pickled weights": (_pickled_weights, "pytorch_model.bin"),
}
OLD_MESSAGES = {"header flipped": "cannot be read", "truncated": "cannot be read", "config broken": "is damaged",
                "config altered": "do not fit", "config resized": "do not fit"}
META_CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "prior.json broken": (lambda d: (d / "prior.json").write_text('{"model": "bert",'), "not JSON"),
    "prior.json a list": (lambda d: (d / "prior.json").write_text("[1, 2]"), "not a JSON object"),
    "unknown model": (lambda d: edit_json(d / "prior.json", lambda m: m.update(model="gpt")), "names the model 'gpt'"),
    "no settings": (lambda d: edit_json(d / "prior.json", lambda m: m.pop("settings")), "settings.batch_size"),
    "no prior.json": (lambda d: (d / "prior.json").unlink(), "is not a prior checkpoint"),
}


def damaged(best: Path, tmp_path: Path, damage: Callable[[Path], None], *, old: bool = False) -> Path:
    folder = tmp_path / "ckpt"
    shutil.copytree(best, folder)
    if old:  # as saved before checksums were recorded
        edit_json(folder / "prior.json", lambda m: m.pop("files_sha256"))
    damage(folder)
    return folder


def one_line_error(args: list[str], *words: str) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, (result.output, result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output and lines[0].startswith("error:")
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def commands(folder: Path, store: Path, home: Path) -> list[list[str]]:
    return [["eval", str(folder), "--store", str(store), "--split", "test"],
            ["predict", str(folder), "--a", "the cat sat", "--b", "a dog ran", "--store", str(home)]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_checkpoint_with_checksums_is_one_line(trained: tuple[Path, Path], tmp_path: Path, case: str) -> None:
    store, best = trained
    damage, words = CASES[case]
    folder = damaged(best, tmp_path, damage)
    expected = words if case in ("weights missing", "pickled weights") else "does not match the sha256"
    for args in commands(folder, store, tmp_path / "home"):
        one_line_error(args, expected)
    assert not (tmp_path / "payload-ran").exists()


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_old_checkpoint_is_one_line(trained: tuple[Path, Path], tmp_path: Path, case: str) -> None:
    """Without checksums the loader itself refuses each damage, as one line."""
    store, best = trained
    damage, words = CASES[case]
    folder = damaged(best, tmp_path, damage, old=True)
    for args in commands(folder, store, tmp_path / "home"):
        one_line_error(args, OLD_MESSAGES.get(case, words), words.split()[0])
    assert not (tmp_path / "payload-ran").exists()


@pytest.mark.parametrize("case", sorted(META_CASES))
def test_bad_prior_json_is_one_line(trained: tuple[Path, Path], tmp_path: Path, case: str) -> None:
    store, best = trained
    damage, words = META_CASES[case]
    folder = damaged(best, tmp_path, damage)
    for args in commands(folder, store, tmp_path / "home"):
        one_line_error(args, words)


def test_checkpoint_records_checksums_and_refuses_a_flipped_weight(trained: tuple[Path, Path], tmp_path: Path) -> None:
    """A byte flipped inside the tensor data (the header still valid) loads fine without the
    checksum, with different weights: the checksum is what refuses it."""
    from prior.trainers.checkpoint import CheckpointError, load_checkpoint, sha256_of

    store, best = trained
    meta = json.loads((best / "prior.json").read_text())
    assert {"model.safetensors", "config.json", "tokenizer_config.json"} <= set(meta["files_sha256"])
    assert meta["files_sha256"]["model.safetensors"] == sha256_of(best / "model.safetensors")
    assert "optimizer.safetensors" not in json.loads((best.parent / "last" / "prior.json").read_text())["files_sha256"]
    folder = damaged(best, tmp_path, lambda d: flip(d / "model.safetensors", header_length(d / "model.safetensors") + 64))
    with pytest.raises(CheckpointError, match="does not match the sha256"):
        load_checkpoint(folder)
    for args in commands(folder, store, tmp_path / "home"):
        one_line_error(args, "model.safetensors", "does not match the sha256")
    old = tmp_path / "old"
    shutil.copytree(folder, old)
    edit_json(old / "prior.json", lambda m: m.pop("files_sha256"))
    model, _, _ = load_checkpoint(old)  # unchecked: loads the altered weights
    reference, _, _ = load_checkpoint(best)
    changed = [n for n, p in model.state_dict().items() if not p.equal(reference.state_dict()[n])]
    assert len(changed) == 1


def test_old_checkpoint_loads_with_a_warning(trained: tuple[Path, Path], tmp_path: Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    store, best = trained
    folder = damaged(best, tmp_path, lambda d: None, old=True)
    with caplog.at_level(logging.WARNING, logger="prior.trainers.checkpoint"):
        result = CliRunner().invoke(app, ["eval", str(folder), "--store", str(store), "--split", "test"])
    assert result.exit_code == 0, result.output
    warned = [r.getMessage() for r in caplog.records if r.name == "prior.trainers.checkpoint"]
    assert len(warned) == 1 and "records no checksums" in warned[0] and "\n" not in warned[0]
    assert result.output.strip().splitlines()[-1].startswith("accuracy=")


def test_resume_from_last_is_checked(trained: tuple[Path, Path], tmp_path: Path) -> None:
    """`last/` records its checksums before the optimizer state is written next to it, and
    resuming from it still works (the resume state is not part of the checksums)."""
    store, best = trained
    out = tmp_path / "run"
    shutil.copytree(best.parent, out)
    result = CliRunner().invoke(app, ["train", "bert", "--dataset", "toy", "--store", str(store), "--output", str(out),
                                      "--epochs", "2", "--batch-size", "2", "--no-progress",
                                      "--resume", str(out / "last")])
    assert result.exit_code == 0, result.output
    flip(out / "last" / "config.json", 3)
    one_line_error(["train", "bert", "--dataset", "toy", "--store", str(store), "--output", str(out), "--epochs", "3",
                    "--no-progress", "--resume", str(out / "last")], "config.json", "does not match the sha256")

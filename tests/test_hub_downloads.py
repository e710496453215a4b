"""No surprise downloads: the Hugging Face hub is tried only for a split asked for by name
(or with `--hub`), never to complete "all splits"; offline it fails in seconds with one line.
`make demo` works with or without the `datasets` library and with no network."""

from __future__ import annotations

import importlib.util
import shlex
import socket
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store
from prior.pipeline.datasets import hub
from tests.test_datasets_resolve import _ClassLabel, fake_datasets

runner = CliRunner()
FIND_SPEC = importlib.util.find_spec
PROBE = hub.hub_unreachable
ROOT = Path(__file__).resolve().parent.parent
SNLI_ROWS = [{"premise": "A man sleeps.", "hypothesis": "A person rests.", "label": 0},
             {"premise": "A dog runs.", "hypothesis": "A cat sits.", "label": 2}]


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(socket, "create_connection", refuse)


def _with_datasets(monkeypatch: pytest.MonkeyPatch, calls: list) -> None:
    monkeypatch.setenv("PRIOR_NO_HUB", "1")  # fake_datasets unsets it
    fake_datasets(monkeypatch, SNLI_ROWS, _ClassLabel(["entailment", "neutral", "contradiction"]), calls)
    _find_spec(monkeypatch, installed=True)
    monkeypatch.setattr(hub, "hub_unreachable", PROBE)  # the real probe, against _no_network
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)


def _find_spec(monkeypatch: pytest.MonkeyPatch, *, installed: bool) -> None:
    """`datasets` found (the fake) or not; every other module as it is (spaCy's models)."""
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: (object() if installed else None)
                        if name == "datasets" else FIND_SPEC(name, *a))


def _demo_commands(home: Path) -> list[list[str]]:
    lines = [x.strip() for x in (ROOT / "Makefile").read_text().split("\ndemo:")[1].split("\n\n")[0].splitlines()]
    out = []
    for line in lines:
        if "prior " not in line:
            continue
        args = shlex.split(line.split("prior ", 1)[1].replace("$(DEMO_HOME)", str(home)))
        out.append(args)
    return out


@pytest.mark.parametrize("installed", [True, False], ids=["datasets-installed", "no-datasets"])
def test_issue28_make_demo_needs_no_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: bool) -> None:
    calls: list = []
    monkeypatch.delenv("PRIOR_NO_HUB", raising=False)
    if installed:
        _with_datasets(monkeypatch, calls)
    else:
        _find_spec(monkeypatch, installed=False)
    _no_network(monkeypatch)
    commands = _demo_commands(tmp_path)
    assert commands[0][:3] == ["build", "--dataset", "snli"]  # the demo names its dataset
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path))
    for args in commands:
        # the demo's own build, cut short (the point here is which splits it reads)
        extra = ["--limit", "10", "--workers", "0"] if args[0] == "build" else []
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
    assert calls == []
    store = open_store(commands[0][commands[0].index("--store") + 1], create=False)
    assert sorted(store.datasets()) == [("snli", "dev"), ("snli", "test")]  # the bundled splits


def _one_line_error(args: list[str]) -> str:
    t0 = time.perf_counter()
    result = runner.invoke(app, args)
    assert time.perf_counter() - t0 < 20
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_a_named_split_offline_fails_fast_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list = []
    _with_datasets(monkeypatch, calls)
    _no_network(monkeypatch)
    monkeypatch.setenv("PRIOR_BUNDLED_DATA", str(tmp_path / "nothing"))
    args = ["build", "--dataset", "snli", "--split", "train", "--workers", "0", "--store", str(tmp_path / "s")]
    line = _one_line_error(args)
    assert "Hugging Face hub: huggingface.co cannot be reached" in line and "--data-dir" in line and calls == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert "not tried (HF_HUB_OFFLINE is set)" in _one_line_error(args)


def test_hub_flag_reads_the_splits_no_file_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list = []
    _with_datasets(monkeypatch, calls)
    monkeypatch.setattr("prior.pipeline.datasets.hub.hub_unreachable", lambda: None)
    common = ["build", "--dataset", "snli", "--features", "sdoi", "--parser", "spacy", "--limit", "2",
              "--workers", "0", "--store", str(tmp_path / "s")]
    result = runner.invoke(app, common)
    assert result.exit_code == 0 and calls == []  # the bundled dev and test only
    result = runner.invoke(app, [*common, "--hub"])
    assert result.exit_code == 0, result.output
    assert calls == [("stanfordnlp/snli", None, "train")]
    assert "hf://stanfordnlp/snli/train" in result.output

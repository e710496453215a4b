"""bench/compare.py and bench/oracle.py end to end on a tiny configuration (the tiny store and a
random tiny BERT, a few pairs, one epoch), so a change of the APIs they call breaks a test here
rather than a benchmark found weeks later."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.trainers_fixtures import tiny_backbone, tiny_store

BENCH = Path(__file__).parents[1] / "bench"


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare = _load("compare")
oracle = _load("oracle")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("bench")
    tiny_store(root / "store")
    return root / "store", tiny_backbone(root / "backbone")


def _in_process(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """compare.py's `prior` commands run in this process (the same CLI, without a subprocess's
    start-up); returns the list the commands are appended to."""
    from prior.cli.main import app

    calls: list[list[str]] = []

    def prior(*args: object, threads: int) -> tuple[list[str], str]:
        cmd = ["prior", *map(str, args)]
        calls.append(cmd)
        result = CliRunner().invoke(app, cmd[1:])
        assert result.exit_code == 0, result.output
        return cmd, result.stdout

    monkeypatch.setattr(compare, "prior", prior)
    return calls


def _main(module: Any, monkeypatch: pytest.MonkeyPatch, *argv: object) -> None:
    monkeypatch.setattr(sys, "argv", [f"bench/{module.__name__}.py", *map(str, argv)])
    module.main()


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_compare_runs_grid_and_report_end_to_end(tiny: tuple[Path, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store, backbone = tiny
    calls = _in_process(monkeypatch)
    tiny_args = f"--backbone {backbone} --epochs 1 --batch-size 4"
    out = tmp_path / "toy.jsonl"
    _main(compare, monkeypatch, "runs", "--store", store, "--dataset", "toy", "--seeds", "1",
          "--models", "bert;bert-sim", "--train-args", tiny_args, "--parallel", "1",
          "--runs", tmp_path / "runs", "--out", out)
    bert, sim = _records(out)
    assert (bert["variant"], sim["variant"]) == (f"bert {tiny_args}", f"bert-sim {tiny_args}")
    assert 0 <= sim["test_accuracy"] <= 1 and set(sim["sensitivity"]) == {"neutral", "shuffled"}
    assert "sensitivity" not in bert  # bert reads no feature
    assert bert["dev"].endswith("held out of train (seed 0)") and bert["dev_pairs"] == 1  # toy has no dev split
    assert sim["command"].startswith("prior train bert-sim-mini --dataset toy")
    # resumable: the same command again trains nothing
    n = len(calls)
    _main(compare, monkeypatch, "runs", "--store", store, "--dataset", "toy", "--seeds", "1",
          "--models", "bert;bert-sim", "--train-args", tiny_args, "--runs", tmp_path / "runs", "--out", out)
    assert len(calls) == n
    grid = tmp_path / "grid.jsonl"
    _main(compare, monkeypatch, "grid", "--store", store, "--dataset", "toy", "--models", "sgnet",
          "--prior-lrs", "1e-3,1e-4", "--train-args", f"--backbone {backbone} --batch-size 4", "--epochs", "1",
          "--runs", tmp_path / "runs", "--out", grid)
    cells = _records(grid)
    assert [c["prior_lr"] for c in cells] == [1e-3, 1e-4]
    assert [c["settings"]["prior_lr"] for c in cells] == [1e-3, 1e-4]
    assert all("--eval-split" not in c["command"] for c in cells)  # the grid reads dev only
    capsys.readouterr()
    _main(compare, monkeypatch, "report", out)
    table = capsys.readouterr().out
    assert f"| bert-sim-mini {tiny_args} | 1 |" in table


def test_oracle_one_and_report_end_to_end(tiny: tuple[Path, Path], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`one` trains with the oracle, scores the checkpoint with it and with the neutral feature
    (the task read from the stored labels, as `prior train` reads it) and writes its record."""
    store, backbone = tiny
    out = tmp_path / "oracle.jsonl"
    _main(oracle, monkeypatch, "one", "--model", "bert-sim", "--seed", "1", "--store", store,
          "--dataset", "toy", "--runs", tmp_path / "runs", "--out", out, "--epochs", "1",
          "--sample", "1", "--batch-size", "4", "--backbone", backbone)
    (record,) = _records(out)
    assert record["kind"] == "oracle" and record["oracle_levels"] == list(oracle.SIM_LEVELS)
    assert 0 <= record["test_accuracy"] <= 1 and 0 <= record["test_accuracy_neutral"] <= 1
    # the forced-class check: one row per class the oracle says, each counting every test pair
    assert record["classes"] == ["0", "1"] and [sum(row) for row in record["forced"]] == [4, 4]
    capsys.readouterr()
    _main(oracle, monkeypatch, "report", out, "--baseline", tmp_path / "none.jsonl")
    assert "| bert-sim-mini | 1 |" in capsys.readouterr().out
    forced = compare.report(compare._report_parser().parse_args([str(out), "--table", "forced"]))[0][1]
    assert forced.splitlines()[2].startswith("| bert-sim-mini | 0, 0.5, 1 | 0 | ")


def test_saturation_curve_and_the_levels_chosen_from_it(tiny: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    store, backbone = tiny
    out = tmp_path / "sat.jsonl"
    _main(oracle, monkeypatch, "saturation", "--store", store, "--dataset", "toy", "--pairs", "4", "--fresh",
          "--levels", "1,2,10", "--backbone", backbone, "--out", out)
    rows = _records(out)
    assert [r["level"] for r in rows] == [1.0, 2.0, 10.0] and rows[0]["attention_tv"] == 0.0
    assert rows[0]["cls_change"] == 0.0 and sum(rows[0]["predicted"]) == 4
    assert rows[2]["attention_tv"] >= rows[1]["attention_tv"] > 0  # G scales cross-sentence logits
    table = compare.report(compare._report_parser().parse_args([str(out)]))[0][1]
    assert table.splitlines()[2].startswith("| dafa (initialised) | 1 | 0.000 |")
    curve = [{"level": v, "attention_tv": r} for v, r in ((1, 0.0), (2, 0.3), (4, 0.6), (10, 0.8), (100, 0.9))]
    assert oracle.chosen_levels(curve) == (1.0, 2.0, 4.0)

"""bench/compare.py's report: paired differences and sensitivity drops from run records."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location("compare", Path(__file__).parents[1] / "bench" / "compare.py")
assert _spec and _spec.loader
compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)


def _run(variant: str, seed: int, acc: float, drops: tuple[float, float] | None = None) -> dict[str, Any]:
    rec: dict[str, Any] = {"kind": "run", "variant": variant, "regime": "full", "dataset": "sick", "seed": seed,
                           "test_accuracy": acc, "best_dev": acc + 0.01, "epochs_run": 3}
    if drops is not None:
        rec["sensitivity"] = {f: {"drop": {"accuracy": d}} for f, d in zip(("neutral", "shuffled"), drops)}
    return rec


def test_report_pairs_each_seed_with_bert_at_that_seed() -> None:
    records = [_run("bert", 1, 0.80), _run("bert", 2, 0.84), _run("dafa", 1, 0.83, (0.10, 0.02)),
               _run("dafa", 2, 0.85, (0.30, 0.04)), _run("sgnet[pool=mean]", 1, 0.79, (0.0, 0.0))]
    table = compare.report_table(records, "full").splitlines()
    bert, dafa, sgnet = table[2:]
    assert bert.startswith("| bert-mini | 1,2 | 82.0 ± 2.8 |  |  | n/a | n/a |")
    # paired deltas +3 and +1 points: mean 2.0, sd 1.4; unpaired means would also give 2.0 but sd 2.8
    assert dafa.startswith("| dafa-mini | 1,2 | 84.0 ± 1.4 | 2.0 ± 1.4 | 2/0/0 | 20.0 ± 14.1 | 3.0 ± 1.4 |")
    assert sgnet.startswith("| sgnet-mini[pool=mean] | 1 | 79.0 | -1.0 | 0/0/1 | 0.0 | 0.0 |")


def test_a_variant_trained_with_more_arguments_is_named_after_them() -> None:
    records = [_run("bert", 1, 0.80), _run("gibert --prior-lr 1e-3", 1, 0.82, (0.05, 0.01))]
    row = compare.report_table(records, "full").splitlines()[3]
    assert row.startswith("| gibert-mini --prior-lr 1e-3 | 1 | 82.0 | 2.0 | 1/0/0 | 5.0 | 1.0 |")


def test_a_variant_is_paired_with_bert_trained_with_the_same_arguments() -> None:
    records = [_run("bert", 1, 0.57), _run("bert --epochs 10", 1, 0.75), _run("dafa --epochs 10", 1, 0.76),
               _run("gibert --prior-lr 1e-3", 1, 0.58)]
    rows = compare.report_table(records, "full").splitlines()[2:]
    assert rows[1].startswith("| bert-mini --epochs 10 | 1 | 75.0 |  |")
    assert rows[2].startswith("| dafa-mini --epochs 10 | 1 | 76.0 | 1.0 |")
    assert rows[3].startswith("| gibert-mini --prior-lr 1e-3 | 1 | 58.0 | 1.0 | 1/0/0 |")


def test_seeds_level_with_bert_are_counted_apart() -> None:
    records = [_run("bert", 1, 0.80), _run("bert", 2, 0.84), _run("bert", 3, 0.82),
               _run("gibert", 1, 0.80), _run("gibert", 2, 0.85), _run("gibert", 3, 0.81)]
    assert "| 1/1/1 |" in compare.report_table(records, "full").splitlines()[3]


def test_report_figure_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    records = [_run("bert", 1, 0.80), _run("bert", 2, 0.84), _run("cda", 1, 0.81), _run("cda", 2, 0.83)]
    compare.report_figure(records, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_ablation_view_is_paired_with_bert_of_the_same_schedule() -> None:
    """--dep-view (like --prior-lr) leaves bert's run unchanged: the ablation pairs with
    bert trained with the same schedule arguments."""
    records = [_run("bert --epochs 10 --patience 3", 1, 0.75),
               _run("dafa --epochs 10 --patience 3 --dep-view dep-no-tfidf", 1, 0.77),
               _run("dafa --epochs 10 --prior-lr 1e-3 --patience 3", 1, 0.74)]
    rows = compare.report_table(records, "full").splitlines()[2:]
    assert rows[1].startswith("| dafa-mini --epochs 10 --patience 3 --dep-view dep-no-tfidf | 1 | 77.0 | 2.0 | 1/0/0 |")
    assert rows[2].startswith("| dafa-mini --epochs 10 --prior-lr 1e-3 --patience 3 | 1 | 74.0 | -1.0 | 0/0/1 |")

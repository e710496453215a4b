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


def test_several_metrics_get_a_score_and_a_paired_difference_each() -> None:
    """MRPC is reported as F1 and accuracy: one column pair per metric; counts and drops are the
    first metric's."""
    def run(variant: str, seed: int, f1: float, acc: float) -> dict[str, Any]:
        rec = _run(variant, seed, acc, (0.02, 0.01) if variant != "bert" else None)
        rec["test_f1"] = f1
        if "sensitivity" in rec:
            for f in rec["sensitivity"].values():
                f["drop"]["f1"] = 0.03
        return rec
    records = [run("bert", 1, 0.85, 0.80), run("dafa", 1, 0.86, 0.79)]
    header, _, bert, dafa = compare.report_table(records, "full", "f1,accuracy").splitlines()
    assert header.startswith("| model | seeds | test f1 | Δ f1 vs bert (paired) | test accuracy | "
                             "Δ accuracy vs bert (paired) | seeds ahead/level/behind (f1) |")
    assert dafa.startswith("| dafa-mini | 1 | 86.0 | 1.0 | 79.0 | -1.0 | 1/0/0 | 3.0 | 3.0 |")
    assert bert.startswith("| bert-mini | 1 | 85.0 |  | 80.0 |  |  | n/a | n/a |")


def test_gates_rows_are_named_from_their_checkpoint() -> None:
    run = compare._checkpoint_run("runs/compare/sick-full-dafa-prior-lr-5e-5-mini-s2/best")
    assert run is not None and (run["regime"], run["model"], run["extra"], run["seed"]) == \
        ("full", "dafa", "--prior-lr 5e-5", "2")
    run = compare._checkpoint_run("runs/compare/sick-sample-dafa-epochs-10-patience-3-mini-s4/best")
    assert run is not None and (run["regime"], run["extra"], run["seed"]) == ("sample", "", "4")
    rec = {"grid": "stored M_F", "model": "runs/compare/sick-full-dafa-mini-s1/best", "fusion_norm_ratio": 0.0,
           "f_mean": 0.0004, "f_range": [0.0, 0.0, 0.0, 0.0008], "g_mean": 0.344, "g_range": [0.19, 0.23, 0.43, 0.46]}
    assert compare.gates_table([rec], "full").splitlines()[2] == \
        "| dafa seed 1 | 0.00 | 0.0004 (0.00, 0.00–0.00, 0.0008) | 0.34 (0.19, 0.23–0.43, 0.46) |"
    assert len(compare.gates_table([rec], "sample").splitlines()) == 2


def test_the_grid_chooses_the_best_dev_and_breaks_ties_by_the_steadier_cell() -> None:
    def cell(plr: float, devs: list[float]) -> dict[str, Any]:
        return {"kind": "grid", "model": "dafa-mini", "prior_lr": plr, "best_dev": max(devs), "key_metric": "accuracy",
                "epochs_run": len(devs), "per_epoch": [{"dev_accuracy": d} for d in devs]}
    cells = [cell(1e-3, [0.80, 0.85, 0.86]), cell(1e-4, [0.84, 0.85, 0.86]), cell(5e-5, [0.80, 0.84, 0.85])]
    assert compare.choose(cells)["prior_lr"] == 1e-4
    rows = compare.grid_table(cells).splitlines()
    assert rows[0] == "| model | prior_lr | dev per epoch | best dev | epochs | chosen |"
    assert rows[3] == "| dafa-mini | 0.0001 | 84.0, 85.0, 86.0 | 86.0 | 3 | **chosen** |"


def test_the_paired_figure_has_a_panel_per_dataset(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    records = [_run("bert", 1, 0.80), _run("bert", 2, 0.84), _run("dafa", 1, 0.81), _run("dafa", 2, 0.83)]
    compare.paired_figure([("MRPC f1", records, "accuracy"), ("RTE accuracy", records, "accuracy")],
                          tmp_path / "fig.png")
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

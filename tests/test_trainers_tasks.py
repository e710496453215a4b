"""A run's task (classification with its label names, or regression) comes from the label kind
the store records for the split, not from the dataset's name: a `--label-kind score` table is
trained with MSE, scored by Pearson/Spearman and early-stopped on Pearson."""

from __future__ import annotations

import json
from pathlib import Path

from prior.trainers.registry import task_for
from tests.cli_run import cli
from tests.trainers_fixtures import tiny_backbone

#: sentences of the tiny vocabulary; a pair's score is how many "cat"s it holds
SENTENCES = ["the cat sat", "a dog ran", "a big cat ran", "the bird flew away", "the small cat sat on the mat",
             "a big dog sat"]


def test_tasks_come_from_the_label_kind_not_the_name() -> None:
    assert task_for("score", ()).regression and task_for("score", ()).metrics == ("pearson", "spearman")
    assert task_for("class", ("0", "1")).metrics == ("accuracy",)
    # the papers' extra reporting metrics stay, where they fit the stored kind
    assert task_for("class", ("0", "1"), "mrpc").metrics == ("f1", "accuracy")
    assert task_for("score", (), "stsb").metrics == ("pearson", "spearman")
    # a name never turns a kind into another: STS-B stored as classes is scored as classes
    assert task_for("class", ("a", "b", "c"), "stsb").metrics == ("accuracy",)
    assert not task_for("class", ("a", "b", "c"), "stsb").regression
    assert task_for("score", (), "mrpc").metrics == ("pearson", "spearman")
    # binary F1 needs two classes
    assert task_for("class", ("a", "b", "c"), "mrpc").metrics == ("accuracy",)


def test_issue26_score_table_is_scored_by_correlation(tmp_path: Path) -> None:
    rows = [(a, b, str(float(f"{a} {b}".split().count("cat")))) for a in SENTENCES for b in SENTENCES if a != b]
    data = tmp_path / "scored.csv"
    data.write_text("sentence1,sentence2,label\n" + "".join(f"{a},{b},{s}\n" for a, b, s in rows))
    store = tmp_path / "store"
    cli("build", "--dataset", data, "--split", "train", "--label-kind", "score", "--features", "sdoi", "--parser", "spacy",
        "--workers", 0, "--store", store)
    out = tmp_path / "run"
    cli("train", "bert", "--backbone", tiny_backbone(tmp_path / "backbone"), "--dataset", "scored", "--parser", "spacy",
        "--dev-split", "train", "--store", store, "--output", out, "--epochs", 6,
        "--batch-size", 4, "--lr", "1e-3", "--patience", 6, "--no-progress")
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert {"dev_pearson", "dev_spearman"} <= set(lines[0]) and "dev_accuracy" not in lines[0]
    assert any(r["best"] for r in lines[1:]), lines  # "best" moves past epoch 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["key_metric"] == "pearson" and summary["best_dev"] > lines[0]["dev_pearson"]
    meta = json.loads((out / "best" / "prior.json").read_text())
    assert meta["task"] == {"kind": "regression", "label_names": [], "metrics": ["pearson", "spearman"]}

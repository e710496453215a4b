"""Readers that serve users read a split they name through the checked read
(`Store.split_rows`): ``prior show``, ``prior embed train --dataset``, ``prior embed oov`` and
a build's features that count on a split the build did not read (an IDF table). A split that
lacks rows is one line naming it and the build that restores it, never a short answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from prior.cli.main import app
from prior.featurestore import open_store
from prior.pipeline.embeddings.io import write_word2vec_text
from tests.cli_run import cli as ok
from tests.cli_run import one_line_error, runner

SHORT = "sick/train holds 10 of the 20 rows"


def error_line(*args: object) -> str:
    """The one ``error:`` line of a command that fails after printing what it read (``embed oov``
    names its entry first)."""
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 1 and "Traceback" not in result.output, (result.output, result.exception)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and result.output.strip().splitlines()[-1] == errors[0], result.output
    return errors[0]


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SICK train built in two steps (``--limit`` 10, then 20) and trial, with ``sdoi`` and
    ``emb`` (a tiny embedding file) parsed by spaCy."""
    root = tmp_path_factory.mktemp("checked-reads")
    vectors = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    emb = write_word2vec_text(root / "tiny.txt", ["a", "man", "is", "the", "boy", "."], vectors)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        for split, limit in (("train", 10), ("train", 20), ("trial", 10)):
            ok("build", "--dataset", "sick", "--split", split, "--features", "sdoi,emb", "--embeddings", emb,
               "--parser", "spacy", "--limit", limit, "--partition-size", 10, "--workers", 0, "--store", root / "store")
    return root / "store"


@pytest.fixture
def short(stepped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    """A copy whose sick/train lost its latest pairs record (rows 10–19); and those rows' pair keys."""
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped, location)
    records = [p for p in sorted((location / "catalog").glob("*.json"))
               if json.loads(p.read_text())["kind"] == "pairs" and json.loads(p.read_text())["target"]["split"] == "train"]
    assert len(records) == 2
    lost = pq.read_table(location / "segments" / records[-1].stem / "pairs.parquet")
    records[-1].unlink()
    return location, lost.column("pair_key").to_pylist()


def test_show_names_a_short_split_instead_of_a_missing_row(short):
    location, keys = short
    shown = one_line_error("show", "--dataset", "sick", "--split", "train", "--pair", 15, "--feature", "sdoi",
                           "--store", location)
    assert SHORT in shown and "restore them with: prior build --dataset sick --limit 20 --split train" in shown
    # a key of a row that is gone, looked for in every split: not "no pair has a key starting …"
    assert SHORT in one_line_error("show", "--dataset", "sick", "--pair", keys[3][:8], "--feature", "sdoi",
                                   "--store", location)


def test_embed_train_and_oov_read_no_short_split(short, tmp_path):
    location, _ = short
    trained = one_line_error("embed", "train", "--dataset", "sick", "--parser", "spacy", "--dim", 4, "--epochs", 1,
                             "--min-count", 1, "--out", tmp_path / "deps.txt", "--store", location)
    assert SHORT in trained and "restore them with: prior build" in trained
    assert not (tmp_path / "deps.txt").exists()
    assert SHORT in error_line("embed", "oov", "--dataset", "sick", "--store", location)


def test_a_build_counting_on_a_short_split_it_did_not_read_stops(short):
    """``dep``'s IDF table is counted on sick/train while the build reads sick/trial alone."""
    location, _ = short
    built = one_line_error("build", "--dataset", "sick", "--split", "trial", "--features", "dep", "--parser", "spacy",
                           "--limit", 10, "--workers", 0, "--store", location)
    assert SHORT in built and "restore them with: prior build --dataset sick --limit 20 --split train" in built
    assert not open_store(location, create=False).entries("tfidf")


def test_the_restored_split_reads_whole_again(short, tmp_path):
    location, keys = short
    line = error_line("embed", "oov", "--dataset", "sick", "--store", location).split("restore them with: ", 1)[1]
    ok(*line.split()[1:], "--workers", 0)
    assert "sick/train: OOV" in ok("embed", "oov", "--dataset", "sick", "--store", location)
    assert keys[3] in ok("show", "--dataset", "sick", "--pair", keys[3][:8], "--feature", "sdoi", "--store", location)

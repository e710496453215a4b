"""A store knows its own shape (issue 34): each split's latest pairs record carries its manifest
(the rows it holds, the pairs segments it is made of), so a dropped or deleted pairs record is
found by ``verify`` and makes every read of the split fail in one line with the build line that
restores it — never a short frame — and ``gc --drop-damaged`` prints a build line for every
kind of thing it drops."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import ShortSplitError, open_store
from prior.featurestore.export import export_parquet
from prior.featurestore.maintenance import verify_store

runner = CliRunner()


def ok(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def one_line_error(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.output.startswith("error:") and len(result.output.strip().splitlines()) == 1, result.output
    return result.output


def _records(location: Path, kind: str) -> list[Path]:
    return [p for p in sorted((location / "catalog").glob("*.json")) if json.loads(p.read_text())["kind"] == kind]


def _rebuild(line: str, location: Path) -> None:
    args = shlex.split(line)
    assert args[:2] == ["prior", "build"] and "--replace" not in args, line
    ok(*args[1:], "--workers", "0")
    assert verify_store(open_store(location, create=False)).ok


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """SICK train built in four steps (``--limit`` 10, 25, 40, 50, partitions of 10): four pairs
    segments, as issue 34's 100/250/400/500 build has; and the frame's height."""
    root = tmp_path_factory.mktemp("stepped")
    location = root / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        for limit in (10, 25, 40, 50):
            ok("build", "--dataset", "sick", "--split", "train", "--features", "sdoi", "--parser", "spacy",
               "--limit", limit, "--partition-size", 10, "--workers", 0, "--store", location)
        assert len(_records(location, "pairs")) == 4
        frame = open_store(location, create=False).frame("sdoi", dataset="sick", split="train")
    return location, frame.height


def test_issue34_a_split_missing_its_second_pairs_record_is_never_read_short(stepped, tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    assert stepped[1] == 50
    _records(location, "pairs")[1].unlink()  # the --limit 25 build's 15 rows
    report = verify_store(open_store(location, create=False))
    assert not report.ok and len(report.incomplete) == 1
    line = report.incomplete[0]
    assert "sick/train holds 35 of the 50 rows its manifest records" in line and "not in the catalog" in line
    verified = runner.invoke(app, ["store", "verify", "--store", str(location)])
    assert verified.exit_code == 1 and "run the build line(s) above" in verified.output
    store = open_store(location, create=False)
    for read in (lambda: store.frame("sdoi", dataset="sick", split="train"),
                 lambda: store.scan("sdoi", dataset="sick", split="train").collect(),
                 lambda: store.pairs("sick", "train"),
                 lambda: store.split_rows("sick", "train"),
                 lambda: export_parquet(store, "sdoi", dataset="sick", out=tmp_path / "x")):
        with pytest.raises(ShortSplitError, match="holds 35 of the 50 rows.*restore them with: prior build"):
            read()
    for args in (["store", "frame", "--feature", "sdoi", "--dataset", "sick", "--split", "train"],
                 ["store", "export", "--feature", "sdoi", "--dataset", "sick", "--out", tmp_path / "y"]):
        assert "restore them with: prior build --dataset sick --limit 50 --split train" in one_line_error(
            *args, "--store", location)
    _rebuild(line.split("restore them with: ", 1)[1], location)
    assert open_store(location, create=False).frame("sdoi", dataset="sick", split="train").height == 50


def test_issue34_the_trainers_loader_reads_no_short_split(stepped, tmp_path, monkeypatch):
    from prior.trainers.data import load_split

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    _records(location, "pairs")[2].unlink()
    with pytest.raises(ShortSplitError, match="holds 35 of the 50 rows"):
        load_split(open_store(location, create=False), "sick", "train", tokenizer=None, feature="sdoi")


def test_compaction_keeps_the_manifest_true(stepped, tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(stepped[0], location)
    ok("store", "compact", "--table", "pairs", "--max-rows", 30, "--store", location)  # merges some, not all
    ok("store", "compact", "--table", "pairs", "--store", location)  # and the merged one again
    assert len(_records(location, "pairs")) == 1
    assert verify_store(open_store(location, create=False)).ok
    assert open_store(location, create=False).frame("sdoi", dataset="sick", split="train").height == 50


def _flip_rows(record: Path) -> None:
    """Flip a digit after ``"rows": `` in a record (its checksum no longer matches)."""
    text = record.read_text()
    match = re.search(r'"rows": (\d)', text)
    assert match is not None
    digit = match.group(1)
    record.write_text(text[:match.start(1)] + str((int(digit) + 1) % 10) + text[match.end(1):])


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """RTE dev, 6 pairs, one build: sdoi and dep (DAFA's matrices and the IDF table they read)."""
    root = tmp_path_factory.mktemp("whole")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        ok("build", "--dataset", "rte", "--split", "dev", "--features", "sdoi,dep", "--parser", "spacy",
           "--limit", 6, "--workers", 0, "--store", root / "store")
    return root / "store"


@pytest.mark.parametrize("kind", ["pairs", "sentences", "parses", "feature", "resource"])
def test_issue34_gc_drop_damaged_prints_a_build_line_for_every_kind_it_drops(whole, tmp_path, monkeypatch, kind):
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    location = tmp_path / "store"
    shutil.copytree(whole, location)
    before = open_store(location, create=False).frame("dep", dataset="rte", split="dev")
    _flip_rows(_records(location, kind)[0])
    assert not verify_store(open_store(location, create=False)).ok
    output = ok("store", "gc", "--drop-damaged", "--store", location)
    lines = [line.split("with: ", 1)[1] for line in output.splitlines()
             if line.startswith("rebuild what was dropped with: ")]
    assert lines, output
    for line in lines:
        _rebuild(line, location)
    assert open_store(location, create=False).frame("dep", dataset="rte", split="dev").equals(before)

"""Damage, drop, rebuild: a flipped byte in any kind of segment is found by ``verify``, ``gc
--drop-damaged`` drops it and prints the build line(s) that restore it, reads in between are a
one-line error naming what is missing (never null columns), and running the printed lines
gives a store that verifies and whose frames equal a clean build's."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store
from prior.featurestore.maintenance import verify_store
from prior.featurestore.missing import MissingDataError
from prior.pipeline.build import build
from prior.pipeline.build_options import BuildOptions, RunOptions
from tests.test_kill_commits import frames

runner = CliRunner()
SPLITS = ("dev", "test", "train")
FEATURES = ("sdoi", "wup", "dep")


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, dict]:
    location = tmp_path_factory.mktemp("drop") / "clean"
    build(BuildOptions(dataset="rte", splits=SPLITS, features=FEATURES, parser="spacy", limit=5),
          RunOptions(store=str(location), workers=0, progress=False, partition_size=8))
    return location, frames(location, FEATURES)


def _flip(location: Path, kind: str, inner: str, name: str | None = None) -> str:
    """Flip a byte in the middle of ``inner`` of the first segment of ``kind`` (feature ``name``)."""
    for record in sorted((location / "catalog").glob("*.json")):
        raw = json.loads(record.read_text())
        if raw["kind"] == kind and inner in raw["files"] and (name is None or raw["target"].get("name") == name):
            path = location / "segments" / raw["id"] / inner
            data = bytearray(path.read_bytes())
            data[len(data) // 2] ^= 0xFF
            path.write_bytes(bytes(data))
            return str(raw["id"])
    raise AssertionError(f"no {kind} segment with {inner}")


def _drop_and_repair(location: Path, clean_frames: dict, *, missing_read: bool) -> None:
    assert not verify_store(open_store(location, create=False)).ok
    result = runner.invoke(app, ["store", "gc", "--drop-damaged", "--store", str(location)])
    assert result.exit_code == 0, result.output
    lines = [line.split("with: ", 1)[1] for line in result.output.splitlines()
             if line.startswith("rebuild what was dropped with: ")]
    assert lines, result.output
    if missing_read:  # the dropped sentences or parses: a read is one line naming the rebuild
        with pytest.raises(MissingDataError, match="restore them with: prior build"):
            frames(location, FEATURES)
        with pytest.raises(MissingDataError, match="restore them with: prior build"):
            open_store(location, create=False).scan("sdoi", dataset="rte", split="dev").collect()
        for args in (["store", "frame", "--feature", "sdoi", "--dataset", "rte", "--split", "dev"],
                     ["store", "export", "--feature", "sdoi", "--dataset", "rte", "--out", str(location.parent / "x")]):
            read = runner.invoke(app, [*args, "--store", str(location)])
            assert read.exit_code == 1 and "Traceback" not in read.output, read.output
            assert read.output.strip().startswith("error:") and len(read.output.strip().splitlines()) == 1
        verify = verify_store(open_store(location, create=False))
        assert not verify.ok and verify.incomplete  # pairs whose sentences or parses are gone
    for line in lines:
        args = shlex.split(line)
        assert args[:2] == ["prior", "build"] and "--replace" not in args
        done = runner.invoke(app, [*args[1:], "--workers", "0"], env={"PRIOR_NO_PROGRESS": "1"})
        assert done.exit_code == 0, done.output
    assert verify_store(open_store(location, create=False)).ok
    assert frames(location, FEATURES) == clean_frames


@pytest.mark.parametrize(("kind", "inner", "missing_read"), [
    ("pairs", "pairs.parquet", False), ("sentences", "sentences.parquet", True), ("parses", "parses.parquet", True)])
def test_dropped_table_segment_is_restored_by_the_printed_build_line(clean, tmp_path, kind, inner, missing_read):
    location = tmp_path / "store"
    shutil.copytree(clean[0], location)
    _flip(location, kind, inner)
    _drop_and_repair(location, clean[1], missing_read=missing_read)


@pytest.mark.parametrize(("name", "component"), [("sdoi", "sdoi"), ("wup", "wup"), ("tfidf", "tfidf"),
                                                 ("dep", "trigram"), ("dep", "subgraph")])
def test_dropped_feature_component_is_restored_by_the_printed_build_line(clean, tmp_path, name, component):
    location = tmp_path / "store"
    shutil.copytree(clean[0], location)
    _flip(location, "feature", f"arrays/{component}/c/0", name)
    _drop_and_repair(location, clean[1], missing_read=False)

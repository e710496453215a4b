"""No silent fallback: a data directory that is given but absent is a one-line warning in every
command that reads named datasets and in `prior env`, and a build that reads a bundled slice
says so in its report and records it with the split (``origin``, ``release_pairs``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prior.featurestore import open_store
from prior.pipeline.datasets.resolve import bundled_dir
from tests.cli_run import cli

WARNING = "warning: the data directory PRIOR_DATA_DIR={} does not exist: named datasets are read from the slices"
BUILD = ("build", "--dataset", "sick", "--split", "trial", "--limit", 5, "--features", "sdoi", "--parser", "spacy",
         "--workers", 0)


@pytest.fixture
def absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    missing = tmp_path / "datasets"
    monkeypatch.setenv("PRIOR_DATA_DIR", str(missing))
    return missing


@pytest.mark.parametrize("command", [("datasets",), ("env",)])
def test_data_dir_absent_is_one_warning_line(absent: Path, command: tuple[str, ...]) -> None:
    out = cli(*command)
    assert [line for line in out.splitlines() if line.startswith("warning:")] == [
        next(line for line in out.splitlines() if line.startswith(WARNING.format(absent)))]


def test_data_dir_absent_option_is_named_as_given(tmp_path: Path) -> None:
    out = cli("datasets", "--data-dir", tmp_path / "nope")
    assert f"warning: the data directory --data-dir {tmp_path / 'nope'} does not exist" in out


def test_data_dir_absent_env_line_says_so(absent: Path) -> None:
    line = next(line for line in cli("env").splitlines() if line.startswith("PRIOR_DATA_DIR "))
    assert line.endswith(f"{absent} (not a directory: named datasets are read from the bundled slices)")


def test_data_dir_bundled_slice_is_reported_and_recorded(absent: Path, tmp_path: Path) -> None:
    out = cli(*BUILD, "--store", tmp_path / "s")
    assert out.startswith(WARNING.format(absent))
    assert "sick/trial: bundled slice: 5 of 500 pairs" in out
    (segment,) = open_store(tmp_path / "s", create=False).split_segments("sick", "trial")
    assert (segment.meta["origin"], segment.meta["release_pairs"]) == ("bundled", 500)
    again = cli(*BUILD, "--store", tmp_path / "s")  # the no-op rebuild says it too
    assert "sick/trial: bundled slice: 5 of 500 pairs" in again


def test_data_dir_present_reads_no_slice_and_warns_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(bundled_dir() / "sick", tmp_path / "data" / "sick")
    monkeypatch.setenv("PRIOR_DATA_DIR", str(tmp_path / "data"))
    out = cli(*BUILD, "--store", tmp_path / "s")
    assert "warning:" not in out and "bundled slice" not in out
    (segment,) = open_store(tmp_path / "s", create=False).split_segments("sick", "trial")
    assert segment.meta["origin"] == "data_dir" and "release_pairs" not in segment.meta

"""A rerun of a complete build answers from its record (`prior.pipeline.noop`): it reads no
split's rows and opens no segment file, however large the store, yet still notices a changed
source file, a dropped segment, another split and a build that had failures."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import prior.featurestore.segment_files as segment_files_module
import prior.featurestore.segments as segments_module
import prior.pipeline.datasets as datasets_module
from prior.errors import DataError
from prior.featurestore import open_store
from prior.featurestore.catalog import CATALOG
from prior.pipeline import noop
from prior.pipeline.build import build
from tests.test_kill_commits import _opts, frames


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Segment files opened (by kind) and dataset files read."""
    counter: Counter[str] = Counter()
    read_parquet = segments_module.read_parquet
    read_split = datasets_module.read_split

    def counted_parquet(fs: Any, segment: Any, inner: str, columns: Any = None) -> Any:
        counter[f"files:{segment.kind}"] += 1
        return read_parquet(fs, segment, inner, columns)

    def counted_split(*args: Any, **kwargs: Any) -> Any:
        counter["splits read"] += 1
        return read_split(*args, **kwargs)

    monkeypatch.setattr(segments_module, "read_parquet", counted_parquet)
    read_frame = segment_files_module.read_frame

    def counted_frame(fs: Any, segment: Any, inner: str, columns: Any = None) -> Any:  # a split's many files
        counter[f"files:{segment.kind}"] += 1
        return read_frame(fs, segment, inner, columns)

    monkeypatch.setattr(segment_files_module, "read_frame", counted_frame)
    monkeypatch.setattr(datasets_module, "read_split", counted_split)
    yield counter


def _summary(report: Any) -> tuple[Any, ...]:
    return (report.dataset, report.parse, report.entries, report.notes,
            [(s.split, s.pairs, s.skipped, s.labels) for s in report.splits],
            [(s.name, s.items) for s in report.stages])


@pytest.mark.parametrize("limit", [3, 12])
def test_noop_rebuild_reads_no_rows_and_opens_no_segment_file(tmp_path: Path, opened: Counter[str],
                                                               limit: int) -> None:
    first = build(*_opts(tmp_path / "s", limit=limit))
    assert first.computed > 0
    opened.clear()
    again = build(*_opts(tmp_path / "s", limit=limit))
    assert opened == Counter()  # whatever the store's size: no rows, keys or files read
    assert _summary(again) == _summary(first)
    assert all(s.computed == 0 and s.reused == s.items and s.failed == 0 for s in again.stages)
    assert all(s.new_rows == 0 for s in again.splits)
    assert len(list(noop.records_dir().glob("*.json"))) >= 1


def test_dropped_feature_segment_is_noticed_and_rebuilt(tmp_path: Path, opened: Counter[str]) -> None:
    location = tmp_path / "s"
    build(*_opts(location))
    before = frames(location)
    feature = next(s for s in open_store(location).segments("feature"))
    (location / CATALOG / f"{feature.id}.json").unlink()  # what `gc --drop-damaged` leaves
    opened.clear()
    again = build(*_opts(location))
    assert again.stage("feature sdoi").computed == feature.rows
    assert opened["files:pairs"] > 0  # the rerun worked it out from the store
    assert frames(location) == before
    opened.clear()
    build(*_opts(location))  # the repaired build is complete again: answered from its new record
    assert opened == Counter()


def test_default_columns_spelled_out_are_the_same_build(tmp_path: Path, opened: Counter[str]) -> None:
    """The CLI spells out a file's default columns, a library call leaves them out: one build,
    so a rerun either way answers from the record the other wrote."""
    build(*_opts(tmp_path / "s", limit=3))
    opened.clear()
    spelled = {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "label_kind": "class"}
    again = build(*_opts(tmp_path / "s", limit=3, columns=spelled))
    assert opened == Counter()
    assert again.computed == 0


def test_other_split_or_options_are_not_answered_from_the_record(tmp_path: Path, opened: Counter[str]) -> None:
    location = tmp_path / "s"
    build(*_opts(location, limit=3))
    build(*_opts(location, limit=5))  # more rows of the same splits: new pairs segments
    opened.clear()
    again = build(*_opts(location, limit=3))  # its record names other pairs segments now
    assert opened["files:pairs"] > 0
    assert again.computed == 0
    opened.clear()
    build(*_opts(location, limit=3, features=("sdoi", "wup")))  # another feature: computed
    assert opened["files:pairs"] > 0


def _snli(folder: Path, rows: list[dict[str, str]]) -> None:
    (folder / "snli").mkdir(parents=True, exist_ok=True)
    (folder / "snli" / "snli_1.0_test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def test_changed_source_file_is_noticed(tmp_path: Path) -> None:
    rows = [{"sentence1": "A dog runs.", "sentence2": "An animal moves.", "gold_label": "entailment"},
            {"sentence1": "A cat sits.", "sentence2": "A cat stands.", "gold_label": "neutral"}]
    _snli(tmp_path / "data", rows)
    given = dict(dataset="snli", splits=("test",), data_dir=tmp_path / "data", limit=None)
    build(*_opts(tmp_path / "s", **given))
    assert build(*_opts(tmp_path / "s", **given)).computed == 0
    _snli(tmp_path / "data", [*rows, {"sentence1": "A bird sings.", "sentence2": "A bird is quiet.",
                                      "gold_label": "contradiction"}])
    with pytest.raises(DataError, match="its source differs"):
        build(*_opts(tmp_path / "s", **given))


def test_build_with_failures_writes_no_record(tmp_path: Path, opened: Counter[str]) -> None:
    rows = [{"sentence1": "A dog runs.", "sentence2": "An animal moves.", "gold_label": "entailment"},
            {"sentence1": " ".join(["word"] * 30) + ".", "sentence2": "Words.", "gold_label": "neutral"}]
    _snli(tmp_path / "data", rows)
    given = dict(dataset="snli", splits=("test",), data_dir=tmp_path / "data", limit=None, max_words=10)
    first = build(*_opts(tmp_path / "s", **given))
    assert first.stage("parse").failed == 1
    opened.clear()
    again = build(*_opts(tmp_path / "s", **given))
    assert again.stage("parse").failed == 1 and again.stage("parse").failures  # still reported
    assert opened["files:pairs"] > 0

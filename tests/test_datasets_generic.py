"""read_file: any CSV/TSV/JSONL/Parquet file with named columns."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prior.errors import DataError, NotFoundError
from prior.pipeline.datasets import read_file


def test_datasets_generic_csv_quoted_multiline(tmp_path: Path) -> None:
    p = tmp_path / "pairs.csv"
    p.write_text('s1,s2,y,key\n"A man, tall.",A person.,yes,k1\n"Two\nlines",B.,no,k2\n'
                 ',C.,yes,k3\nD.,E.,,k4\n', encoding="utf-8")
    d = read_file(p, text_a="s1", text_b="s2", label="y", id="key")
    assert [(r.row, r.text_a, r.label, r.id) for r in d.pairs] == [
        (2, "A man, tall.", "yes", "k1"), (3, "Two\nlines", "no", "k2")]
    assert [(s.row, s.field, s.reason) for s in d.skipped] == [
        (5, "s1", "empty sentence"), (6, "y", "empty label")]
    assert d.labels == ("no", "yes") and d.dataset == "pairs" and d.split == "all"


def test_datasets_generic_label_set_and_score(tmp_path: Path) -> None:
    p = tmp_path / "pairs.tsv"
    p.write_text("a\tb\ty\nA.\tB.\t0.5\nC.\tD.\t7\nE.\tF.\tx\n", encoding="utf-8")
    d = read_file(p, text_a="a", text_b="b", label="y", label_kind="score", score_range=(0, 5))
    assert [r.label for r in d.pairs] == [0.5]
    assert ["outside" in s.reason or "not a number" in s.reason for s in d.skipped] == [True, True]
    d2 = read_file(p, text_a="a", text_b="b", label="y", labels=("0.5", "7"))
    assert [r.label for r in d2.pairs] == ["0.5", "7"] and d2.labels == ("0.5", "7")
    assert len(d2.skipped) == 1 and d2.skipped[0].row == 4


def test_datasets_generic_jsonl_numbers_as_labels(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in [
        {"q": "Why?", "a": "Because.", "l": 1}, {"q": "How?", "l": 0}]) + "\n", encoding="utf-8")
    d = read_file(p, text_a="q", text_b="a", label="l", limit=5)
    assert [(r.row, r.label) for r in d.pairs] == [(1, "1")]
    assert d.skipped[0].field == "a" and d.skipped[0].reason == "field is missing"


def test_datasets_generic_parquet(tmp_path: Path) -> None:
    p = tmp_path / "x.parquet"
    pq.write_table(pa.table({"s1": ["A.", "B.", None, "D."], "s2": ["a.", "b.", "c.", "d."],
                             "score": [1.5, 2.0, 3.0, None]}), p)
    d = read_file(p, text_a="s1", text_b="s2", label="score", label_kind="score")
    assert [(r.row, r.label) for r in d.pairs] == [(1, 1.5), (2, 2.0)]
    assert [(s.row, s.field) for s in d.skipped] == [(3, "s1"), (4, "score")]
    assert read_file(p, text_a="s1", text_b="s2", limit=1).pairs[0].label is None
    with pytest.raises(DataError, match="lacks column"):
        read_file(p, text_a="premise", text_b="s2")


def test_datasets_generic_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no such file"):
        read_file(tmp_path / "none.csv", text_a="a", text_b="b")
    odd = tmp_path / "x.xlsx"
    odd.write_bytes(b"PK")
    with pytest.raises(DataError, match="supported"):
        read_file(odd, text_a="a", text_b="b")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    with pytest.raises(DataError, match="Parquet"):
        read_file(bad, text_a="a", text_b="b")
    csv_file = tmp_path / "bad.csv"
    csv_file.write_text('a,b\n"x"y,z\nA.,B.\n', encoding="utf-8")
    d = read_file(csv_file, text_a="a", text_b="b")
    assert [r.row for r in d.pairs] == [3] and d.skipped[0].row == 2


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"),
                min_size=1, max_size=40).filter(lambda s: s.strip() != "")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=8))
def test_datasets_generic_csv_round_trip_and_rows(tmp_path_factory: pytest.TempPathFactory,
                                                  rows: list[tuple[str, str]]) -> None:
    p = tmp_path_factory.mktemp("csv") / "x.csv"
    with open(p, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["a", "b"])
        w.writerows(rows)
    d = read_file(p, text_a="a", text_b="b")
    assert not d.skipped
    assert [(r.text_a, r.text_b) for r in d.pairs] == [(a.strip(), b.strip()) for a, b in rows]
    expected_rows, line = [], 2
    for a, b in rows:  # a record starts on the line after the previous record's last line
        expected_rows.append(line)
        line += 1 + a.count("\n") + b.count("\n")
    assert [r.row for r in d.pairs] == expected_rows

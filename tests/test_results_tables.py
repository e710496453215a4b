"""Every results table in docs/results is generated from its records: each sits under a
``<!-- report: ARGS -->`` line and `bench/compare.py report ARGS` prints it byte for byte from
the committed jsonl (`compare.py docs FILE` rewrites them all)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[1]
RESULTS = ROOT / "docs" / "results"
_spec = importlib.util.spec_from_file_location("compare", ROOT / "bench" / "compare.py")
assert _spec and _spec.loader
compare: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare)

#: tables that list files or how splits are used, not results
NOT_RESULTS = ("| file | what |", "| dataset | trained on |")


def _tables(text: str) -> list[tuple[str | None, list[str]]]:
    """(the marker line above it or None, the table's lines) for every table of ``text``."""
    out: list[tuple[str | None, list[str]]] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            end = i
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            above = lines[i - 1] if i > 0 and compare.MARKER.match(lines[i - 1]) else None
            out.append((above, lines[i:end]))
    return out


@pytest.mark.parametrize("doc", sorted(RESULTS.glob("*.md")), ids=lambda p: p.name)
def test_every_results_table_is_generated_from_its_records(doc: Path) -> None:
    text = doc.read_text()
    for marker, table in _tables(text):
        assert marker is not None or table[0].startswith(NOT_RESULTS), \
            f"{doc.name}: a hand-written table (no `<!-- report: … -->` line above it): {table[0]}"
    assert compare.regenerate(text) == text, f"{doc.name}: run `python bench/compare.py docs {doc}`"


def test_one_table_byte_for_byte_from_the_report_command(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """The full-split table of the papers' magnitudes, as `report` prints it on the command line."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "argv", ["bench/compare.py", "report", "docs/results/sick-faithful.jsonl",
                                      "--regime", "full"])
    compare.main()
    printed = capsys.readouterr().out
    readme = (RESULTS / "README.md").read_text()
    marker = "<!-- report: docs/results/sick-faithful.jsonl --regime full -->\n"
    assert marker in readme
    start = readme.index(marker) + len(marker)
    assert readme[start:start + len(printed)] == printed
    assert readme[start + len(printed):].startswith("\n")  # the whole table, not a prefix of it


def test_a_changed_record_makes_the_check_fail(tmp_path: Path) -> None:
    rec = {"kind": "run", "variant": "bert", "regime": "full", "dataset": "toy", "seed": 1,
           "test_accuracy": 0.8, "best_dev": 0.81, "epochs_run": 3}
    (tmp_path / "r.jsonl").write_text(json.dumps(rec) + "\n")
    doc = "text\n<!-- report: r.jsonl --regime full -->\n| old |\n|---|\n\nmore\n"
    new = compare.regenerate(doc, root=tmp_path)
    assert "| bert-mini | 1 | 80.0 |" in new and "| old |" not in new and new.endswith("\n\nmore\n")
    assert compare.regenerate(new, root=tmp_path) == new
    (tmp_path / "r.jsonl").write_text(json.dumps({**rec, "test_accuracy": 0.7}) + "\n")
    assert compare.regenerate(new, root=tmp_path) != new

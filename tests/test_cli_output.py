"""What the command line prints, read where it is read: at 80 columns on a terminal, and whole
in a file or a pipe (a batch job's log). Help keeps its descriptions whole and readable; a
table is never cut because the output is not a terminal; every skipped row is accounted for."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from prior.cli.main import app
from tests.cli_run import cli

runner = CliRunner()


def _help(*command: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    result = runner.invoke(app, [*command, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_output_help_lists_each_command_with_its_whole_first_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _help(monkeypatch=monkeypatch)
    assert max(map(len, out.splitlines())) <= 80
    listed = " ".join(out.split("Commands:")[1].split())
    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        described = " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())
        assert f"{name} {described}" in listed  # wrapped between words, never cut, no frame in between


def test_cli_output_train_help_gives_descriptions_half_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _help("train", monkeypatch=monkeypatch)
    assert max(map(len, out.splitlines())) <= 80
    line = next(line for line in out.splitlines() if "--dataset" in line)
    start = line.index("Dataset name")
    assert start <= 40, line  # the description column is at least 40 characters wide
    assert "<bool>" not in out


def test_cli_output_tables_are_whole_when_not_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build report and `store info` written to a file or a pipe keep every column whole (rich
    would lay them out for 80 columns)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    store = tmp_path / ("a-store-with-a-rather-long-name-" * 3)
    data = tmp_path / ("a-folder-whose-name-is-long-too-" * 2)
    data.mkdir()
    csv = data / "pairs-with-a-long-file-name.csv"
    csv.write_text("sentence1,sentence2,label\nA dog runs.,An animal moves.,yes\nA cat sits.,A cat stands.,no\n")
    out = cli("build", "--dataset", csv, "--features", "sdoi", "--parser", "spacy", "--workers", 0, "--store", store)
    assert str(csv) in out and "…" not in out
    info = cli("store", "info", "--store", store)
    assert "…" not in info and str(store) in info


def test_cli_output_skipped_rows_beyond_the_examples_are_counted(tmp_path: Path) -> None:
    rows = ["sentence1,sentence2,label", "A dog runs.,An animal moves.,yes"] + [f",Nothing {i}.,no" for i in range(6)]
    csv = tmp_path / "gaps.csv"
    csv.write_text("\n".join(rows) + "\n")
    out = cli("build", "--dataset", csv, "--features", "sdoi", "--parser", "spacy", "--workers", 0,
              "--store", tmp_path / "s")
    assert out.count("  skipped: ") == 6 and "  skipped: 1 more row(s) of gaps/all" in out

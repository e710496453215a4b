"""Every command of the README runs as written, in the order shown, on a fresh store.

The ```bash blocks are run line by line through the `prior` app (``. .venv/bin/activate`` and
the ``make`` lines, which CI runs itself, are skipped; any other program is an error, so the
README cannot show a command this test does not run); ```python blocks are executed. Only
sizes change, so the suite stays fast: builds read ``--limit 12`` pairs per split in this
process (``--workers 0``), trainings take 24 pairs for one epoch, the parser trains one epoch
on the bundled UD EWT slice and is evaluated on it, embeddings train one epoch.
``PRIOR_DATA_DIR`` is the shared dataset copies where present (else the bundled slices).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app

REPO = Path(__file__).resolve().parents[1]
SLICE = REPO / "data" / "ud_ewt_slice"


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def command_lines(block: str) -> list[list[str]]:
    """Each command of a shell block as words: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [words for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


def _set(args: list[str], flag: str, value: str) -> list[str]:
    """``args`` with ``flag value``: replaced where given, appended otherwise."""
    if flag in args:
        i = args.index(flag)
        return [*args[:i + 1], value, *args[i + 2:]]
    return [*args, flag, value]


def sized_down(args: list[str]) -> list[str]:
    """The same command on less data (module docstring)."""
    if args[0] == "build":
        args = args if "--limit" in args else _set(args, "--limit", "12")
        return _set(args, "--workers", "0")
    if args[0] == "train":
        for flag, value in (("--limit", "24"), ("--epochs", "1"), ("--batch-size", "8"), ("--max-length", "64")):
            args = _set(args, flag, value)
        return [*args, "--no-progress"]
    if args[:2] == ["parser", "train"]:
        args = _set(_set(args, "--train", str(SLICE / "train.conllu")), "--dev", str(SLICE / "dev.conllu"))
        for flag, value in (("--epochs", "1"), ("--lstm-layers", "1"), ("--lstm-hidden", "32"), ("--embed", "16")):
            args = _set(args, flag, value)
        return args
    if args[:2] == ["parser", "eval"]:
        return [*[a for a in args if not a.endswith(".conllu")], str(SLICE / "test.conllu")]
    if args[:2] == ["embed", "train"]:
        return _set(_set(args, "--epochs", "1"), "--dim", "16")
    return args


def test_readme_commands_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "README.md").read_text()
    shared = REPO.parent / "shared" / "data"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    ran = []
    for block in blocks(text, "bash"):
        for words in command_lines(block):
            if words[0] == "make" or words[:2] == [".", ".venv/bin/activate"]:
                continue
            if words[0] == "export":
                name, _, value = words[1].partition("=")
                value = str(shared) if name == "PRIOR_DATA_DIR" and shared.is_dir() else os.path.expanduser(value)
                if name == "PRIOR_DATA_DIR" and not shared.is_dir():
                    monkeypatch.delenv(name, raising=False)
                    continue
                monkeypatch.setenv(name, value)
                continue
            assert words[0] == "prior", f"README command {' '.join(words)!r} is not a prior command"
            args = sized_down([os.path.expandvars(w) for w in words[1:]])
            result = runner.invoke(app, args)
            assert result.exit_code == 0, f"`prior {shlex.join(args)}` failed:\n{result.output}"
            ran.append(args[0] if args[0] not in ("store", "parser", "embed") else " ".join(args[:2]))
    assert {"build", "show", "store frame", "train", "eval", "predict", "embed counterfit"} <= set(ran)
    for source in blocks(text, "python"):
        exec(compile(source, "README.md", "exec"), {})

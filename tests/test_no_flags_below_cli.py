"""The command line's syntax lives in ``prior/cli/`` alone: no module below it assembles a command line
(flag spellings as list elements, ``prior build …`` lines or ``-o`` flags built in f-strings).
Lower layers hand a recipe or a pick to the renderer ``prior.cli`` installs."""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "prior"
CLI = PACKAGE / "cli"
FLAG = re.compile(r"^--?[a-z][a-z0-9-]*$")
# an f-string that writes a command line: `prior <command> … --flag {value}`, or a read's pick
# flags (`-o F.K=V`, `--entry KEY`, `--parse ID`, `--parser SPEC`); a message that names a flag
# the user gave with its value ("--name 'x' is not a name") is prose
COMMAND = re.compile(r"prior [a-z]+( [^`]*)? --?[a-z][a-z0-9-]*[ =]$")
LEADING = re.compile(r"^(-o|--entry|--parse|--parser) $")


def violations(source: str, where: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out += [f"{where}:{e.lineno}: flag {e.value!r} as a list element" for e in node.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str) and FLAG.match(e.value)]
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for i, (text, value) in enumerate(itertools.pairwise(parts)):
                if not (isinstance(text, ast.Constant) and isinstance(value, ast.FormattedValue)):
                    continue
                if COMMAND.search(text.value) or (i == 0 and LEADING.match(text.value)):
                    out.append(f"{where}:{node.lineno}: f-string builds a command line ({text.value[-40:]!r}…)")
    return out


def test_no_module_below_the_cli_spells_a_command_line() -> None:
    found = [v for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(CLI)
             for v in violations(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("code", [
    'args = ["--features", name]',
    'line = f"prior build --dataset {d} --store {s}"',
    'pick = f"-o {feature}.{k}={v}"',
    'args += ("--embeddings", path)',
])
def test_the_check_finds_an_assembled_line(code: str) -> None:
    assert violations(code, "x.py")


@pytest.mark.parametrize("code", [
    'raise E(f"--sample must be in (0, 1], not {x}")',
    'raise E(f"--name {name!r} {problem}")',
    'msg = "build it first with `prior build --dataset` and its name"',
    'flags = ["-", "x"]',
])
def test_prose_naming_a_flag_is_not_a_command_line(code: str) -> None:
    assert not violations(code, "x.py")

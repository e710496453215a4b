"""The command line's syntax lives in ``prior/cli/`` alone: no module below it spells a flag of
the `prior` command in a string — not in a message, a list of arguments, an f-string or a dict
key. Lower layers name an option with ``option("parser")`` and a build with a `Recipe`, and
the renderer the CLI installs writes them (``--parser``, ``prior build …``); a library user
gets words.

The flags are read from the command itself (every option of every command), so a new option
is covered the day it is added. Docstrings and comments may name flags: they document the
command line, they print nothing."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main

from prior.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "prior"


def cli_flags() -> set[str]:
    """Every option spelling of every `prior` command and group (``--parser``, ``-o``, …)."""
    flags: set[str] = set()

    def walk(command: object) -> None:
        for param in getattr(command, "params", ()):
            if getattr(param, "param_type_name", None) == "option":
                flags.update(f for f in (*param.opts, *param.secondary_opts) if f not in ("--help", "-h"))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return flags


def _pattern(flags: set[str]) -> re.Pattern[str]:
    longs = sorted((f for f in flags if f.startswith("--")), key=len, reverse=True)
    shorts = sorted(f for f in flags if not f.startswith("--"))
    # a long flag as a word of its own; a short one only where it reads as an option with a value
    parts = [rf"(?<![\w-]){re.escape(f)}(?![\w-])" for f in longs]
    parts += [rf"(?<![\w-]){re.escape(f)} +[\w.{{]" for f in shorts]
    return re.compile("|".join(parts))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _strings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, text) of every string that is not a docstring; an f-string as one text with
    ``{}`` where its values go."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def violations(source: str, where: str, flags: set[str]) -> list[str]:
    pattern = _pattern(flags)
    return [f"{where}:{line}: {match.group(0).strip()!r} in {text[:70]!r}"
            for line, text in _strings(ast.parse(source)) if (match := pattern.search(text))]


def lower_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "cli" not in p.relative_to(PACKAGE).parts[:1]]


def test_no_module_below_the_cli_spells_a_flag() -> None:
    flags = cli_flags()
    assert {"--parser", "--dataset", "--drop-damaged", "-o", "--store"} <= flags
    found = [line for path in lower_modules() for line in violations(path.read_text(), str(path.relative_to(ROOT)), flags)]
    assert not found, "\n".join(found)


FLAGS = {"--features", "--dataset", "--store", "--embeddings", "--sample", "--name", "--parser", "-o", "--entry"}


@pytest.mark.parametrize("code", [
    'args = ["--features", name]',
    'line = f"prior build --dataset {d} --store {s}"',
    'pick = f"-o {feature}.{k}={v}"',
    'args += ("--embeddings", path)',
    'raise E(f"--sample must be in (0, 1], not {x}")',
    'raise E(f"--name {name!r} {problem}")',
    'msg = "build it first with `prior build --dataset` and its name"',
    'hints = {"--parser": spec}',
    'hints = {"pick": "--entry"}',
    'text = "pick another with --parser"',
])
def test_the_check_finds_a_flag_in_any_string(code: str) -> None:
    assert violations(code, "x.py", FLAGS)


@pytest.mark.parametrize("code", [
    'def f():\n    """Reads ``--parser``\'s parse."""',
    '# the --parser value\nx = 1',
    'flags = ["-", "x"]',
    'apt = "apt-get install -y --no-install-recommends wordnet-base"',
    'text = "co-ordinate --parsers-of-x"',
    'name = "x-o y"',
])
def test_docstrings_comments_and_other_programs_flags_are_not_ours(code: str) -> None:
    assert not violations(code, "x.py", FLAGS | {"--parser"})

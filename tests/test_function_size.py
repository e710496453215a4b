"""No function in the package is longer than 60 lines: a longer one is doing several jobs, and
the next person has to read all of them to change one."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "prior"
LIMIT = 60


def long_functions(source: str, where: str, limit: int = LIMIT) -> list[str]:
    return [f"{where}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno is not None and node.end_lineno - node.lineno + 1 > limit]


def test_no_function_in_the_package_is_over_60_lines() -> None:
    found = [line for path in sorted(PACKAGE.rglob("*.py"))
             for line in long_functions(path.read_text(), str(path.relative_to(PACKAGE.parent)))]
    assert not found, "\n".join(found)


def test_the_check_sees_a_long_function_nested_or_not() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    source = f"def long():\n{body}\n\nclass A:\n    def ok(self):\n        return 1\n"
    assert long_functions(source, "m.py") == [f"m.py:1 long ({LIMIT + 1} lines)"]
    nested = "class B:\n" + "\n".join("    " + line for line in source.splitlines())
    assert len(long_functions(nested, "m.py")) == 1

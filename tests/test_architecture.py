"""docs/architecture.md says what the import test enforces: its layer table names the same
layers, each with the same "may import" set as `tests/test_imports.py`, and the root row names
every module of the shared root. And every relative link of the README and docs/ leads to a
file that exists."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_imports import MAY_IMPORT, ROOT_MODULES

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"


def layer_table() -> dict[str, tuple[str, set[str]]]:
    """layer → (its row's job text, its "may import" set), from the table between the markers."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- layers -->", 1)[1].split("<!-- /layers -->", 1)[0]
    rows = {}
    for line in table.strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = (cells[2], {c.strip() for c in cells[3].split(",")})
    return rows


def test_the_layer_table_is_the_import_tests() -> None:
    rows = layer_table()
    assert set(rows) == set(MAY_IMPORT)
    for layer, (_, allowed) in rows.items():
        assert allowed | {layer} == set(MAY_IMPORT[layer]) | {layer}, layer  # a layer imports itself


def test_the_root_row_names_every_root_module() -> None:
    job = layer_table()["root"][0]
    for module in ROOT_MODULES - {"prior"}:
        assert f"`{module.split('.')[-1]}.py`" in job, module


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_of_the_readme_and_docs_exists() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken = [f"{page.relative_to(REPO)}: {target}" for page in pages
              for target in LINK.findall(page.read_text(encoding="utf-8"))
              if "://" not in target and not (page.parent / target).exists()]
    assert broken == []

"""docs/ describe behaviour: nothing about how the project was worked on (sessions, issues,
local paths); docs/results/README.md, the results' history, may."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
ALLOWED = {DOCS / "results" / "README.md"}
WORDS = re.compile(r"\bsessions?\b|\bissues? ?#?\d+|\.\./shared|/work/", re.IGNORECASE)


def test_docs_say_nothing_about_sessions_issues_or_local_paths() -> None:
    found = [f"{path.relative_to(DOCS)}:{n}: {m.group(0)}" for path in sorted(DOCS.rglob("*"))
             if path.is_file() and path.suffix in {".md", ".py", ".jsonl", ".json", ".txt"} and path not in ALLOWED
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for m in [WORDS.search(line)] if m]
    assert found == []

"""Where benchmark results go: ``bench/out/<name>-<UTC date>.json``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def write_json(out_dir: Path, name: str, results: dict[str, Any]) -> Path:
    """Write ``results`` to ``out_dir/<name>-<date>.json``, print and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{name}-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return out

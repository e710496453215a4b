"""Read-time views: features combined from several stored entries.

A view names the entries it joins (each by entry name) and derives extra columns from the
joined frame. ``Store.frame(name)`` uses the view registered under ``name`` when there is one,
else the entry of that name alone. Views are pure functions of stored values: a paper's
ablations become different views (or view options) of one build, never a rebuild.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl


@dataclass(frozen=True)
class View:
    entries: tuple[str, ...]
    derive: Callable[[pl.DataFrame, dict[str, Any]], pl.DataFrame] | None = None
    options: dict[str, Any] = field(default_factory=dict)


VIEWS: dict[str, View] = {}


def register_view(name: str, view: View) -> None:
    VIEWS[name] = view

"""Shared console helpers for the CLI: one rich console, errors printed without tracebacks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from featurestore.errors import PriorError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GiB"


def one_line(exc: BaseException) -> str:
    """An error's message on one line (never wrapped: ``soft_wrap`` when printed)."""
    return " ".join(str(exc).split())


def friendly_errors(fn: F) -> F:
    """Print a PriorError as one clear line and exit 1, instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PriorError as exc:
            err_console.print(f"[bold red]error:[/] {escape(one_line(exc))}", soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]

"""Shared console helpers for the CLI: one rich console, errors printed without tracebacks."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console, ConsoleDimensions

from prior.errors import PriorError

#: the width of output that is not a terminal (a file, a pipe): wide enough that no table is cut
UNBOUNDED_WIDTH = 10_000


class OutputConsole(Console):
    """A rich console that lays out for a terminal's width on a terminal, and never cuts a table
    or wraps a line written anywhere else (rich would assume 80 columns): a log or a pipe gets
    whole rows. ``$COLUMNS`` still sets the width where it is given."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or os.environ.get("COLUMNS"):
            return size
        return ConsoleDimensions(UNBOUNDED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


console = OutputConsole(highlight=False)
err_console = OutputConsole(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])

# What to tell after Ctrl-C, by command function (default: nothing was left half-written)
INTERRUPTED = {"build_cmd": "rerun to continue (the store keeps what was committed)"}


def warn(text: str) -> None:
    """One line on standard error: ``warning: text``."""
    err_console.print(f"warning: {text}", markup=False, highlight=False, soft_wrap=True)


def warn_missing_data_dir(data_dir: Path | None = None) -> None:
    """The one-line warning of a data directory that is given but does not exist (every
    command that reads named datasets, and `prior env`)."""
    from prior.pipeline.datasets.resolve import missing_data_dir

    if (problem := missing_data_dir(data_dir)) is not None:
        warn(problem)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GiB"


def friendly_errors(fn: F) -> F:
    """Print a PriorError as one clear line and exit 1, instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PriorError as exc:
            # soft wrap: a printed build line stays one line, to copy as it is
            err_console.print("[bold red]error:[/] ", end="")
            err_console.print(str(exc), markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None
        except KeyboardInterrupt as exc:  # Ctrl-C: one line, no traceback (a store commits atomically)
            # a command may say itself what was kept (`prior train`: the step it can resume from)
            said = str(exc) or INTERRUPTED.get(fn.__name__, "nothing was left half-written")
            err_console.print(f"interrupted; {said}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]

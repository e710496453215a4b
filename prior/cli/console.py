"""Shared console helpers for the CLI: one rich console, errors printed without tracebacks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from prior.errors import PriorError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])

# What to tell after Ctrl-C, by command function (default: nothing was left half-written)
INTERRUPTED = {"build_cmd": "rerun to continue (the store keeps what was committed)"}


def plain_flags_in_help() -> None:
    """Show boolean flags as ``--flag/--no-flag`` without a ``<bool>`` type label: Typer's
    rich help labels every option with its type, which for a flag says nothing."""
    from typer.core import TyperOption

    if getattr(TyperOption.display_type_rich, "_prior_plain_flags", False):
        return
    typed = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else typed(self, ctx)

    display_type_rich._prior_plain_flags = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


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

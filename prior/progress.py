"""Progress bars: one look for every long command, off with ``PRIOR_NO_PROGRESS=1``.

Library code reports through a plain callback, :data:`Progress` (``progress(stage, done,
total, info)``), and never draws anything itself; a command turns the reports into rich bars
with :func:`stage_bars`. Code that drives a rich ``Progress`` directly (the build's stages,
the training epochs) opens it with :func:`bars`. Both draw the same columns, on standard
error, so a command's standard output (JSON lines, metrics) stays clean when piped.

It lives in the shared root, beside the other conventions read from the environment
(`prior.paths`), because ``cli``, ``pipeline`` and ``trainers`` all draw bars. The environment
is read when a bar opens, never at import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

Progress = Callable[[str, int, int, str], None]
"""``progress(stage, done, total, info)``: ``done`` of ``total`` units of a named stage are
finished; ``info`` is a short status (a loss, a cost), or ``""``."""


def progress_disabled() -> bool:
    """True when ``PRIOR_NO_PROGRESS`` is set to anything but ``""`` or ``"0"``."""
    return os.environ.get("PRIOR_NO_PROGRESS", "") not in ("", "0")


@contextmanager
def bars(enabled: bool = True, console: Console | None = None) -> Iterator[Any]:
    """A rich ``Progress`` with the columns every command shows: stage (16 wide), bar,
    done/total, elapsed, remaining, and an ``info`` field (``add_task(..., info="")``).
    Drawn on standard error unless ``console`` says otherwise; nothing is drawn when
    ``enabled`` is false or ``PRIOR_NO_PROGRESS`` is set (the object still accepts calls)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), TextColumn("{task.fields[info]}"),
                  console=console or Console(stderr=True, highlight=False),
                  disable=not enabled or progress_disabled(), transient=False) as progress:
        yield progress


@contextmanager
def stage_bars(enabled: bool = True, console: Console | None = None) -> Iterator[Progress]:
    """A :data:`Progress` callback drawing one bar per reported stage, created at the stage's
    first report. A stage with nothing to do (``total`` 0) gets no bar."""
    with bars(enabled, console) as drawn:
        tasks: dict[str, Any] = {}

        def report(stage: str, done: int, total: int, info: str = "") -> None:
            if total <= 0:
                return
            if stage not in tasks:
                tasks[stage] = drawn.add_task(stage, total=total, info=info)
            drawn.update(tasks[stage], completed=done, total=total, info=info)

        yield report

"""Progress for long commands: one look for every command, off with ``PRIOR_NO_PROGRESS=1``.

Library code reports through a plain callback, :data:`Progress` (``progress(stage, done,
total, info)``), and never draws anything itself; a command turns the reports into bars with
:func:`stage_bars`. Code that drives the bars directly (the build's stages) opens them with
:func:`bars` and calls ``add_task`` / ``advance`` / ``update`` (:class:`Bars`).

Where the output goes decides the look, and both write on standard error, so a command's
standard output (JSON lines, metrics) stays clean when piped:

- a terminal: rich bars (stage, bar, done/total, elapsed, time remaining, info);
- anything else (a batch job's log file, a pipe): :class:`PlainLines`, one plain line per
  running stage every ``$PRIOR_PROGRESS_INTERVAL`` seconds (default 15) — stage, done/total,
  rate, time remaining — and one when a stage finishes. A log shows progress while the work
  runs, not only at its end.

The time remaining is the work left at the *recent* rate (:class:`RecentRate`: the items done
over the last minute), never the rate of the last two reports: work that arrives in blocks
(a partition of 2,000 sentences at a time, two workers finishing together) made that rate jump
and the estimate run far too short.

It lives in the shared root, beside the other conventions read from the environment
(`prior.paths`), because ``cli``, ``pipeline`` and ``trainers`` all draw progress. The
environment is read when progress opens, never at import.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Protocol

from prior.paths import positive_number

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Task
    from rich.text import Text

Progress = Callable[[str, int, int, str], None]
"""``progress(stage, done, total, info)``: ``done`` of ``total`` units of a named stage are
finished; ``info`` is a short status (a loss, a cost), or ``""``."""

INTERVAL_ENV = "PRIOR_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 15.0  # seconds between two plain lines of a running stage
RATE_WINDOW = 60.0  # seconds of recent work the rate and the time remaining are taken over


def progress_disabled() -> bool:
    """True when ``PRIOR_NO_PROGRESS`` is set to anything but ``""`` or ``"0"``."""
    return os.environ.get("PRIOR_NO_PROGRESS", "") not in ("", "0")


def line_interval() -> float:
    """``$PRIOR_PROGRESS_INTERVAL`` in seconds (read on each call), else 15."""
    return positive_number(INTERVAL_ENV, DEFAULT_INTERVAL, "seconds")


class Bars(Protocol):
    """What the bars of :func:`bars` accept (rich's ``Progress`` and :class:`PlainLines` both)."""

    def add_task(self, description: str, start: bool = True, total: float | None = 100.0, completed: int = 0,
                 visible: bool = True, **fields: Any) -> Any: ...

    def advance(self, task_id: Any, advance: float = 1) -> None: ...

    def update(self, task_id: Any, *, total: float | None = None, completed: float | None = None,
               advance: float | None = None, description: str | None = None, visible: bool | None = None,
               refresh: bool = False, **fields: Any) -> None: ...


class RecentRate:
    """Items per second over the last ``window`` seconds, measured up to *now*: a stage that
    reports in blocks gets the average of its recent blocks, and a stage that stalls sees its
    rate fall instead of keeping its last burst's."""

    def __init__(self, window: float = RATE_WINDOW, *, done: float = 0.0, now: float | None = None) -> None:
        self.window = window
        self._samples: deque[tuple[float, float]] = deque([(time.monotonic() if now is None else now, done)])

    def observe(self, done: float, now: float | None = None) -> None:
        t = time.monotonic() if now is None else now
        if done != self._samples[-1][1]:
            self._samples.append((t, done))
        # keep one sample at or before the window's start: the reference the rate is taken from
        while len(self._samples) > 1 and self._samples[1][0] <= t - self.window:
            self._samples.popleft()

    def rate(self, now: float | None = None) -> float:
        t = time.monotonic() if now is None else now
        start, samples = t - self.window, self._samples
        i = 0
        while i + 1 < len(samples) and samples[i + 1][0] <= start:
            i += 1
        ref_t, ref_done = samples[i]
        if ref_t < start and i + 1 < len(samples):  # the window starts between two samples
            next_t, next_done = samples[i + 1]
            ref_done += (next_done - ref_done) * (start - ref_t) / (next_t - ref_t)
            ref_t = start
        elapsed = t - ref_t
        return (samples[-1][1] - ref_done) / elapsed if elapsed > 0 else 0.0

    def remaining(self, left: float, now: float | None = None) -> float | None:
        """Seconds to finish ``left`` more items at the recent rate; None before any is done."""
        rate = self.rate(now)
        return left / rate if rate > 0 else None


def clock(seconds: float | None) -> str:
    """``H:MM:SS``, or ``-:--:--`` when unknown."""
    if seconds is None:
        return "-:--:--"
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


@dataclass
class _Stage:
    description: str
    total: float | None
    completed: float = 0
    fields: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    finished: bool = False

    def __post_init__(self) -> None:
        self.rate = RecentRate(done=self.completed, now=self.started)


class PlainLines:
    """Progress as plain lines for a log: every ``interval`` seconds one line per running stage
    (``parse: 1,200/4,000 (30%), 85.2/s, 0:00:33 left``), one line when a stage starts and one
    when it finishes. The same calls as rich's ``Progress`` (:class:`Bars`); a background
    thread writes the lines, so a caller blocked waiting for results still shows progress.

    Use it directly where a command writes its own lines (a training loop)::

        with PlainLines(sys.stderr) as lines:
            step = lines.add_task("train", total=steps, info="")
            ...
            lines.update(step, completed=done, info=f"loss {loss:.3f}")
            if done % 100 == 0:
                lines.write_line(step)  # one more line, beside the timed ones
    """

    def __init__(self, out: IO[str], interval: float | None = None) -> None:
        self.out = out
        self.interval = line_interval() if interval is None else interval
        self._stages: dict[int, _Stage] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PlainLines:
        self._thread = threading.Thread(target=self._tick, name="prior-progress-lines", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            for stage in self._stages.values():
                if not stage.finished and stage.completed:
                    self._write(stage, "stopped at")

    def add_task(self, description: str, start: bool = True, total: float | None = 100.0, completed: int = 0,
                 visible: bool = True, **fields: Any) -> int:
        with self._lock:
            task_id = len(self._stages)
            stage = _Stage(description, total, completed, dict(fields))
            self._stages[task_id] = stage
            self._write(stage, "started")
            return task_id

    def advance(self, task_id: Any, advance: float = 1) -> None:
        self.update(task_id, advance=advance)

    def update(self, task_id: Any, *, total: float | None = None, completed: float | None = None,
               advance: float | None = None, description: str | None = None, visible: bool | None = None,
               refresh: bool = False, **fields: Any) -> None:
        with self._lock:
            stage = self._stages[task_id]
            stage.total = stage.total if total is None else total
            stage.completed = stage.completed if completed is None else completed
            stage.completed += advance or 0
            stage.description = description or stage.description
            stage.fields.update(fields)
            stage.rate.observe(stage.completed)
            if not stage.finished and stage.total is not None and stage.completed >= stage.total:
                stage.finished = True
                self._write(stage, "done")

    def write_line(self, task_id: Any) -> None:
        """Write a stage's line now, between the timed ones (a training loop's line every N
        steps or at an epoch's end)."""
        with self._lock:
            stage = self._stages[task_id]
            if not stage.finished:
                self._write(stage, "")

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                for stage in self._stages.values():
                    if not stage.finished:
                        self._write(stage, "")

    def _write(self, stage: _Stage, event: str) -> None:
        now = time.monotonic()
        stage.rate.observe(stage.completed, now)
        done = f"{stage.completed:,.0f}" + (f"/{stage.total:,.0f}" if stage.total else "")
        if stage.total:
            done += f" ({100 * stage.completed / stage.total:.0f}%)"
        parts = [f"{stage.description}: {event + ' ' if event else ''}{done}"]
        if event == "done":
            elapsed = now - stage.started
            parts.append(f"in {clock(elapsed)}" + (f", {stage.completed / elapsed:,.1f}/s" if elapsed > 0 else ""))
        elif event != "started":
            left = None if not stage.total else stage.rate.remaining(stage.total - stage.completed, now)
            parts += [f"{stage.rate.rate(now):,.1f}/s", f"{clock(left)} left"]
        if info := str(stage.fields.get("info") or ""):
            parts.append(info)
        self.out.write(", ".join(parts) + "\n")
        self.out.flush()


def _recent_remaining_column() -> Any:
    """A rich column: the time remaining at the recent rate (:class:`RecentRate`), where rich's
    own estimate takes the rate between the last reports."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RecentRemainingColumn(ProgressColumn):
        def __init__(self) -> None:
            super().__init__()
            self.rates: dict[Any, RecentRate] = {}

        def render(self, task: Task) -> Text:
            rate = self.rates.setdefault(task.id, RecentRate())
            rate.observe(task.completed)
            if task.finished:
                return Text(clock(0), style="progress.remaining")
            left = None if task.total is None else rate.remaining(task.total - task.completed)
            return Text(clock(left), style="progress.remaining")

    return RecentRemainingColumn()


@contextmanager
def bars(enabled: bool = True, console: Console | None = None) -> Iterator[Bars]:
    """Progress with the columns every command shows: stage (16 wide), bar, done/total,
    elapsed, remaining, and an ``info`` field (``add_task(..., info="")``). Drawn on standard
    error unless ``console`` says otherwise: as rich bars on a terminal, as :class:`PlainLines`
    anywhere else; nothing is drawn when ``enabled`` is false or ``PRIOR_NO_PROGRESS`` is set
    (the object still accepts calls)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    console = console or Console(stderr=True, highlight=False)
    off = not enabled or progress_disabled()
    if not off and not console.is_terminal:
        interval = line_interval()  # a malformed setting fails before the work, not in the thread
        with PlainLines(console.file, interval) as lines:
            yield lines
        return
    with RichProgress(TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      _recent_remaining_column(), TextColumn("{task.fields[info]}"), console=console, disable=off,
                      transient=False) as progress:
        yield progress


@contextmanager
def stage_bars(enabled: bool = True, console: Console | None = None) -> Iterator[Progress]:
    """A :data:`Progress` callback drawing one bar (or line) per reported stage, created at the
    stage's first report. A stage with nothing to do (``total`` 0) gets none."""
    with bars(enabled, console) as drawn:
        tasks: dict[str, Any] = {}

        def report(stage: str, done: int, total: int, info: str = "") -> None:
            if total <= 0:
                return
            if stage not in tasks:
                tasks[stage] = drawn.add_task(stage, total=total, completed=done, info=info)
            drawn.update(tasks[stage], completed=done, total=total, info=info)

        yield report

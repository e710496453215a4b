"""What a training run tells as it goes: per-step and per-epoch records, to a progress callback,
to ``metrics.jsonl`` and, where asked, to TensorBoard.

The loop hands each finished step and epoch to a :class:`Reporter` as plain records
(:class:`StepRecord`, the epoch's metrics dict); how they look is the caller's: `prior train`
draws a bar on a terminal and writes a plain line every N steps to a log
(``on_event``). The bar's info shows the recent loss, pairs per second, and the loader's share
of the step time: the time the loop waited for a batch over the whole step, near 0 % when the
loader keeps ahead of the model.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prior.errors import ResourceError
from prior.progress import Progress

#: recent steps the bar's loss, rate and loader share are taken over
RECENT = 20

Event = Callable[[str, dict[str, Any]], None]
"""``on_event(kind, record)``: kind "step" (a :class:`StepRecord` as a dict) or "epoch" (the
metrics line)."""


@dataclass(frozen=True)
class StepRecord:
    epoch: int  # 1-based
    epochs: int
    step: int  # 1-based within the epoch
    steps: int  # steps in the epoch
    global_step: int  # optimizer steps of the run
    loss: float  # mean over the recent steps
    pairs_per_second: float  # recent
    loader_share: float  # recent wait for a batch / recent step time
    eta_seconds: float | None  # the epoch's remaining steps at the recent rate


class Reporter:
    """Collects the run's steps (module docstring); rank 0's writes the files."""

    def __init__(self, out: Path, *, main: bool, progress: Progress | None = None, on_event: Event | None = None,
                 report_to: tuple[str, ...] = ()) -> None:
        self.out, self.main, self.progress, self.on_event = out, main, progress, on_event
        self._recent: deque[tuple[float, float, float, int]] = deque(maxlen=RECENT)  # loss, wait, total, pairs
        self._writer = tensorboard_writer(out / "tensorboard") if main and "tensorboard" in report_to else None

    def step(self, *, epoch: int, epochs: int, step: int, steps: int, global_step: int, loss: float,
             wait: float, seconds: float, pairs: int) -> None:
        """A finished step: its loss, the seconds waited for its batch and spent in all, its pairs."""
        self._recent.append((loss, wait, seconds, pairs))
        losses, waits, totals, counts = zip(*self._recent)
        spent = sum(totals)
        rate = sum(counts) / spent if spent > 0 else 0.0
        eta = (steps - step) * spent / len(self._recent) if spent > 0 else None
        record = StepRecord(epoch + 1, epochs, step, steps, global_step, sum(losses) / len(losses), rate,
                            sum(waits) / spent if spent > 0 else 0.0, eta)
        if self.progress is not None:
            self.progress(f"epoch {epoch + 1}/{epochs}", step, steps,
                          f"loss {record.loss:.4f} · {rate:,.0f} pairs/s · loader {100 * record.loader_share:.0f}%")
        if self.on_event is not None:
            self.on_event("step", asdict(record))
        if self._writer is not None:
            self._writer.add_scalar("train/loss", loss, global_step)
            self._writer.add_scalar("train/pairs_per_second", rate, global_step)
            self._writer.add_scalar("train/loader_share", record.loader_share, global_step)

    def epoch(self, record: dict[str, Any]) -> None:
        """A finished epoch's metrics line: to metrics.jsonl, TensorBoard and the caller."""
        if self.main:
            with (self.out / "metrics.jsonl").open("a") as fh:
                fh.write(json.dumps(record) + "\n")
        if self._writer is not None:
            for key, value in record.items():
                if key.startswith(("dev_", "train_")) and isinstance(value, (int, float)):
                    self._writer.add_scalar(key.replace("_", "/", 1), value, record["step"])
            self._writer.flush()
        if self.on_event is not None:
            self.on_event("epoch", record)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def tensorboard_writer(directory: Path) -> Any:
    """A TensorBoard event writer (torch's ``SummaryWriter``); a one-line `ResourceError`
    naming the extra to install where TensorBoard is not."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ResourceError("reporting to TensorBoard needs the tensorboard package: "
                            "pip install 'prior[tensorboard]'") from None
    return SummaryWriter(log_dir=str(directory))


class StepClock:
    """Times a step: the wait for its batch, then the work."""

    def __init__(self) -> None:
        self.mark = time.perf_counter()

    def lap(self) -> float:
        now = time.perf_counter()
        seconds, self.mark = now - self.mark, now
        return seconds


__all__ = ["Event", "Reporter", "StepClock", "StepRecord", "tensorboard_writer"]

"""One build while it runs: the store it writes, what it makes and how, where its tasks run, its
progress and its report — what every stage of `prior.pipeline.build` reads and adds to, handed
over as one typed value instead of the same five parameters in every stage."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from prior.featurestore.catalog import SPLITS
from prior.featurestore.parse_columns import ANNOTATIONS
from prior.featurestore.store import Store
from prior.pipeline.build_options import BuildOptions, RunOptions
from prior.pipeline.build_report import BuildReport, StageReport
from prior.pipeline.runner import Runner
from prior.pipeline.tasks import PartitionResult
from prior.progress import Bars

Triple = tuple[str, str, str]  # (pair key, key_a, key_b)


@dataclass
class BuildRun:
    """A running build. ``progress`` is set when the stages that draw bars start."""

    store: Store
    options: BuildOptions
    settings: RunOptions
    runner: Runner
    report: BuildReport
    fingerprint: dict[str, Any]  # the parser's identity (its parse id is ``report.parse``)
    #: the parse annotations beyond words, heads and relations that the build's features read
    #: (`prior.pipeline.parsers.annotations`): what its parse stage makes and needs
    annotations: frozenset[str] = frozenset(ANNOTATIONS)
    progress: Bars | None = None
    #: the splits the build read, as the parse and feature records it commits after their pairs
    #: name them (`prior.featurestore.splits.split_refs`); set once they are read
    splits: tuple[dict[str, Any], ...] = ()
    started: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def lease(self) -> str | None:
        return self.store.lease

    def record(self) -> dict[str, Any]:
        """What every parse and feature record of this build carries in its meta: the splits
        it read (a later loss of their latest pairs record is noticed by them)."""
        return {SPLITS: list(self.splits)} if self.splits else {}

    def bar(self, name: str, total: int) -> Any:
        """A progress bar for ``total`` items of a stage; None when there is nothing to do."""
        if not total or self.progress is None:
            return None
        return self.progress.add_task(name, total=total, info="")

    def advance(self, bar: Any, settled: int) -> None:
        if bar is not None and self.progress is not None:
            self.progress.advance(bar, settled)


def count(stage: StageReport, result: PartitionResult, label: str) -> int:
    """Add a partition's result to its stage; returns the items it settled (for the bar)."""
    stage.computed += result.done
    stage.reused += result.skipped
    stage.failed += len(result.failures)
    stage.failures += [f"{label} {k}: {msg}".lstrip() for k, msg in result.failures]
    return result.settled

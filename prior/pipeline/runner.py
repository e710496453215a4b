"""Where a build's partition tasks run: in this process (``workers=0``), on a local Dask cluster
started for the build, or on an existing cluster (``scheduler``).

The local cluster starts only when there is work (a no-op rebuild starts none); its worker
processes start with Ctrl-C ignored, so the build's one-line "interrupted" is not buried under
their tracebacks (the build stops them itself). Dask's own log (``distributed``: a failed task's
"Compute Failed" block, worker restarts) goes to ``$PRIOR_HOME/logs/dask.log`` instead of the
terminal, in the driver and in each worker.

Results are handed over as they arrive and their futures let go at once: a worker lost later in
the build does not make Dask compute them again. A worker lost while it held a task's result or
ran it does (the scheduler reruns those tasks elsewhere); the runner reads the scheduler's
``remove-worker`` events after each run and reports which workers were lost and which
partitions ran again (`tasks.py` says why their commits are kept once).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prior.pipeline import preflight
from prior.pipeline.build_options import RunOptions
from prior.pipeline.tasks import PartitionResult, PartitionTask
from prior.pipeline.worker import run_partition

if TYPE_CHECKING:
    from distributed import Client, LocalCluster


@dataclass
class Job:
    """A partition task and what to do with its result (called in the driver, as it arrives)."""

    task: PartitionTask
    on_done: Callable[[PartitionResult], None]


@dataclass
class Losses:
    """Workers that left the cluster while tasks of this build ran, and those tasks' labels."""

    workers: list[str] = field(default_factory=list)
    recomputed: list[str] = field(default_factory=list)


#: the loggers of Dask and of the event loop it runs on: tornado logs an exception in one of
#: Dask's callbacks (e.g. ``distributed.utils.sync``'s cancel on a Ctrl-C) as a traceback, through
#: ``tornado.application``, to which distributed's logging config gives a terminal handler of its own
DASK_LOGGERS = ("distributed", "tornado", "tornado.application")


def log_to_file(path: str) -> None:
    """Send Dask's own log (``distributed``, and ``tornado``'s, whose loop runs Dask's
    callbacks) to ``path`` instead of the terminal: a build's failure is the one line its error
    says; the details stay in that file."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path)  # opened now: a file that cannot be written fails here
    except OSError:  # no writable PRIOR_HOME: the log stays on the terminal
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
    for name in DASK_LOGGERS:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            if isinstance(old, logging.StreamHandler) and not isinstance(old, logging.FileHandler):
                logger.removeHandler(old)
        if not any(isinstance(h, logging.FileHandler) and h.baseFilename == handler.baseFilename
                   for h in logger.handlers):
            logger.addHandler(handler)
        logger.propagate = False
    if not any(handler in logging.getLogger(name).handlers for name in DASK_LOGGERS):
        handler.close()  # every logger already writes to this file


@contextlib.contextmanager
def workers_ignore_ctrl_c() -> Iterator[None]:
    """Start worker processes with SIGINT ignored (they inherit it): Ctrl-C in a terminal
    reaches the whole process group. The build's process ignores it only while they start."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _events(client: Client) -> list[tuple[float, Any]]:
    """The scheduler's events of topic "all" (worker arrivals and removals), oldest first."""
    try:
        return list(client.get_events("all"))
    except Exception:  # noqa: BLE001 - a scheduler that keeps no events: nothing to report
        return []


def _last_event(client: Client) -> float:
    """The scheduler's time stamp of its latest event (its clock, not ours: it may be another
    machine's)."""
    return max((stamp for stamp, _ in _events(client)), default=float("-inf"))


#: Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_`` in every worker it spawns, which switches off
#: glibc's adaptive mmap threshold: every large numpy buffer spaCy and the parser allocate becomes
#: a fresh mmap with its page faults. The build's own workers keep glibc's defaults.
KEEP_MALLOC_DEFAULTS = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}


class Runner:
    """Runs partition tasks in this process or on Dask; the cluster starts only when needed.
    Close it (or use it as a context manager) to stop a local cluster it started."""

    def __init__(self, settings: RunOptions) -> None:
        self.settings = settings
        self.client: Client | None = None
        self.cluster: LocalCluster | None = None
        self.losses = Losses()
        self._labels: dict[str, str] = {}  # Dask key -> partition label, for the lost-worker report

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Client | None:
        """Connect to the scheduler, or start the local cluster (once); None when tasks run in
        this process."""
        if self.client is not None or (self.settings.workers == 0 and not self.settings.scheduler):
            return self.client
        import dask
        from distributed import Client, LocalCluster

        logging.getLogger("distributed").setLevel(logging.ERROR)
        if self.settings.scheduler:
            self.client = preflight.connect(self.settings.scheduler)
        else:
            from prior.paths import prior_home

            scratch = prior_home() / "dask-scratch"
            scratch.mkdir(parents=True, exist_ok=True)
            # the dashboard cannot be switched off here; an ephemeral loopback port never collides
            with workers_ignore_ctrl_c(), dask.config.set(KEEP_MALLOC_DEFAULTS):
                self.cluster = LocalCluster(n_workers=self.settings.workers, threads_per_worker=1, processes=True,
                                            dashboard_address="127.0.0.1:0", local_directory=str(scratch),
                                            silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            log_file = str(prior_home() / "logs" / "dask.log")
            log_to_file(log_file)  # the scheduler, in this process
            self.client.run(log_to_file, log_file)  # each worker (a failed task's log block)
        return self.client

    @property
    def address(self) -> str | None:
        """The scheduler's address once started (other builds may use the same cluster)."""
        return None if self.client is None else str(self.client.scheduler.address)

    def run(self, jobs: list[Job]) -> None:
        """Run every job, handing each result to its callback as it arrives; Dask starts the
        jobs in the order given."""
        if not jobs:
            return
        client = self.start()
        if client is None:
            for job in jobs:
                job.on_done(run_partition(job.task))
            return
        from distributed import as_completed

        since = _last_event(client)
        futures = []
        callbacks: dict[str, Callable[[PartitionResult], None]] = {}
        for job in jobs:
            key = f"prior-{job.task.label or 'partition'}-{uuid.uuid4().hex[:12]}".replace(" ", "-").replace("/", "of")
            self._labels[key] = job.task.label
            callbacks[key] = job.on_done
            futures.append(client.submit(run_partition, job.task, key=key, pure=False))
        done = as_completed(futures)
        del futures  # from here on only as_completed holds a future, until it hands it over
        try:
            for future in done:
                result = future.result()
                key = str(future.key)
                future.release()  # a worker lost from now on costs no recompute of this one
                del future
                if result.rerun and self._labels[key] not in self.losses.recomputed:  # found its earlier commit
                    self.losses.recomputed.append(self._labels[key])
                callbacks.pop(key)(result)
        finally:
            self._note_losses(client, since)

    def _note_losses(self, client: Client, since: float) -> None:
        """Record workers removed without being asked to (``expected`` false) after the event
        stamped ``since``, and our partitions they were running or holding."""
        for stamp, msg in _events(client):
            if stamp <= since or not isinstance(msg, dict) or msg.get("action") != "remove-worker" or msg.get("expected"):
                continue
            address = str(msg.get("worker", "?"))
            if address not in self.losses.workers:
                self.losses.workers.append(address)
            for key in sorted(set(msg.get("processing-tasks") or ()) | set(msg.get("lost-computed-tasks") or ())):
                label = self._labels.get(str(key))
                if label is not None and label not in self.losses.recomputed:
                    self.losses.recomputed.append(label)

    @property
    def workers(self) -> int:
        """Worker count for partitioning; asks an external scheduler, never starts a local cluster."""
        if self.settings.scheduler:
            client = self.start()
            assert client is not None
            return max(1, len(client.scheduler_info().get("workers", {})))
        return max(1, self.settings.workers)

    def close(self) -> None:
        if self.client is not None and self.cluster is not None:  # our own workers only
            # they exit without the final collection walking spaCy's and torch's heaps
            with contextlib.suppress(Exception):  # a worker already gone has nothing to collect
                self.client.run(gc.freeze)
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:  # our own workers only; an external cluster's are left alone
            self.cluster.close()
        self.client = self.cluster = None

"""A lost Dask worker costs no duplicate: a partition's commit is kept once however often Dask
runs its task, and the build report names the workers lost and the partitions run again.

Dask runs a task again when the worker that ran it is lost before its result reached the
driver, also when the task had already committed its segment. Each task records its token
(what it computes and its keys) with its segment and checks, before computing and again right
before committing, for segments committed since it was planned: another build's, or an earlier
copy of itself. The fast tests run a task twice (and race two copies) in this process; the slow
ones kill a real `dask worker` process mid-build, with a local store and an S3 store on moto.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from prior.featurestore import StoreRef, make_entry, open_store
from prior.featurestore.lease import Lease
from prior.featurestore.maintenance import store_info, verify_store
from prior.pipeline import worker
from prior.pipeline.tasks import FeatureTask, ParseTask
from tests.test_s3 import s3, s3_server  # noqa: F401 - the moto server fixtures

TEXTS = ("A dog runs in the park.", "Two cats sleep.", "The sun is hot.")


def _parse_task(store: Path, lease: str) -> ParseTask:
    return ParseTask(store=StoreRef.of(str(store)), keys=("k1", "k2", "k3"), lease=lease, parser="spacy", parse="p",
                     fingerprint={"backend": "spacy"}, texts=TEXTS, label="parse 1/1")


def _parse_rows(store: Path) -> tuple[int, int]:
    """Rows of the parse segments, and distinct sentences among them."""
    s = open_store(store, create=False)
    return sum(seg.rows for seg in s.segments("parses")), len(s.parsed_keys("p"))


@pytest.fixture
def lease(tmp_path: Path) -> Iterator[str]:
    held = Lease(open_store(tmp_path / "s").fs, "test build").acquire()
    try:
        yield held.id
    finally:
        held.release()


def test_lost_worker_rerun_of_a_committed_parse_task_commits_nothing(tmp_path: Path, lease: str) -> None:
    first = worker.run_partition(_parse_task(tmp_path / "s", lease))
    again = worker.run_partition(_parse_task(tmp_path / "s", lease))  # Dask's rerun after the worker was lost
    assert (first.done, first.rerun) == (3, False)
    assert (again.done, again.skipped, again.rerun) == (0, 3, True)
    assert _parse_rows(tmp_path / "s") == (3, 3)


def test_lost_worker_racing_copies_of_a_task_commit_once(tmp_path: Path, lease: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The second copy commits while the first computes: the first's check right before its
    commit finds it and commits nothing."""
    from prior.pipeline import parsers

    real = parsers.get_parser
    ran: list[Any] = []

    def get_parser(spec: str, device: str = "auto") -> Any:
        parser = real(spec, device)
        if not ran:
            ran.append(None)
            ran[0] = worker.parse_partition(_parse_task(tmp_path / "s", lease))  # the racing copy, done first
        return parser

    monkeypatch.setattr(parsers, "get_parser", get_parser)
    late = worker.run_partition(_parse_task(tmp_path / "s", lease))
    assert ran[0].done == 3
    assert (late.done, late.skipped, late.rerun) == (0, 3, True)
    assert _parse_rows(tmp_path / "s") == (3, 3)


def test_lost_worker_sibling_partitions_of_one_build_are_not_mistaken_for_copies(tmp_path: Path, lease: str) -> None:
    """Another partition of the same build committed since planning: its keys are other keys,
    and a task never reads its siblings' segments as its own."""
    task = _parse_task(tmp_path / "s", lease)
    sibling = ParseTask(store=task.store, keys=("k4",), lease=lease, parser="spacy", parse="p", fingerprint=task.fingerprint,
                        texts=("Birds fly south.",), label="parse 2/2")
    assert worker.run_partition(sibling).done == 1
    result = worker.run_partition(task)
    assert (result.done, result.skipped, result.rerun) == (3, 0, False)
    assert _parse_rows(tmp_path / "s") == (4, 4)


def test_lost_worker_rerun_of_a_feature_task_commits_nothing(tmp_path: Path, lease: str) -> None:
    from prior.pipeline.features.sdoi import SdoiFeature

    worker.run_partition(_parse_task(tmp_path / "s", lease))
    feature = SdoiFeature()
    entry = make_entry(feature.name, feature.version, feature.params(), "p", feature.scope, feature.components,
                       layout=feature.layout)
    task = FeatureTask(store=StoreRef.of(str(tmp_path / "s")), keys=("k1", "k2", "k3"), lease=lease, feature=feature,
                       target=entry.target(), parse="p", label="feature sdoi 1/1")
    first, again = worker.run_partition(task), worker.run_partition(task)
    assert (first.done, again.done, again.skipped, again.rerun) == (3, 0, 3, True)
    store = open_store(tmp_path / "s", create=False)
    assert sum(s.rows for s in store.segments("feature")) == 3
    assert sorted(store.existing_keys(entry)) == ["k1", "k2", "k3"]


# ---------------------------------------------------------------- a real worker process killed
# Loaded by each `dask worker` (--preload): after a worker commits a parse segment it marks the
# commit (its pid and address in a file) and lingers before returning, so the test kills it
# between its commit and its result reaching the driver: the window in which Dask reruns a task
# that already committed.
PRELOAD = """
import os, time
from pathlib import Path

import prior.featurestore.segments as segments


def marked(write):
    def write_parses(self, *args, **kwargs):
        from distributed import get_worker

        segment = write(self, *args, **kwargs)
        (Path(os.environ["PRIOR_TEST_MARKS"]) / str(os.getpid())).write_text(get_worker().address)
        time.sleep(float(os.environ["PRIOR_TEST_LINGER"]))
        return segment

    write_parses.marked = True
    return write_parses


if not getattr(segments.SegmentStore.write_parses, "marked", False):  # dask may run a preload twice
    segments.SegmentStore.write_parses = marked(segments.SegmentStore.write_parses)
"""

BUILD = ["build", "--dataset", "sick", "--split", "test", "--limit", "40", "--features", "sdoi", "--parser", "spacy",
         "--partition-size", "20"]


class Cluster:
    """A `dask scheduler` and two `dask worker` processes without nannies (a killed worker stays dead)."""

    def __init__(self, root: Path) -> None:
        self.root, self.marks = root, root / "marks"
        self.marks.mkdir(parents=True)
        (root / "preload.py").write_text(PRELOAD)
        sched_file = root / "scheduler.json"
        self.procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                        "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.monotonic() + 120
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.address = json.loads(sched_file.read_text())["address"]
        env = dict(os.environ, PRIOR_TEST_MARKS=str(self.marks), PRIOR_TEST_LINGER="4",
                   PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
        self.workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", self.address,
                                          "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                          "--preload", str(root / "preload.py")],
                                         stdout=subprocess.DEVNULL, stderr=(root / f"worker-{i}.log").open("w"),
                                         env=env)
                        for i in range(2)]
        self.procs += self.workers
        from distributed import Client

        with Client(self.address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=180)

    def kill_first_to_commit(self) -> threading.Thread:
        """In the background: SIGKILL the first worker that commits a parse segment, while it lingers."""
        def watch() -> None:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                marks = list(self.marks.iterdir())
                if marks:
                    self.killed = marks[0].read_text()
                    os.kill(int(marks[0].name), signal.SIGKILL)
                    return
                time.sleep(0.02)

        self.killed = ""
        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        for p in self.workers:  # a worker left alone may wait long for its lost scheduler
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            p.wait(timeout=60)


def _counts(info: Any) -> dict[str, Any]:
    """What `prior store info` counts: rows per split, sentences per parse, items per entry."""
    return {"datasets": info.datasets, "parses": [(p["parse"], p["sentences"]) for p in info.parses],
            "entries": sorted((e["feature"], e["entry"], e["items"]) for e in info.entries)}


def _build_with_a_killed_worker(tmp_path: Path, store_args: list[str]) -> tuple[subprocess.CompletedProcess, str]:
    cluster = Cluster(tmp_path / "cluster")
    try:
        watcher = cluster.kill_first_to_commit()
        env = dict(os.environ, PRIOR_HOME=str(tmp_path / "home"), PRIOR_NO_PROGRESS="1")
        done = subprocess.run([sys.executable, "-m", "prior.cli.main", *BUILD, "--scheduler", cluster.address,
                               *store_args], capture_output=True, text=True, env=env, timeout=600)
        watcher.join(timeout=5)
        return done, cluster.killed
    finally:
        cluster.close()


def _check(done: subprocess.CompletedProcess, killed: str, store: Any, clean: Any) -> None:
    assert done.returncode == 0, done.stderr[-3000:]
    assert killed, "no worker committed a parse segment"
    info = store_info(store)
    assert _counts(info) == _counts(store_info(clean))
    assert sum(s.rows for s in store.segments("parses")) == info.parses[0]["sentences"]  # no row twice
    assert verify_store(store).ok
    lines = [line for line in done.stdout.splitlines() if line.startswith("lost 1 Dask worker(s)")]
    assert lines and killed in lines[0] and "partitions run again: parse " in lines[0], done.stdout


@pytest.mark.slow
def test_lost_worker_killed_mid_build_leaves_the_counts_of_a_clean_build(tmp_path: Path) -> None:
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    clean = tmp_path / "clean"
    build(BuildOptions(dataset="sick", splits=("test",), limit=40, features=("sdoi",), parser="spacy"),
          RunOptions(store=str(clean), workers=0, partition_size=20, progress=False))
    done, killed = _build_with_a_killed_worker(tmp_path, ["--store", str(tmp_path / "s")])
    _check(done, killed, open_store(tmp_path / "s", create=False), open_store(clean, create=False))


@pytest.mark.slow
def test_lost_worker_killed_mid_build_into_s3_leaves_the_counts_of_a_clean_build(tmp_path: Path,
                                                                                s3: Any) -> None:  # noqa: F811
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    clean = tmp_path / "clean"
    build(BuildOptions(dataset="sick", splits=("test",), limit=40, features=("sdoi",), parser="spacy"),
          RunOptions(store=str(clean), workers=0, partition_size=20, progress=False))
    url = f"s3://{s3.bucket()}/store"
    done, killed = _build_with_a_killed_worker(tmp_path, ["--store", url, *s3.cli_options()])
    _check(done, killed, open_store(StoreRef(url, s3.options()), create=False), open_store(clean, create=False))

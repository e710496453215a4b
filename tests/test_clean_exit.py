"""A clean exit (issue 34): ``prior store verify`` exited 134 now and then under CPU load after
printing "ok" ("terminate called without an active exception").

The cause: a Parquet file the store checks is decoded from its checked bytes, and
``pa.BufferReader(bytes)`` wraps the Python object; a threaded read's worker thread may drop the
last reference to it after the main thread has moved on. Dropping it takes the GIL; if that
happens while the interpreter finalizes, CPython ends the thread with ``pthread_exit`` inside
a C++ destructor, and the process aborts. The store now decodes from memory Arrow owns
(`prior.featurestore.segment_files.arrow_owned`) and reads a Python file object in the calling
thread, so no Arrow thread ever holds a Python object.

The race needs a worker thread descheduled at the wrong moment, so running the command is a
check, not a proof: the fast test runs it a few times under load, the slow one 50 times; the
first test pins the cause."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import prior.featurestore.segment_files as segment_files
from prior.featurestore import open_store
from prior.featurestore.checked import forget
from prior.featurestore.upgrade import upgrade_store

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "store-v1"


def test_checked_parquet_bytes_are_decoded_from_memory_arrow_owns(tmp_path: Path, monkeypatch) -> None:
    data = bytes(range(256)) * 64
    before = sys.getrefcount(data)
    wrapped = pa.BufferReader(data)  # what the store did: a buffer holding the Python object
    assert sys.getrefcount(data) > before
    del wrapped
    owned = segment_files.arrow_owned(data)
    assert sys.getrefcount(data) == before and owned.to_pybytes() == data  # a copy, no reference kept
    location = tmp_path / "store"
    shutil.copytree(FIXTURE, location)
    upgrade_store(str(location))
    sources: list[object] = []
    owned: list[int] = []
    real_file, real_owned = segment_files.pq.ParquetFile, segment_files.arrow_owned

    def spy(source: object, *args: object, **kwargs: object) -> object:
        sources.append(source)
        return real_file(source, *args, **kwargs)

    monkeypatch.setattr(segment_files.pq, "ParquetFile", spy)
    monkeypatch.setattr(segment_files, "arrow_owned", lambda b: owned.append(len(b)) or real_owned(b))
    forget()  # every file is read (and checked) afresh
    assert open_store(location, create=False).frame("sdoi", dataset="rte", split="dev").height == 4
    readers = [s for s in sources if isinstance(s, pa.BufferReader)]
    assert readers and len(owned) == len(readers)  # every in-memory read decodes Arrow's copy


@pytest.fixture
def loaded() -> Iterator[None]:
    """Two processes that keep both cores busy while the test runs."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for p in burners:
            p.kill()
            p.wait()


def _verify_under_load(tmp_path: Path, runs: int) -> None:
    location = tmp_path / "store"
    shutil.copytree(FIXTURE, location)
    upgrade_store(str(location))
    env = {**os.environ, "PRIOR_HOME": str(tmp_path / "home"), "PRIOR_NO_PROGRESS": "1", "PYTHONPATH": str(REPO)}
    codes = []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-m", "prior.cli.main", "store", "verify", "--store", str(location)],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.stdout.strip().endswith("ok"), done.stdout + done.stderr
        assert "terminate called" not in done.stderr, done.stderr
        codes.append(done.returncode)
    assert codes == [0] * runs


def test_verify_exits_cleanly_under_load(tmp_path: Path, loaded: None) -> None:
    _verify_under_load(tmp_path, 3)


@pytest.mark.slow
def test_verify_exits_cleanly_50_times_under_load(tmp_path: Path, loaded: None) -> None:
    _verify_under_load(tmp_path, 50)

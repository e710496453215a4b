"""`prior store compact`: merged segments give the same frames from fewer files, a kill at any
of its writes leaves a store that verifies with the same frames (and the next compaction
finishes it), reads during a compaction are right, and gc keeps its lease rules."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import prior.featurestore.compact as compact_module
from prior.cli.main import app
from prior.featurestore import StoreError, open_store
from prior.featurestore.compact import compact_store, plan
from prior.featurestore.lease import Lease
from prior.featurestore.maintenance import gc_store, verify_store
from prior.pipeline.build import build
from tests.test_kill_commits import _opts, frames

FEATURES = ("sdoi", "wup")


class _Killed(BaseException):
    """Not an ``Exception``: nothing catches it, as nothing catches a SIGKILL."""


@pytest.fixture(scope="module")
def small_builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store made by three builds of growing ``--limit``: many small segments."""
    location = tmp_path_factory.mktemp("compact") / "store"
    for limit in (2, 4, 6):
        build(*_opts(location, limit=limit, features=FEATURES, partition_size=3))
    return location


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(src, dst)
    return dst


def _files(location: Path) -> int:
    return sum(len(s.files) for s in open_store(location, create=False).segments())


def test_compact_same_frames_fewer_files(small_builds: Path, tmp_path: Path) -> None:
    location = _copy(small_builds, tmp_path)
    before, files, segments = frames(location, FEATURES), _files(location), len(open_store(location).segments())
    report = compact_store(open_store(location))
    assert report.committed and len(report.uncommitted) > len(report.committed)
    after = open_store(location, create=False)
    assert len(after.segments()) == segments - len(report.uncommitted) + len(report.committed) < segments / 3
    assert _files(location) < files / 3
    assert frames(location, FEATURES) == before
    assert verify_store(after).ok
    # the replaced folders are uncommitted leftovers gc removes; then a rebuild is a no-op
    assert len(verify_store(after).leftovers) == len(report.uncommitted)
    gc_store(after)
    assert not verify_store(open_store(location)).leftovers
    again = build(*_opts(location, limit=6, features=FEATURES, partition_size=3))
    assert all(s.computed == 0 for s in again.stages)
    assert frames(location, FEATURES) == before
    assert not plan(open_store(location))  # nothing left to merge
    # a larger build after compaction adds only the new rows: the same frames as a clean build
    grown = build(*_opts(location, limit=8, features=FEATURES, partition_size=3))
    assert sum(s.new_rows for s in grown.splits) == 2 * 3
    clean = tmp_path / "clean"
    build(*_opts(clean, limit=8, features=FEATURES, partition_size=3))
    assert frames(location, FEATURES) == frames(clean, FEATURES)


def test_compact_dry_run_and_selection(small_builds: Path, tmp_path: Path) -> None:
    location = _copy(small_builds, tmp_path)
    names = sorted((tmp_path / "store" / "catalog").iterdir())
    merges = compact_store(open_store(location), kinds=("feature",), feature="sdoi", dry_run=True).merges
    assert merges and {m.kind for m in merges} == {"feature"}
    assert sorted((tmp_path / "store" / "catalog").iterdir()) == names  # nothing written
    report = compact_store(open_store(location), kinds=("feature",), feature="sdoi")
    assert {s.target["name"] for s in open_store(location).segments("feature")
            if s.id in report.committed} == {"sdoi"}
    assert len(open_store(location).segments("pairs")) == len(open_store(small_builds).segments("pairs"))
    # a small max-rows leaves segments at or above it alone
    assert not plan(open_store(location), max_rows=2)


def _kill_at(n: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the compaction die at its n-th write (a file of a merged segment, its commit, the
    removal of a replaced record); its lease is left behind, as a kill leaves it."""
    events: list[str] = []

    def dying(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            events.append(name)
            if len(events) == n:
                raise _Killed
            return real(*args, **kwargs)
        return call

    for name in ("commit_segment", "uncommit", "write_parquet", "write_flat"):
        monkeypatch.setattr(compact_module, name, dying(name, getattr(compact_module, name)))
    monkeypatch.setattr(Lease, "release", lambda self: self._stop.set())
    return events


def _kill_points(events: list[str], every: bool) -> list[int]:
    """Kill points (1-based): every write; without ``every``, every file write and commit
    and the first record removal after each commit (the others leave the same kind of state)."""
    return [n for n, name in enumerate(events, 1)
            if every or name != "uncommit" or events[n - 2] != "uncommit"]


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_compact_killed_at_every_write(small_builds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       every: bool) -> None:
    clean = frames(small_builds, FEATURES)
    with monkeypatch.context() as m:
        events = _kill_at(0, m)
        compact_store(open_store(_copy(small_builds, tmp_path / "count")))
    kinds = set(events)
    assert kinds == {"commit_segment", "uncommit", "write_parquet", "write_flat"}
    for n in _kill_points(events, every):
        location = _copy(small_builds, tmp_path / f"kill{n}")
        with monkeypatch.context() as m:
            _kill_at(n, m)
            with pytest.raises(_Killed):
                compact_store(open_store(location))
        report = verify_store(open_store(location, create=False))
        assert report.ok, (n, events[n - 1], report.damaged)
        assert frames(location, FEATURES) == clean, (n, events[n - 1])
        compact_store(open_store(location))  # finishes what the killed one left
        assert frames(location, FEATURES) == clean
        assert verify_store(open_store(location)).ok
        assert not plan(open_store(location))
        assert not any(s.id in {r for x in open_store(location).segments() for r in x.meta.get("replaces", ())}
                       for s in open_store(location).segments())


def test_compact_reads_during_compaction(small_builds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that listed the catalog before the compaction, and readers at each of its
    steps (in another thread), read the frames of the store before it."""
    location = _copy(small_builds, tmp_path)
    clean = frames(location, FEATURES)
    early = open_store(location, create=False)
    early.segments()  # this reader's catalog is the one before the compaction
    seen: list[bool] = []
    calls: list[str] = []
    uncommit = compact_module.uncommit

    def read_then_uncommit(store: Any, sid: str) -> None:
        calls.append(sid)
        if len(calls) % 4 != 1:
            uncommit(store, sid)
            return
        reader = threading.Thread(target=lambda: seen.append(frames(location, FEATURES) == clean))
        reader.start()
        reader.join()
        uncommit(store, sid)

    monkeypatch.setattr(compact_module, "uncommit", read_then_uncommit)
    compact_store(open_store(location))
    assert seen and all(seen)
    for feature in FEATURES:
        df = early.frame(feature, dataset="rte", split="train")
        assert df.drop([c for c in df.columns if c.endswith("_key") or c.startswith("key_")]).to_dicts() \
            == clean[feature, "train"]


def test_compact_holds_a_lease_gc_refuses(small_builds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = _copy(small_builds, tmp_path)
    refused: list[str] = []
    commit = compact_module.commit_segment

    def gc_then_commit(*args: Any, **kwargs: Any) -> Any:
        with pytest.raises(StoreError, match="prior store compact") as exc:
            gc_store(open_store(location))
        refused.append(str(exc.value))
        forced = gc_store(open_store(location), force=True)  # keeps the folder being written
        assert not any(args[1] in rel for rel in forced.removed)
        return commit(*args, **kwargs)

    monkeypatch.setattr(compact_module, "commit_segment", gc_then_commit)
    compact_store(open_store(location))
    assert refused
    assert verify_store(open_store(location)).ok


def test_compact_cli(small_builds: Path, tmp_path: Path) -> None:
    location = _copy(small_builds, tmp_path)
    runner = CliRunner()
    dry = runner.invoke(app, ["store", "compact", "--store", str(location), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "would merge" in dry.output and "(dry run)" in dry.output
    done = runner.invoke(app, ["store", "compact", "--store", str(location), "--table", "pairs"])
    assert done.exit_code == 0, done.output
    assert "merged" in done.output and "prior store gc" in done.output
    assert len(open_store(location).segments("pairs")) == 3
    bad = runner.invoke(app, ["store", "compact", "--store", str(location), "--table", "nope"])
    assert bad.exit_code != 0


def test_compact_beside_a_build(small_builds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that adds rows while a compaction runs: both finish, and the store verifies
    with a clean build's frames (the build's new segments are left for a later compaction)."""
    location = _copy(small_builds, tmp_path)
    commit = compact_module.commit_segment
    built: list[bool] = []

    def build_then_commit(*args: Any, **kwargs: Any) -> Any:
        if not built:
            built.append(True)
            build(*_opts(location, limit=8, features=FEATURES, partition_size=3))
        return commit(*args, **kwargs)

    monkeypatch.setattr(compact_module, "commit_segment", build_then_commit)
    compact_store(open_store(location))
    clean = tmp_path / "clean"
    build(*_opts(clean, limit=8, features=FEATURES, partition_size=3))
    assert built and verify_store(open_store(location)).ok
    assert frames(location, FEATURES) == frames(clean, FEATURES)
    compact_store(open_store(location))
    assert frames(location, FEATURES) == frames(clean, FEATURES)


def test_compact_in_memory_store(tmp_path: Path) -> None:
    """An fsspec store (memory://): the same frames after compaction."""
    location = f"memory://compact-{tmp_path.name}"
    for limit in (2, 4):
        build(*_opts(location, limit=limit, features=("sdoi",), partition_size=3))  # type: ignore[arg-type]
    store = open_store(location, create=False)
    before = {split: store.frame("sdoi", dataset="rte", split=split).to_dicts() for split in ("dev", "train")}
    report = compact_store(store)
    assert report.committed
    after = open_store(location, create=False)
    assert {split: after.frame("sdoi", dataset="rte", split=split).to_dicts() for split in ("dev", "train")} == before
    assert verify_store(after).ok


_SUBPROCESS = """
import os, sys
import prior.featurestore.compact as compact_module
from prior.featurestore import open_store
n, events = int(sys.argv[2]), []
def dying(real):
    def call(*args, **kwargs):
        events.append(1)
        if len(events) == n:
            os._exit(137)
        return real(*args, **kwargs)
    return call
for name in ("commit_segment", "uncommit", "write_parquet", "write_flat"):
    setattr(compact_module, name, dying(getattr(compact_module, name)))
compact_module.compact_store(open_store(sys.argv[1], create=False))
"""


@pytest.mark.slow
def test_compact_hard_killed_in_a_subprocess(small_builds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compaction process that exits hard (as SIGKILL: no clean-up, its lease left live) at
    steps of each kind: the store verifies with the same frames, and the next compaction ends
    with the store a clean one makes."""
    clean = frames(small_builds, FEATURES)
    with monkeypatch.context() as m:
        events = _kill_at(0, m)
        compact_store(open_store(_copy(small_builds, tmp_path / "count")))
    for n in _kill_points(events, every=False):
        location = _copy(small_builds, tmp_path / f"kill{n}")
        proc = subprocess.run([sys.executable, "-c", _SUBPROCESS, str(location), str(n)], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 137, proc.stderr[-2000:]
        assert verify_store(open_store(location, create=False)).ok
        assert frames(location, FEATURES) == clean, (n, events[n - 1])
        compact_store(open_store(location))
        assert frames(location, FEATURES) == clean
        assert not plan(open_store(location))

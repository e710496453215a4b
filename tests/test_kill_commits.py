"""A build killed at any segment commit: the rerun (without ``--replace``) completes and its
store equals a clean build's.

A three-split build commits, in order, each split's sentences then its pairs, then parse
segments, then feature segments. The kill is simulated right after the Nth commit, for every
N: in this process by an exception no build code catches (fast), and in a subprocess that
exits hard (``os._exit``, as SIGKILL would: no clean-up runs; slow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import prior.featurestore.segments as segments_module
from prior.featurestore import open_store
from prior.featurestore.maintenance import verify_store
from prior.pipeline.build import build
from prior.pipeline.build_options import BuildOptions, RunOptions

SPLITS = ("dev", "test", "train")


class _Killed(BaseException):
    """Not an ``Exception``: nothing in the build catches it, as nothing catches a SIGKILL."""


def _opts(store: Path, *, partition_size: int = 6, **kw: Any) -> tuple[BuildOptions, RunOptions]:
    what: dict[str, Any] = dict(dataset="rte", splits=SPLITS, features=("sdoi",), parser="spacy", limit=4) | kw
    return BuildOptions(**what), RunOptions(store=str(store), workers=0, progress=False, partition_size=partition_size)


def frames(location: Path, features: tuple[str, ...] = ("sdoi",)) -> dict[tuple[str, str], list[dict]]:
    """Every split's frame of every feature, keys dropped (rows, texts, parses, values)."""
    store = open_store(location, create=False)
    out = {}
    for feature in features:
        for split in SPLITS:
            df = store.frame(feature, dataset="rte", split=split)
            out[feature, split] = df.drop([c for c in df.columns if c.endswith("_key") or c.startswith("key_")]).to_dicts()
    return out


def _commit_kinds(location: Path, **kw: Any) -> list[str]:
    """The kinds of the segments a clean build commits, in order."""
    kinds: list[str] = []
    commit = segments_module.commit_segment

    def spy(*args: Any, **kwargs: Any) -> Any:
        segment = commit(*args, **kwargs)
        kinds.append(segment.kind)
        return segment

    segments_module.commit_segment = spy  # type: ignore[assignment]
    try:
        build(*_opts(location, **kw))
    finally:
        segments_module.commit_segment = commit
    return kinds


def _killed_after(n: int, location: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> None:
    commit = segments_module.commit_segment
    done = [0]

    def commit_then_die(*args: Any, **kwargs: Any) -> Any:
        segment = commit(*args, **kwargs)
        done[0] += 1
        if done[0] == n:
            raise _Killed
        return segment

    monkeypatch.setattr(segments_module, "commit_segment", commit_then_die)
    with pytest.raises(_Killed):
        build(*_opts(location, **kw))
    monkeypatch.undo()


def test_kill_after_every_commit_of_a_three_split_build_then_rerun_equals_clean(tmp_path, monkeypatch):
    kinds = _commit_kinds(tmp_path / "clean")
    # each split's sentences are committed right before its pairs
    assert kinds[:6] == ["sentences", "pairs"] * 3
    assert {"parses", "feature"} <= set(kinds[6:])
    clean = frames(tmp_path / "clean")
    for n in range(1, len(kinds)):
        location = tmp_path / f"killed-{n}"
        _killed_after(n, location, monkeypatch)
        build(*_opts(location))  # no --replace
        assert frames(location) == clean, f"killed after commit {n} ({kinds[n - 1]})"
        assert verify_store(open_store(location, create=False)).ok


_SUBPROCESS = """
import os, sys
import prior.featurestore.segments as segments_module
from prior.pipeline.build import build
from prior.pipeline.build_options import BuildOptions, RunOptions
commit, n, done = segments_module.commit_segment, int(sys.argv[2]), [0]
def commit_then_die(*args, **kwargs):
    segment = commit(*args, **kwargs)
    done[0] += 1
    if done[0] == n:
        os._exit(137)
    return segment
segments_module.commit_segment = commit_then_die
build(BuildOptions(dataset="rte", splits=("dev", "test", "train"), features=("sdoi", "wup"), parser="spacy", limit=8),
      RunOptions(store=sys.argv[1], workers=0, progress=False, partition_size=4))
"""


@pytest.mark.slow
def test_hard_kill_after_every_commit_in_a_subprocess_then_rerun_equals_clean(tmp_path):
    kw = dict(features=("sdoi", "wup"), limit=8, partition_size=4)
    kinds = _commit_kinds(tmp_path / "clean", **kw)
    clean = frames(tmp_path / "clean", ("sdoi", "wup"))
    env = dict(os.environ, PRIOR_NO_PROGRESS="1")
    for n in range(1, len(kinds)):
        location = tmp_path / f"killed-{n}"
        proc = subprocess.run([sys.executable, "-c", _SUBPROCESS, str(location), str(n)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 137, proc.stderr[-2000:]
        build(*_opts(location, **kw))
        assert frames(location, ("sdoi", "wup")) == clean, f"killed after commit {n} ({kinds[n - 1]})"
        assert verify_store(open_store(location, create=False)).ok

"""The local workers a build starts: glibc's malloc defaults kept (Dask's nanny would switch off
its adaptive mmap threshold), and frozen before they are closed (no final collection over
spaCy's and torch's heaps). Both measured in bench/RESULTS.md ("Start-up")."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from prior.pipeline.build_options import RunOptions
from prior.pipeline.runner import Runner


def _malloc_trim() -> str | None:
    return os.environ.get("MALLOC_TRIM_THRESHOLD_")


def test_local_workers_keep_the_malloc_defaults_and_are_frozen_before_closing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    runner = Runner(RunOptions(workers=1))
    client = runner.start()
    assert client is not None
    assert set(client.run(_malloc_trim).values()) == {None}
    ran: list[object] = []
    real = client.run
    monkeypatch.setattr(client, "run", lambda fn, *a, **kw: (ran.append(fn), real(fn, *a, **kw))[1])
    runner.close()
    assert ran == [gc.freeze]


def test_an_external_clusters_workers_are_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from distributed import Client, LocalCluster

    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster:
        runner = Runner(RunOptions(workers=1, scheduler=cluster.scheduler_address))
        client = runner.start()
        assert client is not None
        ran: list[object] = []
        real = client.run
        monkeypatch.setattr(client, "run", lambda fn, *a, **kw: (ran.append(fn), real(fn, *a, **kw))[1])
        runner.close()
        assert gc.freeze not in ran
        with Client(cluster) as other:
            assert len(other.scheduler_info()["workers"]) == 1

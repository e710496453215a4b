"""The benchmark scripts run: each on a tiny input, end to end as the lead runs it, so a change
to the build's API cannot leave a script broken until someone times it. The numbers are not
looked at (timings under test load mean nothing); only that the script ends and writes its result."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
TINY_BUILD = "--split trial --limit 3 --parser spacy --features sdoi --workers 0"


def run_script(name: str, *args: object, tmp_path: Path, timeout: int = 600) -> str:
    env = dict(os.environ, PRIOR_HOME=str(tmp_path / "home"), PRIOR_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(BENCH / name), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_bench_startup_pairs_a_checkout_with_this_one(tmp_path: Path) -> None:
    """bench/startup.py with this checkout on both sides (what the lead runs with the commit that
    still had the start-up tricks as ``--before``)."""
    out = run_script("startup.py", "--before", REPO, "--only", "before:none", "--rounds", "1", "--what", "help,noop",
                     "--build-args", TINY_BUILD, "--out", tmp_path / "out", tmp_path=tmp_path)
    (result,) = (tmp_path / "out").glob("startup-*.json")
    rows = {r["configuration"]: r for r in json.loads(result.read_text())["rows"]}
    assert set(rows) == {"after", "before:none"} and rows["after"]["noop"]["paired_ratio_to_after"] == 1.0
    assert "before:none" in out


def test_bench_parse_pair_runs_this_checkout_twice(tmp_path: Path) -> None:
    """bench/parse_pair.py with this checkout on both sides parses the same trees on both."""
    out = run_script("parse_pair.py", "--data-dir", REPO / "data", "--limit", 12, "--rounds", 1,
                     "--out", tmp_path / "out", tmp_path=tmp_path)
    (result,) = (tmp_path / "out").glob("parse-pair-*.json")
    row = json.loads(result.read_text())
    assert row["sentences"] == 12 and row["same_trees"] == 12 and set(row["summary"]) == {"before", "after"}
    assert "same trees: 12 of 12" in out


@pytest.mark.slow
def test_bench_build_runs(tmp_path: Path) -> None:
    run_script("build.py", "--datasets", "snli", "--pairs", 4, "--workers", 0, "--features", "sdoi",
               "--parsers", "spacy", "--out", tmp_path / "out", tmp_path=tmp_path)
    assert list((tmp_path / "out").glob("build-*.json"))


@pytest.mark.slow
def test_bench_scale_runs(tmp_path: Path) -> None:
    run_script("scale.py", "--sizes", 30, "--workers", 1, "--parser", "spacy", "--data-dir", REPO / "data",
               "--work", tmp_path / "work", tmp_path=tmp_path)
    assert list((tmp_path / "work").glob("scale-*.jsonl"))


@pytest.mark.slow
def test_bench_build_all_runs(tmp_path: Path) -> None:
    run_script("build_all.py", "--data-dir", REPO / "data", "--features", "sdoi", "--parser", "spacy",
               "--workers", 1, "--limit", 3, "--subset-pairs", 20, "--ceiling-repeat", 0, "--out", tmp_path / "out",
               tmp_path=tmp_path)
    assert list((tmp_path / "out").glob("*.json"))


@pytest.mark.slow
def test_bench_scaling_worker_start_up_runs() -> None:
    startup = load("scaling").worker_startup(1, "spacy", 1)
    assert set(startup) == {"cluster_s", "parser_load_s", "total_s"}


@pytest.mark.slow
def test_bench_features_build_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    features = load("features")
    features.PARSER = "spacy"
    report = features._build(tmp_path / "store", ("sdoi",), 0, 4)
    assert sum(s.pairs for s in report.splits) == 4


@pytest.mark.slow
def test_bench_s3_requests_runs(tmp_path: Path) -> None:
    pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e .[test])")
    out = run_script("s3_requests.py", "--limit", 4, "--partition-size", 2, "--features", "sdoi", tmp_path=tmp_path)
    assert "fresh build: " in out and "no-op rebuild: " in out

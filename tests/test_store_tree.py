"""No traceback from a layout (issue 34): folders where files belong and files where folders
belong, anywhere in the store, are reported by ``verify``, removed or refused in one line by
``gc``, and refused in one line by ``build`` (`prior.featurestore.tree`); and the misleading cases
around them: a lease whose process is gone frees the store at once, ``export --out`` inside the
store is refused, ``compact --feature`` of a feature the store lacks is an error."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store
from prior.featurestore.catalog import new_segment_id
from prior.featurestore.maintenance import verify_store

runner = CliRunner()
BUILD = ["build", "--dataset", "rte", "--split", "dev", "--features", "sdoi", "--parser", "spacy", "--limit", "3",
         "--workers", "0"]


def invoke(*args: object) -> tuple[int, str]:
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def one_line(*args: object) -> str:
    code, output = invoke(*args)
    assert code == 1 and output.startswith("error:") and len(output.strip().splitlines()) == 1, output
    return output


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        code, output = invoke(*BUILD, "--store", root / "store")
        assert code == 0, output
    return root / "store"


@pytest.fixture
def store(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")
    shutil.copytree(built, tmp_path / "store")
    (tmp_path / "store" / "leases").mkdir(exist_ok=True)
    return tmp_path / "store"


def _file_for_folder(path: Path) -> None:
    shutil.rmtree(path)
    path.write_text("not a folder")


@pytest.mark.parametrize("where", ["catalog", "segments", "STORE.json"])
def test_a_store_folder_of_the_wrong_kind_is_one_line_everywhere_and_nothing_removes_it(store, where):
    path = store / where
    if path.is_dir():
        _file_for_folder(path)
    else:
        path.unlink()
        path.mkdir()
    report = verify_store(open_store(store, create=False)) if where != "STORE.json" else None
    if report is not None:
        assert not report.ok and any(where in line for line in report.misplaced)
    code, output = invoke("store", "verify", "--store", store)
    assert code == 1 and where in output, output
    for args in (["store", "gc"], ["store", "gc", "--drop-damaged"], BUILD):
        assert where in one_line(*args, "--store", store)
    assert (store / where).exists()  # nothing removed it


def test_a_lease_path_that_is_a_folder_is_reported_removed_by_gc_and_refused_by_build(store):
    lease = store / "leases" / f"{new_segment_id()}.json"
    lease.mkdir()
    code, output = invoke("store", "verify", "--store", store)
    assert code == 1 and "is a folder where a lease file belongs" in output and "`prior store gc` removes it" in output
    assert "is a folder where a lease file belongs" in one_line(*BUILD, "--store", store)
    code, output = invoke("store", "gc", "--store", store)
    assert code == 0 and not lease.exists(), output
    code, output = invoke("store", "verify", "--store", store)
    assert code == 0 and output.strip().endswith("ok"), output
    code, output = invoke(*BUILD, "--store", store)
    assert code == 0, output


def test_leases_that_is_a_file_is_removed_by_gc(store):
    _file_for_folder(store / "leases")
    code, output = invoke("store", "verify", "--store", store)
    assert code == 1 and "leases in the store" in output and "is a file where a folder belongs" in output
    assert "leases" in one_line(*BUILD, "--store", store)
    code, output = invoke("store", "gc", "--store", store)
    assert code == 0 and (store / "leases").is_dir(), output
    assert verify_store(open_store(store, create=False)).ok


def test_a_committed_file_that_is_a_folder_is_damage_dropped_by_gc(store):
    record = next(p for p in sorted((store / "catalog").glob("*.json")) if json.loads(p.read_text())["kind"] == "pairs")
    path = store / "segments" / record.stem / "pairs.parquet"
    path.unlink()
    path.mkdir()
    report = verify_store(open_store(store, create=False))
    assert any("is a folder where a file belongs" in line for line in report.damaged)
    assert "cannot be read as a file" in one_line("store", "frame", "--feature", "sdoi", "--dataset", "rte",
                                                 "--split", "dev", "--store", store)
    code, output = invoke("store", "gc", "--drop-damaged", "--store", store)
    assert code == 0 and "rebuild what was dropped with: prior build --dataset rte" in output, output


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_a_lease_of_a_process_that_is_gone_frees_the_store_at_once(store):
    lease_id = new_segment_id()
    now = time.time()
    (store / "leases" / f"{lease_id}.json").write_text(json.dumps({
        "id": lease_id, "owner": "prior build rte", "host": socket.gethostname(), "pid": _dead_pid(),
        "started": now, "renewed": now, "expires": now + 120, "seconds": 120}))
    (store / "leases" / lease_id).mkdir()
    code, output = invoke("store", "verify", "--store", store)
    assert code == 0 and "build in progress" not in output and "its process is gone" in output, output
    code, output = invoke("store", "gc", "--store", store)  # no --force needed
    assert code == 0 and "build in progress" not in output, output
    assert not any((store / "leases").iterdir())


def test_a_lease_of_a_live_process_still_holds_the_store(store):
    lease_id = new_segment_id()
    now = time.time()
    (store / "leases" / f"{lease_id}.json").write_text(json.dumps({
        "id": lease_id, "owner": "prior build rte", "host": socket.gethostname(), "pid": os.getpid(),
        "started": now, "renewed": now, "expires": now + 120, "seconds": 120}))
    assert "a build holds the store" in one_line("store", "gc", "--store", store)


@pytest.mark.parametrize("inside", ["", "segments", "catalog", "segments/new"])
def test_export_into_the_store_is_refused_and_writes_nothing(store, inside):
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    out = store / inside if inside else store
    assert "is inside the store" in one_line("store", "export", "--feature", "sdoi", "--dataset", "rte",
                                             "--out", out, "--store", store)
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_compact_of_a_feature_the_store_lacks_is_an_error(store):
    output = one_line("store", "compact", "--feature", "nope", "--store", store)
    assert "holds no entry of feature 'nope'" in output and "sdoi" in output
    assert "holds no entry of feature 'nope'" in one_line("store", "compact", "--feature", "nope", "--dry-run",
                                                         "--store", store)

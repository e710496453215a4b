"""The store as an adversarial user meets it: crafted catalog records and links that try to name
paths outside the store, a flipped byte in every kind of file, gc racing a build. Nothing
outside the store may be read, written or deleted (watched with an audit hook on a sentinel
folder), damage is a `StoreError` naming what to do (one line on the command line), and a
store that gc raced equals one built in peace."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import StoreError, checked, open_store
from prior.featurestore.catalog import CATALOG, record_checksum
from prior.featurestore.maintenance import gc_store, verify_store
from prior.pipeline.build import build
from tests.test_build import _frame_rows, _opts
from tests.test_store import toy  # noqa: F401 - fixture: a store with pairs, parses, wup and sdoi

runner = CliRunner()

# ---------------------------------------------------------------- watching the outside
_WATCHED: list[str] = []
_TOUCHED: list[tuple[str, str]] = []
_EVENTS = {"open", "os.listdir", "os.scandir", "os.remove", "os.rmdir", "shutil.rmtree", "os.rename",
           "os.replace", "os.mkdir", "os.truncate", "os.chmod", "os.symlink", "os.link", "os.utime"}


def _audit(event: str, args: tuple) -> None:
    if not _WATCHED or event not in _EVENTS:
        return
    try:
        for arg in args[:2]:
            if isinstance(arg, (str, bytes, os.PathLike)):
                path = os.path.abspath(os.fsdecode(arg))
                if any(path == w or path.startswith(w + os.sep) for w in _WATCHED):
                    _TOUCHED.append((event, path))
    except Exception:  # noqa: BLE001 - an audit hook must never raise
        pass


sys.addaudithook(_audit)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def outside(tmp_path, toy):  # noqa: F811
    """A folder beside the store holding perfect copies of its segment folders, catalog records
    and STORE.json (a followed path would find valid data), watched for any access."""
    store = toy[0]
    root = tmp_path / "outside"
    shutil.copytree(Path(store.location) / "segments", root / "segments")
    shutil.copytree(Path(store.location) / CATALOG, root / "catalog")
    shutil.copy(Path(store.location) / "STORE.json", root / "STORE.json")
    (root / "leases").mkdir()
    before = _snapshot(root)
    _TOUCHED.clear()
    _WATCHED.append(str(root))
    yield root
    _WATCHED.remove(str(root))
    assert _TOUCHED == [], f"the store touched files outside it: {_TOUCHED[:5]}"
    assert _snapshot(root) == before


def _edit_record(store, kind: str, change) -> tuple[str, dict]:
    """Rewrite the first ``kind`` record through ``change(raw)``, its checksum recomputed (an
    attacker can); returns its file name and the record as it was."""
    seg = store.segments(kind)[0]
    path = Path(store.location) / CATALOG / f"{seg.id}.json"
    raw = json.loads(path.read_text())
    original = json.loads(json.dumps(raw))
    change(raw)
    raw["checksum"] = record_checksum(raw)
    path.write_text(json.dumps(raw))
    return path.name, original


def _assert_rejected(store, record: str, outside: Path, *, dataset: str = "toy") -> None:
    location = store.location
    checked.forget()
    with pytest.raises(StoreError, match=f"catalog record catalog/{record} is damaged"):
        open_store(location).segments()
    with pytest.raises(StoreError, match=record):
        open_store(location).frame("wup", dataset=dataset, split="test")
    report = verify_store(open_store(location))
    assert not report.ok and any(record in line for line in report.damaged)
    for args in (["store", "verify"], ["store", "frame", "--feature", "wup", "--dataset", dataset]):
        result = runner.invoke(app, [*args, "--store", location])
        assert result.exit_code == 1 and "Traceback" not in result.output and record in result.output
    removed = gc_store(open_store(location), drop_damaged=True).removed
    assert f"{CATALOG}/{record}" in removed and all(not r.startswith("..") for r in removed)
    assert verify_store(open_store(location)).ok


def _outside_folder(outside: Path, store, kind: str) -> Path:
    return outside / "segments" / store.segments(kind)[0].id


@pytest.mark.parametrize("how", ["relative", "absolute", "separator", "nul"])
def test_record_with_a_crafted_segment_id_is_rejected(toy, outside, how):  # noqa: F811
    store = toy[0]
    target = _outside_folder(outside, store, "feature")
    bad = {"relative": os.path.relpath(target, Path(store.location) / "segments"), "absolute": str(target),
           "separator": "00000000000000000001-aaaaaaaaaaaa/x", "nul": "00000000000000000001-aaaaaaaaaaa\x00"}[how]
    record, _ = _edit_record(store, "feature", lambda raw: raw.update(id=bad))
    _assert_rejected(store, record, outside)


@pytest.mark.parametrize("name", ["../../../outside/segments/x/index.parquet", "/etc/passwd", "a\x00b", ".hidden"])
def test_record_with_a_crafted_file_name_is_rejected(toy, outside, name):  # noqa: F811
    store = toy[0]
    record, _ = _edit_record(store, "feature", lambda raw: raw["files"].update({name: {"size": 1, "blake2b": "0" * 32}}))
    _assert_rejected(store, record, outside)


@pytest.mark.parametrize(("field", "value"), [("dataset", "x/../../../outside"), ("dataset", ".."),
                                              ("split", "te\x00st"), ("split", "/tmp")])
def test_pairs_record_with_a_crafted_name_is_rejected(toy, outside, field, value):  # noqa: F811
    store = toy[0]
    record, _ = _edit_record(store, "pairs", lambda raw: raw["target"].update({field: value}))
    _assert_rejected(store, record, outside, dataset=value if field == "dataset" else "toy")


def test_feature_record_with_a_crafted_component_is_rejected(toy, outside):  # noqa: F811
    store = toy[0]
    record, _ = _edit_record(store, "feature", lambda raw: raw["target"].update(components=["../../../outside"]))
    _assert_rejected(store, record, outside)


def test_train_never_writes_outside_runs_whatever_the_dataset_name(toy, outside, tmp_path, monkeypatch):  # noqa: F811
    store = toy[0]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    evil = "x/../../outside/evil"
    result = runner.invoke(app, ["train", "bert-mini", "--dataset", evil, "--store", store.location])
    assert result.exit_code == 1 and "dataset name" in result.output and "Traceback" not in result.output
    _edit_record(store, "pairs", lambda raw: raw["target"].update(dataset=evil))
    result = runner.invoke(app, ["train", "bert-mini", "--dataset", "toy", "--store", store.location,
                                 "--output", str(work / "runs" / "ok")])
    assert result.exit_code == 1 and "is damaged" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "outside" / "evil").exists() and not list(work.glob("runs/*/*"))


def test_segment_folder_linked_outside_is_never_followed(toy, outside):  # noqa: F811
    store = toy[0]
    seg = store.segments("feature")[0]
    folder = Path(store.location) / seg.folder
    shutil.rmtree(folder)
    folder.symlink_to(outside / "segments" / seg.id)  # the copy outside matches the record exactly
    _TOUCHED.clear()  # making the link is the test's doing; from here on, only the store acts
    checked.forget()
    with pytest.raises(StoreError, match="reached through a link"):
        open_store(store.location).frame("wup", dataset="toy", split="test")
    report = verify_store(open_store(store.location))
    assert not report.ok and all("reached through a link" in line for line in report.damaged)
    gc_store(open_store(store.location), drop_damaged=True)
    assert not os.path.lexists(folder) and verify_store(open_store(store.location)).ok


def test_catalog_record_linked_outside_is_rejected(toy, outside):  # noqa: F811
    store = toy[0]
    seg = store.segments("pairs")[0]
    record = Path(store.location) / CATALOG / f"{seg.id}.json"
    record.unlink()
    record.symlink_to(outside / "catalog" / f"{seg.id}.json")
    _TOUCHED.clear()
    with pytest.raises(StoreError, match="is a link"):
        open_store(store.location).segments()
    assert not verify_store(open_store(store.location)).ok
    gc_store(open_store(store.location), drop_damaged=True)
    assert not os.path.lexists(record)


@pytest.mark.parametrize("name", ["catalog", "segments", "leases", "STORE.json"])
def test_store_folders_linked_outside_are_never_followed(toy, outside, name):  # noqa: F811
    store = toy[0]
    own = Path(store.location) / name
    if own.is_dir():
        shutil.rmtree(own)
    elif own.exists():
        own.unlink()
    own.symlink_to(outside / name)
    _TOUCHED.clear()
    checked.forget()
    with pytest.raises(StoreError, match="link"):
        opened = open_store(store.location, create=False)
        opened.frame("wup", dataset="toy", split="test")
        gc_store(opened)
    for args in (["store", "verify"], ["store", "gc"]):
        result = runner.invoke(app, [*args, "--store", store.location])
        assert result.exit_code == 1 and "Traceback" not in result.output and "link" in result.output


# ---------------------------------------------------------------- byte flips
FILES = [("pairs", "pairs.parquet", "wup"), ("sentences", "sentences.parquet", "wup"),
         ("parses", "parses.parquet", "wup"), ("feature", "index.parquet", "wup"),
         ("feature", "arrays/zarr.json", "wup"), ("feature", "arrays/wup/zarr.json", "wup"),
         ("feature", "arrays/wup/c/0", "wup")]


@pytest.mark.parametrize(("kind", "inner", "view"), FILES)
@pytest.mark.parametrize("where", [0.0, 0.5, 1.0])
def test_flipped_byte_is_a_store_error_on_read_and_a_failure_in_verify(toy, kind, inner, view, where):  # noqa: F811
    store = toy[0]
    seg = next(s for s in store.segments(kind) if inner in s.files and (kind != "feature" or s.target["name"] == view))
    path = Path(store.location) / seg.folder / inner
    data = bytearray(path.read_bytes())
    data[min(int(len(data) * where), len(data) - 1)] ^= 0xFF
    path.write_bytes(bytes(data))
    checked.forget()
    with pytest.raises(StoreError, match=f"segment {seg.id} .*{inner}.*checksum.*gc --drop-damaged"):
        open_store(store.location).frame(view, dataset="toy", split="test")
    report = verify_store(open_store(store.location))
    assert not report.ok and report.damaged_segments == [seg.id]
    checked.forget()
    result = runner.invoke(app, ["store", "frame", "--feature", view, "--dataset", "toy", "--store", store.location])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("error:")
    assert "ZSTD" not in result.output and "base64" not in result.output


def test_flipped_byte_anywhere_in_a_catalog_record_is_caught(toy):  # noqa: F811
    store = toy[0]
    seg = store.segments("feature")[0]
    path = Path(store.location) / CATALOG / f"{seg.id}.json"
    original = path.read_bytes()
    for i in range(len(original)):
        for flip in (0xFF, 0x01):
            data = bytearray(original)
            data[i] ^= flip
            path.write_bytes(bytes(data))
            with pytest.raises(StoreError, match="is damaged"):
                open_store(store.location).segments()
            if i % 8 == 0:  # verify reads the catalog the same way; a sample keeps the test fast
                assert not verify_store(open_store(store.location)).ok, (i, flip)
    path.write_bytes(original)
    assert verify_store(open_store(store.location)).ok


def test_verified_files_are_hashed_once_per_process(toy):  # noqa: F811
    store = toy[0]
    checked.forget()
    store.frame("wup", dataset="toy", split="test")
    first = checked.checked_count(store.location)
    assert first >= 6
    open_store(store.location).frame("wup", dataset="toy", split="test")
    assert checked.checked_count(store.location) == first


# ---------------------------------------------------------------- gc racing a build
def _gc_during_build(tmp_path: Path, name: str, workers: int = 2) -> tuple[int, int]:
    """Build (with 2 worker processes) while another thread runs ``gc --force`` in a loop;
    returns (gc rounds while the build held the store, refusals of a plain gc meanwhile)."""
    location = tmp_path / name
    stop = threading.Event()
    rounds, refusals, errors = [0], [0], []

    def loop() -> None:
        while not stop.is_set():
            try:
                if (location / "STORE.json").exists():
                    if gc_store(open_store(location, create=False), force=True).builds:
                        rounds[0] += 1
                    try:
                        gc_store(open_store(location, create=False))
                    except StoreError as exc:
                        assert "a build holds the store" in str(exc)
                        refusals[0] += 1
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
            time.sleep(0.05)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        report = build(*_opts(location, limit=24, workers=workers, partition_size=3, features=("sdoi",)))
    finally:
        stop.set()
        thread.join()
    assert errors == []
    assert all(stage.failed == 0 for stage in report.stages)
    assert verify_store(open_store(location)).ok
    return rounds[0], refusals[0]


def test_gc_before_every_commit_of_a_build_leaves_a_store_equal_to_a_clean_build(tmp_path, monkeypatch):
    """Deterministic form of the race: a forced gc, then a plain one, runs between writing each
    segment's files and committing them (the moment a forced gc can remove uncommitted files)."""
    import prior.featurestore.segments as segments_module

    build(*_opts(tmp_path / "clean", limit=24))
    location = tmp_path / "raced"
    commit = segments_module.commit_segment
    rounds, refusals = [0], [0]

    def gc_then_commit(*args: Any, **kwargs: Any) -> Any:
        if gc_store(open_store(location, create=False), force=True).builds:
            rounds[0] += 1
        with pytest.raises(StoreError, match="a build holds the store"):
            gc_store(open_store(location, create=False))
        refusals[0] += 1
        return commit(*args, **kwargs)

    monkeypatch.setattr(segments_module, "commit_segment", gc_then_commit)
    report = build(*_opts(location, limit=24, workers=0, partition_size=3, features=("sdoi",)))
    monkeypatch.undo()
    assert all(stage.failed == 0 for stage in report.stages)
    assert verify_store(open_store(location)).ok
    assert rounds[0] >= 10 and refusals[0] == rounds[0]
    assert _frame_rows(location) == _frame_rows(tmp_path / "clean")


@pytest.mark.slow
def test_gc_during_ten_two_worker_builds(tmp_path):
    """10 rounds: each a fresh 2-worker build with gc looping beside it (≈ 25 s a round under load)."""
    build(*_opts(tmp_path / "clean", limit=24))
    for i in range(10):
        rounds, refusals = _gc_during_build(tmp_path, f"raced{i}")
        assert rounds >= 1 and refusals >= 1  # how many depends on the machine's speed
        assert _frame_rows(tmp_path / f"raced{i}") == _frame_rows(tmp_path / "clean")

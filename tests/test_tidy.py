"""Builds tidy up: reruns remove what dead builds left, a failed build removes its own partial
work, concurrent builders skip what another committed meanwhile, an interrupted first build
is recognised and continued; old catalog records stay readable."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import StoreError, open_store
from prior.featurestore.catalog import CATALOG, SEGMENTS, new_segment_id
from prior.featurestore.lease import LEASES, Lease, LeaseInfo, claim
from prior.featurestore.maintenance import gc_store, verify_store
from prior.pipeline import worker
from prior.pipeline.build import build
from prior.pipeline.parsers import fingerprint_of
from prior.pipeline.tasks import FeatureTask, ParseTask
from tests.test_build import _opts

runner = CliRunner()


def test_rerun_removes_what_its_dead_predecessor_left(tmp_path):
    build(*_opts(tmp_path / "s", limit=4))
    store = open_store(tmp_path / "s")
    dead = new_segment_id()
    store.fs.write_atomic(f"{LEASES}/{dead}.json", LeaseInfo(id=dead, owner="prior build snli", host="h", pid=1,
                                                              started=time.time() - 300, expires=time.time() - 60,
                                                              seconds=120).to_json())
    leftover = new_segment_id()
    claim(store.fs, dead, leftover)
    store.fs.makedirs(f"{SEGMENTS}/{leftover}")
    store.fs.write_atomic(f"{SEGMENTS}/{leftover}/parses.parquet", b"half")
    report = build(*_opts(tmp_path / "s", limit=4))
    assert report.computed == 0
    assert "removed 1 uncommitted segment folder(s) left by 1 interrupted build(s)" in report.notes
    assert not store.fs.exists(f"{SEGMENTS}/{leftover}") and store.fs.listdir(LEASES) == []
    assert verify_store(open_store(tmp_path / "s")).leftovers == []


def test_released_lease_removes_its_uncommitted_folders(tmp_path):
    store = open_store(tmp_path / "s")
    with Lease(store.fs, "prior build x") as lease:
        sid = new_segment_id()
        claim(store.fs, lease.id, sid)
        store.fs.makedirs(f"{SEGMENTS}/{sid}")
        store.fs.write_atomic(f"{SEGMENTS}/{sid}/index.parquet", b"half")  # a task that failed before its commit
    assert store.fs.listdir(SEGMENTS) == [] and store.fs.listdir(LEASES) == []


def test_workers_skip_keys_another_build_committed_meanwhile(tmp_path):
    build(*_opts(tmp_path / "s", limit=4))
    store = open_store(tmp_path / "s")
    fingerprint = dict(fingerprint_of("spacy"))
    parse = store.parse_ids().popitem()[0]
    sentences = store.sentences()
    keys, texts = sentences["sent_key"].to_list(), sentences["text"].to_list()
    others = [s.id for s in store.segments("parses")]
    with Lease(store.fs, "prior build mine") as lease:
        def parse_task(n: int, known: list[str]) -> ParseTask:
            return ParseTask(store=store.ref, keys=tuple(keys[:n]), texts=tuple(texts[:n]), lease=lease.id,
                             known=tuple(known), parser="spacy", parse=parse, fingerprint=fingerprint,
                             annotations=())  # what the sdoi build's own parse tasks annotate

        # planned before the other build's parses were committed: all of them are skipped
        result = worker.parse_partition(parse_task(len(keys), []))
        assert (result.done, result.failures, result.skipped) == (0, (), len(keys))
        # planned after: they were known then, so the keys are the partition's own work
        result = worker.parse_partition(parse_task(1, others))
        assert result.done == 1 and result.skipped == 0
        # its own build's segments (another partition's) never count as another build's
        again = worker.parse_partition(parse_task(2, others))
        assert again.skipped == 0
        entry = open_store(tmp_path / "s").find_entry("sdoi")
        feature = open_store(tmp_path / "s").segments("feature")
        from prior.pipeline.features.sdoi import SdoiFeature

        def feature_task(n: int, known: list[str]) -> FeatureTask:
            return FeatureTask(store=store.ref, keys=tuple(keys[:n]), lease=lease.id, known=tuple(known),
                               feature=SdoiFeature(), target=entry.target(), parse=parse)

        result = worker.feature_partition(feature_task(len(keys), []))
        assert (result.done, result.failures, result.skipped) == (0, (), len(keys))
        result = worker.feature_partition(feature_task(2, [s.id for s in feature]))
        assert result.done == 2
    assert open_store(tmp_path / "s").frame("sdoi", dataset="snli", split="test")["sdoi_a"].null_count() == 0


def test_interrupted_first_build_is_recognised_and_continued(tmp_path):
    location = tmp_path / "s"
    (location / CATALOG).mkdir(parents=True)
    (location / SEGMENTS).mkdir()
    with pytest.raises(StoreError, match="no STORE.json: a first build was interrupted; rerun `prior build"):
        open_store(location, create=False)
    for args in (["store", "verify"], ["store", "gc"], ["store", "info"]):
        result = runner.invoke(app, [*args, "--store", str(location)])
        assert result.exit_code == 1 and "first build was interrupted" in result.output
    build(*_opts(location, limit=3))
    assert verify_store(open_store(location, create=False)).ok


def test_damaged_store_marker_is_one_line(tmp_path):
    build(*_opts(tmp_path / "s", limit=3))
    (tmp_path / "s" / "STORE.json").write_bytes(b"\xff{")
    with pytest.raises(StoreError, match="STORE.json is damaged"):
        open_store(tmp_path / "s")


def test_gc_reports_the_bytes_it_frees(tmp_path):
    build(*_opts(tmp_path / "s", limit=3))
    store = open_store(tmp_path / "s")
    sid = new_segment_id()
    (Path(store.location) / SEGMENTS / sid / "arrays").mkdir(parents=True)
    (Path(store.location) / SEGMENTS / sid / "arrays" / "c").write_bytes(b"x" * 1000)
    (Path(store.location) / SEGMENTS / sid / "index.parquet").write_bytes(b"x" * 24)
    assert gc_store(store, dry_run=True).bytes == 1024
    assert gc_store(store).bytes == 1024
    seg = store.segments("feature")[0]
    folder = Path(store.location) / seg.folder
    record = Path(store.location) / CATALOG / f"{seg.id}.json"
    (folder / "index.parquet").write_bytes(b"damaged")
    expected = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) + record.stat().st_size
    freed = gc_store(open_store(tmp_path / "s"), drop_damaged=True)
    assert freed.removed == [f"{CATALOG}/{seg.id}.json", f"{SEGMENTS}/{seg.id}"] and freed.bytes == expected


def test_gc_removes_a_stale_temporary_of_the_store_marker(tmp_path):
    """A kill inside ``STORE.json``'s atomic write (a new store, ``prior store upgrade``) leaves
    its temporary file in the store's root: gc lists and removes it once it is older than the
    lease time and no live lease may be its writer, as it does other writers' temporaries."""
    import os
    import uuid

    from prior.featurestore.lease import lease_seconds

    root = tmp_path / "s"
    store = open_store(root)
    marker = (root / "STORE.json").read_bytes()
    stale = root / f"STORE.json.tmp-{uuid.uuid4().hex}"
    fresh = root / f"STORE.json.tmp-{uuid.uuid4().hex}"
    stale.write_bytes(b'{"format": "prior-st')  # the write was killed half-way
    fresh.write_bytes(b'{"format"')  # a writer may be at it now
    old = time.time() - 2 * lease_seconds()
    os.utime(stale, (old, old))
    dry = runner.invoke(app, ["store", "gc", "--dry-run", "--store", str(root)])
    assert dry.exit_code == 0 and f"would remove {stale.name}" in dry.output and fresh.name not in dry.output
    assert gc_store(store, dry_run=True).bytes == stale.stat().st_size and stale.exists()
    with Lease(store.fs, "prior store upgrade"):  # a live lease's holder may be writing it
        forced = gc_store(open_store(root), force=True)
        assert stale.name not in forced.removed and stale.exists()
    report = gc_store(open_store(root))
    assert report.removed == [stale.name] and report.bytes == len(b'{"format": "prior-st')
    assert not stale.exists() and fresh.exists() and (root / "STORE.json").read_bytes() == marker
    assert verify_store(open_store(root)).ok

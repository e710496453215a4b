"""Leases (prior/featurestore/lease.py) and how gc respects them: deterministic, on a local folder and
on an in-memory fsspec store."""

import json
import os
import time
import uuid

import pyarrow as pa
import pytest

from prior.errors import DataError
from prior.featurestore import StoreError, open_store
from prior.featurestore.catalog import SEGMENTS, new_segment_id
from prior.featurestore.errors import SegmentLostError
from prior.featurestore.lease import (
    LEASES,
    Lease,
    LeaseInfo,
    check_live,
    claim,
    claims,
    clean_dead,
    lease_seconds,
    read_lease,
    read_leases,
)
from prior.featurestore.maintenance import gc_store, verify_store


@pytest.fixture(params=["local", "memory"])
def store(request, tmp_path):
    location = str(tmp_path / "s") if request.param == "local" else f"memory://lease-{uuid.uuid4().hex}"
    yield open_store(location)
    if request.param == "memory":
        open_store(location).fs.remove("")


def _put_lease(store, *, expires_in: float, seconds: float = 60.0, owner: str = "prior build old") -> str:
    """A lease file as another process would have left it."""
    lease_id = new_segment_id()
    info = LeaseInfo(id=lease_id, owner=owner, host="elsewhere", pid=4242, started=time.time() - 100,
                     expires=time.time() + expires_in, seconds=seconds)
    store.fs.write_atomic(f"{LEASES}/{lease_id}.json", info.to_json())
    return lease_id


def _folder(store, sid=None, size=10) -> str:
    sid = sid or new_segment_id()
    store.fs.makedirs(f"{SEGMENTS}/{sid}")
    store.fs.write_atomic(f"{SEGMENTS}/{sid}/index.parquet", b"x" * size)
    return sid


def _pairs(store, dataset="toy", split="test"):
    return store.write_pairs(dataset, split, pa.table({"row": [0], "pair_key": ["p"], "key_a": ["a"],
                                                       "key_b": ["b"], "label": ["yes"]}), source_sha256="s")


def test_lease_acquire_renew_release(store):
    lease = Lease(store.fs, "prior build test", seconds=60).acquire()
    try:
        info = read_lease(store.fs, lease.id)
        assert info is not None and info.live() and info.owner == "prior build test" and info.pid == os.getpid()
        first = info.expires
        time.sleep(0.01)
        assert lease.renew() and read_lease(store.fs, lease.id).expires > first
        check_live(store.fs, lease.id)
    finally:
        lease.release()
    assert read_lease(store.fs, lease.id) is None and store.fs.listdir(LEASES) == []


def test_lease_background_thread_renews(store):
    with Lease(store.fs, "prior build test", seconds=3) as lease:  # renewed every 0.5 s
        first = read_lease(store.fs, lease.id).expires
        deadline = time.monotonic() + 20
        while read_lease(store.fs, lease.id).expires == first and time.monotonic() < deadline:
            time.sleep(0.05)
        assert read_lease(store.fs, lease.id).expires > first and lease.lost is None


def test_lease_dead_one_is_never_renewed_and_stops_commits(store):
    lease = Lease(store.fs, "prior build test", seconds=60).acquire()
    lease._stop.set()  # as if the renewing thread stalled
    store.fs.write_atomic(f"{LEASES}/{lease.id}.json",
                          LeaseInfo(**{**lease.info.__dict__, "expires": time.time() + 5}).to_json())
    with pytest.raises(StoreError, match="not renewed in time"):
        check_live(store.fs, lease.id)
    assert not lease.renew() and "not renewed in time" in lease.lost
    writer = open_store(store.location, lease=lease.id)
    with pytest.raises(StoreError, match="not renewed in time"):
        _pairs(writer)
    assert writer.segments(refresh=True) == []  # nothing committed
    store.fs.remove(f"{LEASES}/{lease.id}.json")
    with pytest.raises(StoreError, match="is gone"):
        check_live(store.fs, lease.id)
    lease.release()


def test_leased_write_claims_its_segment_and_records_the_lease(store):
    with Lease(store.fs, "prior build test") as lease:
        segment = _pairs(open_store(store.location, lease=lease.id))
        assert segment.lease == lease.id and claims(store.fs, lease.id) == {segment.id}
    again = open_store(store.location).segments()
    assert [s.lease for s in again] == [lease.id]


def test_gc_refuses_while_a_build_is_live_and_says_which(store):
    live = _put_lease(store, expires_in=60, owner="prior build sick")
    with pytest.raises(StoreError, match=r"prior build sick on elsewhere \(pid 4242\) since .*--force"):
        gc_store(store)
    assert read_lease(store.fs, live) is not None
    report = verify_store(store)
    assert report.ok and "prior build sick" in report.builds[0]


def test_gc_force_keeps_claimed_folders_and_removes_the_rest(store):
    live = _put_lease(store, expires_in=60)
    mine = new_segment_id()
    claim(store.fs, live, mine)  # claimed before its folder is made
    _folder(store, mine)
    stray = _folder(store, size=7)
    report = gc_store(store, force=True)
    assert report.removed == [f"{SEGMENTS}/{stray}"] and report.bytes == 7 and report.kept == [mine]
    assert store.fs.exists(f"{SEGMENTS}/{mine}") and not store.fs.exists(f"{SEGMENTS}/{stray}")
    verify = verify_store(store)
    assert verify.in_progress == [mine] and verify.leftovers == []


def test_gc_removes_what_dead_builds_left_and_counts_bytes(store):
    dead = _put_lease(store, expires_in=-1)
    theirs = new_segment_id()
    claim(store.fs, dead, theirs)
    _folder(store, theirs, size=100)
    dry = gc_store(store, dry_run=True)
    assert f"{SEGMENTS}/{theirs}" in dry.removed and dry.bytes >= 100 and store.fs.exists(f"{SEGMENTS}/{theirs}")
    report = gc_store(store)  # a dead lease does not hold the store
    assert report.bytes == dry.bytes and not store.fs.exists(f"{SEGMENTS}/{theirs}")
    assert store.fs.listdir(LEASES) == []


def test_clean_dead_removes_only_uncommitted_claims(store):
    dead = _put_lease(store, expires_in=-1)
    writer = open_store(store.location)
    committed = _pairs(writer)
    claim(store.fs, dead, committed.id)  # a segment it committed before it died
    leftover = new_segment_id()
    claim(store.fs, dead, leftover)
    _folder(store, leftover)
    live, found = read_leases(store.fs)
    assert live == [] and found == {dead}
    removed = clean_dead(store.fs, found, {committed.id})
    assert removed == [f"{SEGMENTS}/{leftover}", f"{LEASES}/{dead}"]
    assert store.fs.exists(f"{SEGMENTS}/{committed.id}") and open_store(store.location).pair_rows("toy", "test").height == 1


def test_damaged_lease_file_counts_as_dead(store):
    lease_id = _put_lease(store, expires_in=60)
    store.fs.write_atomic(f"{LEASES}/{lease_id}.json", b"{not json")
    assert read_leases(store.fs) == ([], {lease_id})
    gc_store(store)
    assert store.fs.listdir(LEASES) == []


def test_commit_into_a_removed_folder_fails_cleanly_and_is_written_again(store):
    attempts = []

    def write(folder):
        store.fs.makedirs(folder)
        store.fs.write_atomic(f"{folder}/pairs.parquet", b"data")
        attempts.append(folder)
        if len(attempts) == 1:
            store.fs.remove(folder)  # a forced gc between the write and the commit
        return ["pairs.parquet"]

    segment = store._write_segment("sentences", {}, 1, write)
    assert len(attempts) == 2 and segment.folder == attempts[1]
    assert [s.id for s in open_store(store.location).segments()] == [segment.id]

    def always_lost(folder):
        return ["pairs.parquet"]

    with pytest.raises(SegmentLostError, match="nothing was committed"):
        store._write_segment("sentences", {}, 1, always_lost)


def test_lease_seconds_from_environment(monkeypatch):
    monkeypatch.setenv("PRIOR_LEASE_SECONDS", "2.5")
    assert lease_seconds() == 2.5
    for bad in ("soon", "0", "-3"):
        monkeypatch.setenv("PRIOR_LEASE_SECONDS", bad)
        with pytest.raises(DataError, match="PRIOR_LEASE_SECONDS"):
            lease_seconds()


def test_lease_file_is_plain_json(tmp_path):
    store = open_store(tmp_path / "s")
    with Lease(store.fs, "prior build x") as lease:
        raw = json.loads((tmp_path / "s" / LEASES / f"{lease.id}.json").read_text())
        assert set(raw) == {"id", "owner", "host", "pid", "started", "renewed", "expires", "seconds"}

"""A store on S3, against a real S3 API server on 127.0.0.1 (moto's, in this process).

The endpoint and the keys are given only as storage options (`--storage-option`,
$PRIOR_STORAGE_OPTIONS, a `StoreRef`'s options): the environment holds no AWS settings at all, so
nothing here can reach a real AWS account. Skipped, with the reason, where moto or s3fs is
not installed (`pip install -e .[test]`) or the server cannot start.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import StoreError, StoreRef, open_store
from prior.featurestore.maintenance import verify_store
from prior.featurestore.ref import ENV as OPTIONS_ENV
from prior.pipeline import preflight, worker
from prior.pipeline.build import build
from prior.pipeline.tasks import ParseTask
from tests.test_build import _opts

runner = CliRunner()
AWS_SETTINGS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION")


@dataclass(frozen=True)
class S3:
    endpoint: str
    client: Any  # boto3's S3 client of the server (the test's own view, beside prior's)

    def options(self) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint, "key": "testing", "secret": "testing"}

    def cli_options(self) -> list[str]:
        return [arg for k, v in self.options().items() for arg in ("--storage-option", f"{k}={v}")]

    def bucket(self) -> str:
        name = f"prior-{uuid.uuid4().hex[:12]}"
        self.client.create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Every object's key → size, as the server holds them."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}

    def records(self, bucket: str, kind: str | None = None) -> list[dict[str, Any]]:
        """The committed catalog records of the store at ``s3://bucket/store``."""
        out = []
        for name in self.objects(bucket, "store/catalog/"):
            if name.endswith(".json") and ".tmp-" not in name:
                raw = json.loads(self.client.get_object(Bucket=bucket, Key=name)["Body"].read())
                if kind is None or raw["kind"] == kind:
                    out.append(raw)
        return out


@pytest.fixture(scope="module")
def s3_server() -> Iterator[S3]:
    pytest.importorskip("s3fs", reason="s3fs is not installed (pip install -e .[test])")
    moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e .[test])")
    import boto3

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    starting = threading.Thread(target=server.start, daemon=True)  # start() waits forever on a failed bind
    starting.start()
    starting.join(timeout=30)
    if starting.is_alive():
        pytest.skip("the S3 API server (moto) did not start within 30 s")
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    try:
        client.list_buckets()
    except Exception as exc:  # noqa: BLE001 - any failure means the server is unusable here
        server.stop()
        pytest.skip(f"the S3 API server (moto) does not answer at {endpoint}: {exc}")
    yield S3(endpoint, client)
    server.stop()


@pytest.fixture
def s3(s3_server: S3, monkeypatch: pytest.MonkeyPatch, tmp_path) -> S3:
    """No AWS settings in the environment: no keys, endpoint, profile or config files, no
    instance-metadata lookups; prior's own storage options are unset too; no S3 filesystem
    made by an earlier test."""
    for name in (*AWS_SETTINGS, OPTIONS_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # instances keep the credentials they found when made
    return s3_server


def _closed_port() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


SICK = dict(dataset="sick", splits=("test",), limit=20)
_ONE_ATTEMPT = 'config_kwargs={"retries": {"max_attempts": 1}}'  # botocore's: a dead endpoint fails at once


def _frame(store) -> list[dict[str, Any]]:
    return open_store(store, create=False).frame("sdoi", dataset="sick", split="test").to_dicts()


def test_s3_build_with_endpoint_only_in_options_equals_local(s3, tmp_path):
    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    report = build(*_opts(StoreRef(url, s3.options()), **SICK))
    assert report.stage("parse").computed > 0
    build(*_opts(tmp_path / "local", **SICK))
    assert _frame(StoreRef(url, s3.options())) == _frame(tmp_path / "local")
    # the reported size is what the committed files take on the server
    held = s3.objects(bucket)
    committed = sum(held[f"store/segments/{r['id']}/{inner}"] for r in s3.records(bucket) for inner in r["files"])
    assert report.store_bytes == committed == open_store(tmp_path / "local").size_bytes()


def test_s3_listing_sees_what_other_processes_committed(s3):
    """Another process's commit is seen at the next catalog read (fsspec's listings cache would
    hide it: the build's report showed the store's size before its workers wrote)."""
    import pyarrow as pa

    url = f"s3://{s3.bucket()}/store"
    reader = open_store(StoreRef(url, s3.options()))
    reader.write_resource("mine", pa.table({"x": [1]}))
    assert len(reader.segments(refresh=True)) == 1  # a listing of catalog/ with one record
    size = reader.size_bytes()
    # a second, separate filesystem instance stands for another process
    other = open_store(StoreRef(url, {**s3.options(), "skip_instance_cache": True}))
    assert other.fs.fs is not reader.fs.fs
    other.write_resource("theirs", pa.table({"x": [1, 2, 3]}))
    reader.refresh()
    assert [s.target["kind"] for s in reader.segments()] == ["mine", "theirs"] and reader.size_bytes() > size


def test_s3_catalog_records_are_fetched_once_and_again_when_changed(s3, monkeypatch):
    """One listing of catalog/ gives every record's ETag: a record read before with the same
    ETag is not fetched again (every build task reads the catalog); one whose content changed
    on the server is, and is found damaged."""
    import pyarrow as pa

    from prior.featurestore.fs import StoreFS

    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    store = open_store(StoreRef(url, s3.options()))
    store.write_resource("a", pa.table({"x": [1]}))
    store.write_resource("b", pa.table({"x": [2]}))
    assert len(store.segments(refresh=True)) == 2  # both records read once
    fetched: list[str] = []
    read_bytes = StoreFS.read_bytes
    monkeypatch.setattr(StoreFS, "read_bytes", lambda self, rel: fetched.append(rel) or read_bytes(self, rel))
    first = open_store(StoreRef(url, s3.options())).segments()
    assert len(first) == 2 and not [r for r in fetched if r.startswith("catalog/")]
    record = f"store/catalog/{first[0].id}.json"
    body = json.loads(s3.client.get_object(Bucket=bucket, Key=record)["Body"].read())
    body["rows"] += 1  # its checksum no longer matches
    s3.client.put_object(Bucket=bucket, Key=record, Body=json.dumps(body).encode())
    with pytest.raises(StoreError, match=f"catalog record catalog/{first[0].id}.json is damaged"):
        open_store(StoreRef(url, s3.options())).segments()
    assert [r for r in fetched if r.startswith("catalog/")] == [f"catalog/{first[0].id}.json"]


def test_s3_catalog_records_are_fetched_together_without_a_look_at_each(s3, monkeypatch):
    """An object store's catalog records are fetched several at a time, one request each (no
    look at whether each is a file first: a round trip per record, a thousand latencies for a
    thousand records), and the segments' tables many at a time; a folder where a record belongs
    is still "not a file", and an error reading a record that is a file (the network) is raised
    as it came."""
    import pyarrow as pa

    from prior.featurestore import catalog
    from prior.featurestore.fs import StoreFS

    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    store = open_store(StoreRef(url, s3.options()))
    for i in range(24):
        store.write_resource(f"r{i}", pa.table({"x": [i]}))
    catalog._RECORDS.clear()
    lock, flight, widest, looked = threading.Lock(), [0], [0], []
    read_bytes, is_file = StoreFS.read_bytes, StoreFS.is_file

    def read(self: StoreFS, rel: str) -> bytes:
        with lock:
            flight[0] += 1
            widest[0] = max(widest[0], flight[0])
        try:
            time.sleep(0.02)  # a round trip: the reads overlap when they go out together
            return read_bytes(self, rel)
        finally:
            with lock:
                flight[0] -= 1

    monkeypatch.setattr(StoreFS, "read_bytes", read)
    monkeypatch.setattr(StoreFS, "is_file", lambda self, rel: looked.append(rel) or is_file(self, rel))
    fs = open_store(StoreRef(url, s3.options())).fs
    looked.clear()  # (opening the store looks at its STORE.json)
    assert len(catalog.read_catalog(fs)) == 24
    assert widest[0] > 1 and looked == []
    # the segments' tables too are read many at a time (more than a local disk's 4 threads)
    from prior.featurestore.segment_files import read_frames

    widest[0] = 0
    frames = read_frames(fs, catalog.read_catalog(fs), "table.parquet", ["x"])
    assert sorted(int(f["x"][0]) for f in frames) == list(range(24)) and widest[0] > 4
    # verify checks the files many at a time, and reports them as one after another would
    from prior.featurestore import maintenance

    segs = catalog.read_catalog(fs)
    damaged_one = f"store/{segs[5].folder}/table.parquet"
    s3.client.put_object(Bucket=bucket, Key=damaged_one, Body=b"not the table")
    checking = maintenance._file_problem
    widest[0] = 0

    def check(fs_: StoreFS, seg: Any, inner: str, expected: dict[str, Any]) -> str | None:
        with lock:
            flight[0] += 1
            widest[0] = max(widest[0], flight[0])
        try:
            time.sleep(0.02)
            return checking(fs_, seg, inner, expected)
        finally:
            with lock:
                flight[0] -= 1

    monkeypatch.setattr(maintenance, "_file_problem", check)
    report = verify_store(open_store(StoreRef(url, s3.options())))
    assert widest[0] > 1 and report.checked_segments == 24 and report.damaged_segments == [segs[5].id]
    assert report.damaged == [f"segment {segs[5].id} (resource r5): {segs[5].folder}/table.parquet has 13 bytes, "
                              f"expected {segs[5].files['table.parquet']['size']}"]
    s3.client.delete_object(Bucket=bucket, Key=damaged_one)
    # a folder where a record belongs: not a file (verify and gc see it; reads refuse it)
    catalog._RECORDS.clear()
    looked.clear()
    folder = f"store/catalog/{catalog.new_segment_id()}.json"
    s3.client.put_object(Bucket=bucket, Key=f"{folder}/inner", Body=b"x")
    damaged: dict[str, str] = {}
    assert len(catalog.read_catalog(fs, damaged)) == 24
    assert list(damaged.values()) == [f"catalog entry {folder[len('store/'):]} is not a file; {catalog.repair()}"]
    assert looked == [folder[len("store/"):]]  # looked at only because it could not be read
    s3.client.delete_object(Bucket=bucket, Key=f"{folder}/inner")

    def cut(self: StoreFS, rel: str) -> bytes:
        raise ConnectionResetError("the network went away")

    catalog._RECORDS.clear()
    monkeypatch.setattr(StoreFS, "read_bytes", cut)
    with pytest.raises(ConnectionResetError, match="went away"):
        catalog.read_catalog(fs)


def test_s3_environment_options_and_command_line_override(s3, monkeypatch):
    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    open_store(StoreRef(url, s3.options()))
    monkeypatch.setenv(OPTIONS_ENV, json.dumps(s3.options()))
    result = runner.invoke(app, ["store", "info", "--store", url])
    assert result.exit_code == 0, result.output
    assert url in result.output
    # a --storage-option replaces its key of the environment's options: here a port nobody listens on
    result = runner.invoke(app, ["store", "info", "--store", url, "--storage-option",
                                 f"endpoint_url={_closed_port()}", "--storage-option", _ONE_ATTEMPT])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and f"cannot open the store at {url}" in result.output


@pytest.mark.parametrize("missing", ["credentials", "endpoint"])
def test_s3_unreachable_store_is_one_line_before_any_work(s3, missing):
    """No keys, or an endpoint nobody answers at: `error: …` in one line, nothing written."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    options = ([f"--storage-option=endpoint_url={s3.endpoint}"] if missing == "credentials"
               else [f"--storage-option=endpoint_url={_closed_port()}", "--storage-option=key=testing",
                     "--storage-option=secret=testing", f"--storage-option={_ONE_ATTEMPT}"])
    result = runner.invoke(app, ["build", "--dataset", "sick", "--split", "test", "--features", "sdoi",
                                 "--parser", "spacy", "--limit", "5", "--workers", "0", "--store", url, *options])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot open or create the store at {url}")
    assert ("NoCredentialsError" if missing == "credentials" else "EndpointConnectionError") in lines[0]
    assert "--storage-option" in lines[0] and "testing" not in lines[0]  # what to check; no secret echoed
    assert s3.objects(bucket) == {}
    with pytest.raises(StoreError, match="cannot open the store"):
        open_store(StoreRef(url, {"endpoint_url": s3.endpoint}), create=False)


def test_s3_open_retried_after_credentials_are_set_starts_afresh(s3, monkeypatch):
    """fsspec reuses filesystem instances with the credentials they found: a failed open must
    not leave one behind that a retry in the same process would get."""
    url = f"s3://{s3.bucket()}/store"
    with pytest.raises(StoreError, match="NoCredentialsError"):
        open_store(StoreRef(url, {"endpoint_url": s3.endpoint}))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    assert open_store(StoreRef(url, {"endpoint_url": s3.endpoint})).segments() == []


def test_s3_workers_use_the_build_options_not_their_environment(s3, monkeypatch):
    """What a worker runs gets the build's options; its environment's (here: a dead endpoint)
    are not read. The check run on an external cluster's workers names a store they cannot reach."""
    from prior.pipeline.parsers import fingerprint_of

    url = f"s3://{s3.bucket()}/store"
    open_store(StoreRef(url, s3.options()))
    monkeypatch.setenv(OPTIONS_ENV, json.dumps({**s3.options(), "endpoint_url": _closed_port()}))
    fingerprint = dict(fingerprint_of("spacy"))
    assert preflight.worker_problems(StoreRef(url, s3.options()), "lease", "spacy", fingerprint, []) == []
    problems = preflight.worker_problems(StoreRef(url, {"endpoint_url": s3.endpoint}), "lease", "spacy", fingerprint, [])
    assert len(problems) == 1 and problems[0].startswith(f"store {url}: StoreError: cannot open the store")
    result = worker.parse_partition(ParseTask(store=StoreRef(url, s3.options()), keys=("k1",), texts=("A dog runs.",),
                                              parser="spacy", parse="p", fingerprint={}))
    assert result.done == 1
    assert len(open_store(StoreRef(url, s3.options())).segments("parses")) == 1


def _worker_without_aws_env(fn, *args):
    """Runs in a fresh process, as a worker on another machine would: no AWS settings at all."""
    for name in AWS_SETTINGS:
        os.environ.pop(name, None)
    return fn(*args)


class _RemoteCluster:
    """Stands for a `--scheduler` cluster of one worker in another process (spawned, with no
    AWS settings in its environment); only what the build's checks use."""

    def __init__(self) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))

    def scheduler_info(self) -> dict[str, Any]:
        return {"workers": {"tcp://remote:1": {}}}

    def run(self, fn: Any, *args: Any) -> dict[str, Any]:
        return {"tcp://remote:1": self.pool.submit(_worker_without_aws_env, fn, *args).result()}

    def close(self) -> None:
        self.pool.shutdown()


def test_s3_scheduler_worker_without_credentials_is_one_line_before_any_commit(s3, monkeypatch):
    """The driver's credentials come from its environment (not from storage options): a worker
    without them is named in one line before the first commit, and no pair is written."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setattr(preflight, "connect", lambda address: _RemoteCluster())
    result = runner.invoke(app, ["build", "--dataset", "sick", "--split", "test", "--features", "sdoi",
                                 "--parser", "spacy", "--limit", "5", "--scheduler", "tcp://remote:8786",
                                 "--store", url, "--storage-option", f"endpoint_url={s3.endpoint}"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "found before anything was written: worker tcp://remote:1: store " + url in lines[0]
    assert "NoCredentialsError" in lines[0], lines[0]
    assert list(s3.objects(bucket)) == ["store/STORE.json"]  # the driver's check; no pair, no lease left


class _Killed(BaseException):
    """Stands for SIGKILL: no handler of the build's catches it."""


KILLED = dict(dataset="sick", splits=("test",), limit=20, partition_size=10)


def _killed_build(url: str, s3: S3, monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """A build of 20 SICK pairs on S3 that dies right before its ``after + 1``-th parse commit,
    its segment files written, leaving what a killed process leaves: its lease (never renewed
    again) and claims, and an uncommitted segment folder."""
    import prior.featurestore.segments as segments_module
    from prior.featurestore.lease import Lease

    commit, commits = segments_module.commit_segment, [0]

    def dies(*args: Any, **kwargs: Any) -> Any:
        if args[2] == "parses":
            commits[0] += 1
            if commits[0] > after:
                raise _Killed
        return commit(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(segments_module, "commit_segment", dies)
        patch.setattr(Lease, "release", lambda self: self._stop.set())
        with pytest.raises(_Killed):
            build(*_opts(StoreRef(url, s3.options()), **KILLED))


def test_s3_build_killed_midway_then_rerun_equals_uninterrupted(s3, tmp_path, monkeypatch):
    """A build dies after two parse partitions are committed to S3; the rerun fills exactly the
    gap, gives the frames of an uninterrupted build, and `prior store verify` is ok."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    _killed_build(url, s3, monkeypatch, after=2)
    assert len(s3.records(bucket, "parses")) == 2
    report = build(*_opts(StoreRef(url, s3.options()), **KILLED))
    assert report.stage("parse").reused > 0 and report.stage("parse").computed > 0
    build(*_opts(tmp_path / "ref", **KILLED))
    assert _frame(StoreRef(url, s3.options())) == _frame(tmp_path / "ref")
    verified = verify_store(open_store(StoreRef(url, s3.options())))
    assert verified.ok and len(verified.in_progress) == 1  # the dead build's folder: harmless, gc's to remove
    result = runner.invoke(app, ["store", "verify", "--store", url, *s3.cli_options()])
    assert result.exit_code == 0 and result.output.strip().endswith("ok"), result.output


@pytest.mark.slow
def test_s3_build_sigkilled_midway_then_rerun_equals_uninterrupted(s3, tmp_path):
    """The same with a real `prior build` process, killed with SIGKILL once it has committed
    parses (its storage options given on its command line only)."""
    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    cmd = [sys.executable, "-m", "prior.cli.main", "build", "--dataset", "sick", "--split", "test", "--features",
           "sdoi", "--parser", "spacy", "--limit", "40", "--workers", "0", "--partition-size", "8",
           "--store", url, *s3.cli_options()]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    deadline = time.monotonic() + 120
    while len(s3.records(bucket, "parses")) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(s3.records(bucket, "parses")) >= 1
    report = build(*_opts(StoreRef(url, s3.options()), dataset="sick", splits=("test",), limit=40,
                         partition_size=8))
    assert report.stage("parse").reused > 0
    build(*_opts(tmp_path / "ref", dataset="sick", splits=("test",), limit=40))
    assert _frame(StoreRef(url, s3.options())) == _frame(tmp_path / "ref")
    result = runner.invoke(app, ["store", "verify", "--store", url, *s3.cli_options()])
    assert result.exit_code == 0 and result.output.strip().endswith("ok"), result.output


@pytest.mark.slow
def test_s3_build_on_local_workers_reports_the_size_they_wrote(s3, tmp_path, monkeypatch):
    """Worker processes write the segments; the driver's report counts them (it showed the size
    before they wrote), and the workers reach the store with the build's options only."""
    monkeypatch.setenv(OPTIONS_ENV, json.dumps({"endpoint_url": _closed_port()}))  # workers inherit it: unused
    bucket = s3.bucket()
    url = f"s3://{bucket}/store"
    report = build(*_opts(StoreRef(url, s3.options()), **SICK, workers=1))
    assert report.stage("feature sdoi").computed > 0
    held = s3.objects(bucket)
    committed = sum(held[f"store/segments/{r['id']}/{inner}"] for r in s3.records(bucket) for inner in r["files"])
    assert report.store_bytes == committed
    build(*_opts(tmp_path / "local", **SICK))
    assert _frame(StoreRef(url, s3.options())) == _frame(tmp_path / "local")

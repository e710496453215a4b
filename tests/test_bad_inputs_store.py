"""Bad input meets the store's commands: catalog entries that are no valid record (a folder
named like one, an odd name, links at ``catalog/``, ``leases/`` or a lease file), a lease that
claims to live for years, an export target that cannot be written, dataset files with no usable
pair, and a full disk under a Dask build. Each case asserts the exit code, one line naming the
cause without a traceback, and a store that verifies and gives the same frames afterwards."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store
from prior.featurestore.catalog import new_segment_id
from prior.featurestore.lease import MAX_SECONDS
from prior.featurestore.maintenance import gc_store, verify_store
from prior.pipeline.build import build
from prior.pipeline.build_options import BuildOptions, RunOptions
from prior.pipeline.runner import DASK_LOGGERS, log_to_file

runner = CliRunner()


def _opts(store: Path, **kw) -> tuple[BuildOptions, RunOptions]:
    what = dict(dataset="snli", splits=("test",), features=("sdoi",), parser="spacy", limit=12) | kw
    return BuildOptions(**what), RunOptions(store=str(store), workers=0, progress=False)


def _frame(location: Path) -> list[dict]:
    return open_store(location, create=False).frame("sdoi", dataset="snli", split="test").to_dicts()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, list[dict]]:
    location = tmp_path_factory.mktemp("bad") / "clean"
    build(*_opts(location))
    return location, _frame(location)


@pytest.fixture
def store(built, tmp_path) -> Path:
    location = tmp_path / "store"
    shutil.copytree(built[0], location)
    return location


def one_line_error(result, code: int = 1) -> str:
    """The single ``error:`` line of a failed command (no traceback, nothing else on stderr)."""
    text = result.output.strip()
    assert result.exit_code == code, text
    assert "Traceback" not in text and not isinstance(result.exception, (KeyError, OSError, AttributeError)), text
    assert text.startswith("error:") and len(text.splitlines()) == 1, text
    return text


def _reads(location: Path) -> list[list[str]]:
    where = ["--store", str(location)]
    return [["store", "verify", *where], ["store", "info", *where],
            ["store", "frame", "--feature", "sdoi", "--dataset", "snli", "--split", "test", *where],
            ["store", "export", "--feature", "sdoi", "--dataset", "snli", "--out", str(location.parent / "x"), *where],
            ["show", "--dataset", "snli", "--split", "test", "--pair", "0", "--feature", "sdoi", *where]]


def _assert_repaired(location: Path, clean: list[dict]) -> None:
    result = runner.invoke(app, ["store", "gc", "--drop-damaged", "--store", str(location)])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert verify_store(open_store(location, create=False)).ok
    assert _frame(location) == clean


@pytest.mark.parametrize("entry", ["folder", "backslash", "link"])
def test_catalog_entry_that_is_no_record_is_one_line_everywhere_and_dropped(store, built, tmp_path, entry):
    catalog = store / "catalog"
    if entry == "folder":  # a folder named like a valid record
        (catalog / f"{new_segment_id()}.json").mkdir()
        (catalog / f"{new_segment_id()}.json" / "x").mkdir(parents=True)
    elif entry == "backslash":
        (catalog / "a\\b.json").write_text("{}")
    else:
        target = tmp_path / "elsewhere.json"
        target.write_text("{}")
        (catalog / f"{new_segment_id()}.json").symlink_to(target)
    verify = runner.invoke(app, _reads(store)[0])
    assert verify.exit_code == 1 and "Traceback" not in verify.output, verify.output
    lines = verify.output.strip().splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == ["damaged"] * (len(lines) - 1) and len(lines) >= 2
    for args in _reads(store)[1:]:
        result = runner.invoke(app, args)
        line = one_line_error(result)
        assert "catalog" in line, line
    plain = runner.invoke(app, ["store", "gc", "--store", str(store)])
    assert plain.exit_code == 0 and "Traceback" not in plain.output, plain.output
    _assert_repaired(store, built[1])
    assert sorted(p.name for p in catalog.iterdir() if not p.name.endswith(".json") or p.is_dir()) == []
    if entry == "link":
        assert (tmp_path / "elsewhere.json").read_text() == "{}"  # the link's target is untouched


@pytest.mark.parametrize("folder", ["catalog", "leases"])
def test_store_folder_that_is_a_link_is_one_line_and_replaced_by_gc(store, built, tmp_path, folder):
    real = tmp_path / f"real-{folder}"
    (store / folder).mkdir(exist_ok=True)
    shutil.move(str(store / folder), real)
    (store / folder).symlink_to(real)
    before = sorted(os.listdir(real))
    result = runner.invoke(app, ["store", "verify", "--store", str(store)])
    assert "link" in one_line_error(result)
    build_result = runner.invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", "sdoi",
                                       "--parser", "spacy", "--limit", "12", "--workers", "0", "--store", str(store)],
                                 env={"PRIOR_NO_PROGRESS": "1"})
    assert "link" in one_line_error(build_result)
    result = runner.invoke(app, ["store", "gc", "--drop-damaged", "--store", str(store)])
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert not (store / folder).is_symlink() and sorted(os.listdir(real)) == before  # never followed
    assert verify_store(open_store(store, create=False)).ok
    build(*_opts(store))  # a catalog that was a link held nothing of this store: the rebuild restores it
    assert _frame(store) == built[1]


def test_lease_file_that_is_a_link_is_removed_by_plain_gc(store, built, tmp_path):
    target = tmp_path / "lease.json"
    target.write_text("{}")
    (store / "leases").mkdir(exist_ok=True)
    link = store / "leases" / f"{new_segment_id()}.json"
    link.symlink_to(target)
    result = runner.invoke(app, ["store", "gc", "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert not link.is_symlink() and target.read_text() == "{}"
    assert verify_store(open_store(store, create=False)).ok and _frame(store) == built[1]


def test_lease_with_a_far_future_expiry_does_not_block_gc(store, built):
    lease_id = new_segment_id()
    (store / "leases").mkdir(exist_ok=True)
    (store / "leases" / f"{lease_id}.json").write_text(json.dumps({
        "id": lease_id, "owner": "prior build evil", "host": "h", "pid": 1, "started": time.time(),
        "renewed": time.time(), "expires": time.time() + 365 * 86400, "seconds": 365 * 86400}))
    report = gc_store(open_store(store, create=False))  # not refused
    assert f"leases/{lease_id}.json" in report.removed
    # a lease time longer than the longest lease is refused where it is set
    too_long = runner.invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", "sdoi",
                                   "--parser", "spacy", "--workers", "0", "--store", str(store)],
                             env={"PRIOR_LEASE_SECONDS": str(MAX_SECONDS * 2)})
    assert "PRIOR_LEASE_SECONDS" in one_line_error(too_long)
    assert verify_store(open_store(store, create=False)).ok and _frame(store) == built[1]


@pytest.mark.parametrize("out", ["/proc/prior-x", "/proc/self/nope/x"])
def test_export_to_a_target_that_cannot_be_written_is_one_line(store, built, out):
    result = runner.invoke(app, ["store", "export", "--feature", "sdoi", "--dataset", "snli", "--out", out,
                                 "--store", str(store)])
    assert out in one_line_error(result)
    assert verify_store(open_store(store, create=False)).ok and _frame(store) == built[1]


@pytest.mark.parametrize(("content", "extra", "cause"), [
    ("sentence1,sentence2,label\n", [], "no rows"),
    ('sentence1,sentence2,label\n"a b c,d e,1\nx y,z w,0\n', [], "row 2"),
    ("sentence1,sentence2,label\na b,c d,xx\ne f,g h,yy\n", ["--label-kind", "score"], "score 'xx' is not a number"),
])
def test_dataset_file_without_a_usable_pair_names_the_cause(store, built, tmp_path, content, extra, cause):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    for features in ("sdoi", "dep"):  # dep's tf-idf used to claim "no pairs in the store"
        result = runner.invoke(app, ["build", "--dataset", str(path), *extra, "--features", features,
                                     "--parser", "spacy", "--workers", "0", "--store", str(store)],
                               env={"PRIOR_NO_PROGRESS": "1"})
        line = one_line_error(result)
        assert str(path) in line and cause in line and "tf-idf" not in line, line
    assert verify_store(open_store(store, create=False)).ok and _frame(store) == built[1]


@pytest.mark.parametrize(("name", "message"), [
    ("distributed.worker", "Compute Failed\nTraceback: boom"),
    # the traceback a Ctrl-C during a build could print: distributed's sync() cancels its future
    # in a loop callback, which raised and which tornado logged
    ("tornado.application", "Exception in callback sync.<locals>.cancel\nNameError: cannot access free variable"),
])
def test_dask_log_goes_to_a_file_not_the_terminal(tmp_path, capfd, name, message):
    saved = {n: (list(logging.getLogger(n).handlers), logging.getLogger(n).propagate) for n in DASK_LOGGERS}
    stream = logging.StreamHandler(sys.stderr)
    logging.getLogger("distributed").addHandler(stream)
    try:
        log_to_file(str(tmp_path / "logs" / "dask.log"))
        log_to_file(str(tmp_path / "logs" / "dask.log"))  # again (a second build in one process): one handler
        logging.getLogger(name).error(message)
        assert message.split("\n")[0] not in capfd.readouterr().err
        assert (tmp_path / "logs" / "dask.log").read_text().count(message) == 1
    finally:
        for n, (handlers, propagate) in saved.items():
            parent = logging.getLogger(n)
            for handler in list(parent.handlers):
                if handler not in handlers:
                    handler.close()
                    parent.removeHandler(handler)
            for handler in handlers:
                if handler not in parent.handlers:
                    parent.addHandler(handler)
            parent.propagate = propagate


def test_dask_log_with_distributed_s_own_config_goes_to_the_file(tmp_path):
    """distributed's logging config gives ``tornado.application`` a terminal handler of its own
    (the logger a Ctrl-C's cancel traceback goes to): in a fresh process, as a build has it, the
    record ends in the file, and the terminal stays silent."""
    log = tmp_path / "logs" / "dask.log"
    code = ("import logging, distributed\n"
            "from prior.pipeline.runner import log_to_file\n"
            f"log_to_file({str(log)!r})\n"
            "logging.getLogger('tornado.application').error('Exception in callback sync.<locals>.cancel')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr == "" and "sync.<locals>.cancel" in log.read_text()


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_disk_full_under_dask_workers_is_one_line_without_their_log(tmp_path):
    mount = tmp_path / "full"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(mount)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        env = dict(os.environ, PRIOR_NO_PROGRESS="1")
        proc = subprocess.run([sys.executable, "-m", "prior.cli.main", "build", "--dataset", "rte", "--split", "dev",
                               "--limit", "60", "--features", "sdoi", "--parser", "spacy", "--workers", "2",
                               "--partition-size", "10", "--store", str(mount / "st")],
                              env=env, capture_output=True, text=True, timeout=300)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 1
        assert len(lines) == 1 and lines[0].startswith("error:") and "No space left" in lines[0], proc.stderr
        assert "Compute Failed" not in proc.stdout + proc.stderr
    finally:
        subprocess.run(["umount", str(mount)])

"""A build checks what it needs before its first commit (prior/pipeline/preflight.py): failures are
one line naming the cause, and the store is left as it was."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.errors import ResourceError
from prior.featurestore import StoreError, open_store
from prior.featurestore.lease import LEASES, Lease
from prior.pipeline import preflight
from prior.pipeline.build import build
from tests.test_build import _opts

runner = CliRunner()


def _untouched(location) -> None:
    store = open_store(location, create=False)
    assert store.segments() == [] and store.fs.listdir(LEASES) == []


def test_unreachable_scheduler_fails_fast_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_SCHEDULER_TIMEOUT", "1")
    with pytest.raises(ResourceError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 1 s"):
        build(*_opts(tmp_path / "s", scheduler="tcp://127.0.0.1:1"))
    _untouched(tmp_path / "s")
    result = runner.invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", "sdoi", "--parser",
                                 "spacy", "--limit", "5", "--scheduler", "tcp://127.0.0.1:1",
                                 "--store", str(tmp_path / "s")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and "cannot reach the Dask scheduler" in result.output


def test_scheduler_timeout_from_environment(monkeypatch):
    monkeypatch.setenv("PRIOR_SCHEDULER_TIMEOUT", "2.5")
    assert preflight.scheduler_timeout() == 2.5
    monkeypatch.setenv("PRIOR_SCHEDULER_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="PRIOR_SCHEDULER_TIMEOUT='soon'"):
        preflight.scheduler_timeout()


def test_store_that_cannot_be_created_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot open or create the store at"):
        build(*_opts(blocker / "store"))
    result = runner.invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", "sdoi",
                                 "--parser", "spacy", "--store", str(blocker / "store")])
    assert result.exit_code == 1 and "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


class _Missing:
    """A feature whose resources are not there."""

    name = "fake"

    def check_resources(self) -> None:
        raise ResourceError("no WordNet here")


def test_local_build_checks_feature_resources_before_any_commit(tmp_path, monkeypatch):
    import prior.pipeline.features.registry as registry

    monkeypatch.setattr(registry, "plan_features", lambda names, options: [(_Missing(), "fake")])
    with pytest.raises(ResourceError, match="feature fake: ResourceError: no WordNet here"):
        build(*_opts(tmp_path / "s"))
    _untouched(tmp_path / "s")


def test_wup_checks_its_wordnet():
    from prior.pipeline.features.wup import WupFeature

    feature = WupFeature()
    feature._version = "wordnet-0.0:0000"  # what the driver resolved; this process has another (or none)
    with pytest.raises(ResourceError):
        feature.check_resources()


class _FakeClient:
    """Stands for a distributed.Client: runs the function here, as one worker would."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def scheduler_info(self) -> dict:
        return {"workers": {f"tcp://w{i}": {} for i in range(self.workers)}}

    def run(self, fn, *args):
        return {f"tcp://w{i}": fn(*args) for i in range(self.workers)}


def test_worker_problems_name_parser_feature_and_store(tmp_path):
    from prior.pipeline.parsers import fingerprint_of

    store = open_store(tmp_path / "s")
    right = dict(fingerprint_of("spacy"))
    with Lease(store.fs, "test") as lease:
        assert preflight.worker_problems(store.location, lease.id, "spacy", right, []) == []
        problems = preflight.worker_problems(str(tmp_path / "nowhere"), lease.id, "spacy", {"backend": "other"},
                                             [_Missing()])
        assert len(problems) == 3
        assert "differs from the driver's" in problems[0] and "no WordNet here" in problems[1]
        assert problems[2].startswith(f"store {tmp_path / 'nowhere'}: NotFoundError")
        with pytest.raises(ResourceError, match=r"2 problem\(s\) found before anything was written: worker tcp://w0: "
                                                r"feature fake.*worker tcp://w1: feature fake"):
            preflight.check_workers(_FakeClient(2), store.location, lease.id, "spacy", right, [_Missing()])
        preflight.check_workers(_FakeClient(1), store.location, lease.id, "spacy", right, [])
    assert store.fs.listdir(LEASES) == []  # the workers' write probes left nothing


def test_preflight_keeps_our_messages_whole_and_cuts_foreign_ones() -> None:
    """A worker's problem line keeps WordNet's install line (it said "cut at 300 characters")."""
    from prior.errors import ResourceError
    from prior.pipeline.resources.wordnet import INSTALL_HINT

    ours = preflight._short(ResourceError("WordNet directory /" + "x" * 400 + " holds no dict files.\n" + INSTALL_HINT))
    assert "\n" not in ours and "apt-get install -y --no-install-recommends wordnet-base" in ours
    assert ours.endswith("(data.noun, index.noun, …).")
    foreign = preflight._short(RuntimeError("y" * 5000))
    assert len(foreign) < 700 and foreign.endswith(" …")

"""Storage options: `--storage-option KEY=VALUE` and $PRIOR_STORAGE_OPTIONS (prior.featurestore.ref),
and a `memory://` store refused where worker processes would write it."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
from typer.testing import CliRunner

from prior.cli import store_flags
from prior.cli.main import app
from prior.errors import DataError, PriorError
from prior.featurestore import StoreRef, open_store
from prior.featurestore.ref import ENV as OPTIONS_ENV
from prior.pipeline.build import build
from tests.test_build import _frame_rows, _opts

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_env_options(monkeypatch):
    monkeypatch.delenv(OPTIONS_ENV, raising=False)


def test_storage_option_values_are_json_where_they_parse():
    assert store_flags.parse_item("anon=true") == ("anon", True)
    assert store_flags.parse_item("endpoint_url=http://127.0.0.1:9000") == ("endpoint_url", "http://127.0.0.1:9000")
    assert store_flags.parse_item('config_kwargs={"connect_timeout": 5}') == ("config_kwargs", {"connect_timeout": 5})
    assert store_flags.parse_item("profile=dev=1") == ("profile", "dev=1")  # the first '=' splits
    assert store_flags.parse_item("key=") == ("key", "")
    for bad in ("anon", "=true", "my key=1"):
        with pytest.raises(DataError, match="expected KEY=VALUE"):
            store_flags.parse_item(bad)


def test_command_line_options_replace_the_environment_keys(monkeypatch):
    monkeypatch.setenv(OPTIONS_ENV, '{"endpoint_url": "http://env:1", "anon": false}')
    assert store_flags.merge_items(["endpoint_url=http://cli:2"]) == {"endpoint_url": "http://cli:2", "anon": False}
    assert store_flags.merge_items([]) == {"endpoint_url": "http://env:1", "anon": False}
    assert store_flags.merge_items(["anon=true"], base={}) == {"anon": True}  # an explicit base: no environment
    assert StoreRef("s").options() == {"endpoint_url": "http://env:1", "anon": False}
    assert StoreRef("s", {}).options() == {}  # options given (even none) are used as they are


@pytest.mark.parametrize(("raw", "message"), [("{oops", "is not valid JSON"), ('["a"]', "holds a JSON list")])
def test_malformed_environment_options_name_the_variable(monkeypatch, tmp_path, raw, message):
    monkeypatch.setenv(OPTIONS_ENV, raw)
    with pytest.raises(DataError, match=f"PRIOR_STORAGE_OPTIONS {message}"):
        open_store(tmp_path / "s")
    result = runner.invoke(app, ["store", "info", "--store", str(tmp_path / "s")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [result.output.strip()] and "PRIOR_STORAGE_OPTIONS" in result.output


def test_open_store_keeps_its_options_and_a_local_store_ignores_remote_ones(tmp_path, monkeypatch):
    monkeypatch.setenv(OPTIONS_ENV, '{"anon": true}')
    assert open_store(tmp_path / "s").ref.storage_options == {"anon": True}
    store = open_store(StoreRef(tmp_path / "s", {"endpoint_url": "http://127.0.0.1:9"}))
    assert store.ref.storage_options == {"endpoint_url": "http://127.0.0.1:9"} and store.fs.local
    assert "storage" not in repr(store) and "127.0.0.1" not in repr(store)  # options may hold secrets
    assert "endpoint_url" in repr(store.ref) and "127.0.0.1" not in repr(store.ref)  # the names, never the values


def test_unknown_protocol_is_one_line(tmp_path):
    result = runner.invoke(app, ["store", "info", "--store", "nosuchproto://bucket/store"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "cannot open the store at nosuchproto://bucket/store" in result.output
    assert "--storage-option" in result.output  # what to check for a URL


@pytest.mark.parametrize("cluster", [{"workers": 2}, {"workers": 0, "scheduler": "tcp://127.0.0.1:1"}])
def test_memory_store_with_worker_processes_is_refused_before_any_work(cluster):
    location = f"memory://prior-{uuid.uuid4().hex}"
    with pytest.raises(DataError, match="lives in this process's memory.*each process has its own memory"):
        build(*_opts(location, **cluster))
    assert open_store(location, create=False).segments() == []
    result = runner.invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", "sdoi",
                                 "--parser", "spacy", "--limit", "5", "--workers", "2", "--store", location])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and "--workers 0" in result.output


def test_memory_store_builds_in_process(tmp_path):
    location = f"memory://prior-{uuid.uuid4().hex}"
    report = build(*_opts(location, limit=6))
    assert report.stage("parse").computed > 0
    build(*_opts(tmp_path / "local", limit=6))
    assert _frame_rows(location) == _frame_rows(tmp_path / "local")


def test_env_command_shows_option_keys_never_values(monkeypatch):
    monkeypatch.setenv(OPTIONS_ENV, '{"endpoint_url": "http://127.0.0.1:9000", "secret": "hush"}')
    result = runner.invoke(app, ["env"])
    assert result.exit_code == 0
    assert "keys endpoint_url, secret (values not shown)" in result.output and "hush" not in result.output


def test_every_command_that_opens_a_store_takes_storage_options():
    import typer.main

    def commands(group: Any, path: str = "prior") -> list[tuple[str, Any]]:
        if hasattr(group, "commands"):  # a group (typer's own click, whichever it ships)
            return [c for name, sub in group.commands.items() for c in commands(sub, f"{path} {name}")]
        return [(path, group)]

    with_store = {path: cmd for path, cmd in commands(typer.main.get_command(app))
                  if any(p.name == "store" for p in cmd.params)}
    assert {"prior build", "prior show", "prior train", "prior eval", "prior store verify",
            "prior embed counterfit"} <= set(with_store)
    lacking = [path for path, cmd in with_store.items()
               if not any("--storage-option" in p.opts for p in cmd.params)]
    assert lacking == []


def test_predict_hands_its_options_to_load_model_not_the_environment(monkeypatch, tmp_path):
    """`prior predict --storage-option` reaches the stores it opens through `load_model`'s
    argument (merged over the variable), and leaves the process environment as it was."""
    import prior.trainers.predict as trainer_predict

    seen: dict[str, object] = {}

    def fake_load_model(checkpoint, **kw):
        seen.update(kw)
        raise PriorError("stop here")

    monkeypatch.setattr(trainer_predict, "load_model", fake_load_model)
    monkeypatch.setenv(OPTIONS_ENV, '{"endpoint_url": "http://env:1", "anon": false}')
    result = CliRunner().invoke(app, ["predict", str(tmp_path), "--a", "x", "--b", "y",
                                      "--storage-option", "anon=true"])
    assert result.exit_code == 1 and "stop here" in result.output
    assert seen["store"].storage_options == {"endpoint_url": "http://env:1", "anon": True}
    assert os.environ[OPTIONS_ENV] == '{"endpoint_url": "http://env:1", "anon": false}'

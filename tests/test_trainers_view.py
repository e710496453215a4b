"""`prior train/eval --view NAME`: a registered variant view replaces the model's feature
(`View.variant_of`), with `--dep-view` kept as a hidden alias; and storage options reach the
trainers in their settings, never through the environment."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from prior.cli.train import eval_, train
from prior.errors import PriorError
from prior.featurestore.ref import ENV as OPTIONS_ENV
from prior.featurestore.ref import StoreRef
from prior.layouts.views import resolve_view, variants
from tests.trainers_fixtures import tiny_backbone, tiny_store


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("view")
    tiny_store(root / "store")
    return root / "store", tiny_backbone(root / "backbone")


def invoke(*args: object) -> Any:
    a = typer.Typer()
    a.command("train")(train)
    a.command("eval")(eval_)
    return CliRunner().invoke(a, [str(x) for x in args])


def train_args(model: str, setup: tuple[Path, Path], out: Path, *extra: object) -> list[object]:
    store, backbone = setup
    return ["train", model, "--backbone", backbone, "--dataset", "toy", "--store", store, "--output", out,
            "--epochs", 1, "--batch-size", 2, "--no-progress", *extra]


def test_view_resolution_through_the_registry() -> None:
    assert "dep-no-tfidf" in variants("dep") and variants("sdoi") == []
    assert resolve_view("dep", None) is None and resolve_view("dep", "dep") is None
    assert resolve_view("dep", "dep-no-tfidf") == "dep-no-tfidf"
    with pytest.raises(PriorError, match="is not a registered variant view; views of 'dep': dep, dep-no-subgraph"):
        resolve_view("dep", "dep-no-everything")
    with pytest.raises(PriorError, match="'sdoi', which has no registered variant views"):
        resolve_view("sdoi", "dep-no-tfidf")
    with pytest.raises(PriorError, match="reads none"):
        resolve_view(None, "dep-no-tfidf")


def test_view_trains_and_evals(setup: tuple[Path, Path], tmp_path: Path) -> None:
    by_view = invoke(*train_args("dafa", setup, tmp_path / "v", "--view", "dep-no-tfidf"))
    assert by_view.exit_code == 0, by_view.output
    meta = json.loads((tmp_path / "v" / "best" / "prior.json").read_text())
    assert meta["view"] == "dep-no-tfidf" and "dep_view" not in meta
    assert meta["fingerprints"]["train"]["view"] == "dep-no-tfidf"
    stored = invoke("eval", tmp_path / "v", "--split", "test")
    full = invoke("eval", tmp_path / "v", "--split", "test", "--view", "dep")
    assert stored.exit_code == 0 and full.exit_code == 0, (stored.output, full.output)
    assert stored.output.splitlines()[-1].startswith("accuracy=") and ", view dep" in full.output
    bad = invoke("eval", tmp_path / "v", "--split", "test", "--view", "dep-no-nothing")
    assert bad.exit_code == 1 and "views of 'dep'" in bad.output
    gone = invoke(*train_args("dafa", setup, tmp_path / "a", "--dep-view", "dep-no-tfidf"))
    assert gone.exit_code == 2 and "--dep-view" in gone.output  # the former spelling is gone


def test_view_on_a_model_without_variants_is_an_error(setup: tuple[Path, Path], tmp_path: Path) -> None:
    result = invoke(*train_args("sgnet", setup, tmp_path / "o", "--view", "dep-no-tfidf"))
    assert result.exit_code == 1
    assert "reads 'sdoi', which has no registered variant views" in result.output


def test_view_storage_options_travel_in_the_settings(setup: tuple[Path, Path], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`--storage-option` reaches open_store in its argument's StoreRef; the environment is left
    alone; eval reaches the training store with the options the checkpoint recorded, the ones
    it is given replacing theirs."""
    import prior.trainers.evaluation as evaluation
    import prior.trainers.run_setup as run_setup

    monkeypatch.setenv(OPTIONS_ENV, '{"anon": false}')
    seen: list[Any] = []
    real = run_setup.open_store

    def spy(store: Any = None, **kw: Any) -> Any:
        seen.append(store.storage_options)
        return real(StoreRef(store.location, {}), **kw)  # a local store takes none

    monkeypatch.setattr(run_setup, "open_store", spy)
    monkeypatch.setattr(evaluation, "open_store", spy)
    result = invoke(*train_args("bert", setup, tmp_path / "o", "--storage-option", "endpoint_url=http://x:1"))
    assert result.exit_code == 0, result.output
    evaluated = invoke("eval", tmp_path / "o", "--split", "test", "--storage-option", "profile=p")
    assert evaluated.exit_code == 0, evaluated.output
    assert seen == [{"anon": False, "endpoint_url": "http://x:1"},
                    {"anon": False, "endpoint_url": "http://x:1", "profile": "p"}]
    assert os.environ[OPTIONS_ENV] == '{"anon": false}'

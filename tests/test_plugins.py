"""User code from the shell: `--code FILE.py` on any command, and the `prior.features` /
`prior.models` entry points of an installed distribution."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli import plugins
from prior.cli.main import app
from prior.featurestore import open_store
from tests.cli_run import cli
from tests.trainers_fixtures import tiny_backbone

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


@pytest.fixture
def registries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fresh copies of the two registries, restored after; the user's modules forgotten after."""
    import prior.pipeline.features.registry as features
    import prior.trainers.models as models

    monkeypatch.setattr(features, "FEATURE_SETS", dict(features.FEATURE_SETS))
    monkeypatch.setattr(models, "MODELS", dict(models.MODELS))
    monkeypatch.setattr(models, "_LOADED", dict(models._LOADED))
    monkeypatch.setattr(plugins, "_entry_points_loaded", False)
    yield
    for name in [n for n in sys.modules if n.startswith(("my_overlap_", "userpkg"))]:
        del sys.modules[name]


def user_files(directory: Path) -> tuple[Path, Path]:
    """The docs' example feature and model as a user's own files, outside the package, each
    ending with its registration."""
    feature = directory / "my_overlap_feature.py"
    feature.write_text((EXAMPLES / "overlap_feature.py").read_text() + "\n\n"
                       "from prior.pipeline.features.registry import register_feature_set\n"
                       "register_feature_set('overlap', lambda options: "
                       "[OverlapFeature(**options.feature_options.get('overlap', {}))])\n")
    model = directory / "my_overlap_model.py"
    model.write_text((EXAMPLES / "overlap_model.py").read_text() + "\n\n"
                     "from prior.trainers.models import register_model\nregister_model(OverlapBertModel)\n")
    return feature, model


def test_plugins_code_builds_trains_and_predicts(registries: None, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")
    feature, model = user_files(tmp_path)
    store = tmp_path / "store"
    refused = CliRunner().invoke(app, ["build", "--dataset", "sick", "--split", "trial", "--features", "overlap",
                                       "--store", str(store)])
    assert refused.exit_code != 0 and "overlap" in refused.output
    cli("build", "--code", feature, "--dataset", "sick", "--split", "train,trial", "--features", "overlap",
        "--parser", "spacy", "--limit", 6, "--workers", 0, "--store", store)
    (entry,) = open_store(store, create=False).entries("overlap")
    out = tmp_path / "run"
    cli("train", "overlap-bert", "--code", model, "--backbone", tiny_backbone(tmp_path / "b"), "--dataset",
        "sick", "--store", store, "--output", out, "--epochs", 1, "--batch-size", 4, "--max-length", 64,
        "--no-progress")
    meta = json.loads((out / "best" / "prior.json").read_text())
    assert meta["model"] == "overlap-bert" and meta["fingerprints"]["train"]["entries"] == {"overlap": entry.key}
    # the files import once per process: a second command with both is not a double registration
    line = cli("--code", feature, "predict", f"--code={model}", out, "--a", "A man plays a guitar",
               "--b", "A man plays music")
    assert json.loads(line.strip().splitlines()[-1])["label"] in meta["label_names"]


def test_plugins_code_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("import no_such_module_anywhere\n")
    for args, says in [(["env", "--code", str(bad)], "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
                       (["env", "--code", str(tmp_path / "missing.py")], "no such Python file"),
                       (["env", "--code"], "needs a file")]:
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1
        assert result.output.startswith("error: --code") and says in result.output
        assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert "broken" not in sys.modules


def test_plugins_split_code_args() -> None:
    assert plugins.split_code_args(["train", "m", "--code", "a.py", "--code=b.py", "--", "--code", "c"]) == (
        ["a.py", "b.py"], ["train", "m", "--", "--code", "c"])


def test_plugins_entry_points_register_features_and_models(registries: None, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution declaring `[project.entry-points."prior.features"] overlap = "..."` and a
    `prior.models` entry: both usable by name, imported only when used."""
    import prior.pipeline.features.registry as features
    import prior.trainers.models as models

    feature, model = user_files(tmp_path)
    # a user's package: the example's classes, without the registration lines
    (tmp_path / "userpkg").mkdir()
    (tmp_path / "userpkg" / "__init__.py").write_text("")
    (tmp_path / "userpkg" / "feat.py").write_text((EXAMPLES / "overlap_feature.py").read_text() + "\n\n"
        "def overlap(options):\n    return [OverlapFeature(**options.feature_options.get('overlap', {}))]\n")
    (tmp_path / "userpkg" / "model.py").write_text((EXAMPLES / "overlap_model.py").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = {"prior.features": [metadata.EntryPoint("overlap", "userpkg.feat:overlap", "prior.features")],
           "prior.models": [metadata.EntryPoint("overlap-bert", "userpkg.model:OverlapBertModel", "prior.models")]}
    calls: list[str] = []

    def entry_points(*, group: str) -> list[metadata.EntryPoint]:
        calls.append(group)
        return eps.get(group, [])

    monkeypatch.setattr(plugins.metadata, "entry_points", entry_points)
    assert "overlap" not in features.FEATURE_SETS and "overlap-bert" not in models.MODELS
    cli("env")  # any command loads them, once
    cli("env")
    assert calls == ["prior.features", "prior.models"]
    assert "overlap" in features.FEATURE_SETS and models.MODELS["overlap-bert"] == "userpkg.model:OverlapBertModel"
    assert "userpkg.model" not in sys.modules and "userpkg.feat" not in sys.modules  # nothing imported yet
    assert models.model_class("overlap-bert").model_name == "overlap-bert"
    options = type("Options", (), {"feature_options": {"overlap": {"compare": "exact"}}})()
    (built,) = features.FEATURE_SETS["overlap"](options)
    assert type(built).__module__ == "userpkg.feat" and built.params() == {"compare": "exact"}


def test_plugins_every_command_lists_code_in_its_help() -> None:
    for command in (["build"], ["train"], ["predict"], ["store", "gc"], ["parser", "eval"]):
        result = CliRunner().invoke(app, [*command, "--help"])
        assert result.exit_code == 0 and "--code" in result.output, (command, result.output)


@pytest.mark.slow
def test_plugins_code_reaches_local_cluster_workers(registries: None, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes import the `--code` file by its name (its folder is on their path)."""
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")
    feature, _ = user_files(tmp_path)
    cli("build", "--code", feature, "--dataset", "sick", "--split", "trial", "--features", "overlap",
        "--parser", "spacy", "--limit", 4, "--workers", 1, "--store", tmp_path / "store")
    (entry,) = open_store(tmp_path / "store", create=False).entries("overlap")
    assert entry.is_default

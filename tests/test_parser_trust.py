"""Nothing from data names code to run: a parser spec that loads a pickle (``biaffine:FILE``
or a supar model name) is used only when the person running `prior` names it (``--parser``,
``parser=``), never when a store's parses record or a checkpoint's ``prior.json`` names it.

A crafted store (its parses record names a pickle whose payload creates a file; the record's
checksum recomputed, so `verify` passes) and the checkpoint `prior train` makes from it:
predict refuses with one line, train, eval and build run without loading it, and the payload
never runs; named on the command line, the same file is loaded (and its payload runs)."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore.catalog import CATALOG, record_checksum
from prior.parser_spec import loads_code
from tests.trainers_fixtures import tiny_backbone, tiny_store

REPO = Path(__file__).resolve().parents[1]


class Payload:
    """Unpickling it creates ``marker``: the proof that a pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def craft_store(store: Path, spec: str) -> None:
    """Rewrite every parses record to name ``spec``, its checksum recomputed (as an attacker would)."""
    for record in (store / CATALOG).glob("*.json"):
        raw = json.loads(record.read_text())
        if raw["kind"] == "parses":
            raw["target"]["spec"] = spec
            raw["checksum"] = record_checksum(raw)
            record.write_text(json.dumps(raw))


@pytest.fixture(scope="module")
def crafted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The crafted store, its pickle and marker, and a `bert` trained on it."""
    root = tmp_path_factory.mktemp("trust")
    evil, marker = root / "parser.pt", root / "payload-ran"
    evil.write_bytes(pickle.dumps(Payload(marker)))
    store = root / "store"
    tiny_store(store, features=())
    craft_store(store, f"biaffine:{evil}")
    from prior.featurestore import open_store
    from prior.featurestore.maintenance import verify_store

    assert verify_store(open_store(store, create=False)).ok
    return {"root": root, "evil": evil, "marker": marker, "store": store, "backbone": tiny_backbone(root / "backbone")}


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")


def invoke(*args: object) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output.strip().splitlines()


@pytest.fixture(scope="module")
def trained(crafted: dict[str, Path]) -> Path:
    """`prior train` on the crafted store: it trains (it reads no parser) and copies the spec
    into the checkpoint as a record; the payload does not run."""
    out = crafted["root"] / "run"
    # --parser names the parse to read (bert has no feature entry to decide it): matched against
    # the store's records as text, never loaded
    code, lines = invoke("train", "bert", "--backbone", crafted["backbone"], "--dataset", "toy",
                         "--store", crafted["store"], "--output", out, "--epochs", "1", "--batch-size", "2",
                         "--parser", f"biaffine:{crafted['evil']}", "--no-progress")
    assert code == 0, lines
    assert not crafted["marker"].exists()
    assert json.loads((out / "best" / "prior.json").read_text())["parser_spec"] == f"biaffine:{crafted['evil']}"
    return out


def refused(lines: list[str], where: str, evil: Path) -> None:
    assert len(lines) == 1, lines
    assert lines[0].startswith("error:") and where in lines[0] and "not loaded" in lines[0], lines[0]
    assert f"--parser biaffine:{evil}" in lines[0], lines[0]


def test_train_and_eval_on_the_crafted_store_run_nothing(crafted: dict[str, Path], trained: Path) -> None:
    code, lines = invoke("eval", trained, "--split", "test")
    assert code == 0 and lines[-1].startswith("accuracy="), lines
    assert not crafted["marker"].exists()


def test_predict_refuses_the_checkpoints_recorded_pickle(crafted: dict[str, Path], trained: Path) -> None:
    code, lines = invoke("predict", trained, "--a", "the cat sat", "--b", "a dog ran")
    assert code == 1
    refused(lines, "prior.json (parser_spec)", crafted["evil"])
    assert not crafted["marker"].exists()


def test_predict_refuses_the_stores_recorded_pickle(crafted: dict[str, Path], trained: Path, tmp_path: Path) -> None:
    """A checkpoint without its own spec falls back on the training store's record: refused too."""
    old = tmp_path / "old"
    shutil.copytree(trained / "best", old)
    meta = json.loads((old / "prior.json").read_text())
    meta.pop("parser_spec")
    (old / "prior.json").write_text(json.dumps(meta))
    code, lines = invoke("predict", old, "--a", "the cat sat", "--b", "a dog ran")
    assert code == 1
    refused(lines, f"the parses record of {crafted['store']}", crafted["evil"])
    assert not crafted["marker"].exists()


def test_python_api_refuses_recorded_and_loads_named_pickle(crafted: dict[str, Path], trained: Path,
                                                            tmp_path: Path) -> None:
    """`load_model(...).predict` refuses the recorded spec; the same spec given as ``parser=``
    is the caller's choice and is loaded: the payload runs (which shows the file is a live one)."""
    from prior.errors import ResourceError
    from prior.pipeline.parsers import UntrustedParserError
    from prior.pipeline.predict import build_pairs
    from prior.trainers import load_model

    with pytest.raises(UntrustedParserError, match="not loaded"):
        load_model(trained, store=str(tmp_path / "p"), builder=build_pairs).predict([("the cat sat", "a dog ran")])
    assert not crafted["marker"].exists()
    try:
        with pytest.raises(ResourceError, match="cannot load supar model"):
            load_model(trained, store=str(tmp_path / "p"), builder=build_pairs,
                       parser=f"biaffine:{crafted['evil']}").predict([("the cat sat", "a dog ran")])
        assert crafted["marker"].exists()
    finally:
        crafted["marker"].unlink(missing_ok=True)


def test_build_on_the_crafted_store_runs_nothing(crafted: dict[str, Path], tmp_path: Path) -> None:
    """`prior build` parses with its own --parser (default: the shipped model), never with the
    parser a store record names."""
    store = tmp_path / "store"
    shutil.copytree(crafted["store"], store)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"a": "A dog runs.", "b": "An animal moves.", "label": "entailment"}\n')
    code, lines = invoke("build", "--dataset", pairs, "--text-a", "a", "--text-b", "b", "--features", "sdoi",
                         "--parser", "spacy", "--workers", 0, "--store", store)
    assert code == 0, lines
    assert not crafted["marker"].exists()


@pytest.mark.parametrize("spec", ["spacy", "spacy:en_core_web_sm", "biaffine", "biaffine:MODEL_DIR"])
def test_recorded_spec_may_name_spacy_the_shipped_model_or_an_exported_dir(spec: str) -> None:
    from prior.pipeline.parsers import check_recorded_spec

    spec = spec.replace("MODEL_DIR", str(REPO / "data" / "parser"))
    assert check_recorded_spec(spec, "a store") == spec


@pytest.mark.parametrize("spec", ["biaffine:FILE", "biaffine:biaffine-dep-en", "biaffine:/no/such/dir",
                                  "biaffine:", "spacy:../model", "spacy:/abs/model", "stanza", "stanza:x",
                                  "biaffine:FILE\nerror: fake second line"])
def test_recorded_spec_refuses_anything_else_without_opening_it(spec: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from prior.pipeline.parsers import UntrustedParserError, check_recorded_spec

    evil, marker = tmp_path / "p.pt", tmp_path / "ran"
    evil.write_bytes(pickle.dumps(Payload(marker)))
    spec = spec.replace("FILE", str(evil))
    opened: list[object] = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    with pytest.raises(UntrustedParserError) as info:
        check_recorded_spec(spec, "the parses record of S")
    monkeypatch.undo()
    assert opened == [] and not marker.exists()
    message = str(info.value)
    assert "\n" not in message and message.startswith("the parses record of S names the parser")
    assert message.endswith((f"--parser {spec}", f"--parser '{spec}'", f"--parser {spec!r}"))


def test_exported_parser_with_a_transformer_encoder_is_refused(tmp_path: Path) -> None:
    """An exported model's settings cannot make supar fetch (and unpickle) a transformer."""
    from prior.errors import ResourceError
    from prior.pipeline.parsers.artifact import read_config

    model = tmp_path / "parser"
    shutil.copytree(REPO / "data" / "parser", model)
    config = json.loads((model / "config.json").read_text())
    config["model"].update(encoder="bert", bert="some/hub-model")
    (model / "config.json").write_text(json.dumps(config))
    with pytest.raises(ResourceError, match="only the LSTM \\+ char model"):
        read_config(model)


@pytest.mark.parametrize(("spec", "loads"), [
    ("spacy", False), ("spacy:en_core_web_sm", False), ("biaffine", False), ("biaffine:MODEL_DIR", False),
    ("biaffine:FILE", True), ("biaffine:biaffine-dep-en", True), ("spacy:../x", True), ("other:thing", True)])
def test_loads_code_judges_a_spec_from_its_text(spec: str, loads: bool, tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model.pt").write_bytes(b"")
    spec = spec.replace("MODEL_DIR", str(tmp_path / "model")).replace("FILE", str(tmp_path / "model.pt"))
    assert loads_code(spec) is loads


def test_a_build_hint_marks_a_recorded_pickle(crafted: dict[str, Path]) -> None:
    """A `prior build` line replayed from the store's records carries the recorded --parser, and
    says it loads a pickle when it does; a --parser the reader gave is printed as given."""
    from prior.cli.recipe import CommandLines
    from prior.featurestore import open_store
    from prior.featurestore.recipe import FeatureRecipe
    from prior.featurestore.selection import build_recipe, recorded_parsers

    store = open_store(crafted["store"], create=False)
    (parse,) = recorded_parsers(store)
    line = CommandLines().recipe(build_recipe(store, dataset="toy", split="train",
                                              features=[FeatureRecipe("sdoi")], parse=parse))
    assert f"--parser biaffine:{crafted['evil']}" in line and "# this --parser value comes from the store" in line
    mine = CommandLines().recipe(build_recipe(store, dataset="toy", split="train", features=[FeatureRecipe("sdoi")],
                                              parser=f"biaffine:{crafted['evil']}"))
    assert "#" not in mine

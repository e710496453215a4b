"""Nothing printed from a store's records can run code.

A recipe a store records is rendered into the ``prior build …`` lines that `verify`, `gc
--drop-damaged`, `frame` and missing-data errors print, and a user runs them as printed. So a
recorded recipe is checked against its schema before anything renders it (a record that fails
is a damaged record), the renderer never lets a value become a flag, ``--code`` is taken only as
an option the user typed, and a parse whose recorded spec loads a pickle is offered by id.

The crafted records are the ones an attacker used: a ``columns`` key that becomes ``--code``, and
a ``dataset`` or ``data_dir`` value ``--code=FILE``; each record's checksum recomputed, so only
the schema check stands between it and the printed line."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from prior.cli.main import app
from prior.cli.plugins import split_code_args
from prior.cli.recipe import PICK_BY_ID, CommandLines
from prior.featurestore.catalog import CATALOG, record_checksum, record_problem
from prior.featurestore.recipe import FeatureRecipe, Recipe, recipe_problem
from prior.featurestore.upgrade import convert_record
from tests.cli_run import cli
from tests.test_parser_trust import Payload, craft_store
from tests.trainers_fixtures import tiny_store

ROOT_COMMAND = typer.main.get_command(app)
#: imported, it leaves a file beside itself: the proof that the code ran
EVIL = "import pathlib\npathlib.Path(__file__).with_suffix('.ran').touch()\n"


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two splits of the bundled SICK slice, three pairs each (spaCy, `sdoi`)."""
    store = tmp_path_factory.mktemp("lines") / "store"
    cli("build", "--dataset", "sick", "--split", "train,trial", "--limit", 3, "--features", "sdoi",
        "--parser", "spacy", "--workers", 0, "--store", store)
    return store


@pytest.fixture
def no_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """`prior build` parses its line (where a ``--code`` file is imported) and stops before building."""
    import prior.pipeline.build as build_module

    def stop(options: Any, run: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "build", stop)


def craft_pairs_record(store: Path, split: str, change: dict[str, Any]) -> None:
    """Rewrite ``split``'s pairs record's recipe with ``change``, its checksum recomputed."""
    for path in (store / CATALOG).glob("*.json"):
        raw = json.loads(path.read_text())
        if raw["kind"] == "pairs" and raw["target"]["split"] == split:
            raw["meta"]["recipe"] = {**raw["meta"]["recipe"], **change}
            raw["checksum"] = record_checksum(raw)
            path.write_text(json.dumps(raw))
            return
    raise AssertionError(f"no pairs record of {split}")


def printed_lines(output: str) -> list[list[str]]:
    """The arguments of every ``prior …`` command line in ``output`` (after ``prior``)."""
    found = []
    for line in output.splitlines():
        if "prior build" in line:
            text = line[line.index("prior build"):].split("  #", 1)[0].strip().strip("`")
            found.append(shlex.split(text)[1:])
    return found


@pytest.mark.parametrize("change", [
    pytest.param({"columns": {"code": "EVIL"}}, id="columns-key"),
    pytest.param({"dataset": "--code=EVIL"}, id="dataset-value"),
    pytest.param({"data_dir": "--code=EVIL"}, id="data-dir-value"),
    pytest.param({"name": "x\nerror: a fake second line"}, id="name-newline"),
])
def test_a_crafted_recipe_is_a_damaged_record_and_no_printed_line_runs_code(built: Path, tmp_path: Path,
                                                                           change: dict[str, Any],
                                                                           no_build: None) -> None:
    evil = tmp_path / "evil_recipe.py"
    evil.write_text(EVIL)
    store = tmp_path / "store"
    shutil.copytree(built, store)
    craft_pairs_record(store, "train", json.loads(json.dumps(change).replace("EVIL", str(evil))))
    runner = CliRunner()
    verify = runner.invoke(app, ["store", "verify", "--store", str(store)])
    assert verify.exit_code == 1 and "records a recipe that" in verify.output, verify.output
    outputs = [verify.output]
    for args in (["store", "gc", "--drop-damaged", "--store", str(store)],
                 ["store", "frame", "--feature", "sdoi", "--dataset", "sick", "--split", "train", "--store", str(store)]):
        outputs.append(runner.invoke(app, args).output)
    lines = [args for output in outputs for args in printed_lines(output)]
    assert lines, outputs  # gc and frame print how to rebuild the split
    for args in lines:
        assert split_code_args(args, ROOT_COMMAND)[0] == [], args
        assert not any(str(evil) in a for a in args), args
        runner.invoke(app, args)  # run as printed (up to the build, where a --code file would have run)
    assert not evil.with_suffix(".ran").exists()
    assert "--code" not in "".join(outputs)


def test_the_code_flag_is_only_an_option_the_user_typed(tmp_path: Path, no_build: None) -> None:
    evil = tmp_path / "evil_value.py"
    evil.write_text(EVIL)
    for args in (["build", "--dataset", f"--code={evil}", "--store", str(tmp_path / "s")],
                 ["build", "--data-dir", f"--code={evil}", "--dataset", "sick", "--store", str(tmp_path / "s")],
                 ["store", "frame", "--dataset", "--code", str(evil)]):
        assert split_code_args(args, ROOT_COMMAND)[0] == [], args
        CliRunner().invoke(app, args)
    assert not evil.with_suffix(".ran").exists()
    typed = split_code_args(["build", "--dataset", "sick", "--code", str(evil), "--code=b.py"], ROOT_COMMAND)
    assert typed == ([str(evil), "b.py"], ["build", "--dataset", "sick"])


def test_a_parse_whose_recorded_spec_loads_a_pickle_is_offered_by_id(tmp_path: Path) -> None:
    """`prior embed train` (and train's parse selection) list the store's parses with the flag
    that picks each: a recorded spec that would load a pickle is never offered as --parser."""
    evil = tmp_path / "parser.pt"
    evil.write_bytes(__import__("pickle").dumps(Payload(tmp_path / "ran")))
    store = tmp_path / "store"
    tiny_store(store, features=())
    craft_store(store, f"biaffine:{evil}")
    result = CliRunner().invoke(app, ["embed", "train", "--store", str(store), "--out", str(tmp_path / "x.vec")])
    assert result.exit_code == 1
    assert f"--parser biaffine:{evil}" not in result.output and "--parse " in result.output, result.output
    assert PICK_BY_ID.strip() in result.output
    assert not (tmp_path / "ran").exists()


def test_recipes_the_build_records_pass_the_schema_and_crafted_ones_do_not() -> None:
    good = Recipe(dataset="/d/my file.csv", name="mine", data_dir="/d", columns={"text_a": "q 1", "label": None},
                  split="train,test", limit=5, features=(FeatureRecipe("emb", {"lookup": "lower", "nu": 0.25},
                                                                        {"embeddings": "/v.vec"}),),
                  parser="biaffine:/models/x", store="s3://bucket/store")
    assert recipe_problem(good.to_dict()) is None
    for bad, says in [({"dataset": "-x"}, "starts with '-'"), ({"extra": 1}, "unknown field"),
                      ({"columns": {"code": "/x.py"}}, "reader option 'code'"),
                      ({"columns": {"label_kind": "evil"}}, "label_kind"), ({"limit": True}, "positive integer"),
                      ({"split": "--code"}, "no split name"), ({"parser": "biaffine:"}, "no parser spec"),
                      ({"features": [{"name": "dep", "inputs": {"code": "/x.py"}}]}, "input 'code'"),
                      ({"features": [{"name": "--code"}]}, "no feature name"),
                      ({"features": [{"name": "dep", "options": {"nu": [1]}}]}, "not a single value"),
                      ({"store": "s\x1b[2Jx"}, "control character")]:
        problem = recipe_problem(bad)
        assert problem is not None and says in problem, (bad, problem)
    record = {"id": "01795733403628774212-1b5e8d2f6b68", "kind": "pairs", "rows": 1,
              "target": {"dataset": "d", "split": "s", "source_sha256": "x"},
              "files": {"pairs.parquet": {"size": 1, "blake2b": "0" * 32}}, "meta": {"recipe": {"dataset": "-x"}}}
    assert "records a recipe that has a dataset that starts with '-'" in str(record_problem(record))
    # format 1's build arguments become a recipe on `prior store upgrade`, checked the same way
    record["meta"] = {"build_args": ["--dataset", "--code=/x.py"]}
    assert "records a recipe that has a dataset that starts with '-'" in str(record_problem(convert_record(record, {})))


# ------------------------------------------------------------------ any recipe, rendered and read back
_SEGMENT = st.text(min_size=1, max_size=12).filter(lambda s: "/" not in s and "\x00" not in s and s not in (".", ".."))
_PATH = st.lists(_SEGMENT, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts))
_TEXT = st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s)
_NAME = st.from_regex(r"[A-Za-z0-9_+\-][A-Za-z0-9_.+\-]{0,10}", fullmatch=True).filter(lambda s: ".." not in s)
_SPLIT = st.lists(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.+\-]{0,6}", fullmatch=True), min_size=1, max_size=3)
_OPTION = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False, width=32), st.booleans(),
                    st.none(), st.text(max_size=10).filter(lambda s: "\x00" not in s))
RECIPES = st.builds(
    Recipe,
    dataset=st.one_of(_PATH, st.sampled_from(["sick", "mrpc", "--code=/evil.py", "-d"])),
    name=st.one_of(st.none(), _NAME),
    data_dir=st.one_of(st.none(), _PATH),
    columns=st.fixed_dictionaries({}, optional={"text_a": _TEXT, "text_b": _TEXT,
                                                "label": st.one_of(st.none(), _TEXT),
                                                "label_kind": st.sampled_from(["class", "score"])}),
    split=st.one_of(st.none(), _SPLIT.map(",".join)),
    limit=st.one_of(st.none(), st.integers(1, 10**6)),
    features=st.lists(st.sampled_from(["dep", "sdoi", "wup", "emb"]), unique=True, max_size=3).flatmap(
        lambda names: st.tuples(*[st.builds(FeatureRecipe, name=st.just(n),
                                            options=st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True),
                                                                    _OPTION, max_size=2),
                                            inputs=st.just({"embeddings": "/v.vec"} if n == "emb" else {}))
                                  for n in names])),
    parser=st.one_of(st.none(), st.sampled_from(["spacy", "biaffine"]), _TEXT.map(lambda t: f"biaffine:{t}")),
    store=st.one_of(st.none(), _PATH, st.just("--code=/evil.py")),
    annotate=st.lists(st.sampled_from(["lemmas", "upos", "tags", "ents"]), unique=True, max_size=4).map(tuple),
)


def _read_back(args: list[str], monkeypatch: pytest.MonkeyPatch) -> Recipe:
    """The recipe `prior build ARGS` would record, read by the command's own option parsing."""
    import prior.pipeline.build as build_module

    seen: dict[str, Any] = {}

    def fake_build(options: Any, run: Any) -> None:
        seen.update(options=options, run=run)
        raise KeyboardInterrupt  # stop here: nothing is built

    monkeypatch.setattr(build_module, "build", fake_build)
    result = CliRunner().invoke(app, ["build", *args])
    assert "options" in seen, result.output
    o, run = seen["options"], seen["run"]
    source = o.source_recipe(o.data_dir)
    features = tuple(FeatureRecipe(f, o.feature_options.get(f, {}),
                                   {"embeddings": str(o.embeddings)} if f == "emb" and o.embeddings else {})
                     for f in o.features)
    return source.with_(dataset=o.dataset, split=None if o.splits is None else ",".join(o.splits), limit=o.limit,
                        features=features, parser=o.parser, store=run.store.location,  # the StoreRef's location
                        annotate=o.annotate)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recipe=RECIPES)
def test_any_rendered_recipe_reads_back_as_itself_and_names_no_code(recipe: Recipe,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    line = CommandLines().recipe(recipe)
    args = shlex.split(line)
    assert args[:2] == ["prior", "build"]
    assert split_code_args(args[1:], ROOT_COMMAND)[0] == []
    back = _read_back(args[2:], monkeypatch)
    named = recipe.dataset in ("sick", "mrpc")
    default_features = ("dep", "sdoi", "wup")
    expected = recipe.with_(
        columns={} if named else {k: v for k, v in recipe.columns.items()
                                  if v != {"text_a": "sentence1", "text_b": "sentence2", "label": "label",
                                           "label_kind": "class"}[k]},
        features=recipe.features or tuple(FeatureRecipe(f) for f in default_features),
        parser=recipe.parser or "biaffine")
    assert back == expected

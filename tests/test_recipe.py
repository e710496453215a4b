"""The build recipe (`prior.featurestore.recipe`): its JSON form, the historic ``build_args``
records it replaces (old stores print the same build lines as new ones), and how it is written
as a ``prior build`` line (`prior.cli.recipe`) or, for library users, in words."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.cli.recipe import PICK_BY_ID, TRUST_NOTE, CommandLines
from prior.featurestore import open_store
from prior.featurestore import recipe as rc
from prior.featurestore.catalog import CATALOG, record_checksum
from prior.featurestore.missing import restore_line
from prior.featurestore.recipe import EntryPick, FeatureRecipe, PlainRenderer, Recipe, recipe_from_build_args

FULL = Recipe(dataset="/data/my.csv", name="mine", data_dir="/data", columns={"text_a": "first", "label": None},
              split="test", limit=5, features=(FeatureRecipe("emb", {"lookup": "lower"}, {"embeddings": "/v.vec"}),),
              parser="spacy:en_core_web_sm", store="s3://bucket/store")


def test_a_recipe_survives_json() -> None:
    assert Recipe.from_dict(json.loads(json.dumps(FULL.to_dict()))) == FULL
    assert Recipe().to_dict() == {} and Recipe.from_dict({}) == Recipe()
    # the trust mark is a property of where a parser spec was read, never recorded
    assert "recorded_parser_loads_code" not in FULL.with_(recorded_parser_loads_code=True).to_dict()


def test_the_command_line_renderer_writes_prior_build_lines() -> None:
    line = CommandLines().recipe(FULL)
    assert line == ("prior build --dataset /data/my.csv --name mine --data-dir /data --text-a first --label '' "
                    "--limit 5 --split test --features emb -o emb.lookup=lower --embeddings /v.vec "
                    "--parser spacy:en_core_web_sm --store s3://bucket/store")
    assert shlex.split(line)[:2] == ["prior", "build"]
    marked = CommandLines().recipe(Recipe(dataset="sick", parser="biaffine:/x.pt", recorded_parser_loads_code=True))
    assert marked == "prior build --dataset sick --parser biaffine:/x.pt" + TRUST_NOTE
    assert CommandLines().entry_pick(EntryPick("dep", {"nu": 0.25, "compare": "exact"}, "abcdef012345")) == \
        "-o dep.compare=exact -o dep.nu=0.25 or --entry abcdef012345"
    assert CommandLines().entry_pick(EntryPick("dep", {}, "abc")) == "--entry abc"
    assert CommandLines().parse_pick("spacy:en_core_web_sm", "p1") == "--parser spacy:en_core_web_sm"
    # a spec that would load code (a spaCy model folder may hold code) is picked by id instead
    assert CommandLines().parse_pick("spacy:my model", "p1") == "--parse p1" + PICK_BY_ID
    assert CommandLines().parse_pick(None, "p1") == "--parse p1"


def test_library_users_get_words_not_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rc, "_renderer", PlainRenderer())
    text = rc.render(FULL)
    assert "--" not in text and "prior build" not in text
    assert "dataset /data/my.csv" in text and "limit 5" in text and "feature emb with lookup=lower; embeddings /v.vec" in text
    assert rc.render_entry_pick(EntryPick("dep", {"nu": 0.25}, "abc")) == "options dep.nu=0.25 or entry abc"
    assert rc.render_parse_pick(None, "p1") == "parse p1"
    monkeypatch.setattr(rc, "_renderer", CommandLines())
    assert rc.render(FULL).startswith("prior build --dataset")


@pytest.mark.parametrize(("args", "options", "expected"), [
    (["--dataset", "/d/my.csv", "--name", "mine", "--data-dir", "/d", "--text-a", "first", "--label", ""], None,
     Recipe(dataset="/d/my.csv", name="mine", data_dir="/d", columns={"text_a": "first", "label": None})),
    (["--dataset", "sick"], None, Recipe(dataset="sick")),
    (["--features", "dep", "-o", "dep.nu=0.25"], {"nu": 0.25}, Recipe(features=(FeatureRecipe("dep", {"nu": 0.25}),))),
    (["--features", "emb", "--embeddings", "/v.vec"], {},
     Recipe(features=(FeatureRecipe("emb", {}, {"embeddings": "/v.vec"}),))),
])
def test_old_build_args_read_as_recipes(args: list[str], options: dict | None, expected: Recipe) -> None:
    assert recipe_from_build_args(args, options) == expected
    assert rc.read_recorded({"build_args": args}, options) == expected
    assert rc.read_recorded({"recipe": expected.to_dict(), "build_args": ["--dataset", "x"]}) == expected


def _to_old_format(store: Path) -> int:
    """Rewrite a store's records as an older `prior` wrote them: ``build_args`` instead of ``recipe``."""
    changed = 0
    for path in sorted((store / CATALOG).glob("*.json")):
        raw = json.loads(path.read_text())
        meta, target = raw.get("meta") or {}, raw["target"]
        if raw["kind"] == "pairs" and "recipe" in meta:
            r = meta.pop("recipe")
            meta["build_args"] = ["--dataset", r["dataset"], "--name", r["name"], "--text-a", "first",
                                  "--text-b", "second"]
        elif raw["kind"] == "feature" and "recipe" in target:
            target.pop("recipe")
            target["build_args"] = ["--features", "sdoi", "-o", "sdoi.relation=span-interval"]
        else:
            continue
        raw["checksum"] = record_checksum(raw)
        path.write_text(json.dumps(raw))
        changed += 1
    return changed


def test_a_store_with_old_records_prints_the_same_build_lines(tmp_path: Path) -> None:
    data = tmp_path / "my.csv"
    data.write_text("first,second,label\nA man is cooking.,A person cooks.,1\nThe cat sleeps.,A dog runs.,0\n")
    result = CliRunner().invoke(app, [
        "build", "--dataset", str(data), "--name", "mine", "--text-a", "first", "--text-b", "second",
        "--features", "sdoi", "-o", "sdoi.relation=span-interval", "--parser", "spacy", "--limit", "1",
        "--workers", "0", "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output

    def lines() -> tuple[str, str]:
        store = open_store(tmp_path / "s", create=False)
        return restore_line(store, "mine", "all"), store.missing_split("mine", "test")

    new = lines()
    assert new[0] == (f"prior build --dataset {data.resolve()} --name mine --text-a first --text-b second "
                      f"--limit 1 --split all --features sdoi -o sdoi.relation=span-interval --parser spacy "
                      f"--store {tmp_path / 's'}")
    assert new[1].endswith(f"add it with: prior build --dataset {data.resolve()} --name mine --text-a first "
                           f"--text-b second --split test --store {tmp_path / 's'}")
    assert _to_old_format(tmp_path / "s") >= 2
    assert "build_args" in (tmp_path / "s" / CATALOG).joinpath(
        next(p.name for p in (tmp_path / "s" / CATALOG).glob("*.json") if "build_args" in p.read_text())).read_text()
    assert lines() == new


def test_messages_name_options_through_the_installed_namer(monkeypatch: pytest.MonkeyPatch) -> None:
    """`prior.hints.option`: flags under the `prior` command (installed by importing prior.cli),
    words for library users."""
    import prior.cli  # noqa: F401 - installs the command line's namer
    from prior import hints

    assert hints.option("parser") == "--parser" and hints.option("drop_damaged") == "--drop-damaged"
    assert hints.option("backbone", "ID|PATH") == "--backbone 'ID|PATH'"
    assert hints.option("dataset", "-x") == "--dataset=-x" and hints.option("option", "k=v") == "-o k=v"
    monkeypatch.setattr(hints, "_namer", hints._words)
    assert hints.option("parser") == "`parser`" and hints.option("backbone", "PATH") == "backbone=PATH"

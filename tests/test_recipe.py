"""The build recipe (`prior.featurestore.recipe`): its JSON form, and how it is written as a
``prior build`` line (`prior.cli.recipe`) or, for library users, in words. (The ``build_args``
of format-1 stores are read by ``prior store upgrade``: `tests/test_store_upgrade.py`.)"""

from __future__ import annotations

import json
import shlex

import pytest

from prior.cli.recipe import PICK_BY_ID, TRUST_NOTE, CommandLines
from prior.featurestore import recipe as rc
from prior.featurestore.recipe import EntryPick, FeatureRecipe, PlainRenderer, Recipe

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

"""A build has spaCy annotate only what its features read (`prior.pipeline.parsers.annotations`):
a ``dep,sdoi`` build runs no tagger, lemmatizer or NER. Its parse keeps its id, records what it
holds, and is never served to a feature that reads more: a later ``wup`` build annotates those
sentences again (and gets what a ``wup`` build on an empty store gets), while a complete parse
serves every build."""

from __future__ import annotations

import numpy as np
import pytest

from prior.errors import NotFoundError, PriorError
from prior.featurestore import open_store
from prior.pipeline.build import build
from prior.pipeline.build_options import BuildOptions, RunOptions
from prior.pipeline.features.base import annotations_of
from prior.pipeline.features.registry import plan_features
from prior.pipeline.parsers.annotations import ALL, closure, skipped_components
from prior.pipeline.parsers.base import Parse

SM_PIPE = ["tok2vec", "tagger", "attribute_ruler", "lemmatizer", "ner", "senter"]  # the biaffine annotator's


def _build(store, features, parser="spacy", **kw):
    return build(BuildOptions(dataset="snli", splits=("test",), features=features, parser=parser, limit=12, **kw),
                 RunOptions(store=str(store), workers=0, progress=False))


def _needs(features: tuple[str, ...], **options) -> frozenset[str]:
    opts = BuildOptions(dataset="snli", features=features, feature_options=options)
    return closure(annotations_of(f for f, _ in plan_features(features, opts)))


def test_each_feature_reads_what_it_says():
    assert _needs(("dep", "sdoi")) == frozenset()
    assert _needs(("dep",), dep={"compare": "lemma"}) == {"lemmas", "upos", "tags"}
    assert _needs(("wup",)) == ALL  # names by entity type
    assert _needs(("wup",), wup={"name_entities": ""}) == {"lemmas", "upos", "tags"}
    assert _needs(("wup",), wup={"preset": "uerbert-code"}) == frozenset()
    assert _needs(("dep", "sdoi", "wup")) == ALL


def test_components_left_out_are_those_that_make_nothing_asked():
    assert skipped_components(SM_PIPE, ALL) == []
    assert skipped_components(SM_PIPE, {"ents"}) == ["tagger", "attribute_ruler", "lemmatizer", "tok2vec"]
    assert skipped_components(SM_PIPE, {"lemmas"}) == ["ner"]  # lemmas need UPOS, UPOS needs tags
    assert skipped_components(SM_PIPE, ()) == ["tagger", "attribute_ruler", "lemmatizer", "ner", "tok2vec"]
    spacy_pipe = ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "ner"]
    assert "tok2vec" not in skipped_components(spacy_pipe, ())  # spaCy's parser reads it
    with pytest.raises(PriorError, match="unknown parse annotation 'entities'"):
        closure({"entities"})


def test_annotating_less_changes_nothing_else():
    from prior.pipeline.parsers import get_parser

    texts = ["Barack Obama visited Paris on Tuesday.", "A man is playing a guitar. Two dogs run.",
             "The Americans' new plan costs $5 million."]
    parser = get_parser("biaffine", "cpu")
    full = parser.parse(texts)
    for asked in (frozenset(), frozenset({"ents"}), frozenset({"lemmas"})):
        made = closure(asked)
        part = parser.parse(texts, asked)
        for a, b in zip(full, part):
            assert (a.words, a.heads, a.rels) == (b.words, b.heads, b.rels)
            for name in ALL:
                assert getattr(b, name) == (getattr(a, name) if name in made else ("",) * len(a)), name
    assert any(e for p in full for e in p.ents) and any(u for p in full for u in p.upos)


def test_a_record_without_an_annotation_reads_as_a_parser_gives_it():
    record = {"words": ["Dogs", "run"], "lemmas": None, "upos": None, "tags": None, "heads": [2, 0],
              "rels": ["nsubj", "root"], "ents": None}
    assert Parse.from_record(record) == Parse(("Dogs", "run"), ("", ""), ("", ""), ("", ""), (2, 0),
                                              ("nsubj", "root"), ("", ""))


def test_a_parse_without_entities_is_annotated_again_for_wup(tmp_path):
    store_dir = tmp_path / "s"
    first = _build(store_dir, ("sdoi",))
    store = open_store(store_dir)
    (seg,) = store.segments("parses")
    assert seg.target["annotations"] == [] and seg.target["parse"] == first.parse  # same parse id
    keys = sorted(store.parsed_keys(first.parse))
    assert store.parsed_keys(first.parse, needs={"ents"}) == set()
    with pytest.raises(NotFoundError, match="holds no sentence annotated with ents"):
        store.parses(keys, parse=first.parse, needs={"ents"})  # what a feature that reads them asks
    assert set(store.parses(keys, parse=first.parse)["ents"].to_list()) == {None}  # null, never empty

    second = _build(store_dir, ("sdoi", "wup"))
    assert second.parse == first.parse
    parse = second.stage("parse")
    assert (parse.computed, parse.reused) == (len(keys), 0)  # annotated again, not served empty
    assert second.stage("feature sdoi").computed == 0  # its entry still holds every pair
    fresh = _build(tmp_path / "fresh", ("wup",))
    assert fresh.stage("parse").computed == len(keys)
    ours = open_store(store_dir).frame("wup", dataset="snli", split="test")
    theirs = open_store(tmp_path / "fresh").frame("wup", dataset="snli", split="test")
    assert ours["ents_a"].to_list() == theirs["ents_a"].to_list()
    assert any(e for row in ours["ents_a"].to_list() + ours["ents_b"].to_list() for e in row)
    for a, b in zip(ours["wup"].to_list(), theirs["wup"].to_list()):
        np.testing.assert_array_equal(np.array(a), np.array(b))


def test_a_complete_parse_serves_a_build_that_reads_less(tmp_path):
    store_dir = tmp_path / "s"
    first = _build(store_dir, ("wup",))
    second = _build(store_dir, ("dep", "sdoi"))
    assert second.stage("parse").reused == second.stage("parse").items > 0
    assert second.stage("parse").computed == 0
    store = open_store(store_dir)
    assert [s.target.get("annotations") for s in store.segments("parses")] == [None]  # complete: as always
    partial = _build(tmp_path / "partial", ("dep", "sdoi"))
    assert partial.parse == first.parse
    for name in ("dep", "sdoi"):  # the same values whether or not the parse holds entities
        ours = open_store(store_dir).frame(name, dataset="snli", split="test")
        theirs = open_store(tmp_path / "partial").frame(name, dataset="snli", split="test")
        assert ours.select(["words_a", "heads_a", "rels_a"]).to_dicts() == \
            theirs.select(["words_a", "heads_a", "rels_a"]).to_dicts()
        for column in [c for c in ours.columns if c.startswith(name)]:
            for a, b in zip(ours[column].to_list(), theirs[column].to_list()):
                np.testing.assert_array_equal(np.array(a), np.array(b))


def test_a_build_makes_the_annotations_asked_for_too(tmp_path):
    _build(tmp_path / "s", ("sdoi",), annotate=("ents",))
    (seg,) = open_store(tmp_path / "s").segments("parses")
    assert seg.target["annotations"] == ["ents"]
    with pytest.raises(PriorError, match="unknown annotation"):
        _build(tmp_path / "t", ("sdoi",), annotate=("entities",))
    assert not (tmp_path / "t" / "catalog").exists() or not open_store(tmp_path / "t").segments("parses")


def test_the_recipe_that_parses_again_asks_for_what_the_dropped_records_held():
    from prior.cli.recipe import CommandLines
    from prior.featurestore.recipe import Recipe, recipe_problem

    recipe = Recipe(dataset="sick", split="test", annotate=("lemmas", "ents"))
    assert Recipe.from_dict(recipe.to_dict()) == recipe
    assert "--annotate lemmas,ents" in CommandLines().recipe(recipe)
    assert recipe_problem(recipe.to_dict()) is None
    assert "annotations" in str(recipe_problem({"dataset": "sick", "annotate": ["--code=/x.py"]}))


def test_a_feature_is_never_computed_from_a_parse_without_what_it_reads(tmp_path, monkeypatch):
    """Were the parse stage to take such sentences as parsed, the feature's partition refuses
    in one line instead of reading empty entity types."""
    from prior.featurestore.segments import SegmentStore

    _build(tmp_path / "s", ("sdoi",))
    real = SegmentStore.parsed_keys
    monkeypatch.setattr(SegmentStore, "parsed_keys", lambda self, parse, needs=(): real(self, parse))
    with pytest.raises(NotFoundError, match="annotated with ents, lemmas"):
        _build(tmp_path / "s", ("wup",))
    assert not open_store(tmp_path / "s").entries("wup")

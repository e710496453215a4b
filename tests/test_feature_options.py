"""Feature options (`prior build -o FEATURE.NAME=VALUE`): parsing, checking, and their effect on
entry keys."""

import pytest
from typer.testing import CliRunner

from prior.cli.key_value import parse_feature_options, parse_value
from prior.cli.main import app
from prior.errors import PriorError
from prior.featurestore import open_store
from prior.pipeline.build_options import BuildOptions
from prior.pipeline.features.registry import features_for

runner = CliRunner()


def test_values_are_json_scalars_or_text():
    assert parse_value("0.25") == 0.25 and isinstance(parse_value("3"), int)
    assert parse_value("true") is True and parse_value("null") is None
    assert parse_value("uerbert-code") == "uerbert-code"
    with pytest.raises(PriorError, match="single values"):
        parse_value("[1, 2]")


def test_parse_groups_by_feature():
    got = parse_feature_options(["dep.nu=0.25", "dep.compare=exact", "wup.preset=uerbert-code"])
    assert got == {"dep": {"nu": 0.25, "compare": "exact"}, "wup": {"preset": "uerbert-code"}}


@pytest.mark.parametrize("bad", ["nu=0.25", "dep.nu", ".nu=1", "dep.=1"])
def test_malformed_option_is_named(bad):
    with pytest.raises(PriorError, match="FEATURE.NAME=VALUE") as err:
        parse_feature_options([bad])
    assert repr(bad) in str(err.value)


def test_repeated_option_is_an_error():
    with pytest.raises(PriorError, match="given twice"):
        parse_feature_options(["dep.nu=1", "dep.nu=2"])


def test_unknown_names_fail_before_any_work():
    def opts(**feature_options):
        return BuildOptions(dataset="snli", features=tuple(feature_options) or ("sdoi",),
                            feature_options=feature_options)

    with pytest.raises(PriorError, match="unknown option.*wup: colour; accepted: .*preset"):
        features_for(["wup"], opts(wup={"colour": 1}))
    with pytest.raises(PriorError, match="feature sdoi: x; accepted: leaf_self_loops, relation"):
        features_for(["sdoi"], opts(sdoi={"x": 1}))
    with pytest.raises(PriorError, match="unknown dep options"):
        features_for(["dep"], opts(dep={"gamma": 1}))
    with pytest.raises(PriorError, match="not being built: wup"):
        features_for(["sdoi"], BuildOptions(dataset="snli", features=("sdoi",), feature_options={"wup": {}}))
    wup = features_for(["wup"], opts(wup={"preset": "uerbert-code"}))[0]
    assert wup.params()["preset"] == "uerbert-code"
    # A list reaches a feature as one comma-separated string; an empty value is "".
    given = parse_feature_options(["wup.name_entities=PERSON,GPE", "sdoi.relation=span-interval",
                                   "sdoi.leaf_self_loops=false"])
    assert given["sdoi"] == {"relation": "span-interval", "leaf_self_loops": False}
    wup = features_for(["wup"], opts(wup=given["wup"]))[0]
    assert wup.params()["proper_names"]["entities"] == ["GPE", "PERSON"]
    empty = parse_feature_options(["wup.name_entities="])["wup"]
    assert features_for(["wup"], opts(wup=empty))[0].params()["proper_names"]["entities"] == []


def _build(store, *extra, features="dep"):
    return runner.invoke(app, ["build", "--dataset", "snli", "--split", "test", "--features", features, "--parser",
                               "spacy", "--limit", "4", "--workers", "0", "--store", str(store), *extra])


def test_cli_option_makes_a_second_entry_beside_the_default(tmp_path):
    store_dir = tmp_path / "s"
    first = _build(store_dir)
    assert first.exit_code == 0, first.output
    second = _build(store_dir, "-o", "dep.nu=0.25", "--option", "dep.theta=2")
    assert second.exit_code == 0, second.output
    default, tuned = open_store(store_dir).entries("dep")  # oldest first
    assert (tuned.params["nu"], tuned.params["theta"]) == (0.25, 2)
    assert (default.params["nu"], default.params["theta"]) != (0.25, 2)
    assert default.key != tuned.key
    bad = _build(store_dir, "-o", "dep.gamma=1")
    assert bad.exit_code == 1 and "unknown dep options" in bad.output and "Traceback" not in bad.output


def test_cli_sdoi_span_interval_is_an_entry_beside_the_unchanged_default(tmp_path):
    from prior.pipeline.features.sdoi import SdoiFeature

    store_dir = tmp_path / "s"
    assert _build(store_dir, features="sdoi").exit_code == 0
    second = _build(store_dir, "-o", "sdoi.relation=span-interval", "-o", "sdoi.leaf_self_loops=false",
                    features="sdoi")
    assert second.exit_code == 0, second.output
    default, authors = open_store(store_dir).entries("sdoi")  # oldest first
    assert default.params == SdoiFeature().params()
    assert authors.params == {"relation": "span-interval", "leaf_self_loops": False,
                              "roots": "forest-per-tree", "dtype": "uint8"}
    assert default.key != authors.key

"""One store, several builds: every read (Python, `prior show`, `prior store frame`,
`prior train`, `prior eval`) returns the entry asked for, complete, or an error that lists the
candidates; never nulls, never another entry's values.

The store: SICK with the default `dep` and `wup` and a variant of each (-o dep.nu=0.25
-o wup.preset=uerbert-code), and MRPC with the variant only.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest

from prior.featurestore import Request, open_store
from prior.featurestore.recipe import FeatureRecipe, Recipe
from prior.featurestore.selection import AmbiguousEntryError, EntrySelectionError, IncompleteEntryError
from tests.cli_run import cli, cli_error
from tests.trainers_fixtures import tiny_backbone

VARIANT = ["-o", "dep.nu=0.25", "-o", "wup.preset=uerbert-code"]


def build(store: Path, dataset: str, *extra: str, limit: int = 5) -> None:
    cli("build", "--dataset", dataset, "--split", "train,test", "--features", "dep,wup", "--parser", "spacy",
        "--limit", limit, "--workers", 0, "--store", store, *extra)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("entries")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        mp.setenv("PRIOR_NO_PROGRESS", "1")
        build(root / "store", "sick")
        build(root / "store", "sick", *VARIANT)
        build(root / "store", "mrpc", *VARIANT)
    return root / "store"


@pytest.fixture(scope="module")
def entries(store_path: Path) -> dict[str, object]:
    store = open_store(store_path, create=False)
    (wup_default,) = [e for e in store.entries("wup") if e.is_default]
    (wup_variant,) = [e for e in store.entries("wup") if not e.is_default]
    (dep_default,) = [e for e in store.entries("dep") if e.is_default]
    (dep_variant,) = [e for e in store.entries("dep") if not e.is_default]
    return {"wup": wup_default, "wup-variant": wup_variant, "dep": dep_default, "dep-variant": dep_variant}


def stored(store, entry, pair_keys, component):
    data = store.load_feature(entry)
    return [data.get(k)[component] for k in pair_keys]


def test_entries_record_their_options(entries) -> None:
    assert entries["wup-variant"].options == {"preset": "uerbert-code"}
    assert entries["dep-variant"].options == {"nu": 0.25}
    assert entries["wup"].options == {} and entries["dep"].options == {}
    assert entries["dep-variant"].recipe == Recipe(features=(FeatureRecipe("dep", {"nu": 0.25}),))


@pytest.mark.parametrize("dataset", ["sick", "mrpc"])
@pytest.mark.parametrize("split", ["train", "test"])
def test_python_reads_return_the_entry_asked_for(store_path: Path, entries, dataset: str, split: str) -> None:
    store = open_store(store_path, create=False)
    for feature, params, key in (("wup", {"preset": "uerbert-code"}, "wup-variant"),
                                 ("dep", {"nu": 0.25}, "dep-variant"),
                                 ("wup", None, "wup"), ("dep", None, "dep")):
        if dataset == "mrpc" and params is None:  # MRPC has the variant only: no silent fallback
            with pytest.raises(EntrySelectionError) as err:
                store.frame(feature, dataset=dataset, split=split)
            message = str(err.value)
            assert "(default) lacks 5 of the 5 pairs" in message  # and the line that adds them
            assert entries[f"{feature}-variant"].key[:12] in message  # or the entry that holds them
            assert f"-o {feature}." in message and "--entry" in message
            continue
        df = store.frame(feature, dataset=dataset, split=split, params=params)
        entry = entries[key]
        assert store.select(feature, Request(params=params), dataset=dataset, split=split)[0].key == entry.key
        column, component = ("wup", "wup") if feature == "wup" else ("dep_trigram", "trigram")
        assert df[column].null_count() == 0 and df.height == 5
        expected = stored(store, entry, df["pair_key"].to_list(), component)
        for got, want in zip(df[column].to_list(), expected):
            np.testing.assert_array_equal(np.asarray(got, dtype=np.float32), want)
        by_key = store.frame(feature, dataset=dataset, split=split, entry=entry.key[:10])
        assert by_key[column].to_list() == df[column].to_list()


def test_variants_differ_from_defaults(store_path: Path, entries) -> None:
    """The two entries really hold different values, so the reads above can tell them apart."""
    store = open_store(store_path, create=False)
    keys = store.pair_rows("sick", "test")["pair_key"].to_list()
    assert any(not np.array_equal(a, b) for a, b in zip(stored(store, entries["wup"], keys, "wup"),
                                                        stored(store, entries["wup-variant"], keys, "wup")))
    assert any(not np.array_equal(a, b) for a, b in zip(stored(store, entries["dep"], keys, "subgraph"),
                                                        stored(store, entries["dep-variant"], keys, "subgraph")))


def test_show_and_store_frame_say_which_entry(store_path: Path, entries) -> None:
    out = cli("show", "--dataset", "sick", "--pair", "2", "--feature", "wup", "--store", store_path)
    assert f"wup@{entries['wup'].version} entry {entries['wup'].key[:12]} default" in out
    assert "split train (of train, test" in out
    out = cli("show", "--dataset", "mrpc", "--split", "test", "--pair", "3", "--feature", "wup",
              "-o", "wup.preset=uerbert-code", "--store", store_path)
    assert f"{entries['wup-variant'].key[:12]} preset=uerbert-code" in out
    out = cli("show", "--dataset", "sick", "--pair", "2", "--feature", "dep", "--feature-param", "nu=0.25",
              "--store", store_path)
    assert f"{entries['dep-variant'].key[:12]} nu=0.25" in out
    err = cli_error("show", "--dataset", "mrpc", "--split", "test", "--pair", "3", "--feature", "wup",
                    "--store", store_path)
    assert entries["wup-variant"].key[:12] in err and "-o wup.preset=uerbert-code" in err
    out = cli("store", "frame", "--dataset", "sick", "--split", "test", "--feature", "dep", "--store", store_path,
              "--rows", 1)
    assert f"{entries['dep'].key[:12]} default" in out and "5 pairs" in out
    out = cli("store", "frame", "--dataset", "mrpc", "--split", "test", "--feature", "dep", "--store", store_path,
              "--entry", entries["dep-variant"].key[:8], "--rows", 1)
    assert f"{entries['dep-variant'].key[:12]} nu=0.25" in out
    err = cli_error("store", "frame", "--dataset", "mrpc", "--split", "test", "--feature", "dep",
                    "--store", store_path)
    assert entries["dep-variant"].key[:12] in err
    info = cli("store", "info", "--store", store_path)
    assert "preset=uerbert-code" in info and "nu=0.25" in info and "default" in info
    full = json.loads(cli("store", "info", "--json", "--store", store_path))
    assert {e["entry"] for e in full["entries"]} >= {e.key for e in entries.values()}


def test_train_and_eval_use_the_entry_asked_for(store_path: Path, entries, tmp_path: Path) -> None:
    backbone = tiny_backbone(tmp_path / "backbone")
    common = ["--backbone", backbone, "--store", store_path, "--epochs", 1, "--batch-size", 4, "--max-length", 64,
              "--no-progress"]

    def trained(model: str, dataset: str, *extra: object) -> dict:
        out = tmp_path / f"{model}-{dataset}-{len(extra)}"
        cli("train", model, "--dataset", dataset, "--output", out, *common, *extra)
        return json.loads((out / "best" / "prior.json").read_text()) | {"out": str(out)}

    meta = trained("bert-sim", "sick")
    assert meta["fingerprints"]["train"]["entries"] == {"wup": entries["wup"].key}
    meta = trained("bert-sim", "sick", "-o", "wup.preset=uerbert-code")
    assert meta["fingerprints"]["train"]["entries"] == {"wup": entries["wup-variant"].key}
    variant_run = meta["out"]
    meta = trained("dafa", "mrpc", "--feature-param", "nu=0.25")
    assert meta["fingerprints"]["train"]["entries"]["dep"] == entries["dep-variant"].key
    meta = trained("dafa", "sick", "--entry", entries["dep"].key[:12])
    assert meta["fingerprints"]["train"]["entries"]["dep"] == entries["dep"].key
    default_dafa = meta["out"]
    err = cli_error("train", "bert-sim", "--dataset", "mrpc", "--output", tmp_path / "x", *common)
    assert entries["wup-variant"].key[:12] in err and "-o wup.preset=uerbert-code" in err
    # eval reads exactly the recorded entries: the variant on MRPC too; the default is not there
    out = cli("eval", variant_run, "--dataset", "mrpc", "--split", "test", "--store", store_path)
    assert "accuracy=" in out.splitlines()[-1]
    err = cli_error("eval", default_dafa, "--dataset", "mrpc", "--split", "test", "--store", store_path)
    assert f"entry dep@2 {entries['dep'].key[:12]} (default) lacks 5 of the 5 pairs of mrpc/test" in err
    assert "prior build --dataset mrpc" in err


def test_train_without_dataset_lists_trainable_datasets(store_path: Path) -> None:
    err = cli_error("train", "bert-mini", "--store", store_path)
    assert "--dataset" in err and "mrpc, sick" in err


def test_incomplete_entry_names_the_build_that_completes_it(tmp_path: Path) -> None:
    """The printed build line adds exactly what is missing: run it, then the read succeeds."""
    store_path = tmp_path / "store"
    build(store_path, "sick")
    cli("build", "--dataset", "sick", "--split", "train", "--features", "wup", "-o", "wup.preset=uerbert-code",
        "--parser", "spacy", "--limit", 5, "--workers", 0, "--store", store_path)
    store = open_store(store_path, create=False)
    with pytest.raises(IncompleteEntryError) as err:
        store.frame("wup", dataset="sick", split="test", params={"preset": "uerbert-code"})
    assert err.value.missing == 5 and err.value.needed == 5
    args = shlex.split(err.value.command)
    assert args[:2] == ["prior", "build"] and "--limit" in args
    cli(*args[1:], "--workers", 0)
    store.refresh()
    df = store.frame("wup", dataset="sick", split="test", params={"preset": "uerbert-code"})
    assert df["wup"].null_count() == 0 and df.height == 5


def test_selecting_by_a_shared_parameter_keeps_the_default(store_path: Path, entries) -> None:
    """A parameter both entries share does not select the variant: its non-default option
    was not asked for."""
    store = open_store(store_path, create=False)
    params = {"wordnet": entries["wup"].params["wordnet"]}
    assert store.select("wup", Request(params=params), dataset="sick", split="test")[0].key == entries["wup"].key


def test_two_complete_candidates_are_ambiguous(store_path: Path, entries, tmp_path: Path) -> None:
    """Two default entries that both hold the split (here one with another parameter and no
    option that differs from the default): the read lists both with the flag that picks each."""
    import shutil

    from prior.featurestore import make_entry

    copy = tmp_path / "store"
    shutil.copytree(store_path, copy)
    store = open_store(copy, create=False)
    wup = entries["wup"]
    legacy = make_entry("wup", wup.version, {**wup.params, "extra": 1}, wup.parse, "pair", wup.components,
                        layout=wup.layout)
    data = store.load_feature(wup)
    keys = list(data.keys)
    store.write_feature(legacy, keys, [data.get(k) for k in keys])
    with pytest.raises(AmbiguousEntryError) as err:
        store.frame("wup", dataset="sick", split="test")
    message = str(err.value)
    assert "2 'wup' entries with default params that hold sick/test" in message
    assert f"--entry {wup.key[:12]}" in message and f"--entry {legacy.key[:12]}" in message
    assert store.frame("wup", dataset="sick", split="test", entry=legacy.key[:12]).height == 5

"""Dataset names in a store: `--name`, two files never share a name silently, and a rebuild
with another source or other reading options is refused (or replaces with --replace)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from prior.cli.main import app
from prior.featurestore import open_store

runner = CliRunner()


def write_csv(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("sentence1,sentence2,label\n" + "".join(f"{a},{b},{lab}\n" for a, b, lab in rows))
    return path


def build(store: Path, dataset: Path | str, *extra: str):
    return runner.invoke(app, ["build", "--dataset", str(dataset), "--features", "sdoi", "--parser", "spacy",
                               "--workers", "0", "--store", str(store), *extra])


ROWS = [("A man is cooking.", "A person cooks.", "1"), ("The cat sleeps.", "A dog runs.", "0")]


def test_name_option_names_a_file_dataset(tmp_path: Path) -> None:
    data = write_csv(tmp_path / "a" / "my.csv", ROWS)
    result = build(tmp_path / "s", data, "--name", "mine")
    assert result.exit_code == 0, result.output
    store = open_store(tmp_path / "s", create=False)
    assert store.datasets() == [("mine", "all")]
    meta = store.segments("pairs")[-1].meta
    assert (meta["recipe"]["dataset"], meta["recipe"]["name"]) == (str(data.resolve()), "mine")


def test_two_files_with_one_stem_do_not_share_a_name(tmp_path: Path) -> None:
    first = write_csv(tmp_path / "a" / "my.csv", ROWS)
    other = tmp_path / "b" / "my.jsonl"
    other.parent.mkdir()
    other.write_text("".join(json.dumps({"sentence1": a + " Really.", "sentence2": b, "label": lab}) + "\n"
                             for a, b, lab in ROWS))
    assert build(tmp_path / "s", first).exit_code == 0
    refused = build(tmp_path / "s", other)
    assert refused.exit_code == 1
    assert "my/all" in refused.output and "its source differs" in refused.output and "--name" in refused.output
    store = open_store(tmp_path / "s", create=False)
    assert store.pairs("my", "all")["text_a"].to_list() == ["A man is cooking.", "The cat sleeps."]
    assert build(tmp_path / "s", other, "--name", "my2").exit_code == 0
    store.refresh()
    assert sorted(store.datasets()) == [("my", "all"), ("my2", "all")]


def test_rebuild_with_other_reading_options_is_refused_or_replaces(tmp_path: Path) -> None:
    data = write_csv(tmp_path / "scores.csv", [("A man is cooking.", "A person cooks.", "4.5"),
                                              ("The cat sleeps.", "A dog runs.", "1.0")])
    assert build(tmp_path / "s", data).exit_code == 0
    refused = build(tmp_path / "s", data, "--label-kind", "score")
    assert refused.exit_code == 1
    assert "label_kind 'class' → 'score'" in refused.output and "--replace" in refused.output
    store = open_store(tmp_path / "s", create=False)
    assert store.pairs("scores", "all")["label"].to_list() == ["4.5", "1.0"]
    replaced = build(tmp_path / "s", data, "--label-kind", "score", "--replace")
    assert replaced.exit_code == 0, replaced.output
    store.refresh()
    assert store.pairs("scores", "all")["label"].to_list() == [4.5, 1.0]
    info = runner.invoke(app, ["store", "info", "--json", "--store", str(tmp_path / "s")])
    assert json.loads(info.output)["datasets"] == [{"dataset": "scores", "split": "all", "rows": 2}]


def test_changed_source_of_a_named_dataset_is_refused(tmp_path: Path) -> None:
    """A data directory with other files for a known dataset never changes what a split reads."""
    store = tmp_path / "s"
    assert build(store, "sick", "--split", "trial", "--limit", "4").exit_code == 0
    other = tmp_path / "data" / "sick"
    other.mkdir(parents=True)
    bundled = (Path(__file__).resolve().parents[1] / "data" / "sick").glob("*trial*")
    source = next(iter(bundled))
    lines = source.read_text().splitlines()
    (other / source.name).write_text("\n".join(lines[:3]) + "\n")
    refused = build(store, "sick", "--split", "trial", "--data-dir", str(tmp_path / "data"))
    assert refused.exit_code == 1 and "its source differs" in refused.output
    assert open_store(store, create=False).pair_rows("sick", "trial").height == 4


def test_a_name_that_cannot_be_a_path_is_refused_before_any_work(tmp_path: Path) -> None:
    data = write_csv(tmp_path / "my data.csv", ROWS)
    refused = build(tmp_path / "s", data)
    assert refused.exit_code == 1 and "'my data'" in refused.output and "--name" in refused.output
    assert build(tmp_path / "s", data, "--name", "../x").exit_code == 1
    assert build(tmp_path / "s", data, "--name", "my-data").exit_code == 0


def test_a_split_held_as_read_is_not_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild of a split whose file, reading options and rows the store holds takes its
    keys from the store: the file is not read again, and the result is the same."""
    from dataclasses import replace

    import prior.pipeline.datasets as datasets
    from prior.pipeline.build import build as run_build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    data = write_csv(tmp_path / "pairs.csv", ROWS)
    options = BuildOptions(dataset=str(data), features=("sdoi",), parser="spacy")
    run = RunOptions(store=str(tmp_path / "s"), workers=0, progress=False)
    first = run_build(options, run)
    with monkeypatch.context() as mp:
        mp.setattr(datasets, "read_split", lambda *a, **k: pytest.fail("the file was read again"))
        again = run_build(options, run)
        limited = run_build(replace(options, limit=1), run)
    assert again.computed == 0 and again.splits[0].pairs == first.splits[0].pairs == 2
    assert limited.splits[0].pairs == 1
    data.write_text(data.read_text() + "A bird sings.,A bird is singing.,1\n")  # the file changed
    refused = build(tmp_path / "s", data)
    assert refused.exit_code == 1 and "its source differs" in refused.output

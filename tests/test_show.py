"""`prior show` and the `dep` view on a real (tiny) build: M_F, ablations, text and heatmap."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from prior.cli.pairview import format_pair, pair_view
from prior.cli.show import show_cmd
from prior.errors import PriorError
from prior.featurestore import open_store
from prior.layouts.views import DEP_VIEWS, dafa_matrix, dep_view_name
from prior.pipeline.features.dep import subgraph_matrix, trigram_matrix
from prior.pipeline.features.forms import word_forms
from prior.pipeline.features.tfidf import IdfTable, tfidf_weights
from prior.pipeline.parsers.base import Parse


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    root = tmp_path_factory.mktemp("show")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRIOR_HOME", str(root / "home"))
        build(BuildOptions(dataset="sick", splits=("train", "trial"), features=("dep", "sdoi"), limit=8),
              RunOptions(store=str(root / "store"), workers=0, progress=False))
    return root / "store"


def test_show_dep_frame_combines_components(store_path: Path) -> None:
    store = open_store(store_path, create=False)
    df = store.frame("dep", dataset="sick", split="trial")
    for col in ("words_a", "rels_b", "dep", "dep_trigram", "dep_subgraph", "tfidf_a", "tfidf_b"):
        assert col in df.columns
    tfidf = store.find_entry("tfidf")
    assert tfidf.params["idf_splits"] == ["train"] and tfidf.params["dataset"] == "sick"
    train = store.pair_rows("sick", "train")
    assert tfidf.params["idf_docs"] == len(set(train["key_a"]) | set(train["key_b"]))
    res = store.read_resource(tfidf.params["idf"])
    idf = IdfTable.from_arrow(res.table, res.arrays)
    assert res.kind == "idf" and idf.n_docs == tfidf.params["idf_docs"]
    views = {name: store.frame(name, dataset="sick", split="trial")["dep"].to_list()
             for name in ("dep-no-trigram", "dep-no-subgraph", "dep-no-tfidf")}
    for i, rec in enumerate(df.iter_rows(named=True)):
        a = Parse.from_record({k: rec[f"{k}_a"] for k in Parse.__dataclass_fields__})
        b = Parse.from_record({k: rec[f"{k}_b"] for k in Parse.__dataclass_fields__})
        m, s = trigram_matrix(a, b), subgraph_matrix(a, b)
        np.testing.assert_array_equal(np.array(rec["dep_trigram"], dtype=np.float32), m)
        np.testing.assert_array_equal(np.array(rec["dep_subgraph"], dtype=np.float32), s)
        ta, tb = np.array(rec["tfidf_a"]), np.array(rec["tfidf_b"])
        np.testing.assert_allclose(ta, tfidf_weights(word_forms(a), idf), rtol=1e-6)
        np.testing.assert_allclose(np.array(rec["dep"]), np.abs(m + s) * np.outer(ta, tb), rtol=1e-5)
        np.testing.assert_allclose(np.array(views["dep-no-trigram"][i]), np.abs(s) * np.outer(ta, tb),
                                   rtol=1e-5)
        np.testing.assert_allclose(np.array(views["dep-no-subgraph"][i]), np.abs(m) * np.outer(ta, tb),
                                   rtol=1e-5)
        np.testing.assert_allclose(np.array(views["dep-no-tfidf"][i]), np.abs(m + s), rtol=1e-6)


def test_show_dafa_matrix_switches() -> None:
    m = np.array([[2.0, 0.0]], dtype=np.float32)
    s = np.array([[1.5, -1.0]], dtype=np.float32)
    ta, tb = np.array([0.5]), np.array([1.0, 0.25])
    np.testing.assert_allclose(dafa_matrix(m, s, ta, tb), [[1.75, 0.125]])  # |M + S| · tf tfᵀ
    np.testing.assert_allclose(dafa_matrix(m, s, ta, tb, use_tfidf=False), [[3.5, 1.0]])
    np.testing.assert_allclose(dafa_matrix(m, s, ta, tb, use_trigram=False), [[0.75, 0.125]])
    np.testing.assert_allclose(dafa_matrix(m, s, ta, tb, use_subgraph=False), [[1.0, 0.0]])
    # M and S both off: the tf-idf weights alone (Figure 4's "Dep_tf-idf"), not zeros
    np.testing.assert_allclose(dafa_matrix(m, s, ta, tb, use_trigram=False, use_subgraph=False),
                               [[0.5, 0.125]])
    np.testing.assert_allclose(dafa_matrix(m, s, ta, tb, use_trigram=False, use_tfidf=False),
                               [[1.5, 1.0]])
    with pytest.raises(PriorError, match="nothing left"):
        dafa_matrix(m, s, ta, tb, use_trigram=False, use_subgraph=False, use_tfidf=False)


def app() -> typer.Typer:
    a = typer.Typer()
    a.command("show")(show_cmd)
    a.command("other")(lambda: None)  # two commands, so "show" is a subcommand as in `prior`
    return a


def test_show_cli_prints_words_and_matrix_and_plots(store_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "heat.png"
    first = str(open_store(store_path, create=False).pair_rows("sick", "trial")["row"][0])
    result = CliRunner().invoke(app(), ["show", "--dataset", "sick", "--pair", first, "--split", "trial",
                                        "--feature", "dep", "--store", str(store_path),
                                        "--plot", str(out)])
    assert result.exit_code == 0, result.output
    store = open_store(store_path, create=False)
    rec = store.frame("dep", dataset="sick", split="trial").row(0, named=True)
    assert rec["text_a"] in result.output and "dep: A × B" in result.output
    first_row = [line for line in result.output.splitlines() if line.startswith(rec["words_a"][0] + " ")]
    assert first_row, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_show_plot_errors_are_one_line_and_print_no_matrix(store_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = str(open_store(store_path, create=False).pair_rows("sick", "trial")["row"][0])
    args = ["show", "--dataset", "sick", "--pair", first, "--split", "trial", "--feature", "dep",
            "--store", str(store_path), "--plot"]
    result = CliRunner().invoke(app(), [*args, "/proc/x.png"])
    assert result.exit_code == 1 and result.output.strip().splitlines() == [
        result.output.strip()] and "--plot /proc/x.png: cannot write the image" in result.output, result.output
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)  # not installed
    result = CliRunner().invoke(app(), [*args, "heat.png"])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output
    assert "pip install 'prior[plot]'" in result.output


def test_show_pair_by_key_prefix_and_sdoi(store_path: Path) -> None:
    store = open_store(store_path, create=False)
    key = store.pair_rows("sick", "train")["pair_key"][2]
    view = pair_view(store, "sick", key[:10], "sdoi")
    assert view.split == "train" and view.pair_key == key and len(view.panels) == 2
    a, b = view.panels
    assert a.matrix.shape == (len(a.rows), len(a.rows)) and np.all(np.diag(a.matrix) == 1)
    assert "sdoi: B × B" in format_pair(view)


def test_show_row_without_split_uses_the_first_split_and_says_so(store_path: Path) -> None:
    store = open_store(store_path, create=False)
    row = str(store.pair_rows("sick", "train")["row"][0])
    view = pair_view(store, "sick", row, "dep")
    assert view.split == "train" and "split train (of train, trial" in view.note
    text = format_pair(view)
    assert "split train (of train, trial" in text
    dep, tfidf = view.entries
    assert f"dep@2 entry {dep.key[:12]} default" in text and tfidf.name == "tfidf"
    result = CliRunner().invoke(app(), ["show", "--dataset", "sick", "--pair", row,
                                        "--store", str(store_path)])
    assert result.exit_code == 0 and "split train (of train, trial" in result.output


def test_show_errors_are_explained(store_path: Path) -> None:
    store = open_store(store_path, create=False)
    with pytest.raises(PriorError, match="no row 999"):
        pair_view(store, "sick", "999", "dep", split="train")
    with pytest.raises(PriorError, match="no dataset 'nope'"):
        pair_view(store, "nope", "1", "dep")
    result = CliRunner().invoke(app(), ["show", "--dataset", "sick", "--pair", "999",
                                        "--store", str(store_path)])
    assert result.exit_code == 1 and "no row 999" in result.output


def test_show_ablation_views_show_their_own_matrix(store_path: Path, tmp_path: Path) -> None:
    store = open_store(store_path, create=False)
    rec = store.frame("dep", dataset="sick", split="trial").row(0, named=True)
    n, m = len(rec["words_a"]), len(rec["words_b"])
    trigram = np.array(rec["dep_trigram"]).reshape(n, m)
    subgraph = np.array(rec["dep_subgraph"]).reshape(n, m)
    tf = np.outer(rec["tfidf_a"], rec["tfidf_b"])
    expected = {"dep": np.abs(trigram + subgraph) * tf, "dep-no-trigram": np.abs(subgraph) * tf,
                "dep-no-subgraph": np.abs(trigram) * tf, "dep-no-tfidf": np.abs(trigram + subgraph),
                "dep-no-trigram-no-subgraph": tf, "dep-no-trigram-no-tfidf": np.abs(subgraph),
                "dep-no-subgraph-no-tfidf": np.abs(trigram)}
    assert sorted(expected) == sorted(DEP_VIEWS)
    assert dep_view_name(trigram=False, tfidf=False) == "dep-no-trigram-no-tfidf"
    row = str(rec["row"])
    for name, matrix in expected.items():
        view = pair_view(store, "sick", row, name, split="trial")
        (panel,) = view.panels
        assert panel.title == f"{name}: A × B" and panel.rows == rec["words_a"]
        np.testing.assert_allclose(panel.matrix, matrix, rtol=1e-5)
    out = tmp_path / "no-tfidf.png"
    result = CliRunner().invoke(app(), ["show", "--dataset", "sick", "--pair", row, "--split", "trial",
                                        "--feature", "dep-no-tfidf", "--store", str(store_path),
                                        "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert "dep-no-tfidf: A × B" in result.output and out.stat().st_size > 0

"""The benchmark scripts run: each on a tiny input, end to end as the lead runs it, so a change
to the build's or the trainers' API cannot leave a script broken until someone times it. The
numbers are not looked at (timings under test load mean nothing); only that the script ends and
writes its result. bench/compare.py and bench/oracle.py run on the tiny store and a random tiny
BERT (a few pairs, one epoch)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.trainers_fixtures import tiny_backbone, tiny_store

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
TINY_BUILD = "--split trial --limit 3 --parser spacy --features sdoi --workers 0"


def run_script(name: str, *args: object, tmp_path: Path, timeout: int = 600) -> str:
    env = dict(os.environ, PRIOR_HOME=str(tmp_path / "home"), PRIOR_NO_PROGRESS="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(BENCH / name), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


compare = load("compare")
oracle = load("oracle")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("bench")
    tiny_store(root / "store")
    return root / "store", tiny_backbone(root / "backbone")


@pytest.fixture(scope="module")
def tiny_dafa(tiny: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dafa checkpoint of the tiny store (one epoch on the tiny backbone): its best/."""
    from prior.cli.main import app

    store, backbone = tiny
    run = tmp_path_factory.mktemp("dafa") / "run"
    trained = CliRunner().invoke(app, ["train", "dafa-mini", "--dataset", "toy", "--store", str(store), "--output",
                                       str(run), "--backbone", str(backbone), "--epochs", "1", "--batch-size", "2",
                                       "--threads", "1", "--no-progress"])
    assert trained.exit_code == 0, trained.output
    return run / "best"


class _OneAtATime:
    """A stand-in for compare.py's ``ThreadPoolExecutor``: each job runs when its result is taken.
    `CliRunner` captures a command's output by swapping the process's ``sys.stdout``, so the line
    compare.py prints for one run would land in the output of a run another thread has started."""

    def __init__(self, workers: int) -> None:
        pass

    def __enter__(self) -> _OneAtATime:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def map(self, fn: Any, items: Any) -> Any:
        return map(fn, items)


def _in_process(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """compare.py's `prior` commands run in this process (the same CLI, without a subprocess's
    start-up), one at a time (`_OneAtATime`); returns the list the commands are appended to."""
    from prior.cli.main import app

    monkeypatch.setattr(compare, "ThreadPoolExecutor", _OneAtATime)
    calls: list[list[str]] = []

    def prior(*args: object, threads: int) -> tuple[list[str], str]:
        cmd = ["prior", *map(str, args)]
        calls.append(cmd)
        result = CliRunner().invoke(app, cmd[1:])
        assert result.exit_code == 0, result.output
        return cmd, result.stdout

    monkeypatch.setattr(compare, "prior", prior)
    return calls


def _main(module: Any, monkeypatch: pytest.MonkeyPatch, *argv: object) -> None:
    monkeypatch.setattr(sys, "argv", [f"bench/{Path(str(module.__file__)).name}", *map(str, argv)])
    module.main()


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_bench_startup_pairs_a_checkout_with_this_one(tmp_path: Path) -> None:
    """bench/startup.py with this checkout on both sides (what the lead runs with the commit that
    still had the start-up tricks as ``--before``)."""
    out = run_script("startup.py", "--before", REPO, "--only", "before:none", "--rounds", "1", "--what", "help,noop",
                     "--build-args", TINY_BUILD, "--out", tmp_path / "out", tmp_path=tmp_path)
    (result,) = (tmp_path / "out").glob("startup-*.json")
    rows = {r["configuration"]: r for r in json.loads(result.read_text())["rows"]}
    assert set(rows) == {"after", "before:none"} and rows["after"]["noop"]["paired_ratio_to_after"] == 1.0
    assert "before:none" in out


def test_bench_parse_pair_runs_this_checkout_twice(tmp_path: Path) -> None:
    """bench/parse_pair.py with this checkout on both sides parses the same trees on both."""
    out = run_script("parse_pair.py", "--data-dir", REPO / "data", "--limit", 12, "--rounds", 1,
                     "--out", tmp_path / "out", tmp_path=tmp_path)
    (result,) = (tmp_path / "out").glob("parse-pair-*.json")
    row = json.loads(result.read_text())
    assert row["sentences"] == 12 and row["same_trees"] == 12 and set(row["summary"]) == {"before", "after"}
    assert "same trees: 12 of 12" in out


def test_bench_parse_model_section_runs_without_spacy(tmp_path: Path) -> None:
    """bench/parse.py --n 0 --int8 (EWT gold words only) needs no spaCy: the way it runs on a GPU
    machine that has torch but not spaCy. spaCy is made unimportable in the child."""
    code = ("import runpy, sys; sys.modules['spacy'] = None; sys.path.insert(0, sys.argv[1]); "
            "sys.argv = [sys.argv[1] + '/parse.py', *sys.argv[2:]]; runpy.run_path(sys.argv[0], run_name='__main__')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code, str(BENCH), "--n", "0", "--ewt", str(REPO / "data" / "ud_ewt_slice"
                           / "test.conllu"), "--ewt-limit", "15", "--rounds", "1", "--skip-backends", "--int8",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = (tmp_path / "out").glob("parse-*.json")
    model = json.loads(result.read_text())["model"]
    assert set(model["speed"]) == {"ewt-test"} and model["exactness_ewt_test"]["sentences"] == 15
    assert model["exactness_ewt_test"]["differing_heads"] == 0
    assert model["speed"]["ewt-test"]["int8"]["words_per_s"] > 0 and 0 < model["int8_ewt_test"]["LAS"] <= 100
    assert model["int8_ewt_test"]["product"] in ("int", "float")
    # bench/int8_product.py: the products of two tiny shapes, this run's line, both tables
    lines = tmp_path / "int8.jsonl"
    matmul = subprocess.run([sys.executable, str(BENCH / "int8_product.py"), "matmul", "--shapes", "3x16x8", "5x40x24",
                             "--reps", "2"], capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    parse = subprocess.run([sys.executable, str(BENCH / "int8_product.py"), "parse-line", str(result), "--label", "tiny",
                            "--command", "bench/parse.py ..."], capture_output=True, text=True, env=env, timeout=300,
                           check=True).stdout
    lines.write_text(matmul + parse, encoding="utf-8")
    rows = [json.loads(line) for line in lines.read_text(encoding="utf-8").splitlines()]
    assert [r["kind"] for r in rows] == ["matmul", "matmul", "parse"] and all(r["same_sums"] for r in rows[:2])
    assert rows[2]["sentences"] == 15 and rows[2]["int8_LAS"] == model["int8_ewt_test"]["LAS"]
    table = subprocess.run([sys.executable, str(BENCH / "int8_product.py"), "table", str(lines)], capture_output=True,
                           text=True, env=env, timeout=300, check=True).stdout
    assert "| 3 × 16 × 8 |" in table and "| 5 × 40 × 24 |" in table and "| tiny | 15 (" in table


@pytest.mark.slow
def test_bench_build_runs(tmp_path: Path) -> None:
    run_script("build.py", "--datasets", "snli", "--pairs", 4, "--workers", 0, "--features", "sdoi,wup",
               "--parsers", "spacy", "-o", "wup.name_entities=", "--out", tmp_path / "out", tmp_path=tmp_path)
    (written,) = (tmp_path / "out").glob("build-*.json")
    result = json.loads(written.read_text(encoding="utf-8"))
    assert result["options"] == ["wup.name_entities="] and result["runs"][0]["pairs"] == 4


def test_bench_wup_names_counts_the_cells_an_entity_rule_changes(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled SNLI test slice, the default names against PROPN only (the build without NER):
    every changed cell counted, and each one's name word counted by case."""
    monkeypatch.delenv("PRIOR_DATA_DIR", raising=False)
    out = run_script("wup_names.py", "--dataset", "snli", "--split", "test", "--old", "", tmp_path=tmp_path)
    differ = re.search(r"(\d[\d,]*) cells differ .*; (\d[\d,]*) higher, (\d[\d,]*) lower", out)
    case = re.search(r"changed cell: (\d[\d,]*) lowercase, (\d[\d,]*) capitalized", out)
    assert differ and case, out
    total, up, down = (int(g.replace(",", "")) for g in differ.groups())
    lower, upper = (int(g.replace(",", "")) for g in case.groups())
    assert total > 0 and up + down == total and lower + upper == total


@pytest.mark.slow
def test_bench_scale_runs(tmp_path: Path) -> None:
    run_script("scale.py", "--sizes", 30, "--workers", 1, "--parser", "spacy", "--data-dir", REPO / "data",
               "--work", tmp_path / "work", tmp_path=tmp_path)
    assert list((tmp_path / "work").glob("scale-*.jsonl"))


@pytest.mark.slow
def test_bench_build_all_runs(tmp_path: Path) -> None:
    run_script("build_all.py", "--data-dir", REPO / "data", "--features", "sdoi", "--parser", "spacy",
               "--workers", 1, "--limit", 3, "--subset-pairs", 20, "--ceiling-repeat", 0, "--out", tmp_path / "out",
               tmp_path=tmp_path)
    assert list((tmp_path / "out").glob("*.json"))


@pytest.mark.slow
def test_bench_scaling_worker_start_up_runs() -> None:
    startup = load("scaling").worker_startup(1, "spacy", 1)
    assert set(startup) == {"cluster_s", "parser_load_s", "total_s"}


@pytest.mark.slow
def test_bench_features_build_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(tmp_path / "home"))
    features = load("features")
    features.PARSER = "spacy"
    report = features._build(tmp_path / "store", ("sdoi",), 0, 4)
    assert sum(s.pairs for s in report.splits) == 4


@pytest.mark.slow
def test_bench_s3_requests_runs(tmp_path: Path) -> None:
    pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e .[test])")
    out = run_script("s3_requests.py", "--limit", 4, "--partition-size", 2, "--features", "sdoi", tmp_path=tmp_path)
    assert "fresh build: " in out and "no-op rebuild: " in out


def test_compare_runs_grid_and_report_end_to_end(tiny: tuple[Path, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store, backbone = tiny
    calls = _in_process(monkeypatch)
    tiny_args = f"--backbone {backbone} --epochs 1 --batch-size 4"
    out = tmp_path / "toy.jsonl"
    _main(compare, monkeypatch, "runs", "--store", store, "--dataset", "toy", "--seeds", "1",
          "--models", "bert;bert-sim", "--train-args", tiny_args, "--parallel", "1",
          "--runs", tmp_path / "runs", "--out", out)
    bert, sim = _records(out)
    assert (bert["variant"], sim["variant"]) == (f"bert {tiny_args}", f"bert-sim {tiny_args}")
    assert 0 <= sim["test_accuracy"] <= 1 and set(sim["sensitivity"]) == {"neutral", "shuffled"}
    assert "sensitivity" not in bert  # bert reads no feature
    assert bert["dev"].endswith("held out of train (seed 0)") and bert["dev_pairs"] == 1  # toy has no dev split
    assert sim["command"].startswith("prior train bert-sim-mini --dataset toy")
    assert (sim["device"], sim["device_name"]) == ("cpu", None)  # where it ran (a GPU's name on CUDA)
    # resumable: the same command again trains nothing
    n = len(calls)
    _main(compare, monkeypatch, "runs", "--store", store, "--dataset", "toy", "--seeds", "1",
          "--models", "bert;bert-sim", "--train-args", tiny_args, "--runs", tmp_path / "runs", "--out", out)
    assert len(calls) == n
    grid = tmp_path / "grid.jsonl"
    _main(compare, monkeypatch, "grid", "--store", store, "--dataset", "toy", "--models", "sgnet",
          "--prior-lrs", "1e-3,1e-4", "--train-args", f"--backbone {backbone} --batch-size 4", "--epochs", "1",
          "--runs", tmp_path / "runs", "--out", grid)
    cells = _records(grid)
    assert [c["prior_lr"] for c in cells] == [1e-3, 1e-4]
    assert [c["settings"]["prior_lr"] for c in cells] == [1e-3, 1e-4]
    assert all(c["device"] == "cpu" for c in cells)
    assert all("--eval-split" not in c["command"] for c in cells)  # the grid reads dev only
    capsys.readouterr()
    _main(compare, monkeypatch, "report", out)
    table = capsys.readouterr().out
    assert f"| bert-sim-mini {tiny_args} | 1 |" in table


def test_oracle_one_and_report_end_to_end(tiny: tuple[Path, Path], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`one` trains with the oracle, scores the checkpoint with it and with the neutral feature
    (the task read from the stored labels, as `prior train` reads it) and writes its record."""
    store, backbone = tiny
    out = tmp_path / "oracle.jsonl"
    _main(oracle, monkeypatch, "one", "--model", "bert-sim", "--seed", "1", "--store", store,
          "--dataset", "toy", "--runs", tmp_path / "runs", "--out", out, "--epochs", "1",
          "--sample", "1", "--batch-size", "4", "--backbone", backbone)
    (record,) = _records(out)
    assert record["kind"] == "oracle" and record["oracle_levels"] == list(oracle.SIM_LEVELS)
    assert record["device"] == "cpu"
    assert 0 <= record["test_accuracy"] <= 1 and 0 <= record["test_accuracy_neutral"] <= 1
    # the forced-class check: one row per class the oracle says, each counting every test pair
    assert record["classes"] == ["0", "1"] and [sum(row) for row in record["forced"]] == [4, 4]
    capsys.readouterr()
    _main(oracle, monkeypatch, "report", out, "--baseline", tmp_path / "none.jsonl")
    assert "| bert-sim-mini | 1 |" in capsys.readouterr().out
    forced = compare.report(compare._report_parser().parse_args([str(out), "--table", "forced"]))[0][1]
    assert forced.splitlines()[2].startswith("| bert-sim-mini | 0, 0.5, 1 | 0 | ")


def test_saturation_curve_and_the_levels_chosen_from_it(tiny: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    store, backbone = tiny
    out = tmp_path / "sat.jsonl"
    _main(oracle, monkeypatch, "saturation", "--store", store, "--dataset", "toy", "--pairs", "4", "--fresh",
          "--levels", "1,2,10", "--backbone", backbone, "--out", out)
    rows = _records(out)
    assert [r["level"] for r in rows] == [1.0, 2.0, 10.0] and rows[0]["attention_tv"] == 0.0
    assert rows[0]["cls_change"] == 0.0 and sum(rows[0]["predicted"]) == 4
    assert rows[2]["attention_tv"] >= rows[1]["attention_tv"] > 0  # G scales cross-sentence logits
    table = compare.report(compare._report_parser().parse_args([str(out)]))[0][1]
    assert table.splitlines()[2].startswith("| dafa (initialised) | 1 | 0.000 |")
    curve = [{"level": v, "attention_tv": r} for v, r in ((1, 0.0), (2, 0.3), (4, 0.6), (10, 0.8), (100, 0.9))]
    assert oracle.chosen_levels(curve) == (1.0, 2.0, 4.0)


def test_saturation_of_a_trained_checkpoint(tiny: tuple[Path, Path], tiny_dafa: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`saturation --checkpoint`: the curve of a trained dafa, one row per level, every pair predicted
    (the pairs tokenized by ``--backbone``'s tokenizer, the checkpoint's here)."""
    store, backbone = tiny
    out = tmp_path / "sat.jsonl"
    _main(oracle, monkeypatch, "saturation", "--store", store, "--dataset", "toy", "--pairs", "3",
          "--levels", "1,5", "--checkpoint", tiny_dafa, "--backbone", backbone, "--out", out)
    rows = _records(out)
    assert [(r["model"], r["level"]) for r in rows] == [(str(tiny_dafa), 1.0), (str(tiny_dafa), 5.0)]
    assert rows[0]["attention_tv"] == 0.0 < rows[1]["attention_tv"] and [sum(r["predicted"]) for r in rows] == [3, 3]

def test_oracle_runs_passes_its_options_on_and_fails_when_a_run_fails(tiny: tuple[Path, Path], tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`runs` hands every option to its `one` runs (the levels, the pairs, the batch, the sample) and
    exits non-zero when one of them writes no record."""
    store, backbone = tiny
    out = tmp_path / "oracle.jsonl"
    with pytest.raises(SystemExit) as failed:
        _main(oracle, monkeypatch, "runs", "--models", "dafa;nosuch", "--seeds", "1", "--store", store,
              "--dataset", "toy", "--runs", tmp_path / "runs", "--out", out, "--epochs", "1", "--parallel", "1",
              "--sample", "1", "--limit", "3", "--batch-size", "2", "--levels", "1,2,3", "--backbone", backbone)
    assert "1 of 2 oracle runs failed" in str(failed.value.code)
    (record,) = _records(out)
    assert record["variant"] == "dafa --levels 1,2,3" and record["oracle_levels"] == [1.0, 2.0, 3.0]
    assert record["sample"] == 1 and record["settings"]["batch_size"] == 2
    assert [sum(row) for row in record["forced"]] == [3, 3]  # the first 3 test pairs, each class forced



def test_dafa_fusion_reads_a_trained_checkpoint(tiny: tuple[Path, Path], tiny_dafa: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """bench/dafa_fusion.py, both modes, on a dafa checkpoint of the tiny store (the tiny backbone
    standing in for MiniLM)."""
    from prior.trainers import backbones

    store, backbone = tiny
    monkeypatch.setattr(backbones, "mini_path", lambda: str(backbone))
    fusion = load("dafa_fusion")
    capsys.readouterr()
    _main(fusion, monkeypatch, "--feature", "--store", store, "--dataset", "toy", "--pairs", "3",
          "--checkpoint", tiny_dafa)
    (gates,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert gates["pairs"] == 3 and gates["grid"] == "stored M_F" and 0 < gates["f_mean"] < 1
    assert gates["command"].startswith("python bench/dafa_fusion.py --feature --store ")
    _main(fusion, monkeypatch, "--store", store, "--dataset", "toy", "--pairs", "3", "--checkpoint", tiny_dafa)
    rows = {r["model"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(rows) == {"dafa (initialised)", str(tiny_dafa)}
    assert all(0 < r["g_mean"] < 1 and -1 <= r["cls_cos"] <= 1 for r in rows.values())


def test_gpu_evidence_script_parses_and_builds_its_arguments() -> None:
    """bench/gpu_evidence.sh runs only on a GPU machine; here: the script parses, and the
    helpers its phases use give what compare.py expects (--train-args as one argument, RTE's
    labelled split, the smoke mode's extra arguments)."""
    script = str(BENCH / "gpu_evidence.sh")

    def sh(*args: str, **env: str) -> list[str]:
        done = subprocess.run(["bash", script, *args], capture_output=True, text=True, env={**os.environ, **env},
                              timeout=60, check=True)
        return done.stdout.splitlines()

    subprocess.run(["bash", "-n", script], check=True, timeout=60)
    subprocess.run(["bash", "-n", str(BENCH / "gpu_pack.sh")], check=True, timeout=60)  # it downloads: syntax only
    assert sh("train_args", "--prior-lr", "1e-4") == ["--train-args", "--prior-lr 1e-4"]
    assert sh("train_args") == []
    assert sh("train_args", "--prior-lr", "1e-4", SMOKE="1") == ["--train-args", "--limit 16 --epochs 1 --prior-lr 1e-4"]
    assert (sh("eval_split", "rte"), sh("eval_split", "mrpc")) == (["glue_dev"], ["test"])


def test_bench_build_counts_what_a_device_changes_in_a_store(tmp_path: Path) -> None:
    """bench/build.py's CPU-against-CUDA comparison: parses and items that differ are counted
    (one head, one cell), and two builds of the same data agree everywhere."""
    import numpy as np
    import polars as pl

    build = load("build")
    cols = {"words": [["a", "b"], ["c"]], "lemmas": [["a", "b"], ["c"]], "upos": [["X", "X"], ["X"]],
            "tags": [["X", "X"], ["X"]], "rels": [["root", "dep"], ["root"]], "ents": [["", ""], [""]]}
    a = pl.DataFrame({"sent_key": ["k1", "k2"], "heads": [[0, 1], [0]], **cols})
    b = pl.DataFrame({"sent_key": ["k1", "k2", "k3"], "heads": [[2, 0], [0], [0]],
                      **{c: v + [["z"]] for c, v in cols.items()}})
    got = build.parse_agreement(a, b)
    assert (got["sentences"], got["sentences_only_one_side"], got["words"]) == (2, 1, 3)
    assert (got["sentences_heads_differ"], got["words_head_or_rel_differ"], got["sentences_rels_differ"]) == (1, 2, 0)
    m = np.eye(2, dtype=np.float32)
    changed = m.copy()
    changed[0, 1] = 0.25
    items = build.items_agreement({"p": {"x": m, "y": m}, "q": {"x": m, "y": m}},
                                  {"p": {"x": m, "y": changed}, "q": {"x": m, "y": m}, "r": {"x": m, "y": m}})
    assert items == {"items": 2, "items_differ": 1, "max_abs_diff": 0.25, "keys_only_one_side": 1}
    assert build.items_agreement({"p": {"x": m}}, {"p": {"x": np.eye(3)}})["max_abs_diff"] == float("inf")
    tiny_store(tmp_path / "one")
    tiny_store(tmp_path / "two")
    same = build.device_agreement(tmp_path / "one", tmp_path / "two")
    assert same["parse_ids_equal"] and same["sentences"] > 0 and same["words_head_or_rel_differ"] == 0
    assert {"wup", "dep", "sdoi", "emb"} <= set(same["entries"])
    assert all(e["items"] > 0 and e["items_differ"] == 0 for e in same["entries"].values())


def test_gpu_evidence_unpacks_each_archive_where_the_build_reads_it(tmp_path: Path) -> None:
    """bench/gpu_pack.sh's archives: WordNet, the data and the site-packages trees each land
    where `gpu_evidence.sh build` points PRIOR_WORDNET_DIR, PRIOR_DATA_DIR and PYTHONPATH."""
    import tarfile

    for archive, member in (("wordnet.tar.xz", "wordnet/data.noun"), ("data.tar.xz", "sick/SICK.txt"),
                            ("polars.tar.xz", "_polars_runtime_32/x.so"), ("site.tar.xz", "spacy/__init__.py")):
        src = tmp_path / "src" / member
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(member)
        with tarfile.open(tmp_path / archive, "w:xz") as tar:
            tar.add(src, arcname=member)
    root = tmp_path / "unpacked"
    subprocess.run(["bash", str(BENCH / "gpu_evidence.sh"), "unpack",
                    *(str(tmp_path / a) for a in ("wordnet.tar.xz", "data.tar.xz", "polars.tar.xz", "site.tar.xz"))],
                   check=True, timeout=60, env={**os.environ, "UNPACK": str(root), "PY": sys.executable})
    for member in ("share/wordnet/data.noun", "data/sick/SICK.txt", "site/_polars_runtime_32/x.so",
                   "site/spacy/__init__.py"):
        assert (root / member).read_text() == member.split("/", 1)[1]


def test_gpu_evidence_build_phase_runs_on_a_cpu(tmp_path: Path) -> None:
    """`gpu_evidence.sh build` end to end with the CPU in CUDA's place: WordNet and the data
    unpacked from their archives, bench/build.py run with the phase's flags (and BUILD_ARGS
    shrinking it), its result written where the phase says."""
    import tarfile

    from prior.pipeline.resources.wordnet import wndb_dir

    snli, wordnet = REPO.parent / "shared" / "data" / "snli", wndb_dir()
    if not snli.is_dir() or wordnet is None:
        pytest.skip("needs ../shared/data/snli and WordNet's files")
    with tarfile.open(tmp_path / "wordnet.tar", "w") as tar:
        tar.add(wordnet, arcname="wordnet")
    with tarfile.open(tmp_path / "data.tar", "w") as tar:
        tar.add(snli, arcname="snli")
    env = {**os.environ, "UNPACK": str(tmp_path / "u"), "PY": sys.executable, "PRIOR_NO_PROGRESS": "1",
           "BUILD_ARGS": "--parse-devices cpu --parsers spacy --features sdoi --datasets snli --pairs 4 --workers 0"}
    done = subprocess.run(["bash", str(BENCH / "gpu_evidence.sh"), "build", str(tmp_path / "res"),
                           str(tmp_path / "wordnet.tar"), str(tmp_path / "data.tar")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (written,) = (tmp_path / "res").glob("build-*.json")
    runs = json.loads(written.read_text(encoding="utf-8"))["runs"]
    assert [(r["parser"], r["pairs"]) for r in runs] == [("spacy", 4)]
    assert (tmp_path / "u" / "share" / "wordnet" / "data.noun").is_file()


def test_bench_reliability_pairs_two_trees_and_breaks_the_checks_down(tiny: tuple[Path, Path],
                                                                      tmp_path: Path) -> None:
    """bench/reliability.py both ways on the tiny store: this tree paired with itself (the
    frames it reads agree in rows), and the checks' share of one cold pass, each part timed."""
    store, _ = tiny
    out = run_script("reliability.py", "--store", store, "--dataset", "toy", "--features", "wup,sdoi",
                     "--old-src", REPO, "--rounds", "2", "--out", tmp_path / "out", tmp_path=tmp_path)
    assert re.search(r"^cold: new/old median [\d.]+ \(range", out, re.M)
    (result,) = (tmp_path / "out").glob("reliability-*.json")
    record = json.loads(result.read_text())
    assert len(record["runs"]) == 2 and record["rows"] == record["runs"][0]["old"]["rows"] > 0
    assert set(record["summary"]) == {"cold", "cold_cpu", "warm", "warm_cpu"}
    out = run_script("reliability.py", "--store", store, "--dataset", "toy", "--features", "wup,sdoi",
                     "--breakdown", "--rounds", "2", tmp_path=tmp_path)
    rounds = [json.loads(line) for line in out.splitlines()]
    assert len(rounds) == 2
    (tmp_path / "rounds.jsonl").write_text(out)
    row = run_script("reliability.py", "--table", tmp_path / "rounds.jsonl", tmp_path=tmp_path).splitlines()[-1]
    assert row.startswith("| 2 | ") and row.count("–") == 6
    for parts in rounds:  # every wrapped function was called within each cold pass: none measures nothing
        assert all(parts[k] > 0 for k in ("read_checked", "reading_in_checked", "record_problem", "inside")), parts
        assert 0 < parts["checks_s"] < parts["pass_s"]


def test_bench_cda_layer1_probes_each_init_against_bert(tiny: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """bench/cda_layer1.py on the tiny store, the tiny backbone standing in for MiniLM: one line
    per initialisation, each with the four functions' weights."""
    from prior.trainers import backbones
    from prior.trainers.models.cda import FUNCTIONS, INITS

    store, backbone = tiny
    monkeypatch.setattr(backbones, "mini_path", lambda: str(backbone))
    layer1 = load("cda_layer1")
    capsys.readouterr()
    _main(layer1, monkeypatch, "--store", store, "--dataset", "toy", "--pairs", "3")
    rows = {r["model"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert set(rows) == {f"cda -o init={scheme} (initialised)" for scheme in INITS}
    for row in rows.values():
        assert row["pairs"] == 3 and row["attn_norm_ratio"] > 0 and -1 <= row["cls_cos"] <= 1
        assert set(row["function_weights"]) == set(FUNCTIONS)
        assert abs(sum(row["function_weights"].values()) - 1) < 1e-3


def test_bench_run_queue_runs_waits_records_and_retries(tmp_path: Path) -> None:
    """bench/run_queue.py: jobs in order, a job that waits for a file another job writes, a
    failed job recorded with its code; started again, the queue runs only what did not end with 0."""
    flag, log = tmp_path / "flag", tmp_path / "ran"
    jobs = tmp_path / "jobs.txt"
    jobs.write_text(f"# a comment\necho one >> {log}\nafter:{flag} echo two >> {log}\n\n"
                    f"echo three >> {log}; touch {flag}\necho four >> {log}; exit 3\n")
    out = run_script("run_queue.py", jobs, "--workers", "1", "--poll", "0.05", tmp_path=tmp_path)
    assert out.strip().endswith("queue empty")
    assert log.read_text().split() == ["one", "three", "two", "four"]  # the earliest line ready first
    state = [json.loads(line) for line in (tmp_path / "jobs.txt.state").read_text().splitlines()]
    assert {r["line"]: r["rc"] for r in state} == {2: 0, 3: 0, 5: 0, 6: 3}
    assert (tmp_path / "jobs.txt.logs" / "2.log").read_text().startswith("# ")
    run_script("run_queue.py", jobs, "--workers", "2", "--poll", "0.05", tmp_path=tmp_path)
    assert log.read_text().split() == ["one", "three", "two", "four", "four"]


def test_bench_s3_verify_times_verify_on_moto(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    """bench/s3_verify.py on the tiny store: copied to moto, verified whole, with the round trip
    it adds to each request recorded."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e .[test])")
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    store, _ = tiny
    out = json.loads(run_script("s3_verify.py", "--store", store, "--latency-ms", 1, tmp_path=tmp_path)
                     .strip().splitlines()[-1])
    assert out["ok"] is True and out["latency_ms"] == 1 and out["verify_s"] > 0
    assert out["segments"] == len(list((store / "catalog").glob("*.json"))) and out["files"] >= out["segments"]
    (tmp_path / "lines.jsonl").write_text(json.dumps({"label": "tiny", "commit": "c0ffee", **out}) + "\n")
    row = run_script("s3_verify.py", "--table", tmp_path / "lines.jsonl", tmp_path=tmp_path).splitlines()[-1]
    assert row == (f"| tiny (c0ffee) | 1 | {out['verify_s']:.1f} | {out['segments']:,} | {out['files']:,} | yes |")

"""The trainers' benchmarks run end to end on a tiny store, so they cannot rot: the loader's
(`bench/loader.py`), the shuffle-quality table, the resume benchmark and the device check
(`bench/train.py`, `bench/gpu_check.py` on the CPU). Timings mean nothing here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainers_fixtures import tiny_backbone

REPO = Path(__file__).resolve().parents[1]


def bench(*args: object, timeout: int = 600) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, *(str(a) for a in args)], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "store"
    out = bench("bench/loader.py", "make", path, "--pairs", 300, "--sentences", 200, "--partition", 100, "--ids")
    assert "300 pairs" in out
    return path


def test_bench_loader_make_writes_snli_shaped_ids(store: Path) -> None:
    from prior.featurestore import open_store

    ids = open_store(store, create=False).pair_rows("synth", "train")["id"]
    assert ids.null_count() == 0 and ids.n_unique() == 300
    assert ids.str.contains(r"^\d{10}\.jpg#[0-4]r1[enc]$").all()


def test_bench_loader_make_refuses_a_store_that_exists(store: Path) -> None:
    """Made again into the same folder, the store would hold every pair twice, and a read of
    its split would read twice the rows it serves."""
    proc = subprocess.run([sys.executable, "bench/loader.py", "make", str(store), "--pairs", "300"], cwd=REPO,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert proc.returncode != 0 and "exists and is not empty" in proc.stderr


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status (Linux)")
def test_bench_loader_index_memory(store: Path) -> None:
    row = json.loads(bench("bench/loader.py", "index-memory", "--store", store).strip().splitlines()[-1])
    steps = [s["step"] for s in row["steps"]]
    assert row["split_pairs"] == 300 and row["index_arrays_mib"] >= 0
    assert steps[0] == "imports and tokenizer" and steps[-2:] == ["index built", "5 s later"]
    assert {"numbered_split", "plan_feature", "locate_keys", "_words"} <= set(steps)
    assert all(s["peak"] >= s["rss"] > 0 for s in row["steps"])


def test_bench_loader_words(store: Path) -> None:
    row = json.loads(bench("bench/loader.py", "words", "--store", store, "--rounds", 2).strip().splitlines()[-1])
    assert row["segments"] > 0 and row["sentences"] >= 200
    assert [len(t) for t in row["seconds"].values()] == [2, 2]
    # one row group per small segment: both ways find the same distinct words
    assert row["distinct_words_summed"]["strings"] == row["distinct_words_summed"]["dictionaries"] > 0


def test_bench_loader_numbered_times_this_checkout_and_another(store: Path) -> None:
    lines = [json.loads(line) for line in bench("bench/loader.py", "numbered", "--store", store, "--against", REPO,
                                                 "--calls", 2, "--rounds", 1).strip().splitlines()]
    assert len(lines) == 2 and all(r["pairs"] == 300 and 0 < r["min_s"] <= r["median_s"] for r in lines)
    assert lines[0]["sums"] == lines[1]["sums"] and lines[0]["sentences"] == lines[1]["sentences"] > 0


def test_bench_loader_run_and_sizes(store: Path, tmp_path: Path) -> None:
    lines = []
    for workers in (0, 2):
        lines.append(bench("bench/loader.py", "run", "--store", store, "--workers", workers, "--window", 64,
                           "--piece", 16).strip().splitlines()[-1])
        row = json.loads(lines[-1])
        assert row["pairs"] == row["split_pairs"] == 300 and row["batches"] == 10 and row["first_batch_s"] > 0
        assert row["second_half_pairs_per_s"] > 0  # timed from the batch that reaches 150 pairs
        assert row["peak_rss_mib"]["this"] > 0 and (workers == 0 or row["peak_rss_mib"]["largest_worker"] > 0)
        if workers == 2:  # the run before kept the split's index for this catalog
            assert row["index_recorded"] is True
    table = bench("bench/loader.py", "sizes", store, "--run-args", "--workers", "0", "--steps", "3")
    assert "| store | pairs |" in table and f"| {store} | 300 |" in table
    runs, labelled = tmp_path / "runs.jsonl", tmp_path / "labelled.jsonl"
    runs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    labelled.write_text("".join(json.dumps({**json.loads(line), "label": f"w{w}", "command": "..."}) + "\n"
                                for w, line in zip((0, 2), lines)), encoding="utf-8")
    first = [json.loads(line)["first_batch_s"] for line in lines]
    summary = bench("bench/loader.py", "summary", runs, labelled).splitlines()
    assert summary[0].startswith("| runs | pairs | index recorded |") and len(summary) == 5
    assert summary[2].startswith(f"| {runs}: 2 | 300 | 1 | ") and f"{min(first):.2f} / " in summary[2]
    assert summary[3].startswith(f"| {labelled} w0: 1 | 300 | 0 | ") and f"| {first[0]:.2f} / " in summary[3]
    assert summary[4].startswith(f"| {labelled} w2: 1 | 300 | 1 | ")


def test_bench_loader_s3(store: Path) -> None:
    pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e .[test])")
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    out = bench("bench/loader.py", "s3", "--store", store, "--workers", "0", "--steps", "4")
    assert "local: first batch" in out and "s3 (moto): first batch" in out


def test_bench_loader_fetched_counts_what_a_run_fetches_from_s3_and_tables_them(store: Path, tmp_path: Path) -> None:
    pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install -e .[test])")
    pytest.importorskip("s3fs", reason="s3fs is not installed")
    out = json.loads(bench("bench/loader.py", "fetched", "--store", store, "--steps", "4",
                           "--latency-ms", "1").strip().splitlines()[-1])
    lines = tmp_path / "lines.jsonl"
    as_s3 = {k: v for k, v in out.items() if k != "fetched_mib"}  # an `s3` line counts nothing
    lines.write_text(json.dumps({"label": "tiny", "commit": "c0ffee", **out, "latency_ms": 0}) + "\n"
                     + json.dumps({"label": "tiny, local", "commit": "c0ffee", **as_s3}) + "\n"
                     + json.dumps({"label": "tiny delayed", "commit": "c0ffee", **out}) + "\n")
    table = bench("bench/loader.py", "fetched-table", lines)
    delayed = table.split("With a round trip added to each request")[1].split("With the loader's workers")[0]
    assert f"| tiny delayed (c0ffee) | 4 | 1 | {out['index_s']:.1f} | " in delayed and "| tiny (" not in delayed
    assert f"| tiny (c0ffee) | 4 | {out['fetched_mib']:,.1f} | {out['whole_files']:,} (" in table
    assert "Part of an epoch" in table and "| tiny (c0ffee) | 4 | " in table.split("With the loader's workers")[1]
    assert out["workers"] == 0 and out["batches"] == 4 and out["store"] == str(store)
    assert out["requests"] == out["whole_files"] + out["ranges"] and out["whole_files"] > 0
    assert out["fetched_mib"] == pytest.approx(out["whole_mib"] + out["range_mib"], abs=0.11)
    assert out["fetched_mib"] > 0 and out["kib_per_pair"] > 0 and out["store_mib"] > 0
    assert out["latency_ms"] == 1  # the round trip added to each request, recorded with the line


def test_bench_shuffle_quality() -> None:
    out = bench("bench/shuffle_quality.py", "--pairs", 3000, "--windows", 512, "--pieces", 32, "--epochs", 1)
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| order |") and rows[1].startswith("| full shuffle | 0.") and len(rows) == 3


def test_bench_resume_and_loader_per_feature(store: Path, tmp_path: Path) -> None:
    backbone = tiny_backbone(tmp_path / "backbone")
    out = bench("bench/train.py", "resume", "--store", store, "--dataset", "synth", "--model", "bert",
                "--save-every", 2, "--kill-at", 4, "--threads", 1, "--out", tmp_path,
                "--train-args", f"--backbone {backbone} --batch-size 8 --epochs 2")
    row = json.loads(out.strip().splitlines()[-1])
    assert 0 <= row["steps_lost"] <= 2 + 4 and row["resume_s_without_model_load"] > 0
    assert row["resumed_at"][2] == row["saved_step"]
    table = bench("bench/train.py", "loader", "--store", store, "--dataset", "synth", "--workers", 0)
    assert "| dep | 300 |" in table


def test_bench_gpu_check_runs_on_the_cpu(store: Path, tmp_path: Path) -> None:
    from prior.trainers.backbones import mini_path

    bench("bench/gpu_check.py", "--store", store, "--tokenizer", mini_path(), "--out", tmp_path / "out",
          "--work", tmp_path / "work", "--device", "cpu", "--skip-training")
    rows = [json.loads(x) for x in (tmp_path / "out" / "gpu_check.jsonl").read_text().splitlines()]
    assert [r["model"] for r in rows if r["check"] == "model_on_device" and r["ok"]] == \
        ["bert", "bert-sim", "sgnet", "dafa", "gibert", "cda"]

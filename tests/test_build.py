"""The build end to end on bundled data with the spaCy backend (sdoi only unless stated:
it needs no resources, so these tests isolate the orchestration)."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from prior.errors import NotFoundError, PriorError
from prior.featurestore import StoreRef, open_store
from prior.pipeline.build import build
from prior.pipeline.build_options import BuildOptions, RunOptions
from prior.pipeline.features.sdoi import sdoi_mask
from prior.pipeline.parsers import get_parser
from prior.pipeline.partitions import partitions


def _opts(store, *, workers=0, scheduler=None, partition_size=2000, **kw) -> tuple[BuildOptions, RunOptions]:
    what = dict(dataset="snli", splits=("test",), features=("sdoi",), parser="spacy", limit=12) | kw
    return BuildOptions(**what), RunOptions(store=store if isinstance(store, StoreRef) else str(store),
                                            workers=workers, scheduler=scheduler, partition_size=partition_size,
                                            progress=False)


def _frame_rows(store_dir, feature="sdoi", dataset="snli", split="test"):
    df = open_store(store_dir).frame(feature, dataset=dataset, split=split)
    return df.drop([c for c in df.columns if c.endswith("_key") or c.startswith("key_")]).to_dicts()


@pytest.mark.parametrize(("n", "workers", "size"), [(9842, 2, 2000), (6077, 2, 2000), (2000, 1, 2000),
                                                     (9842, 3, 2000), (799, 2, 2000), (3, 2, 2000), (5, 4, 2)])
def test_partitions_cover_items_in_order_and_balance_workers(n, workers, size):
    parts = partitions(list(range(n)), workers, size)
    assert [i for p in parts for i in p] == list(range(n))
    assert max(map(len, parts)) <= size and max(map(len, parts)) - min(map(len, parts)) <= 1
    assert len(parts) % workers == 0 or len(parts) == n  # equal share per worker unless items are too few
    assert len(parts) >= min(n, workers)


@pytest.mark.parametrize(("n", "workers", "size"), [(3950, 2, 2000), (9842, 3, 2000), (801, 2, 2000),
                                                     (7, 2, 2000), (2, 2, 2000), (40, 2, 12)])
def test_weighted_partitions_balance_cost_not_count(n, workers, size):
    rng = random.Random(n)
    weights = [rng.choice([20, 40, 60, 300]) + 23 for _ in range(n)]
    parts = partitions(list(range(n)), workers, size, weights)
    assert [i for p in parts for i in p] == list(range(n)) and all(parts)
    assert len(parts) % workers == 0 or len(parts) == n
    assert max(map(len, parts)) <= size
    if len(parts) < n:
        # every partition within one item of the ideal share
        share = sum(weights) / len(parts)
        assert all(abs(sum(weights[i] for i in p) - share) <= max(weights) for p in parts)


def test_weighted_partitions_put_long_sentences_apart():
    weights = [1000, 1000, 1, 1, 1, 1, 1, 1]  # two long sentences first, then short ones
    assert partitions(list(range(8)), 2, 2000) == [[0, 1, 2, 3], [4, 5, 6, 7]]  # counts: 2003 vs 4
    assert partitions(list(range(8)), 2, 2000, weights) == [[0], [1, 2, 3, 4, 5, 6, 7]]  # 1000 vs 1006
    assert partitions(list(range(4)), 2, 2000, [0, 0, 0, 0]) == [[0, 1], [2, 3]]  # no cost known: counts
    with pytest.raises(ValueError, match="3 weights for 4 items"):
        partitions(list(range(4)), 2, 2000, [1, 2, 3])


def test_build_snli_slice_then_noop_rerun(tmp_path):
    from prior.featurestore.segment_cache import PARSE_SEGMENTS

    report = build(*_opts(tmp_path / "s"))
    assert len(PARSE_SEGMENTS) == 0  # the in-process build's tasks cached parse segments, then let go
    assert report.splits[0].pairs == 12 and report.stage("feature sdoi").computed > 0
    df = open_store(tmp_path / "s").frame("sdoi", dataset="snli", split="test")
    assert df.height == 12
    for rec in df.iter_rows(named=True):
        assert np.array(rec["sdoi_a"]).tolist() == sdoi_mask(rec["heads_a"]).tolist()
        assert len(rec["words_b"]) == len(rec["sdoi_b"])
    again = build(*_opts(tmp_path / "s"))
    assert again.computed == 0
    assert again.stage("parse").reused == report.stage("parse").items
    assert again.stage("feature sdoi").reused == report.stage("feature sdoi").items


def test_build_larger_limit_computes_only_new_rows(tmp_path):
    first = build(*_opts(tmp_path / "s", limit=6))
    second = build(*_opts(tmp_path / "s", limit=12))
    assert second.splits[0].new_rows == 6
    assert 0 < second.stage("parse").computed < first.stage("parse").computed + 12
    assert open_store(tmp_path / "s").pairs("snli", "test").height == 12


def test_build_second_dataset_reuses_shared_parses(tmp_path):
    build(*_opts(tmp_path / "s", dataset="sick", splits=("test",), limit=10))
    report = build(*_opts(tmp_path / "s", dataset="sick-r", splits=("test",), limit=10))
    parse = report.stage("parse")
    assert parse.computed == 0 and parse.reused == parse.items > 0
    assert report.stage("feature sdoi").computed == 0  # per-sentence features are shared too
    store = open_store(tmp_path / "s")
    assert store.pairs("sick-r", "test")["label"].dtype.is_float()


def test_build_counts_unusable_rows_and_handles_long_sentences(tmp_path):
    folder = tmp_path / "data" / "snli"
    folder.mkdir(parents=True)
    long_text = " ".join(["word"] * 500) + "."
    rows = [{"sentence1": "A dog runs.", "sentence2": "An animal moves.", "gold_label": "entailment"},
            {"sentence1": "A cat sits.", "sentence2": "A cat stands.", "gold_label": "-"},
            {"sentence1": "   ", "sentence2": "Nothing.", "gold_label": "neutral"},
            {"sentence1": long_text, "sentence2": "Words.", "gold_label": "neutral"}]
    (folder / "snli_1.0_test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    # 501 words: over the default word limit (tests/test_long_sentences.py), parsed with a higher one
    report = build(*_opts(tmp_path / "s", data_dir=tmp_path / "data", limit=None, max_words=600))
    split = report.splits[0]
    assert split.pairs == 2 and sum(split.skipped.values()) == 2
    assert all("snli_1.0_test.jsonl" in e for e in split.skip_examples)
    df = open_store(tmp_path / "s").frame("sdoi", dataset="snli", split="test")
    assert np.array(df["sdoi_a"][1].to_list()).shape == (501, 501)


def test_build_failing_item_is_counted_and_retried_on_rerun(tmp_path, monkeypatch):
    from prior.pipeline.features import sdoi as sdoi_mod

    real = sdoi_mod.sdoi_mask
    bad_len = len(get_parser("spacy").parse(["Two women are embracing while holding to go packages."])[0])

    def flaky(heads):
        if len(heads) == bad_len:
            raise ValueError("boom")
        return real(heads)

    monkeypatch.setattr(sdoi_mod, "sdoi_mask", flaky)
    report = build(*_opts(tmp_path / "s", splits=("dev",), limit=3))
    stage = report.stage("feature sdoi")
    assert stage.failed >= 1 and stage.computed >= 1 and "boom" in stage.failures[0]
    monkeypatch.setattr(sdoi_mod, "sdoi_mask", real)
    again = build(*_opts(tmp_path / "s", splits=("dev",), limit=3))
    assert again.stage("feature sdoi").computed == stage.failed
    assert open_store(tmp_path / "s").frame("sdoi", dataset="snli", split="dev")["sdoi_a"].null_count() == 0


def test_build_bad_requests_fail_before_writing(tmp_path):
    with pytest.raises(PriorError, match="unknown feature 'nope'"):
        build(*_opts(tmp_path / "s", features=("nope",)))
    with pytest.raises(PriorError, match="unknown dataset"):
        build(*_opts(tmp_path / "s", dataset="no-such-set", splits=None))
    with pytest.raises(NotFoundError):
        build(*_opts(tmp_path / "s", dataset="mnli", splits=("train",)))
    assert open_store(tmp_path / "s").segments() == []


def test_build_local_dask_cluster_equals_in_process(tmp_path):
    build(*_opts(tmp_path / "inproc", limit=8))
    report = build(*_opts(tmp_path / "dask", limit=8, workers=2, partition_size=4))
    assert len(open_store(tmp_path / "dask").segments("parses")) >= 2  # really partitioned
    assert report.stage("parse").computed > 0
    assert _frame_rows(tmp_path / "dask") == _frame_rows(tmp_path / "inproc")


def test_malformed_segment_cache_bound_fails_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIOR_SEGMENT_CACHE_MB", "lots")
    with pytest.raises(PriorError, match="PRIOR_SEGMENT_CACHE_MB='lots' is not a number of megabytes"):
        build(*_opts(tmp_path / "s"))
    assert not (tmp_path / "s").exists()


def test_runner_local_cluster_runs_typed_partition_tasks(tmp_path):
    """A local cluster's worker runs a `ParseTask` and hands back a `PartitionResult`; the
    workers start with Dask's own settings (no start-up tuning of ours)."""
    from prior.pipeline.runner import Job, Runner
    from prior.pipeline.tasks import ParseTask

    results = []
    task = ParseTask(store=StoreRef.of(str(tmp_path / "s")), keys=("k1", "k2"), parser="spacy", parse="p",
                     fingerprint={}, texts=("A dog runs.", "Two cats sleep."), label="parse 1/1")
    with Runner(RunOptions(workers=1)) as runner:
        runner.run([Job(task, results.append)])
        assert list(runner.client.run(os.environ.get, "OMP_NUM_THREADS").values()) == ["1"]
        assert runner.losses.workers == [] and runner.losses.recomputed == []
    assert [(r.done, r.skipped, r.failures) for r in results] == [(2, 0, ())]
    assert runner.client is None  # closed with its cluster


def _committed(store_dir, kind):
    cat = store_dir / "catalog"
    if not cat.is_dir():
        return 0
    return sum(1 for n in os.listdir(cat) if n.endswith(".json") and ".tmp-" not in n
               and json.loads((cat / n).read_text())["kind"] == kind)


def test_build_killed_midway_then_rerun_equals_uninterrupted(tmp_path):
    """SIGKILL after some partitions committed; the rerun fills exactly the gap."""
    build(*_opts(tmp_path / "ref", limit=40))
    cmd = [sys.executable, "-m", "prior.cli.main", "build", "--dataset", "snli", "--split", "test", "--features", "sdoi",
           "--parser", "spacy", "--limit", "40", "--workers", "0", "--partition-size", "8",
           "--store", str(tmp_path / "killed")]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    deadline = time.monotonic() + 120
    while _committed(tmp_path / "killed", "parses") < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _committed(tmp_path / "killed", "parses") >= 1
    report = build(*_opts(tmp_path / "killed", limit=40))
    assert report.stage("parse").reused > 0
    assert _frame_rows(tmp_path / "killed") == _frame_rows(tmp_path / "ref")
    from prior.featurestore.maintenance import verify_store

    assert verify_store(open_store(tmp_path / "killed")).ok


@pytest.mark.slow
def test_build_on_external_scheduler_equals_local(tmp_path):
    """`--scheduler`: a scheduler and a worker started as separate processes on loopback."""
    sched_file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "2",
                                       "--nthreads", "1", "--no-dashboard"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        build(*_opts(tmp_path / "local", limit=10))
        report = build(*_opts(tmp_path / "remote", limit=10, scheduler=address, workers=0))
        assert report.stage("parse").computed > 0
        assert _frame_rows(tmp_path / "remote") == _frame_rows(tmp_path / "local")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=30)


def test_options_split_what_is_built_from_how_it_runs():
    """What changes a build's results (BuildOptions) and how it runs (RunOptions) share no field."""
    from dataclasses import fields

    what, how = {f.name for f in fields(BuildOptions)}, {f.name for f in fields(RunOptions)}
    assert not what & how
    assert {"store", "workers", "scheduler", "partition_size", "parse_device", "progress"} <= how

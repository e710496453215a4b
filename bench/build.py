"""Benchmark of `prior build` (not a test): the default path (biaffine parser, features
dep,sdoi,wup) and the spaCy parser as a second row; throughput per stage, worker scaling, no-op
rebuild, bytes on disk per pair per feature.

    PRIOR_DATA_DIR=../shared/data python bench/build.py                # SNLI 2,000 + all SICK, 1 and 2 workers
    python bench/build.py --parsers biaffine --datasets sick --warm    # + warm-cluster runs
    python bench/build.py --datasets mrpc --pairs 500 --workers 2      # quicker look
    python bench/build.py --datasets sick --workers 2 -o wup.name_entities=   # with a feature option

SNLI: the first ``pairs/2`` pairs of the dev and test copies in ../shared/data (2,000 pairs by
default); MRPC: the first ``pairs`` pairs of train; SICK: all 9,927 pairs (start-up costs
amortised). Each run is a cold build into a fresh store (Dask cluster started by the build,
models loaded by its workers), so parsing is included; ``end-to-end`` is pairs / wall time of
the whole build including the cluster's start, ``processing`` excludes the start-up (read +
parse + features). Each stage (parse, tfidf, dep, sdoi, wup) reports items/s, so the next
bottleneck is visible (feature stages run side by side: each is timed from the same start).
``--warm`` adds each build on an already running cluster whose workers have loaded their
models (`warm_runs`). The no-op rebuild reruns the build through the CLI as a user would (the
default parser and device for the biaffine rows). Where torch sees a CUDA GPU the biaffine rows
run once per ``--parse-devices`` entry (default: cpu and cuda), and the CPU and CUDA stores of the same
data are compared (`device_agreement`: parses, annotations and every entry's items). ``--repeat N`` runs each
configuration N times and keeps the run of median wall time (all walls are recorded): these
2-core machines are shared and noisy. WordNet's hierarchy table
(`prior/pipeline/resources/wn_hierarchy.py`) is a one-time cost per machine, like installing
WordNet: its build time is reported on its own and the table exists before the first run.
Results go to bench/out/build-<date>.json and are printed as a table. The all-datasets scaling
run is bench/build_all.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


def stage_rates(report: object) -> tuple[dict, float]:
    """Per stage: seconds, items computed and items/s; and the processing span (read + parse +
    features, without the cluster's start). Feature stages overlap (their partitions run
    together), each timed from the same start: their span is the longest of them, not their sum."""
    stages = {s.name.removeprefix("feature "): {"seconds": round(s.seconds, 3), "computed": s.computed,
                                                "per_s": round(s.computed / s.seconds, 1) if s.seconds and s.computed
                                                else None}
              for s in report.stages}  # type: ignore[attr-defined]
    processing = (sum(s.seconds for s in report.stages if not s.name.startswith("feature "))  # type: ignore[attr-defined]
                  + max((s.seconds for s in report.stages if s.name.startswith("feature ")),  # type: ignore[attr-defined]
                        default=0.0))
    return stages, processing


def run_build(dataset: str, splits: tuple[str, ...], limit: int | None, workers: int, features: tuple[str, ...],
              parser: str, store: Path, scheduler: str | None = None, parse_device: str = "auto",
              options: dict[str, dict[str, Any]] | None = None) -> dict:
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    t0, cpu0 = time.perf_counter(), time.process_time()
    report = build(BuildOptions(dataset=dataset, splits=splits, features=features, parser=parser, limit=limit,
                                feature_options=options or {}),
                   RunOptions(store=str(store), workers=workers, scheduler=scheduler, progress=False,
                              parse_device=parse_device))
    wall, driver_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    pairs = sum(s.pairs for s in report.splits)
    stages, processing = stage_rates(report)
    return {"dataset": dataset, "parser": parser, "parse_device": parse_device if parser.startswith("biaffine") else "-",
            "workers": workers, "cluster": "warm" if scheduler else "cold", "pairs": pairs, "wall_s": round(wall, 2),
            # CPU of this process: driver, client and (local cluster) the Dask scheduler, which
            # share the machine's cores with the workers
            "driver_cpu_s": round(driver_cpu, 2),
            "end_to_end_pairs_per_s": round(pairs / wall, 1), "processing_s": round(processing, 2),
            "processing_pairs_per_s": round(pairs / processing, 1), "stages": stages}


def noop_rebuild_seconds(dataset: str, splits: tuple[str, ...], limit: int | None, features: tuple[str, ...], parser: str,
                         store: Path, repeats: int = 3, option: tuple[str, ...] = ()) -> dict:
    """Wall time of rerunning the same build through the CLI (what a user waits for); the
    default parser is left to the CLI's default, as a user types it."""
    from prior.pipeline.build_options import DEFAULT_PARSER

    cmd = [sys.executable, "-m", "prior.cli.main", "build", "--dataset", dataset, "--split", ",".join(splits),
           "--features", ",".join(features), "--store", str(store),
           *(["--parser", parser] if parser != DEFAULT_PARSER else []),
           *(["--limit", str(limit)] if limit is not None else []), *(a for o in option for a in ("-o", o))]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=dict(os.environ, PRIOR_NO_PROGRESS="1"))
        times.append(time.perf_counter() - t0)
    from prior.cli.key_value import parse_feature_options
    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions

    t0 = time.perf_counter()
    build(BuildOptions(dataset=dataset, splits=splits, features=features, parser=parser, limit=limit,
                       feature_options=parse_feature_options(option)),
          RunOptions(store=str(store), workers=2, progress=False))
    return {"cli_median_s": round(statistics.median(times), 2), "in_process_s": round(time.perf_counter() - t0, 2)}


def warm_runs(dataset: str, splits: tuple[str, ...], limit: int | None, workers: int, features: tuple[str, ...],
              parser: str, root: Path, parse_device: str = "auto",
              options: dict[str, dict[str, Any]] | None = None) -> dict:
    """The same build on a cluster that already runs (``prior build --scheduler``), as for a
    user who keeps a cluster up between builds: workers started, and their models loaded by an
    earlier build of other data (100 MRPC pairs; SICK pairs when measuring MRPC). Measures the
    pipeline without the per-process start-up (Python imports, spaCy model, WordNet)."""
    from prior.pipeline.build_options import RunOptions
    from prior.pipeline.runner import Runner

    # the cluster a build starts for itself, kept up for both builds
    with Runner(RunOptions(workers=workers)) as runner:
        runner.start()
        address = runner.address
        other, other_splits = ("mrpc", ("train",)) if dataset != "mrpc" else ("sick", ("trial",))
        run_build(other, other_splits, 100, workers, features, parser, root / f"warmup-{workers}",
                  scheduler=address, parse_device=parse_device, options=options)
        return run_build(dataset, splits, limit, workers, features, parser, root / f"{dataset}-{workers}-warm",
                         scheduler=address, parse_device=parse_device, options=options)


def median_run(repeat: int, run: Callable[[int], dict]) -> dict:
    """``run(i)`` ``repeat`` times (fresh stores); the run of median wall time, with all walls."""
    runs = sorted((run(i) for i in range(repeat)), key=lambda r: r["wall_s"])
    chosen = dict(runs[len(runs) // 2])
    chosen["walls_s"] = [r["wall_s"] for r in runs]
    return chosen


def wordnet_table_seconds() -> dict:
    """One-time cost per machine: building WordNet's hierarchy table (cached under PRIOR_HOME
    afterwards, so every run below reads it). Makes sure the cache exists before the runs."""
    from prior.pipeline.resources.wn_hierarchy import build_table, table_for
    from prior.pipeline.resources.wordnet import file_opener, load_wordnet_fast, reader_files

    wn, version = load_wordnet_fast()
    t0 = time.perf_counter()
    table = build_table(file_opener(reader_files(wn)), version)
    seconds = time.perf_counter() - t0
    table_for(wn, version)
    return {"build_s": round(seconds, 2), "synsets": len(table)}


def bytes_per_pair(store_dir: Path, pairs: int) -> dict:
    from prior.featurestore import open_store
    from prior.featurestore.maintenance import store_info

    info = store_info(open_store(store_dir))
    return {e["feature"]: round(e["bytes"] / pairs, 1) for e in info.entries}


def store_write_rate(store_dir: Path, feature: str, params: dict[str, Any] | None = None) -> dict:
    """Re-write one entry's items (the feature's entry with ``params``, the build's options)
    into a fresh store in one segment: pure store-write speed."""
    from prior.featurestore import open_store
    from prior.featurestore.selection import Request

    src = open_store(store_dir)
    data = src.load_feature(src.find_entry(feature, Request(params=params or None)))
    items = [data.get(k) for k in data.keys]
    with tempfile.TemporaryDirectory() as tmp:
        dst = open_store(tmp)
        t0 = time.perf_counter()
        dst.write_feature(data.entry, list(data.keys), items)
        seconds = time.perf_counter() - t0
    return {"items": len(items), "seconds": round(seconds, 3), "items_per_s": round(len(items) / seconds, 1)}


def parse_agreement(a: Any, b: Any) -> dict[str, int]:
    """Two stores' parses (``SegmentStore.parses()`` frames) of the same sentences: how many
    sentences each column differs in, and how many words differ in head or relation."""
    joined = a.join(b, on="sent_key", how="inner", suffix="_b")
    out = {"sentences": joined.height, "sentences_only_one_side": a.height + b.height - 2 * joined.height}
    for col in ("heads", "rels", "words", "lemmas", "upos", "tags", "ents"):
        out[f"sentences_{col}_differ"] = sum(x != y for x, y in zip(joined[col].to_list(), joined[f"{col}_b"].to_list(),
                                                                    strict=True))
    words = differ = 0
    for h, hb, r, rb in zip(*(joined[c].to_list() for c in ("heads", "heads_b", "rels", "rels_b")), strict=True):
        words += len(h)
        differ += sum(x != y or s != t for x, y, s, t in zip(h, hb, r, rb, strict=True))
    out["words"], out["words_head_or_rel_differ"] = words, differ
    return out


def items_agreement(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Two entries' items (key -> component -> array): how many of the shared keys are not
    bit-identical, and the largest absolute difference between them (inf for a shape change)."""
    import numpy as np

    keys = sorted(set(a) & set(b))
    differ, max_abs = 0, 0.0
    for key in keys:
        for component, x in a[key].items():
            y = b[key][component]
            if not np.array_equal(x, y):
                differ += 1
                max_abs = max(max_abs, float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64))))
                              if np.shape(x) == np.shape(y) else float("inf"))
                break
    return {"items": len(keys), "items_differ": differ, "max_abs_diff": max_abs,
            "keys_only_one_side": len(set(a) ^ set(b))}


def device_agreement(cpu_store: Path, other_store: Path) -> dict:
    """What a build with the biaffine model on another device (CUDA) stores differently from the
    CPU build of the same data. The device is not part of the parse id, so both stores name the
    same parse and the same entries, and content addressing needs their values to agree: parses
    and spaCy's annotations (`parse_agreement`; spaCy runs on the CPU in both), and every
    entry's items (`items_agreement`)."""
    from prior.featurestore import open_store

    a, b = open_store(cpu_store), open_store(other_store)
    out: dict[str, Any] = {"parse_ids_equal": sorted(a.parse_ids()) == sorted(b.parse_ids()),
                           **parse_agreement(a.parses(), b.parses()), "entries": {}}
    entries_b = {e.key: e for e in b.entries()}
    for entry in a.entries():
        if entry.key not in entries_b:
            out["entries"][entry.name] = "only in the CPU store"
            continue
        da, db = a.load_feature(entry), b.load_feature(entries_b[entry.key])
        out["entries"][entry.name] = items_agreement({k: da.get(k) for k in da.keys}, {k: db.get(k) for k in db.keys})
    return out


def parse_devices(wanted: str | None) -> list[str]:
    """``--parse-devices``, else cpu, plus cuda where torch sees a GPU."""
    if wanted:
        return wanted.split(",")
    import torch

    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


STAGES = ("parse", "tfidf", "dep", "sdoi", "wup", "emb")


def print_table(runs: list[dict]) -> None:
    stages = [s for s in STAGES if any(s in r["stages"] for r in runs)]
    head = (f"{'parser':<9} {'device':<6} {'dataset':<7} {'workers':>7} {'cluster':<5} {'pairs':>6} {'wall s':>7} "
            f"{'pairs/s':>8} {'proc/s':>7}  " + " ".join(f"{s + '/s':>8}" for s in stages))
    print(head)
    for r in runs:
        rates = " ".join(f"{(r['stages'].get(s) or {}).get('per_s') or '-':>8}" for s in stages)
        print(f"{r['parser']:<9} {r['parse_device']:<6} {r['dataset']:<7} {r['workers']:>7} {r['cluster']:<5} "
              f"{r['pairs']:>6} {r['wall_s']:>7} {r['end_to_end_pairs_per_s']:>8} {r['processing_pairs_per_s']:>7}  "
              + rates)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="snli,sick")
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--features", default="dep,sdoi,wup")
    ap.add_argument("--parsers", default="biaffine,spacy", help="One table row per parser (default first).")
    ap.add_argument("--parse-devices", default=None, help="Devices of the biaffine rows (default: cpu, and cuda "
                                                          "where torch sees a GPU).")
    ap.add_argument("--warm", action="store_true", help="Also run each build on an already running cluster.")
    ap.add_argument("--repeat", type=int, default=1, help="Runs per configuration; the median wall is kept.")
    ap.add_argument("-o", "--option", action="append", default=[],
                    help="A feature option FEATURE.NAME=VALUE for every build, as `prior build -o` takes it.")
    ap.add_argument("--builds-only", action="store_true",
                    help="Only the cold (and --warm) builds: no no-op rebuild, sizes or store-write rates.")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    if SHARED.is_dir():
        os.environ.setdefault("PRIOR_DATA_DIR", str(SHARED))
    os.environ.setdefault("PRIOR_HOME", str(REPO / ".prior" / "bench-home"))
    features = tuple(args.features.split(","))
    from prior.cli.key_value import parse_feature_options

    options = parse_feature_options(args.option)
    # sick: the whole dataset (9,927 pairs, 3 splits): start-up costs amortised
    plans = {"snli": (("dev", "test"), args.pairs // 2), "mrpc": (("train",), args.pairs),
             "sick": (("train", "trial", "test"), None)}
    devices = parse_devices(args.parse_devices)
    configs = [(parser, device) for parser in args.parsers.split(",")
               for device in (devices if parser.startswith("biaffine") else ["-"])]
    results = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "parsers": args.parsers,
               "features": features, "options": args.option, "cpu_count": os.cpu_count(),
               "load_avg_start": round(os.getloadavg()[0], 2),
               "runs": [], "noop": {}, "bytes_per_pair": {}, "store_write": {}, "repeat": args.repeat,
               "wordnet_table": wordnet_table_seconds()}
    print(json.dumps({"wordnet_table": results["wordnet_table"]}), flush=True)
    root = Path(tempfile.mkdtemp(prefix="prior-bench-"))
    try:
        for parser, device in configs:
            label = f"{parser}@{device}" if device != "-" else parser
            for dataset in args.datasets.split(","):
                splits, limit = plans[dataset]
                for workers in args.workers:
                    def cold(i: int, workers: int = workers, label: str = label, dataset: str = dataset,
                             splits: tuple = splits, limit: int | None = limit, parser: str = parser,
                             device: str = device) -> dict:
                        target = root / f"{label}-{dataset}-{workers}-{i}"
                        shutil.rmtree(target, ignore_errors=True)
                        return run_build(dataset, splits, limit, workers, features, parser, target,
                                         parse_device=device if device != "-" else "auto", options=options)

                    run = median_run(args.repeat, cold)
                    store = root / f"{label}-{dataset}-{workers}-0"  # for the no-op rebuild and sizes below
                    results["runs"].append(run)
                    print(json.dumps(run), flush=True)
                    if args.warm:
                        warm = median_run(args.repeat, lambda i, workers=workers, dataset=dataset, splits=splits,
                                          limit=limit, parser=parser, label=label, device=device: warm_runs(
                            dataset, splits, limit, workers, features, parser, root / f"warm-{label}-{i}",
                            parse_device=device if device != "-" else "auto", options=options))
                        results["runs"].append(warm)
                        print(json.dumps(warm), flush=True)
                if device in ("-", devices[0]) and not args.builds_only:  # once per parser: the CLI's default device
                    results["noop"][f"{parser} {dataset}"] = noop_rebuild_seconds(dataset, splits, limit, features,
                                                                                  parser, store,
                                                                                  option=tuple(args.option))
                    results["bytes_per_pair"][f"{parser} {dataset}"] = bytes_per_pair(store, run["pairs"])
                    results["store_write"][f"{parser} {dataset}"] = {f: store_write_rate(store, f, options.get(f))
                                                                     for f in features}
                    print(json.dumps({f"{parser} {dataset}": {
                        "noop": results["noop"][f"{parser} {dataset}"],
                        "bytes_per_pair": results["bytes_per_pair"][f"{parser} {dataset}"]}}), flush=True)
        # the same data parsed with the model on the CPU and on another device: the stores must agree
        for dataset in args.datasets.split(","):
            for workers in args.workers:
                cpu = root / f"biaffine@cpu-{dataset}-{workers}-0"
                for device in (d for d in devices if d != "cpu"):
                    other = root / f"biaffine@{device}-{dataset}-{workers}-0"
                    if cpu.is_dir() and other.is_dir():
                        agreement = device_agreement(cpu, other)
                        results.setdefault("device_agreement", {})[f"{dataset} {workers} cpu-{device}"] = agreement
                        print(json.dumps({f"agreement {dataset} {workers} cpu-{device}": agreement}), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for r1 in results["runs"]:
        for r2 in results["runs"]:
            if (r1["workers"], r2["workers"]) == (1, 2) and all(
                    r1[k] == r2[k] for k in ("parser", "parse_device", "dataset", "cluster")):
                results.setdefault("scaling_2_over_1", {})[
                    f"{r1['parser']} {r1['parse_device']} {r1['dataset']} {r1['cluster']}"] = {
                    "end_to_end": round(r2["end_to_end_pairs_per_s"] / r1["end_to_end_pairs_per_s"], 2),
                    "processing": round(r2["processing_pairs_per_s"] / r1["processing_pairs_per_s"], 2)}
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"build-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(results, indent=1))
    print_table(results["runs"])
    print(json.dumps({"scaling_2_over_1": results.get("scaling_2_over_1", {}), "noop": results["noop"]}))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

"""Speed and size of the `dep` (DAFA) and `emb` (GiBERT) features on SNLI pairs.

Measures, on the first N pairs of SNLI (N/2 from dev, N/2 from test; 2,000 by default):

- pairs/s of each feature's build stages with 0 (in-process), 1 and 2 Dask worker processes,
  parses already in the store (parsing is not timed: each run builds into a fresh copy of one
  parsed store, so every run computes every item);
- bytes per pair of each stored component (Zarr arrays) and of the feature's Parquet index,
  and the total size of the resources (IDF table, embedding vocabulary);
- the features' ``compute()`` alone, in this process, without store or Dask.

``dep`` builds two entries: ``tfidf`` (per sentence, with the IDF table counted in the
driver) and ``dep`` (per pair); its pairs/s counts both stages. ``emb`` reads an embedding
file (here: 300-d dependency-based embeddings trained on the parsed store with
``prior embed train``, 1 epoch) into a vocabulary resource, counts OOV, then writes word ids
per sentence; its stage time includes reading the file.

For 1 and 2 workers one local cluster per worker count is started and reused (the build is
given its address, as with ``prior build --scheduler``); one untimed warm-up build per
cluster lets the workers import the code first. The clusters' start-up time is measured and
printed separately: a one-off ``prior build --workers N`` pays it once on top of the rates.

Run (needs the SNLI partial copies, PRIOR_DATA_DIR=/work/shared/data; the bundled slices
hold 300 pairs per split):

    PRIOR_DATA_DIR=/work/shared/data nice -n 10 .venv/bin/python bench/features.py \
        --pairs 2000 --workers 0,1,2 --repeats 3 --json bench/out/features.json

Numbers depend on the machine; repeat and take medians (``--repeats``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

PARSER: str | None = None  # --parser; None: the build's default


def _build(store: Path, features: tuple[str, ...], workers: int, pairs: int,
           embeddings: Path | None = None, scheduler: str | None = None) -> Any:
    from prior.pipeline.build import build
    from prior.pipeline.build_options import DEFAULT_PARSER, BuildOptions, RunOptions

    per_split = -(-pairs // 2)
    return build(BuildOptions(dataset="snli", splits=("dev", "test"), features=features, limit=per_split,
                              embeddings=embeddings, parser=PARSER or DEFAULT_PARSER),
                 RunOptions(store=str(store), workers=workers, scheduler=scheduler, progress=False))


class _Cluster:
    """A local cluster of ``workers`` processes (none for 0), started once and reused."""

    def __init__(self, workers: int, scratch: Path) -> None:
        self.workers = workers
        self.cluster: Any = None
        self.startup_s = 0.0
        if workers > 0:
            import logging

            from distributed import LocalCluster

            scratch.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            self.cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None, local_directory=str(scratch),
                                        silence_logs=logging.ERROR)
            self.startup_s = time.perf_counter() - t0

    @property
    def address(self) -> str | None:
        return None if self.cluster is None else str(self.cluster.scheduler_address)

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.close()


def _sizes(store_path: Path, names: tuple[str, ...], n_pairs: int) -> dict[str, dict[str, float]]:
    from prior.featurestore import open_store

    store = open_store(store_path, create=False)
    out: dict[str, dict[str, float]] = {}
    used = {v for e in store.entries() if e.name in names for k, v in e.params.items()
            if k in ("idf", "vocab")}
    resources: dict[str, dict[str, float]] = {}
    for seg in store.segments("resource"):
        if seg.target["key"] in used:  # a resource is stored once, whatever the number of pairs
            resources[f"resource {seg.target['kind']}"] = {
                "items": float(seg.rows),
                "total bytes (once, not per pair)": float(sum(f["size"] for f in seg.files.values()))}
    for seg in store.segments("feature"):
        name = seg.target["name"]
        if name not in names:
            continue
        row = out.setdefault(name, {"items": 0.0})
        row["items"] += seg.rows
        for rel, info in seg.files.items():
            part = rel.split("/")
            key = f"{part[1]} (zarr)" if part[0] == "arrays" and len(part) > 2 else (
                "index (parquet)" if rel == "index.parquet" else "zarr metadata")
            row[key] = row.get(key, 0.0) + info["size"]
    per_pair = {name: {k: (v if k == "items" else v / n_pairs) for k, v in row.items()}
                for name, row in out.items()}
    return {**per_pair, **resources}


def _compute_only(store_path: Path, embeddings: Path) -> dict[str, float]:
    """Pairs/s of the features' compute() alone, in this process, on the stored parses."""
    from prior.featurestore import open_store
    from prior.pipeline.embeddings.io import read_embeddings
    from prior.pipeline.features.dep import DepFeature
    from prior.pipeline.features.emb import EmbFeature
    from prior.pipeline.features.forms import word_forms
    from prior.pipeline.features.tfidf import IdfTable, TfidfFeature
    from prior.pipeline.parsers.base import Parse

    store = open_store(store_path, create=False)
    rows = [store.pair_rows("snli", s) for s in ("dev", "test")]
    pairs = [(a, b) for df in rows for a, b in zip(df["key_a"].to_list(), df["key_b"].to_list())]
    parses = {r["sent_key"]: Parse.from_record(r) for r in store.parses().iter_rows(named=True)}
    items = [(parses[a], parses[b]) for a, b in pairs]
    sentences = list(parses.values())
    out = {}
    t0 = time.perf_counter()
    DepFeature().compute(items)
    out["dep (M and S)"] = round(len(items) / (time.perf_counter() - t0), 1)
    tfidf = TfidfFeature().with_idf(IdfTable.from_documents(word_forms(p) for p in sentences),
                                    key="bench", splits=["dev", "test"])
    t0 = time.perf_counter()
    tfidf.compute(sentences)
    out["tfidf (all sentences), per pair"] = round(len(items) / (time.perf_counter() - t0), 1)
    emb = EmbFeature().with_vocabulary(read_embeddings(embeddings).words, key="bench")
    t0 = time.perf_counter()
    emb.compute(sentences)
    out["emb (all sentences), per pair"] = round(len(items) / (time.perf_counter() - t0), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--workers", default="0,1,2")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--work", type=Path, default=None, help="scratch dir (default: a temp dir)")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument("--parser", default=None, help="parser of the one parse (default: the build's)")
    args = ap.parse_args()
    global PARSER
    PARSER = args.parser

    import torch

    torch.set_num_threads(1)
    work = args.work or Path(tempfile.mkdtemp(prefix="prior-bench-"))
    base = work / "parsed"
    t0 = time.perf_counter()
    report = _build(base, (), 2, args.pairs)
    n_pairs = sum(s.pairs for s in report.splits)
    print(f"parsed {n_pairs} SNLI pairs ({report.stage('parse').computed} sentences) "
          f"in {time.perf_counter() - t0:.1f} s")

    from prior.featurestore import open_store
    from prior.pipeline.embeddings.make import train_dependency_embeddings
    from prior.pipeline.embeddings.sgns import SgnsSettings

    t0 = time.perf_counter()
    made = train_dependency_embeddings(open_store(base), work / "deps300.txt",
                                       settings=SgnsSettings(dim=300, epochs=1, min_count=1))
    print(f"embeddings for emb: {made.record['words']} words × 300 trained in "
          f"{time.perf_counter() - t0:.1f} s")

    results: dict[str, Any] = {"pairs": n_pairs, "startup_s": {}, "runs": [], "bytes_per_pair": {},
                               "compute_only_pairs_per_s": _compute_only(base, made.path)}
    print(f"compute only (no store, no Dask): {results['compute_only_pairs_per_s']}")
    worker_counts = [int(w) for w in args.workers.split(",")]
    for w in worker_counts:
        cluster = _Cluster(w, work / "dask-scratch")
        if w > 0:
            results["startup_s"][w] = round(cluster.startup_s, 2)
        try:
            for feature, stages in (("dep", ("feature tfidf", "feature dep")),
                                    ("emb", ("feature emb",))):
                embeddings = made.path if feature == "emb" else None
                runs = []
                for attempt in range(args.repeats + (1 if w > 0 else 0)):
                    run_store = work / f"run-{feature}-{w}"
                    shutil.rmtree(run_store, ignore_errors=True)
                    shutil.copytree(base, run_store)
                    t0 = time.perf_counter()
                    rep = _build(run_store, (feature,), w, args.pairs, embeddings, cluster.address)
                    wall = time.perf_counter() - t0
                    if any(rep.stage(s).computed != rep.stage(s).items for s in stages):
                        raise SystemExit(f"{feature} with {w} workers did not compute every item: "
                                         f"{[vars(rep.stage(s)) for s in stages]}")
                    if w > 0 and attempt == 0:
                        continue  # warm-up: the workers import the code
                    runs.append({"wall": wall, **{s: rep.stage(s).seconds for s in stages}})
                results["bytes_per_pair"].update(
                    _sizes(run_store, ("dep", "tfidf") if feature == "dep" else ("emb",), n_pairs))
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                feature_s = sum(med[s] for s in stages)
                row = {"feature": feature, "workers": w,
                       "stage_s": {s: round(med[s], 3) for s in stages},
                       "build_wall_s": round(med["wall"], 2),
                       "pairs_per_s": round(n_pairs / feature_s, 1)}
                if feature == "dep":
                    row["dep_stage_pairs_per_s"] = round(n_pairs / med["feature dep"], 1)
                results["runs"].append(row)
                print(json.dumps(row))
        finally:
            cluster.close()

    print(f"\n{n_pairs} SNLI pairs, parses in the store; medians of {args.repeats} run(s)\n")
    print("| feature | workers | stage seconds | pairs/s (feature stages) | build wall s |")
    print("|---|---|---|---|---|")
    for r in results["runs"]:
        stages_txt = ", ".join(f"{k.removeprefix('feature ')} {v}" for k, v in r["stage_s"].items())
        print(f"| {r['feature']} | {r['workers']} | {stages_txt} | {r['pairs_per_s']} | "
              f"{r['build_wall_s']} |")
    print(f"\ncluster start-up (s) by workers, not in the rates: {results['startup_s']}")
    print("\n| entry | items | component | bytes per pair |")
    print("|---|---|---|---|")
    for name, row in results["bytes_per_pair"].items():
        for k, v in row.items():
            if k != "items":
                print(f"| {name} | {int(row['items'])} | {k} | {v:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

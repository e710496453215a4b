"""Speed and size of the `dep` (DAFA) and `emb` (GiBERT) features on SNLI pairs.

Measures, on the first N pairs of SNLI (dev, then test; 2,000 by default):

- pairs/s of each feature's build stages with 0 (in-process), 1 and 2 Dask worker processes,
  parses already in the store (parsing is not timed: copies of one parsed store are used);
- bytes per pair of each stored component (Zarr arrays) and of the feature's Parquet index.

``dep`` builds two entries: ``tfidf`` (per sentence, with the IDF table prepared in the
driver) and ``dep`` (per pair). ``emb`` reads an embedding file (here: 300-d dependency-based
embeddings trained on the parsed store with ``prior embed train``, 1 epoch) into a vocabulary
resource, then writes word ids per sentence. Each build starts its own local cluster; that
start-up (measured separately and printed) falls in the first stage of a build, so the rates
below are given both for the whole build and for the warm stages.

Run (needs the full SNLI partial copies: PRIOR_DATA_DIR=/work/shared/data, or your own):

    PRIOR_DATA_DIR=/work/shared/data nice -n 10 .venv/bin/python bench/features.py --pairs 2000

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


def _build(store: Path, features: tuple[str, ...], workers: int, pairs: int,
           embeddings: Path | None = None) -> Any:
    from pipeline.build import BuildOptions, build

    per_split = -(-pairs // 2)
    return build(BuildOptions(dataset="snli", splits=("dev", "test"), features=features,
                              store=str(store), limit=per_split, workers=workers,
                              embeddings=embeddings, progress=False))


def _cluster_startup(workers: int) -> float:
    import logging

    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    client.close()
    cluster.close()
    return time.perf_counter() - t0


def _sizes(store_path: Path, names: tuple[str, ...], n_pairs: int) -> dict[str, dict[str, float]]:
    from featurestore import open_store

    store = open_store(store_path, create=False)
    out: dict[str, dict[str, float]] = {}
    used = {v for e in store.entries() if e.name in names for k, v in e.params.items()
            if k in ("idf", "vocab")}
    for seg in store.segments("resource"):
        if seg.target["key"] in used:
            out[f"resource {seg.target['kind']}"] = {
                "items": float(seg.rows),
                "total bytes (not per pair)": sum(f["size"] for f in seg.files.values()) * n_pairs}
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
    return {name: {k: (v if k == "items" else v / n_pairs) for k, v in row.items()}
            for name, row in out.items()}


def _compute_only(store_path: Path, embeddings: Path) -> dict[str, float]:
    """Pairs/s of the features' compute() alone, in this process, on the stored parses."""
    from featurestore import open_store
    from pipeline.embeddings.io import read_embeddings
    from pipeline.features.dep import DepFeature
    from pipeline.features.emb import EmbFeature
    from pipeline.features.tfidf import IdfTable, TfidfFeature
    from pipeline.features.forms import word_forms
    from pipeline.parsers.base import Parse

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
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)
    work = args.work or Path(tempfile.mkdtemp(prefix="prior-bench-"))
    base = work / "parsed"
    t0 = time.perf_counter()
    report = _build(base, (), 2, args.pairs)
    n_pairs = sum(s.pairs for s in report.splits)
    print(f"parsed {n_pairs} SNLI pairs ({report.stage('parse').computed} sentences) "
          f"in {time.perf_counter() - t0:.1f} s")

    from featurestore import open_store
    from pipeline.embeddings.make import train_dependency_embeddings
    from pipeline.embeddings.sgns import SgnsSettings

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
        if w > 0:
            results["startup_s"][w] = round(_cluster_startup(w), 2)
    for feature, stages in (("dep", ("feature tfidf", "feature dep")), ("emb", ("feature emb",))):
        for w in worker_counts:
            runs = []
            for _ in range(args.repeats):
                run_store = work / f"run-{feature}-{w}"
                shutil.rmtree(run_store, ignore_errors=True)
                shutil.copytree(base, run_store)
                t0 = time.perf_counter()
                rep = _build(run_store, (feature,), w, args.pairs,
                             made.path if feature == "emb" else None)
                wall = time.perf_counter() - t0
                secs = {s.name: s.seconds for s in rep.stages if s.name in stages}
                runs.append({"wall": wall, **secs})
                if feature == "dep":
                    results["bytes_per_pair"].update(_sizes(run_store, ("dep", "tfidf"), n_pairs))
                else:
                    results["bytes_per_pair"].update(_sizes(run_store, ("emb",), n_pairs))
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            feature_s = sum(med[s] for s in stages)
            row = {"feature": feature, "workers": w, "stage_s": {s: round(med[s], 2) for s in stages},
                   "pairs_per_s": round(n_pairs / feature_s, 1)}
            if feature == "dep":
                row["dep_stage_pairs_per_s"] = round(n_pairs / med["feature dep"], 1)
            results["runs"].append(row)
            print(json.dumps(row))

    print("\n| feature | workers | stage seconds | pairs/s (feature stages) |")
    print("|---|---|---|---|")
    for r in results["runs"]:
        stages_txt = ", ".join(f"{k.removeprefix('feature ')} {v}" for k, v in r["stage_s"].items())
        print(f"| {r['feature']} | {r['workers']} | {stages_txt} | {r['pairs_per_s']} |")
    print(f"\ncluster start-up (s) by workers: {results['startup_s']}")
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

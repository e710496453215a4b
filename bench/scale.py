"""Cost as the work grows: a large pair table from real sentences, built and read at several sizes.

    python bench/scale.py                                  # 10k, 100k and 500k pairs (hours)
    python bench/scale.py --sizes 2000 --workers 2         # a quick end-to-end check
    python bench/scale.py --sizes 500000 --compact         # ... and compaction before/after
    python bench/scale.py --sizes 500000 --reuse           # the readers again on the store built before

1. **The table**: every distinct sentence of every dataset in the data dir (`$PRIOR_DATA_DIR`,
   default ``../shared/data`` beside the checkout), sorted; pair i is (sentence i mod N, sentence h(seed, i) mod N)
   with h a blake2b of the seed and i (a sentence never pairs with itself), its label one of
   entailment/neutral/contradiction by a blake2b of the two texts. The first n pairs of that
   rule make the n-pair file (Parquet, ``sentence1``, ``sentence2``, ``label``) under
   ``--work`` (default ``bench/out/scale``; generated, never committed).
2. **The build**, per size into a cold store: ``prior build --dataset FILE --name scale
   --features dep,sdoi,wup --workers W`` (default parser), on a local cluster this script
   starts so it can ask each worker for its peak RSS. Recorded: wall, per-pair wall cost,
   items/s per stage, peak RSS of the driver (this build's own process) and of each worker.
3. **The readers**, each in a fresh process (wall and peak RSS from ``wait4``): the no-op
   rebuild, ``prior store info``, ``prior store verify``, ``prior store frame`` (wup),
   ``Store.scan(...).filter(...).collect()`` of 1,000 rows spread over the split (chosen from
   the pairs file's row count, outside the timed part), ``prior store export`` (wup), and the
   trainers' ``load_split`` (wup) plus one epoch of batches of 32 through the loader, no model.
4. **The store**: bytes, files, catalog records. With ``--compact``: ``prior store compact``,
   ``prior store gc``, then the store and the readers again.

One JSON line per size goes to ``--work``/scale-<date>.jsonl and a markdown table is printed.
Timings mean something only on a machine nothing else uses.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LABELS = ("entailment", "neutral", "contradiction")
FEATURES = ("dep", "sdoi", "wup")
NAME = "scale"


def _h(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest(), "big")


def sentences(data_dir: Path) -> list[str]:
    """Every distinct sentence of every split of every dataset in ``data_dir``, sorted."""
    from prior.pipeline.datasets import list_datasets, read_split

    found: set[str] = set()
    for info in list_datasets(data_dir=data_dir):
        for split in info.splits:
            if split.origin != "data_dir":
                continue
            for pair in read_split(info.name, split.split, data_dir=data_dir, hub=False).pairs:
                found.update(t for t in (pair.text_a.strip(), pair.text_b.strip()) if t)
    return sorted(found)


def make_table(texts: list[str], n: int, seed: int, path: Path) -> Path:
    """The first ``n`` pairs of the rule (module doc) as a Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    size = len(texts)
    a, b, labels = [], [], []
    for i in range(n):
        first = i % size
        other = _h(seed, i) % (size - 1)
        second = other + (other >= first)  # never the sentence itself
        a.append(texts[first])
        b.append(texts[second])
        labels.append(LABELS[_h(texts[first], texts[second]) % len(LABELS)])
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"sentence1": a, "sentence2": b, "label": labels}), path)
    return path


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def timed(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd`` in a fresh process: wall seconds, its peak RSS (MiB), exit code, last output."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_env(), cwd=ROOT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    result = {"wall_s": round(time.perf_counter() - t0, 3), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
              "rc": proc.returncode}
    text = out.decode(errors="replace")
    if proc.returncode:
        result["output"] = text[-2000:]
    elif (last := (text.strip().splitlines() or [""])[-1]).startswith("{"):
        result["detail"] = json.loads(last)  # a script that reports its own parts as one JSON line
    return result


def _peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def build_here(path: Path, store: Path, workers: int, parser: str | None) -> dict[str, Any]:
    """One cold build in this process on a local cluster of ``workers`` (JSON on stdout)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from build import stage_rates  # bench/build.py

    from prior.pipeline.build import build
    from prior.pipeline.build_options import BuildOptions, RunOptions
    from prior.pipeline.runner import Runner

    options = BuildOptions(dataset=str(path), name=NAME, features=FEATURES)
    if parser:
        options.parser = parser
    t0 = time.perf_counter()
    with Runner(RunOptions(workers=workers)) as runner:
        client = runner.start()
        assert client is not None
        report = build(options, RunOptions(store=str(store), workers=workers, scheduler=runner.address,
                                           progress=False))
        rss = client.run(_peak_rss_mib)
    wall = time.perf_counter() - t0
    stages, processing = stage_rates(report)
    pairs = sum(s.pairs for s in report.splits)
    return {"pairs": pairs, "wall_s": round(wall, 2), "processing_s": round(processing, 2),
            "ms_per_pair": round(1000 * wall / pairs, 3), "stages": stages,
            "driver_peak_rss_mib": round(_peak_rss_mib(), 1),
            "worker_peak_rss_mib": sorted(round(v, 1) for v in rss.values())}


def store_counts(store: Path) -> dict[str, Any]:
    files = [p for p in store.rglob("*") if p.is_file()]
    return {"bytes": sum(p.stat().st_size for p in files), "files": len(files),
            "catalog_records": len(list((store / "catalog").glob("*.json")))}


_SCAN = """
import json, sys, time
import polars as pl
import pyarrow.parquet as pq
from prior.featurestore import open_store
n = pq.read_metadata(sys.argv[2]).num_rows  # the rows are the file's, numbered from 1
wanted = pl.Series("row", range(1, n + 1, max(1, n // 1000)))[:1000]  # spread over the split
t0 = time.perf_counter()
s = open_store(sys.argv[1], create=False)
split = s.datasets()[0][1]
got = s.scan("wup", dataset="{name}", split=split).filter(pl.col("row").is_in(wanted.implode())).collect()
assert got.height == wanted.len(), got.height
print(json.dumps({{"open_scan_s": round(time.perf_counter() - t0, 3)}}))  # without the interpreter's start
"""

_LOAD = """
import json, sys, time
from prior.featurestore import open_store
from prior.trainers.backbones import load_tokenizer, resolve_backbone
from prior.trainers.data import load_split
tok = load_tokenizer(resolve_backbone("mini"))  # the -mini models' fast tokenizer
s = open_store(sys.argv[1], create=False)
split = s.datasets()[0][1]
t0 = time.perf_counter()
data = load_split(s, "{name}", split, tok, feature="wup")
t1 = time.perf_counter()
n = sum(1 for _ in data.batches(32))
t2 = time.perf_counter()
assert n > 0
print(json.dumps({{"load_split_s": round(t1 - t0, 2), "epoch_s": round(t2 - t1, 2), "batches": n}}))
"""


def readers(path: Path, store: Path, work: Path, parser: str | None) -> dict[str, Any]:
    prior = [sys.executable, "-m", "prior.cli.main"]
    at = ["--store", str(store)]
    export = work / "export"
    shutil.rmtree(export, ignore_errors=True)
    rebuild = [*prior, "build", "--dataset", str(path), "--name", NAME, "--features", ",".join(FEATURES), *at,
               *(["--parser", parser] if parser else [])]
    return {
        "noop_rebuild": timed(rebuild),
        "info": timed([*prior, "store", "info", *at]),
        "verify": timed([*prior, "store", "verify", *at]),
        "frame": timed([*prior, "store", "frame", "--feature", "wup", "--dataset", NAME, *at]),
        "scan_1000": timed([sys.executable, "-c", _SCAN.format(name=NAME), str(store), str(path)]),
        "export": timed([*prior, "store", "export", "--feature", "wup", "--dataset", NAME, "--out", str(export), *at]),
        "load_split_epoch": timed([sys.executable, "-c", _LOAD.format(name=NAME), str(store)]),
    }


def run_size(texts: list[str], n: int, args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work
    path = make_table(texts, n, args.seed, work / f"pairs-{n}.parquet")
    store = work / f"store-{n}"
    if not (args.reuse and (store.parent / f"build-{n}.json").exists()):
        shutil.rmtree(store, ignore_errors=True)
        one = timed([sys.executable, __file__, "--build-one", str(path), "--store", str(store),
                     "--workers", str(args.workers), *(["--parser", args.parser] if args.parser else [])])
        if one["rc"]:
            raise SystemExit(f"build of {n} pairs failed:\n{one.get('output')}")
    result: dict[str, Any] = {"size": n, "workers": args.workers,
                              "build": json.loads((store.parent / f"build-{n}.json").read_text()),
                              "store": store_counts(store), "readers": readers(path, store, work, args.parser)}
    if args.compact:
        prior = [sys.executable, "-m", "prior.cli.main"]
        result["compact"] = timed([*prior, "store", "compact", "--store", str(store)])
        result["compact_gc"] = timed([*prior, "store", "gc", "--store", str(store)])
        result["store_compacted"] = store_counts(store)
        result["readers_compacted"] = readers(path, store, work, args.parser)
    return result


def _load_cells(readers: dict[str, Any]) -> list[Any]:
    """The loader's own parts: load_split and one epoch of batches (seconds), and its peak RSS."""
    load = readers["load_split_epoch"]
    detail = load.get("detail", {})
    scan = readers["scan_1000"].get("detail", {})
    return [detail.get("load_split_s"), detail.get("epoch_s"), load["peak_rss_mib"], scan.get("open_scan_s")]


def table(results: list[dict[str, Any]]) -> str:
    names = list(results[0]["readers"])
    head = ["pairs", "ms/pair", "parse/s", "driver MiB", "worker MiB", "store MiB", "files", "records",
            *[f"{n} s" for n in names], "load_split s", "epoch s", "load MiB", "scan in-process s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        b = r["build"]
        cells = [r["size"], b["ms_per_pair"], b["stages"].get("parse", {}).get("per_s"), b["driver_peak_rss_mib"],
                 max(b["worker_peak_rss_mib"], default=None), round(r["store"]["bytes"] / 2**20, 1),
                 r["store"]["files"], r["store"]["catalog_records"], *[r["readers"][n]["wall_s"] for n in names],
                 *_load_cells(r["readers"])]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
        if "readers_compacted" in r:  # the same store after `prior store compact` and `gc`
            after = r["store_compacted"]
            cells = [f"{r['size']} compacted", "", "", "", "", round(after["bytes"] / 2**20, 1), after["files"],
                     after["catalog_records"], *[r["readers_compacted"][n]["wall_s"] for n in names],
                     *_load_cells(r["readers_compacted"])]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,500000", help="Comma-separated pair counts.")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parser", default=None, help="--parser for the build (default: prior's default).")
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("PRIOR_DATA_DIR", ROOT.parent / "shared" / "data")))
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "scale")
    ap.add_argument("--compact", action="store_true", help="Also compact each store and read it again.")
    ap.add_argument("--reuse", action="store_true",
                    help="Keep a size's store and build record from an earlier run; time the readers again.")
    ap.add_argument("--scan-once", nargs=2, type=Path, metavar=("STORE", "PAIRS"),
                    help="Only the 1,000-row scan, once, in this process (its JSON on stdout): for "
                         "`farm-bench`'s paired runs of two stores or two trees.")
    ap.add_argument("--build-one", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--store", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scan_once is not None:
        store, pairs = args.scan_once
        sys.argv = [sys.argv[0], str(store), str(pairs)]
        exec(_SCAN.format(name=NAME))  # the snippet `readers` times in a fresh process
        return
    if args.build_one is not None:  # the build's own process (driver RSS is this process's)
        n = args.build_one.stem.removeprefix("pairs-")
        result = build_here(args.build_one, args.store, args.workers, args.parser)
        (args.store.parent / f"build-{n}.json").write_text(json.dumps(result))
        return
    texts = sentences(args.data_dir)
    if len(texts) < 2:
        raise SystemExit(f"{args.data_dir} holds no dataset sentences; pass --data-dir or set PRIOR_DATA_DIR")
    print(f"{len(texts)} distinct sentences in {args.data_dir}", flush=True)
    out = args.work / f"scale-{datetime.now(UTC):%Y%m%d-%H%M%S}.jsonl"
    args.work.mkdir(parents=True, exist_ok=True)
    results = []
    for n in (int(x) for x in args.sizes.split(",")):
        results.append(run_size(texts, n, args))
        with out.open("a") as fh:
            fh.write(json.dumps(results[-1]) + "\n")
        failed = [k for k, v in results[-1]["readers"].items() if v["rc"]]
        print(f"{n} pairs: build {results[-1]['build']['wall_s']} s" + (f"; FAILED: {failed}" if failed else ""),
              flush=True)
    print(table(results))
    print(f"written to {out}")


if __name__ == "__main__":
    main()

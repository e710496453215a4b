"""Benchmark of checked reads (not a test): ``store.frame`` with and without the checks, old
code against new, interleaved.

    git archive <old revision> | tar -x -C /tmp/prior-old      # the code before checked reads
    prior build --dataset sick --features sdoi,wup,dep --parser spacy --store /tmp/sick
    python bench/reliability.py --store /tmp/sick --old-src /tmp/prior-old --rounds 7
    python bench/reliability.py --store /tmp/sick --breakdown --rounds 5 > LINES.jsonl
    python bench/reliability.py --table LINES.jsonl   # the breakdown's row

Each measurement is a fresh Python process (so the checks' once-per-process cache starts
empty), importing either the old source tree or this one, that reads ``frame(feature,
dataset, split)`` for every feature and every split of the dataset twice: the first pass
(``cold``) includes hashing every file it reads, the second (``warm``) finds them checked.
Imports are not timed. Rounds alternate the order (old, new, new, old, …) so that a machine
that gets busier or quieter affects both alike; the result is the median over rounds of the
per-round ratio new / old, of wall time and of the process's CPU time (all its threads; on a
shared machine CPU time is far less disturbed by other processes than wall time). Compare
ratios, not absolute times.
Results go to bench/out/reliability-<date>.json (``--out`` another folder).

``--breakdown`` instead times, in this process with this tree's code, what the checks add to
one cold pass: hashing and comparing files (`checked.read_checked` less its reading), checking
catalog records (`catalog.record_problem`) and looking for links (`StoreFS.inside`). Each is
timed by wrapping the function; the total is the pass's wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from prior.featurestore import open_store
store_dir, dataset, features = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
splits = sorted({s for d, s in open_store(store_dir, create=False).datasets() if d == dataset})
out = {}
for name in ("cold", "warm"):
    t0, c0 = time.perf_counter(), time.process_time()
    rows = 0
    for feature in features:
        for split in splits:
            rows += open_store(store_dir, create=False).frame(feature, dataset=dataset, split=split).height
    out[name], out[name + "_cpu"] = time.perf_counter() - t0, time.process_time() - c0
out["rows"] = rows
print(json.dumps(out))
"""


def measure(src: Path, store: str, dataset: str, features: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), PRIOR_NO_PROGRESS="1")
    done = subprocess.run([sys.executable, "-c", CHILD, store, dataset, features], env=env, cwd=src,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def breakdown(store: str, dataset: str, features: str) -> dict:
    """Seconds the checks take within one cold pass of every frame (this process, this tree)."""
    import time

    import prior.featurestore.segment_files as segment_files_module
    from prior.featurestore import catalog, checked, fs, open_store

    spent = {"read_checked": 0.0, "reading_in_checked": 0.0, "record_problem": 0.0, "inside": 0.0}
    patched: list[tuple[object, str, object]] = []

    def wrap(owner: object, name: str, key: str, only=lambda args: True) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                if only(args):
                    spent[key] += time.perf_counter() - t0

        patched.append((owner, name, original))
        setattr(owner, name, timed)

    wrap(checked, "read_checked", "read_checked")
    segment_files_module.read_checked = checked.read_checked  # imported by name there
    wrap(fs.StoreFS, "read_bytes", "reading_in_checked", only=lambda args: args[1].startswith("segments/"))
    wrap(catalog, "record_problem", "record_problem")
    wrap(fs.StoreFS, "inside", "inside")
    try:
        checked.forget()
        catalog._RECORDS.clear()  # the records this process checked: each round checks them again
        t0 = time.perf_counter()  # the first open checks the catalog's records: timed with the pass
        splits = sorted({s for d, s in open_store(store, create=False).datasets() if d == dataset})
        for feature in features.split(","):
            for split in splits:
                open_store(store, create=False).frame(feature, dataset=dataset, split=split)
        total = time.perf_counter() - t0
    finally:
        for owner, name, original in reversed(patched):
            setattr(owner, name, original)
        segment_files_module.read_checked = checked.read_checked
    added = spent["read_checked"] - spent["reading_in_checked"] + spent["record_problem"] + spent["inside"]
    return {"pass_s": round(total, 3), "checks_s": round(added, 3), "fraction": round(added / total, 4),
            **{k: round(v, 4) for k, v in spent.items()}}


def breakdown_table(path: str) -> None:
    """The range over rounds of each part of ``--breakdown`` lines, as one Markdown row."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]

    def span(values: list[float], fmt: str) -> str:
        return f"{min(values):{fmt}}–{max(values):{fmt}}"

    hashing = [r["read_checked"] - r["reading_in_checked"] for r in rows]
    print("| rounds | pass wall s | checks s | share % | hashing and comparing files s | catalog records s | links s |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {len(rows)} | {span([r['pass_s'] for r in rows], '.2f')} | {span([r['checks_s'] for r in rows], '.3f')} "
          f"| {span([100 * r['fraction'] for r in rows], '.1f')} | {span(hashing, '.4f')} "
          f"| {span([r['record_problem'] for r in rows], '.4f')} | {span([r['inside'] for r in rows], '.4f')} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store")
    ap.add_argument("--old-src", type=Path, help="source tree of the code without checked reads (required "
                                                 "unless --breakdown)")
    ap.add_argument("--new-src", type=Path, default=REPO)
    ap.add_argument("--dataset", default="sick")
    ap.add_argument("--features", default="sdoi,wup,dep")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--breakdown", action="store_true", help="time the checks' share of one cold pass instead")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out", help="folder of the result file")
    ap.add_argument("--table", metavar="LINES.jsonl", help="print the table of --breakdown lines (one a round)")
    args = ap.parse_args()
    if args.table:
        breakdown_table(args.table)
        return
    if not args.store:
        ap.error("--store is required")
    if args.breakdown:
        sys.path.insert(0, str(args.new_src))
        for _ in range(args.rounds):
            print(json.dumps(breakdown(args.store, args.dataset, args.features)), flush=True)
        return

    if args.old_src is None:
        ap.error("--old-src is required")
    runs: list[dict] = []
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        row = {}
        for which in order:
            src = args.old_src if which == "old" else args.new_src
            row[which] = measure(src, args.store, args.dataset, args.features)
        assert row["old"]["rows"] == row["new"]["rows"], row
        runs.append(row)
        print(f"round {r + 1}: " + " | ".join(
            f"{w} " + " ".join(f"{p} {row[w][p]:.3f}" for p in ("cold", "cold_cpu", "warm", "warm_cpu"))
            for w in ("old", "new")), flush=True)
    summary = {}
    for phase in ("cold", "cold_cpu", "warm", "warm_cpu"):
        ratios = [row["new"][phase] / row["old"][phase] for row in runs]
        summary[phase] = {"ratio_median": round(statistics.median(ratios), 3),
                          "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
                          "old_median_s": round(statistics.median(row["old"][phase] for row in runs), 3),
                          "new_median_s": round(statistics.median(row["new"][phase] for row in runs), 3)}
        print(f"{phase}: new/old median {summary[phase]['ratio_median']} "
              f"(range {summary[phase]['ratio_min']}-{summary[phase]['ratio_max']}), "
              f"old {summary[phase]['old_median_s']} s, new {summary[phase]['new_median_s']} s")
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    (args.out / f"reliability-{stamp}.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "rows": runs[0]["new"]["rows"], "runs": runs,
         "summary": summary}, indent=1))


if __name__ == "__main__":
    main()

"""Paired parse speed of two checkouts: the same sentences through each one's default parser.

    git worktree add /tmp/prior-before 04e4263      # main before the parse speed-ups
    PRIOR_DATA_DIR=../shared/data python bench/parse_pair.py --before /tmp/prior-before --limit 8000
    python bench/parse_pair.py --limit 40 --rounds 1                  # a smoke test: this checkout twice

The distinct sentences of `bench/parse_profile.py` (every dataset in the data dir, seeded shuffle,
the first ``--limit``) are written to a file once; then, for ``--rounds`` rounds, alternating
the order (A B, B A, ...), each checkout parses them in a fresh process (``PYTHONPATH`` set to
the checkout, one torch thread, as a build's worker runs), in chunks of ``--chunk`` sentences
(a build's parse partition), after a warm-up sentence. Reported per checkout: the median CPU
seconds of the parse calls (user + system of that process; what a busy machine disturbs least)
and wall seconds, sentences per CPU second, and whether both checkouts gave the same parses
(heads and relations of every word). Writes bench/out/parse-pair-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from parse_profile import SHARED  # noqa: E402
from results import write_json  # noqa: E402
from scale import sentences  # noqa: E402

CHILD = """
import json, sys, time, torch
import prior
torch.set_num_threads(1)
from prior.pipeline.parsers import get_parser
texts = json.load(open(sys.argv[1]))
chunk = int(sys.argv[2])
parser = get_parser(sys.argv[3], "cpu")
parser.parse(["A warm-up sentence is parsed before the clock starts.", "Two dogs run."])
cpu, wall = time.process_time(), time.perf_counter()
out = [p for i in range(0, len(texts), chunk) for p in parser.parse(texts[i:i + chunk])]
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
trees = [[list(p.words), list(p.heads), list(p.rels)] for p in out]
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "trees": trees, "module": prior.__file__}))
"""


def run_child(checkout: Path, texts_file: Path, chunk: int, parser: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
    # -P: the checkout on PYTHONPATH is imported, not the working directory's
    done = subprocess.run([sys.executable, "-P", "-c", CHILD, str(texts_file), str(chunk), parser], env=env,
                          capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(result.pop("module")).resolve().is_relative_to(checkout):
        raise SystemExit(f"the child imported prior from outside {checkout}: the comparison would time one checkout twice")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, default=REPO, help="the other checkout (default: this one)")
    ap.add_argument("--after", type=Path, default=REPO)
    ap.add_argument("--parser", default="biaffine")
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("PRIOR_DATA_DIR", SHARED)))
    ap.add_argument("--limit", type=int, default=8000)
    ap.add_argument("--chunk", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    texts = sentences(args.data_dir)
    random.Random(0).shuffle(texts)
    texts = texts[: args.limit]
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    trees: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        texts_file = Path(tmp) / "texts.json"
        texts_file.write_text(json.dumps(texts))
        for round_ in range(args.rounds):
            for name in (list(sides) if round_ % 2 == 0 else list(sides)[::-1]):
                row = run_child(sides[name], texts_file, args.chunk, args.parser)
                trees[name] = row.pop("trees")
                runs[name].append(row)
                print(f"round {round_ + 1} {name:6s} {row['cpu_s']:8.2f} s CPU {row['wall_s']:8.2f} s wall", flush=True)
    summary = {name: {"cpu_s": round(statistics.median(r["cpu_s"] for r in rows), 2),
                      "wall_s": round(statistics.median(r["wall_s"] for r in rows), 2),
                      "sentences_per_cpu_s": round(len(texts) / statistics.median(r["cpu_s"] for r in rows), 1)}
               for name, rows in runs.items()}
    same = sum(a == b for a, b in zip(trees["before"], trees["after"], strict=True))
    result = {"parser": args.parser, "sentences": len(texts), "chunk": args.chunk, "rounds": args.rounds,
              "checkouts": {k: str(v) for k, v in sides.items()}, "summary": summary, "runs": runs,
              "same_trees": same, "load_avg": round(os.getloadavg()[0], 2)}
    for name, row in summary.items():
        print(f"{name:6s} {row['cpu_s']:8.2f} s CPU  {row['sentences_per_cpu_s']:7.1f} sentences per CPU second")
    print(f"after/before CPU: {summary['after']['cpu_s'] / summary['before']['cpu_s']:.3f}; "
          f"same trees: {same} of {len(texts)}")
    write_json(args.out, "parse-pair", result)


if __name__ == "__main__":
    main()

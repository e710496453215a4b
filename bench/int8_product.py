"""The int8 model's products: ``torch._int_mm`` against a float32 product of the same int8 values
(`prior.pipeline.parsers.int8_rows`), and the tables of bench/RESULTS.md from their lines.

    python bench/int8_product.py matmul >> LINES.jsonl                   # the products, one thread
    python bench/int8_product.py parse-line OUT.json --label L --command "..." >> LINES.jsonl
    python bench/int8_product.py table LINES.jsonl                       # Markdown tables of the lines

``matmul`` (a JSON line per shape): for each ``--shapes`` ``m×k×n``, int8 (m, k) × (k, n) by
``_int_mm`` and by the float32 product, ``--reps`` calls each after one untimed, alternating,
on one torch thread; milliseconds per call (median) and their ratio, whether both give the same
sums, and what `int8_rows.product_kind` chooses here and how long its timing took (``probe_s``).
``parse-line``: one line of a `bench/parse.py --int8` output file (``OUT.json``): its corpus,
words, words/s of supar's path, the fp32 fast path and the int8 model, the int8 model's UAS/LAS
and heads that differ from fp32, with ``--label`` (e.g. which product was forced) and the
``--command`` that made it. ``table``: the ``matmul`` lines as one table, the ``parse`` lines
as another.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHAPES = ("200x300x1216", "32x304x1216", "200x600x500")


def matmul(args: argparse.Namespace) -> None:
    import torch

    from prior.pipeline.parsers import int8_rows

    torch.set_num_threads(1)
    start = time.perf_counter()
    kind = int8_rows.product_kind()
    probe = time.perf_counter() - start
    generator = torch.Generator().manual_seed(0)
    for shape in args.shapes:
        m, k, n = (int(x) for x in shape.split("x"))
        q = torch.randint(-127, 128, (m, k), dtype=torch.int8, generator=generator)
        w = torch.randint(-127, 128, (k, n), dtype=torch.int8, generator=generator)
        w_f = w.float()
        times: dict[str, list[float]] = {"int": [], "float": []}
        same = torch.equal(int8_rows.int8_matmul(q, w), int8_rows.int8_matmul(q, w, w_f))  # untimed
        for _ in range(args.reps):
            for name, weight_f in (("int", None), ("float", w_f)):
                t = time.perf_counter()
                int8_rows.int8_matmul(q, w, weight_f)
                times[name].append(1000 * (time.perf_counter() - t))
        int_ms, float_ms = statistics.median(times["int"]), statistics.median(times["float"])
        print(json.dumps({"kind": "matmul", "shape": [m, k, n], "int_mm_ms": round(int_ms, 3),
                          "float_ms": round(float_ms, 3), "ratio": round(int_ms / float_ms, 1), "same_sums": same,
                          "reps": args.reps, "chosen": kind, "probe_s": round(probe, 3),
                          "cpu": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__}), flush=True)


def parse_line(args: argparse.Namespace) -> None:
    model = json.loads(Path(args.out).read_text(encoding="utf-8"))["model"]
    int8 = model["int8_ewt_test"]
    for corpus, speed in model["speed"].items():
        print(json.dumps({"kind": "parse", "label": args.label, "command": args.command, "corpus": corpus,
                          "sentences": speed["sentences"], "words": speed["words"],
                          "old_words_per_s": speed["old"]["words_per_s"], "new_words_per_s": speed["new"]["words_per_s"],
                          "int8_words_per_s": speed["int8"]["words_per_s"], "product": int8.get("product"),
                          "int8_UAS": int8["UAS"], "int8_LAS": int8["LAS"],
                          "int8_differing_heads": int8["differing_heads"]}))


def table(args: argparse.Namespace) -> None:
    lines: list[dict[str, Any]] = [json.loads(line) for line in Path(args.file).read_text(encoding="utf-8").splitlines()
                                   if line.strip()]
    products = [r for r in lines if r["kind"] == "matmul"]
    parses = [r for r in lines if r["kind"] == "parse"]
    if not products and not parses:
        raise SystemExit(f"{args.file}: no matmul or parse lines")
    if products:
        print("| m × k × n | `_int_mm` ms | float32 ms | ratio | same sums | chosen (probe s) |\n|---|---|---|---|---|---|")
        for r in products:
            m, k, n = r["shape"]
            print(f"| {m:,} × {k:,} × {n:,} | {r['int_mm_ms']:.2f} | {r['float_ms']:.2f} | {r['ratio']}× | "
                  f"{'yes' if r['same_sums'] else 'NO'} | {r['chosen']} ({r['probe_s']}) |")
    if parses:
        print("\n" if products else "", end="")
        print("| run | EWT sentences (words) | supar's path | fp32 fast path | int8 | int8 UAS / LAS | heads ≠ fp32 |\n"
              "|---|---|---|---|---|---|---|")
        for r in parses:
            print(f"| {r['label']} | {r['sentences']:,} ({r['words']:,}) | {r['old_words_per_s']:,.0f} | "
                  f"{r['new_words_per_s']:,.0f} | {r['int8_words_per_s']:,.0f} | {r['int8_UAS']} / {r['int8_LAS']} | "
                  f"{r['int8_differing_heads']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("matmul")
    m.add_argument("--shapes", nargs="+", default=list(SHAPES))
    m.add_argument("--reps", type=int, default=10)
    p = sub.add_parser("parse-line")
    p.add_argument("out")
    p.add_argument("--label", required=True)
    p.add_argument("--command", required=True)
    t = sub.add_parser("table")
    t.add_argument("file")
    args = ap.parse_args()
    {"matmul": matmul, "parse-line": parse_line, "table": table}[args.cmd](args)


if __name__ == "__main__":
    main()

"""Parsing speed: sentences/s of the `spacy` and `biaffine` backends with 1 and 2 worker processes.

Sentences: the unique premises and hypotheses of the SNLI files in ``$PRIOR_DATA_DIR/snli`` (or
``--snli DIR``), in order of first appearance, at most ``--n`` (5,000). Each worker process loads
its parser once (one model per worker, torch limited to 1 thread) and parses a warm-up batch
before the clock starts; timed is the parsing of all sentences in chunks of ``--chunk``.

    nice -n 10 .venv/bin/python bench/parse.py --snli ../shared/data/snli

Prints one line per (backend, workers) and writes bench/out/parse.json. The machine is shared:
repeat (``--repeats``) and read the median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

_PARSER = None


def snli_sentences(folder: Path, n: int) -> list[str]:
    seen: dict[str, None] = {}
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                for field in ("sentence1", "sentence2"):
                    text = (row.get(field) or "").strip()
                    if text:
                        seen.setdefault(text, None)
    return list(seen)[:n]


def _init(spec: str) -> None:
    global _PARSER
    import torch

    torch.set_num_threads(1)
    from pipeline.parsers import get_parser

    _PARSER = get_parser(spec)
    _PARSER.parse(["A warm-up sentence is parsed before timing starts.", "Two dogs run."])


def _parse(texts: list[str]) -> int:
    assert _PARSER is not None
    return sum(len(p) for p in _PARSER.parse(texts))


def run(spec: str, workers: int, sentences: list[str], chunk: int) -> tuple[float, int]:
    chunks = [sentences[i:i + chunk] for i in range(0, len(sentences), chunk)]
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_init, initargs=(spec,)) as pool:
        list(pool.map(_parse, [["Start every worker."]] * workers))  # all workers loaded and warm
        start = time.perf_counter()
        words = sum(pool.map(_parse, chunks))
        seconds = time.perf_counter() - start
    return seconds, words


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_snli = Path(os.environ.get("PRIOR_DATA_DIR", "../shared/data")) / "snli"
    ap.add_argument("--snli", type=Path, default=default_snli)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--backends", default="spacy,biaffine")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "parse.json")
    args = ap.parse_args()

    sentences = snli_sentences(args.snli, args.n)
    print(f"{len(sentences)} unique SNLI sentences from {args.snli} (asked for {args.n}); "
          f"load average {os.getloadavg()[0]:.2f}")
    results = []
    for spec in args.backends.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            rates = []
            for _ in range(args.repeats):
                seconds, words = run(spec, workers, sentences, args.chunk)
                rates.append(len(sentences) / seconds)
            rate = statistics.median(rates)
            results.append({"backend": spec, "workers": workers, "sentences": len(sentences), "words": words,
                            "sentences_per_s": rate, "runs": rates, "load_avg": os.getloadavg()[0]})
            print(f"{spec:10s} workers={workers}  {rate:8.1f} sentences/s  ({words} words; runs {', '.join(f'{r:.1f}' for r in rates)})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

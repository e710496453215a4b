"""Parsing speed and exactness: the biaffine model's own time (old path vs fast path), its trees
against supar's on UD EWT test, and texts/s of the `biaffine` and `spacy` backends.

    PRIOR_DATA_DIR=../shared/data python bench/parse.py                # everything below
    python bench/parse.py --skip-backends --rounds 3                   # the model only
    python bench/parse.py --int8                                       # + the int8 opt-in row
    python bench/parse.py --n 200 --ewt-limit 100 --rounds 1 --workers 1   # a smoke test
    python bench/parse.py --n 0 --skip-backends --rounds 3               # EWT only (no spaCy): e.g. on a GPU

1. **Model time per core** (words -> trees, one torch thread, this process): the same sentences
   through supar's own forward + decode (`old`: `BiaffineModel.predict_supar`, the path every
   build took before) and through the fast path (`new`: `BiaffineModel.predict`). Corpora: the
   unique SNLI texts of ``--snli`` (at most ``--n``) split into words and sentences by the
   biaffine backend's spaCy annotator, and the gold words of UD EWT test. The paths alternate
   every ``--model-chunk`` sentences (one model call each), so a change of machine load hits
   both alike. Reported: words/s of each (median over rounds) and the median of the
   per-round ratios new/old, by wall and by CPU time.
2. **Exactness** on every sentence of UD EWT test (gold words): heads and relations of `new`
   against `old`, word by word (expected: 0 and 0), and UAS/LAS of both (punctuation excluded,
   full labels: the numbers `prior parser eval` prints).
3. ``--int8``: the opt-in ``biaffine-int8`` model (CPU; `prior.pipeline.parsers.int8_rows`): its
   speed against `new`, its UAS/LAS, the heads that differ from float32, and how its products
   were summed (``product``: ``int`` or ``float``, the faster here; ``PRIOR_INT8_PRODUCT`` forces one).
4. **CUDA** where torch sees a GPU: the fast path on it (words/s, and exactness against `old`
   on the CPU).
5. **Backends** (``--backends``, default `biaffine,spacy`): texts/s of ``parser.parse`` (spaCy
   annotation + heads) with 1 and 2 worker processes, each worker with one torch thread and
   its parser loaded before the clock starts.

Writes bench/out/parse-<date>.json. The machine may be shared: ratios measured interleaved are
meaningful under load, absolute rates are not.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from results import write_json  # bench/results.py (this script's folder is on sys.path)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
_PARSER = None
Trees = list[tuple[list[int], list[str]]]


def snli_sentences(folder: Path, n: int) -> list[str]:
    """Unique SNLI premises and hypotheses of ``folder``'s jsonl files, in order, at most ``n``."""
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


def snli_words(texts: list[str]) -> list[list[str]]:
    """The sentences (as words) the biaffine backend gives its model for ``texts``."""
    from prior.pipeline.parsers.biaffine import SENTENCES
    from prior.pipeline.parsers.spacy_backend import shared_annotator

    docs = shared_annotator(sentences=SENTENCES).docs(texts)
    return [[t.text for t in s] for doc in docs for s in doc.sents]


def diff_counts(a: Trees, b: Trees) -> dict[str, int]:
    heads = sum(x != y for (ha, _), (hb, _) in zip(a, b) for x, y in zip(ha, hb))
    rels = sum(x != y for (_, ra), (_, rb) in zip(a, b) for x, y in zip(ra, rb))
    sentences = sum(ta != tb for ta, tb in zip(a, b))
    return {"differing_heads": heads, "differing_relations": rels, "differing_sentences": sentences}


def interleaved(paths: dict[str, Any], sentences: list[list[str]], rounds: int, chunk: int) -> dict[str, Any]:
    """Each path over all ``sentences`` per round, interleaved chunk by chunk (``chunk``
    sentences, one model call each; the order of the paths alternates per chunk) so that all
    paths see the same machine load. Words/s per path (median round; wall and CPU time) and the
    median per-round ratio of each path's time to the first path's."""
    words = sum(map(len, sentences))
    names = list(paths)
    chunks = [sentences[i:i + chunk] for i in range(0, len(sentences), chunk)]
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        w, c = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0)
        for i, part in enumerate(chunks):
            for name in (names if (r + i) % 2 == 0 else names[::-1]):
                t0, c0 = time.perf_counter(), time.process_time()
                paths[name](part)
                w[name] += time.perf_counter() - t0
                c[name] += time.process_time() - c0
        for name in names:
            wall[name].append(w[name])
            cpu[name].append(c[name])
    base = names[0]
    out: dict[str, Any] = {"sentences": len(sentences), "words": words, "rounds": rounds, "chunk": chunk,
                           "load_avg": round(os.getloadavg()[0], 2)}
    for name in names:
        out[name] = {"words_per_s": round(words / statistics.median(wall[name]), 1),
                     "words_per_cpu_s": round(words / statistics.median(cpu[name]), 1),
                     "wall_s": [round(x, 3) for x in wall[name]]}
        if name != base:
            out[name]["speedup_over_" + base] = round(statistics.median(
                [b / a for a, b in zip(wall[name], wall[base])]), 2)
            out[name]["cpu_speedup_over_" + base] = round(statistics.median(
                [b / a for a, b in zip(cpu[name], cpu[base])]), 2)
    return out


def scores(gold: list[Any], trees: Trees) -> dict[str, float]:
    from prior.pipeline.parsers.evaluate import attachment_scores

    s = attachment_scores(gold, trees)
    return {"UAS": round(s.uas, 2), "LAS": round(s.las, 2)}


def model_section(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from prior.pipeline.parsers.biaffine import BiaffineModel, load_model
    from prior.pipeline.parsers.conllu import read_conllu
    from prior.pipeline.parsers.int8_rows import RowInt8Biaffine, product_kind

    torch.set_num_threads(1)
    loaded = load_model()
    model = BiaffineModel(loaded, device="cpu")
    # --n 0: EWT's gold words only, so the model section runs where spaCy is not installed
    corpora = {"snli": snli_words(snli_sentences(args.snli, args.n))} if args.n else {}
    gold = read_conllu(args.ewt)[: args.ewt_limit]
    corpora["ewt-test"] = [list(s.words) for s in gold]
    warm = next(iter(corpora.values()))[:20]
    model.predict(warm)  # warm up both paths
    model.predict_supar(warm)
    out: dict[str, Any] = {"speed": {}}
    paths = {"old": model.predict_supar, "new": model.predict}
    if args.int8:
        q = BiaffineModel(loaded, device="cpu")
        q.fast = RowInt8Biaffine(q.fast)
        paths["int8"] = q.predict
    for name, sentences in corpora.items():
        out["speed"][name] = interleaved(paths, sentences, args.rounds, args.model_chunk)
        row = out["speed"][name]
        print(f"model {name:8s} {row['sentences']} sentences {row['words']} words: old {row['old']['words_per_s']:.0f} "
              f"new {row['new']['words_per_s']:.0f} words/s per core; new/old {row['new']['speedup_over_old']}x wall "
              f"({row['new']['cpu_speedup_over_old']}x CPU time), load {row['load_avg']}"
              + (f"; int8 {row['int8']['words_per_s']:.0f} words/s, {row['int8']['speedup_over_old']}x old"
                 if "int8" in row else ""), flush=True)
    old, new = model.predict_supar(corpora["ewt-test"]), model.predict(corpora["ewt-test"])
    out["exactness_ewt_test"] = {"file": str(args.ewt), "sentences": len(gold), "words": sum(map(len, gold)),
                                 **diff_counts(old, new), "old": scores(gold, old), "new": scores(gold, new)}
    e = out["exactness_ewt_test"]
    print(f"exactness on {e['sentences']} EWT test sentences ({e['words']} words): {e['differing_heads']} differing "
          f"heads, {e['differing_relations']} differing relations; old UAS/LAS {e['old']['UAS']}/{e['old']['LAS']}, "
          f"new {e['new']['UAS']}/{e['new']['LAS']}", flush=True)
    if args.int8:
        trees = paths["int8"](corpora["ewt-test"])
        # how its products were summed (`int8_rows.product_kind`: the same trees either way)
        out["int8_ewt_test"] = {**diff_counts(old, trees), **scores(gold, trees), "product": product_kind()}
        print(f"int8 (opt-in, {product_kind()} products): UAS/LAS {out['int8_ewt_test']['UAS']}/"
              f"{out['int8_ewt_test']['LAS']}, {out['int8_ewt_test']['differing_heads']} heads differ from fp32",
              flush=True)
    if torch.cuda.is_available():
        cuda = BiaffineModel(loaded, device="cuda")
        cuda.predict(warm)
        out["cuda"] = {name: interleaved({"cuda": cuda.predict}, s, args.rounds, args.model_chunk)["cuda"]
                       for name, s in corpora.items()}
        out["cuda"]["exactness_ewt_test"] = diff_counts(old, cuda.predict(corpora["ewt-test"]))
        print(f"cuda ({torch.cuda.get_device_name()}): " + ", ".join(
            f"{k} {v['words_per_s']:.0f} words/s" for k, v in out["cuda"].items() if "words_per_s" in v)
            + f"; {out['cuda']['exactness_ewt_test']}", flush=True)
    return out


def _init(spec: str) -> None:
    global _PARSER
    import torch

    torch.set_num_threads(1)
    from prior.pipeline.parsers import get_parser

    _PARSER = get_parser(spec)
    _PARSER.parse(["A warm-up sentence is parsed before timing starts.", "Two dogs run."])


def _parse(texts: list[str]) -> int:
    assert _PARSER is not None
    return sum(len(p) for p in _PARSER.parse(texts))


def run_backend(spec: str, workers: int, texts: list[str], chunk: int) -> tuple[float, int]:
    chunks = [texts[i:i + chunk] for i in range(0, len(texts), chunk)]
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_init, initargs=(spec,)) as pool:
        list(pool.map(_parse, [["Start every worker."]] * workers))  # all workers loaded and warm
        start = time.perf_counter()
        words = sum(pool.map(_parse, chunks))
        seconds = time.perf_counter() - start
    return seconds, words


def backends_section(args: argparse.Namespace) -> list[dict[str, Any]]:
    texts = snli_sentences(args.snli, args.n)
    rows = []
    for spec in args.backends.split(","):
        for workers in (int(w) for w in args.workers.split(",")):
            rates = []
            for _ in range(args.repeats):
                seconds, words = run_backend(spec, workers, texts, args.chunk)
                rates.append(len(texts) / seconds)
            rate = statistics.median(rates)
            rows.append({"backend": spec, "workers": workers, "texts": len(texts), "words": words,
                         "texts_per_s": round(rate, 1), "runs": [round(r, 1) for r in rates],
                         "load_avg": round(os.getloadavg()[0], 2)})
            print(f"backend {spec:10s} workers={workers}  {rate:8.1f} texts/s  ({words} words; runs "
                  f"{', '.join(f'{r:.1f}' for r in rates)})", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = Path(os.environ.get("PRIOR_DATA_DIR", SHARED))
    ap.add_argument("--snli", type=Path, default=data / "snli")
    ap.add_argument("--ewt", type=Path, default=data / "ud_ewt" / "en_ewt-ud-test.conllu")
    ap.add_argument("--ewt-limit", type=int, default=None, help="Only the first N EWT test sentences (smoke tests).")
    ap.add_argument("--n", type=int, default=5000, help="At most this many SNLI texts (0: EWT only, no spaCy).")
    ap.add_argument("--rounds", type=int, default=5, help="Interleaved rounds of the model comparison.")
    ap.add_argument("--model-chunk", type=int, default=500, help="Sentences per model call in the comparison "
                                                                 "(the paths alternate chunk by chunk).")
    ap.add_argument("--int8", action="store_true", help="Add the opt-in int8 row (speed, UAS/LAS).")
    ap.add_argument("--skip-model", action="store_true")
    ap.add_argument("--skip-backends", action="store_true")
    ap.add_argument("--backends", default="biaffine,spacy")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    results: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                               "cpu_count": os.cpu_count(), "load_avg_start": round(os.getloadavg()[0], 2)}
    if not args.skip_model:
        results["model"] = model_section(args)
    if not args.skip_backends:
        results["backends"] = backends_section(args)
    write_json(args.out, "parse", results)


if __name__ == "__main__":
    main()

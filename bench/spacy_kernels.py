"""spaCy's annotation with numpy's BLAS (the annotator's default, `prior.pipeline.parsers.spacy_kernels`)
against thinc's blis (spaCy as shipped): do the words, tags, UPOS, lemmas, entity types and
sentence starts stay the same, and how much CPU time does each take?

    PRIOR_DATA_DIR=../shared/data python bench/spacy_kernels.py            # every distinct sentence (63,027)
    python bench/spacy_kernels.py --limit 200                              # a smoke test

The texts are bench/scale.py's distinct sentences (seeded shuffle); the two annotators run
alternately on chunks of ``--chunk`` texts, one BLAS thread, CPU time per side. Writes
bench/out/spacy-kernels-<date>.json.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path
from typing import Any

from results import write_json  # bench/results.py
from scale import sentences  # bench/scale.py

REPO = Path(__file__).resolve().parents[1]
FIELDS = ("text", "tag_", "pos_", "lemma_", "ent_type_", "is_sent_start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("PRIOR_DATA_DIR", REPO.parent / "shared" / "data")))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--chunk", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    from thinc.api import NumpyOps

    from prior.pipeline.parsers.biaffine import SENTENCES
    from prior.pipeline.parsers.spacy_backend import SpacyAnnotator

    texts = sentences(args.data_dir)
    random.Random(0).shuffle(texts)
    texts = texts[: args.limit] if args.limit else texts
    fast = SpacyAnnotator(sentences=SENTENCES)
    blis = SpacyAnnotator(sentences=SENTENCES)
    for _, component in blis.nlp.pipeline:  # back to thinc's own ops (blis)
        for layer in component.model.walk() if hasattr(getattr(component, "model", None), "walk") else ():
            layer.ops = NumpyOps()
    cpu = {"numpy": 0.0, "blis": 0.0}
    differ = dict.fromkeys(FIELDS, 0)
    docs_differ = tokens = 0
    for i in range(0, len(texts), args.chunk):
        part = texts[i:i + args.chunk]
        out: dict[str, list[Any]] = {}
        for name, annotator in (("numpy", fast), ("blis", blis))[:: 1 if (i // args.chunk) % 2 == 0 else -1]:
            start = time.process_time()
            out[name] = annotator.docs(part)
            cpu[name] += time.process_time() - start
        for a, b in zip(out["numpy"], out["blis"]):
            rows_a = [tuple(getattr(t, f) for f in FIELDS) for t in a]
            rows_b = [tuple(getattr(t, f) for f in FIELDS) for t in b]
            docs_differ += rows_a != rows_b
            tokens += len(rows_b)
            for ra, rb in zip(rows_a, rows_b):
                for f, x, y in zip(FIELDS, ra, rb):
                    differ[f] += x != y
    results = {"texts": len(texts), "tokens": tokens, "differing_texts": docs_differ, "differing_tokens": differ,
               "cpu_s": {k: round(v, 2) for k, v in cpu.items()}, "numpy_over_blis_cpu": round(cpu["numpy"] / cpu["blis"], 3),
               "load_avg": round(os.getloadavg()[0], 2)}
    print(f"{len(texts)} texts, {tokens} tokens: {docs_differ} texts differ; per field {differ}; CPU numpy "
          f"{cpu['numpy']:.1f} s, blis {cpu['blis']:.1f} s ({results['numpy_over_blis_cpu']}x)", flush=True)
    write_json(args.out, "spacy-kernels", results)


if __name__ == "__main__":
    main()

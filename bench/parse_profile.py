"""Where the parse's time goes: a per-component profile of one parser over the distinct sentences
`bench/scale.py` builds from (every distinct sentence of every dataset in the data dir, 63,027
with the shared data), in CPU time.

    PRIOR_DATA_DIR=../shared/data python bench/parse_profile.py                       # default parser, all sentences
    PRIOR_DATA_DIR=../shared/data python bench/parse_profile.py --parser biaffine-int8
    PRIOR_DATA_DIR=../shared/data python bench/parse_profile.py --features dep,sdoi  # no tagger, lemmatizer, NER
    python bench/parse_profile.py --limit 300 --chunk 100                              # a smoke test

1. **Start-up** of a worker, in a fresh process (wall and CPU seconds of each step): import
   torch, import spaCy, load the spaCy pipeline, load the parser (the biaffine model, supar's
   imports included), parse a first sentence.
2. **Components**, in this process with one torch thread (as a build's worker runs), the
   sentences cut into chunks of ``--chunk`` (a build's parse partition holds up to 2,000):
   the text normalization, spaCy's tokenizer, each spaCy component by name (``spacy:ner`` …;
   only those whose annotations the ``--features`` read, as a build of them runs),
   the sentence spans and word lists handed to the model, then the biaffine model's stages as
   the parser runs them (``tensors``: word and character ids, Python; ``embed``: word
   embeddings and the character LSTM; ``bilstm``; ``arc``: arc MLPs and biaffine scores;
   ``decode``: greedy heads and the tree search; ``rel``: relation MLPs, scores and labels),
   ``batching``: the model's batching and output lists (the model call less its stages), and
   ``records``: building the `Parse` records and their stored form, and ``gc``: Python's
   garbage collections, taken out of the stages they interrupted (`Clock`). CPU seconds, ms
   per sentence and share of the total per component.
3. **Check**: the same chunks through ``parser.parse`` (the path a build takes), CPU time, and
   whether its parses equal the profiled run's (they must: the profile runs the parser's own
   code, stage by stage).

CPU time (user + system of this process) is what a contended machine disturbs least; the
shares are the profile. Sentences/s of a whole build come from ``bench/scale.py`` (its parse
stage), run on an idle machine. Writes bench/out/parse-profile-<date>.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from results import write_json  # bench/results.py (this script's folder is on sys.path)
from scale import sentences  # bench/scale.py: the same distinct sentences

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"


#: Python's garbage collections, a component of their own
GC = "gc"


class Clock:
    """CPU seconds per named component, added up over calls. Python's garbage collections are
    a component of their own (`GC`), taken out of the stage they interrupt: a collection walks
    the objects alive, so its cost lands on whichever stage happens to allocate when one is due,
    not on the stage that made the objects (the profile holds every record it made, which a
    build's worker does not)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.collected = 0.0
        self._collection_start = 0.0
        gc.callbacks.append(self._collection)

    def _collection(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._collection_start = time.process_time()
            return
        spent = time.process_time() - self._collection_start
        self.collected += spent
        self.seconds[GC] += spent

    def close(self) -> None:
        gc.callbacks.remove(self._collection)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start, collected = time.process_time(), self.collected
        try:
            yield
        finally:
            self.seconds[name] += time.process_time() - start - (self.collected - collected)


def startup_child(spec: str) -> None:
    """Run in a fresh process: each start-up step's wall and CPU seconds, one JSON line."""
    steps: dict[str, dict[str, float]] = {}

    def step(name: str, fn: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        steps[name] = {"wall_s": round(time.perf_counter() - w, 3), "cpu_s": round(time.process_time() - c, 3)}
        return out

    step("import torch", lambda: __import__("torch"))
    step("import spacy", lambda: __import__("spacy"))
    from prior.parser_spec import ParserSpec

    def annotator() -> Any:
        from prior.pipeline.parsers.spacy_backend import shared_annotator

        if ParserSpec.parse(spec).name == "spacy":
            return shared_annotator()
        from prior.pipeline.parsers import annotator_for

        return annotator_for(spec)

    step("load spaCy pipeline", annotator)
    from prior.pipeline.parsers import get_parser

    parser = step("load parser", lambda: get_parser(spec, "cpu"))
    step("first parse", lambda: parser.parse(["A first sentence is parsed."]))
    print(json.dumps(steps))


def startup(spec: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, __file__, "--startup-child", "--parser", spec], capture_output=True,
                          text=True, env=env, cwd=REPO, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def profile_chunk(parser: Any, texts: list[str], clock: Clock, annotations: frozenset[str]) -> list[Any]:
    """``parser.parse(texts, annotations)`` stage by stage (the parser's own code), each stage clocked."""
    from prior.featurestore.keys import normalize_text
    from prior.pipeline.parsers.annotations import skipped_components
    from prior.pipeline.parsers.spacy_backend import doc_to_parse
    from prior.pipeline.parsers.spacy_kernels import single_threaded_blas

    annotator = parser.annotator
    nlp = annotator.nlp
    skipped = skipped_components(nlp.pipe_names, annotations)
    with clock("normalize"):
        normalized = [normalize_text(t) for t in texts]
    with clock("tokenizer"):
        docs = [nlp.tokenizer(t) for t in normalized]
    for name, component in nlp.pipeline:
        if name in skipped:  # the build's features read nothing it makes
            continue
        with clock(f"spacy:{name}"), single_threaded_blas():  # as the annotator runs them
            pipe = getattr(component, "pipe", None)  # a function component has none
            docs = list(pipe(docs, batch_size=annotator.batch_size)) if pipe else [component(d) for d in docs]
    if parser.name == "spacy":
        with clock("records"):
            return [doc_to_parse(doc).to_record() for doc in docs]
    with clock("sentences"):
        spans, words = parser.sentence_words(docs)
    before = dict(clock.seconds)
    with clock("batching"):
        preds = parser.biaffine.predict(words, stage=clock)
    inner = sum(clock.seconds[k] - before.get(k, 0.0) for k in clock.seconds if k not in ("batching", GC))
    clock.seconds["batching"] -= inner  # the model call less its stages
    with clock("records"):
        return [p.to_record() for p in parser.assemble(docs, spans, preds)]


def features_annotations(features: list[str]) -> frozenset[str]:
    """The parse annotations a build of ``features`` (default options) makes."""
    from prior.pipeline.build import build_annotations
    from prior.pipeline.build_options import BuildOptions

    return build_annotations(BuildOptions(dataset="bench", features=tuple(features)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", default="biaffine", help="Parser spec (default: biaffine).")
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("PRIOR_DATA_DIR", SHARED)))
    ap.add_argument("--limit", type=int, default=None, help="Only the first N sentences (after a seeded shuffle).")
    ap.add_argument("--chunk", type=int, default=2000, help="Sentences per parse call (a build's partition).")
    ap.add_argument("--features", default="dep,sdoi,wup",
                    help="The build's features: spaCy runs only the components whose annotations they read.")
    ap.add_argument("--skip-startup", action="store_true")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    ap.add_argument("--startup-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.startup_child:
        startup_child(args.parser)
        return
    import random

    import torch

    torch.set_num_threads(1)
    texts = sentences(args.data_dir)
    random.Random(0).shuffle(texts)  # every chunk a mix of datasets, as in a build of the scale table
    texts = texts[: args.limit] if args.limit else texts
    results: dict[str, Any] = {"parser": args.parser, "sentences": len(texts), "chunk": args.chunk,
                               "cpu_count": os.cpu_count(), "load_avg_start": round(os.getloadavg()[0], 2)}
    if not args.skip_startup:
        results["startup"] = startup(args.parser)
        for name, row in results["startup"].items():
            print(f"start-up  {name:22s} {row['wall_s']:7.2f} s wall {row['cpu_s']:7.2f} s CPU", flush=True)
    from prior.pipeline.parsers import get_parser

    annotations = features_annotations(args.features.split(","))
    results["features"], results["annotations"] = args.features, sorted(annotations)
    parser = get_parser(args.parser, "cpu")
    parser.parse(["A warm-up sentence is parsed before the clock starts.", "Two dogs run."])
    chunks = [texts[i:i + args.chunk] for i in range(0, len(texts), args.chunk)]
    clock = Clock()
    profiled = [r for chunk in chunks for r in profile_chunk(parser, chunk, clock, annotations)]
    clock.close()
    words = sum(len(r["words"]) for r in profiled)
    total = sum(clock.seconds.values())
    rows = []
    for name, seconds in sorted(clock.seconds.items(), key=lambda kv: -kv[1]):
        rows.append({"component": name, "cpu_s": round(seconds, 3), "ms_per_sentence": round(1000 * seconds / len(texts), 4),
                     "share": round(seconds / total, 4)})
        print(f"{name:18s} {seconds:9.2f} s CPU {1000 * seconds / len(texts):8.3f} ms/sentence {100 * seconds / total:6.1f} %",
              flush=True)
    start = time.process_time()
    direct = [p.to_record() for chunk in chunks for p in parser.parse(chunk, annotations)]
    direct_s = time.process_time() - start
    results.update({"words": words, "components": rows, "profiled_cpu_s": round(total, 3),
                    "sentences_per_cpu_s": round(len(texts) / total, 1),
                    "parse_call_cpu_s": round(direct_s, 3), "parse_call_sentences_per_cpu_s": round(len(texts) / direct_s, 1),
                    "parse_call_equal": direct == profiled, "load_avg_end": round(os.getloadavg()[0], 2)})
    print(f"total {total:.2f} s CPU for {len(texts)} sentences ({words} words): {len(texts) / total:.1f} sentences per "
          f"CPU second; parser.parse: {direct_s:.2f} s CPU ({len(texts) / direct_s:.1f}/s), same parses: "
          f"{results['parse_call_equal']}", flush=True)
    write_json(args.out, "parse-profile", results)


if __name__ == "__main__":
    main()

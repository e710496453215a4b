"""What annotating only what the features read saves, and that it changes nothing else: the
parser's ``parse`` over the distinct sentences `bench/scale.py` builds from, with every
annotation (what the default ``dep,sdoi,wup`` build makes) and with the annotations of other
feature sets, in CPU time, chunk by chunk in alternation (A, B, A, B … so that a busy machine
disturbs both alike). Also spaCy's ``nlp.pipe`` batch sizes on the complete annotation.

    PRIOR_DATA_DIR=../shared/data python bench/annotations.py                     # all sentences
    python bench/annotations.py --limit 2000 --batch-sizes 64,256,1024             # a quick look

``--ner-rule N`` also checks a rule that would run NER only where it could fire (a text with
a capital letter or a digit past each sentence's first word) on N distinct texts per dataset:
the texts it would skip that have entities, and those with a name `wup` reads (an entity of a
name type on a word whose UPOS is not PROPN). Any such text means the rule is not exact.

For each feature set: the annotations it makes, CPU ms per sentence against the complete
annotation's, and the sentences whose words, heads, relations or kept annotations differ from
the complete one's (they must not: a component left out runs after, or apart from, those
kept). For each batch size: CPU ms per sentence and the sentences whose record differs from
the default batch size's. Writes bench/out/annotations-<date>.json.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path
from typing import Any

from results import write_json  # bench/results.py (this script's folder is on sys.path)
from scale import sentences  # bench/scale.py: the same distinct sentences

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
FEATURE_SETS = ("dep,sdoi", "dep,sdoi,wup -o wup.name_entities=", "sdoi")
FIELDS = ("words", "heads", "rels", "tags", "upos", "lemmas", "ents")


def feature_set_annotations(spec: str) -> frozenset[str]:
    """``dep,sdoi`` or ``dep,sdoi,wup -o wup.name_entities=`` (one option, as the build's)."""
    from prior.pipeline.build import build_annotations
    from prior.pipeline.build_options import BuildOptions

    names, _, option = spec.partition(" -o ")
    key, _, value = option.partition("=")
    feature, _, name = key.partition(".")
    return build_annotations(BuildOptions(dataset="bench", features=tuple(names.split(",")),
                                          feature_options={feature: {name: value}} if option else {}))


def differing(full: list[Any], other: list[Any], fields: list[str]) -> dict[str, int]:
    """Per field, the sentences whose value differs."""
    return {f: sum(getattr(a, f) != getattr(b, f) for a, b in zip(full, other)) for f in fields}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", default="biaffine", help="Parser spec (default: biaffine).")
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("PRIOR_DATA_DIR", SHARED)))
    ap.add_argument("--limit", type=int, default=None, help="Only the first N sentences (after a seeded shuffle).")
    ap.add_argument("--chunk", type=int, default=2000, help="Sentences per parse call (a build's partition).")
    ap.add_argument("--feature-sets", default=";".join(FEATURE_SETS),
                    help="Feature sets to compare with the complete annotation, ';'-separated.")
    ap.add_argument("--batch-sizes", default="", help="spaCy batch sizes to compare, e.g. 64,256,1024 (none: skip).")
    ap.add_argument("--ner-rule", type=int, default=0, help="Texts per dataset to check the NER-skipping rule on (0: skip).")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    import torch

    from prior.pipeline.parsers import get_parser
    from prior.pipeline.parsers.annotations import ALL

    torch.set_num_threads(1)
    texts = sentences(args.data_dir)
    random.Random(0).shuffle(texts)
    texts = texts[: args.limit] if args.limit else texts
    chunks = [texts[i:i + args.chunk] for i in range(0, len(texts), args.chunk)]
    parser = get_parser(args.parser, "cpu")
    parser.parse(["A warm-up sentence is parsed before the clock starts.", "Two dogs run."])
    sets = {spec: feature_set_annotations(spec) for spec in args.feature_sets.split(";") if spec}
    runs: dict[str, frozenset[str]] = {"dep,sdoi,wup (complete)": ALL, **sets}
    seconds = dict.fromkeys(runs, 0.0)
    parses: dict[str, list[Any]] = {name: [] for name in runs}
    for chunk in chunks:
        for name, asked in runs.items():  # alternating, chunk by chunk
            start = time.process_time()
            parses[name] += parser.parse(chunk, asked)
            seconds[name] += time.process_time() - start
    full_name = next(iter(runs))
    base = seconds[full_name]
    rows = []
    for name, made in runs.items():
        fields = ["words", "heads", "rels", *sorted(made)]
        row = {"features": name, "annotations": sorted(made), "cpu_s": round(seconds[name], 3),
               "ms_per_sentence": round(1000 * seconds[name] / len(texts), 4),
               "vs_complete": round(seconds[name] / base, 4),
               "differing_sentences": differing(parses[full_name], parses[name], fields)}
        rows.append(row)
        print(f"{name:38s} {row['ms_per_sentence']:7.3f} ms/sentence CPU ({row['vs_complete']:.3f}x); "
              f"annotations {','.join(row['annotations']) or '-'}; differing: "
              f"{sum(row['differing_sentences'].values())}", flush=True)
    results: dict[str, Any] = {"parser": args.parser, "sentences": len(texts), "chunk": args.chunk,
                               "cpu_count": os.cpu_count(), "feature_sets": rows}
    sizes = [int(b) for b in args.batch_sizes.split(",") if b]
    if sizes:
        results["batch_sizes"] = batch_sizes(parser, chunks, sizes, parses[full_name], len(texts))
    if args.ner_rule:
        results["ner_rule"] = ner_rule(args.data_dir, args.ner_rule)
    write_json(args.out, "annotations", results)


def skippable(doc: Any) -> bool:
    """The rule: no word past a sentence's first has a capital letter or a digit."""
    return not any(any(c.isdigit() for c in t.text) or (i > 0 and any(c.isupper() for c in t.text))
                   for sent in doc.sents for i, t in enumerate(sent))


def ner_rule(data_dir: Path, per_dataset: int) -> list[dict[str, Any]]:
    """Per dataset in ``data_dir``: texts checked, texts the rule would skip, those of them with
    an entity, and those with a name `wup` reads (`skippable`)."""
    from prior.pipeline.datasets import list_datasets, read_split
    from prior.pipeline.features.wup import NAME_ENTITIES
    from prior.pipeline.parsers import annotator_for

    annotator = annotator_for("biaffine")
    rows = []
    for info in list_datasets(data_dir=data_dir):
        found: set[str] = set()
        for split in info.splits:
            if split.origin == "data_dir":
                for pair in read_split(info.name, split.split, data_dir=data_dir, hub=False).pairs:
                    found.update(t for t in (pair.text_a.strip(), pair.text_b.strip()) if t)
        if not found:
            continue
        texts = sorted(found)
        random.Random(0).shuffle(texts)
        docs = [d for d in annotator.docs(texts[:per_dataset]) if skippable(d)]
        row = {"dataset": info.name, "texts": min(per_dataset, len(texts)), "skippable": len(docs),
               "with_entities": sum(any(t.ent_type_ for t in d) for d in docs),
               "with_wup_names": sum(any(t.ent_type_ in NAME_ENTITIES and t.pos_ != "PROPN" for t in d) for d in docs)}
        rows.append(row)
        print(f"NER rule on {row['dataset']:10s}: {row['skippable']} of {row['texts']} texts skippable, "
              f"{row['with_entities']} of them with entities, {row['with_wup_names']} with a name wup reads", flush=True)
    return rows


def batch_sizes(parser: Any, chunks: list[list[str]], sizes: list[int], reference: list[Any],
                n: int) -> list[dict[str, Any]]:
    """CPU time of the complete annotation per spaCy batch size, alternating chunk by chunk, and
    the sentences whose record differs from ``reference`` (the default batch size's)."""
    annotator = parser.annotator
    default = annotator.batch_size
    seconds = dict.fromkeys(sizes, 0.0)
    parses: dict[int, list[Any]] = {b: [] for b in sizes}
    try:
        for chunk in chunks:
            for size in sizes:
                annotator.batch_size = size
                start = time.process_time()
                parses[size] += parser.parse(chunk)
                seconds[size] += time.process_time() - start
    finally:
        annotator.batch_size = default
    rows = []
    for size in sizes:
        row = {"batch_size": size, "ms_per_sentence": round(1000 * seconds[size] / n, 4),
               "differing_sentences": sum(a != b for a, b in zip(reference, parses[size]))}
        rows.append(row)
        print(f"spaCy batch size {size:5d}: {row['ms_per_sentence']:7.3f} ms/sentence CPU; differing from "
              f"batch size {default}: {row['differing_sentences']}", flush=True)
    return rows


if __name__ == "__main__":
    main()

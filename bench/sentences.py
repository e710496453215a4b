"""Sentence boundaries of the `biaffine` backend: spaCy's `senter` against spaCy's parser.

The biaffine backend takes spaCy's words, tags, lemmas and entities and splits texts into
sentences with spaCy's small `senter` component instead of running spaCy's dependency parser
(whose trees it then throws away). This script measures what that changes, on every split of
every dataset in the data dir (each unique normalized text once, across all datasets):

- texts whose sentence boundaries differ (and how many texts have more than one sentence);
- texts and tokens whose words, tags, UPOS, lemmas or entity types differ. The tagger's PTB
  tags do not read the parser, but en_core_web_sm's attribute ruler maps some tags to UPOS by
  the parser's labels (13 patterns: AUX for aux/auxpass, VERB for main-verb do/have, SCONJ for
  IN marking a clause, PRON for DT/WDT that are not determiners, ...), lemmas follow UPOS, and
  entities may not cross sentence boundaries: these can change;
- spaCy's own speed both ways, interleaved chunk by chunk in one process (under load on a
  shared machine: read the ratio, not the absolute rates).

    PRIOR_DATA_DIR=../shared/data python bench/sentences.py                 # every dataset
    python bench/sentences.py --datasets snli,sick --limit 200              # a quick look

Writes bench/out/sentences-<date>.json and prints one line per dataset and a total.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from results import write_json  # bench/results.py (this script's folder is on sys.path)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
FIELDS = ("words", "tags", "upos", "lemmas", "ents")


def dataset_texts(data_dir: Path, datasets: list[str] | None, limit: int | None) -> dict[str, list[str]]:
    """Unique normalized texts per dataset (a text seen in an earlier dataset is not repeated),
    every split the data dir holds; at most ``limit`` pairs per split."""
    from prior.errors import NotFoundError
    from prior.featurestore.keys import normalize_text
    from prior.pipeline.datasets import list_datasets, read_split

    seen: set[str] = set()
    out: dict[str, list[str]] = {}
    for info in list_datasets(data_dir=data_dir):
        if (datasets and info.name not in datasets) or (not datasets and info.name == "sick-r"):
            continue  # sick-r holds SICK's sentences again (relatedness labels)
        texts = out.setdefault(info.name, [])
        for split in info.splits:
            if split.origin != "data_dir":
                continue
            try:
                data = read_split(info.name, split.split, data_dir=data_dir, hub=False, limit=limit)
            except NotFoundError:
                continue
            for pair in data.pairs:
                for text in (normalize_text(pair.text_a), normalize_text(pair.text_b)):
                    if text and text not in seen:
                        seen.add(text)
                        texts.append(text)
    return out


def annotations(doc: object) -> dict[str, tuple[str, ...]]:
    return {"words": tuple(t.text for t in doc), "tags": tuple(t.tag_ for t in doc),  # type: ignore[attr-defined]
            "upos": tuple(t.pos_ for t in doc), "lemmas": tuple(t.lemma_ for t in doc),  # type: ignore[attr-defined]
            "ents": tuple(t.ent_type_ for t in doc)}  # type: ignore[attr-defined]


def compare(texts: list[str], parser_nlp: object, senter_nlp: object, chunk: int) -> dict:
    """Both pipelines over ``texts``, alternating which runs first per chunk."""
    seconds = {"parser": 0.0, "senter": 0.0}
    differ, multi_parser, multi_senter, fields, examples = 0, 0, 0, dict.fromkeys(FIELDS, 0), []
    tokens, token_fields, changes = 0, dict.fromkeys(FIELDS[1:], 0), Counter()
    for c, start in enumerate(range(0, len(texts), chunk)):
        part = texts[start:start + chunk]
        docs = {}
        for name in (("parser", "senter") if c % 2 == 0 else ("senter", "parser")):
            nlp = parser_nlp if name == "parser" else senter_nlp
            t0 = time.perf_counter()
            docs[name] = list(nlp.pipe(part, batch_size=256))  # type: ignore[attr-defined]
            seconds[name] += time.perf_counter() - t0
        for text, a, b in zip(part, docs["parser"], docs["senter"]):
            sa = [(s.start, s.end) for s in a.sents]
            sb = [(s.start, s.end) for s in b.sents]
            multi_parser += len(sa) > 1
            multi_senter += len(sb) > 1
            if sa != sb:
                differ += 1
                if len(examples) < 5:
                    examples.append({"text": text[:300], "parser": [a[x:y].text[:80] for x, y in sa],
                                     "senter": [b[x:y].text[:80] for x, y in sb]})
            ann_a, ann_b = annotations(a), annotations(b)
            for f in FIELDS:
                fields[f] += ann_a[f] != ann_b[f]
            if ann_a["words"] == ann_b["words"]:
                tokens += len(a)
                for f in token_fields:
                    token_fields[f] += sum(x != y for x, y in zip(ann_a[f], ann_b[f]))
                changes.update(f"{t.tag_} {t.dep_}: {t.pos_}->{u.pos_}" for t, u in zip(a, b) if t.pos_ != u.pos_)
    return {"texts": len(texts), "boundaries_differ": differ, "multi_sentence_parser": multi_parser,
            "multi_sentence_senter": multi_senter, "annotations_differ": fields, "tokens": tokens,
            "tokens_differ": token_fields, "upos_changes": dict(changes.most_common(12)),
            "parser_texts_per_s": round(len(texts) / seconds["parser"], 1) if seconds["parser"] else None,
            "senter_texts_per_s": round(len(texts) / seconds["senter"], 1) if seconds["senter"] else None,
            "seconds": {k: round(v, 2) for k, v in seconds.items()}, "examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(os.environ.get("PRIOR_DATA_DIR", SHARED)))
    ap.add_argument("--datasets", default="", help="Comma-separated names (default: every dataset held).")
    ap.add_argument("--limit", type=int, default=None, help="At most this many pairs per split.")
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    from prior.pipeline.parsers.spacy_backend import SpacyAnnotator

    parser_nlp = SpacyAnnotator(sentences="parser").nlp
    senter_nlp = SpacyAnnotator(sentences="senter").nlp
    print(f"parser pipeline: {parser_nlp.pipe_names}\nsenter pipeline: {senter_nlp.pipe_names}", flush=True)
    per_dataset = dataset_texts(args.data_dir, [d for d in args.datasets.split(",") if d] or None, args.limit)
    results: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "limit": args.limit,
                     "load_avg": os.getloadavg()[0], "datasets": {}}
    for name, texts in per_dataset.items():
        if not texts:
            continue
        r = compare(texts, parser_nlp, senter_nlp, args.chunk)
        results["datasets"][name] = r
        print(f"{name:<11} {r['texts']:>7} texts  boundaries differ {r['boundaries_differ']:>5} "
              f"({100 * r['boundaries_differ'] / max(1, r['texts']):.2f} %)  multi-sentence parser/senter "
              f"{r['multi_sentence_parser']}/{r['multi_sentence_senter']}  annotations differ "
              f"{sum(r['annotations_differ'].values())} (UPOS of {r['tokens_differ']['upos']} of {r['tokens']} tokens)"
              f"  texts/s parser {r['parser_texts_per_s']} "
              f"senter {r['senter_texts_per_s']}", flush=True)
    rows = results["datasets"].values()
    total = {"texts": sum(r["texts"] for r in rows), "boundaries_differ": sum(r["boundaries_differ"] for r in rows),
             "multi_sentence_parser": sum(r["multi_sentence_parser"] for r in rows),
             "annotations_differ": {f: sum(r["annotations_differ"][f] for r in rows) for f in FIELDS},
             "tokens": sum(r["tokens"] for r in rows),
             "tokens_differ": {f: sum(r["tokens_differ"][f] for r in rows) for f in FIELDS[1:]},
             "parser_s": round(sum(r["seconds"]["parser"] for r in rows), 2),
             "senter_s": round(sum(r["seconds"]["senter"] for r in rows), 2)}
    results["total"] = total
    print(json.dumps(total))
    write_json(args.out, "sentences", results)


if __name__ == "__main__":
    main()

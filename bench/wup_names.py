"""How many ``wup`` cells the proper-name rule's entity set changes, on a dataset split.

    .venv/bin/python bench/wup_names.py [--dataset snli] [--split test] [--old any]

Parses the split with the `spacy` backend (words, lemmas, UPOS and entities are spaCy's for
every backend, so the biaffine parser would give ``wup`` the same input), then computes the
default ``wup`` (``name_entities`` = name types only) and ``wup`` with ``--old`` as
``name_entities`` (``any``: every entity a name, version 1's rule). Prints the number of cells,
of cells that differ, of cells with a non-zero value, how many of the changed cells' words inside
a name entity of the default (and not PROPN) are lowercase or capitalized, and the most frequent
changed word pairs.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from prior.pipeline.datasets import read_split
from prior.pipeline.features.wup import WupFeature
from prior.pipeline.parsers import get_parser


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="snli")
    ap.add_argument("--split", default="test")
    ap.add_argument("--old", default="any", help="name_entities to compare with (default: any)")
    args = ap.parse_args()

    data = read_split(args.dataset, args.split, hub=False)
    texts = sorted({t for row in data.pairs for t in (row.text_a, row.text_b)})
    parses = dict(zip(texts, get_parser("spacy").parse(texts)))
    items = [(parses[row.text_a], parses[row.text_b]) for row in data.pairs]
    default = WupFeature()
    new = [o["wup"] for o in default.compute(items)]
    old = [o["wup"] for o in WupFeature(name_entities=args.old).compute(items)]

    cells = sum(m.size for m in new)
    changed = Counter()
    up = down = 0
    named_case: Counter[str] = Counter()  # the changed cells' names that only an entity made, by case
    for (a, b), n, o in zip(items, new, old):
        for i, j in zip(*np.nonzero(n != o)):
            changed[(a.words[i], a.ents[i] or "-", b.words[j], b.ents[j] or "-")] += 1
            up, down = up + int(n[i, j] > o[i, j]), down + int(n[i, j] < o[i, j])
            named = [p.words[k] for p, k in ((a, i), (b, j))
                     if p.ents[k] in default.name_entities and p.upos[k] != "PROPN"]
            if named:
                named_case["capitalized" if named[0][:1].isupper() else "lowercase"] += 1
    nonzero = sum(int((m > 0).sum()) for m in new)
    total = sum(changed.values())
    print(f"{args.dataset}/{args.split} ({data.location}): {len(items)} pairs, {cells:,} cells, "
          f"{nonzero:,} non-zero under the default")
    print(f"default vs name_entities={args.old!r}: {total:,} cells differ ({total / cells:.2%} of all cells, "
          f"{total / nonzero:.2%} of the default's non-zero cells), in "
          f"{sum(bool((n != o).any()) for n, o in zip(new, old))} pairs; {up:,} higher, {down:,} lower")
    print(f"the word inside a name entity (not PROPN) of a changed cell: {named_case['lowercase']:,} lowercase, "
          f"{named_case['capitalized']:,} capitalized")
    for (wa, ea, wb, eb), k in changed.most_common(8):
        print(f"  {k:4d} × {wa} ({ea}) / {wb} ({eb})")


if __name__ == "__main__":
    main()

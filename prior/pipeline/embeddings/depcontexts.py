"""Dependency-based contexts (Levy & Goldberg 2014; word2vecf's input) from stored parses.

For each arc head ──rel──▶ child the head gets the context ``child/rel`` and the child gets
``head/rel-1`` (the inverse relation). Roots have no head context. Words are lowercased by
default (as Levy & Goldberg's released vectors).

Prepositions are collapsed as in the paper for ClearNLP-style labels (spaCy's English models):
for ``head ─prep▶ p ─pobj▶ obj`` the arcs through ``p`` are replaced by one arc
``head ─prep_p▶ obj`` (contexts ``obj/prep_p`` and ``head/prep_p-1``). UD labels (the
biaffine parser trained on EWT) need no collapsing: UD already attaches the noun to its head
(``obl``, ``nmod``) with the preposition as a ``case`` dependent, whose arc is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol


class ParseLike(Protocol):
    @property
    def words(self) -> Sequence[str]: ...

    @property
    def heads(self) -> Sequence[int]: ...

    @property
    def rels(self) -> Sequence[str]: ...


def dependency_contexts(parse: ParseLike, *, lowercase: bool = True,
                        collapse_prep: bool = True) -> Iterator[tuple[str, str]]:
    """(word, context) pairs of one parsed sentence, in word order."""
    words = [w.lower() if lowercase else w for w in parse.words]
    heads, rels = list(parse.heads), list(parse.rels)
    arcs: list[tuple[int, str, int]] = []  # (head index, relation, child index), 0-based
    skip: set[int] = set()  # children whose own arc is replaced by a collapsed one
    if collapse_prep:
        for p, (h, r) in enumerate(zip(heads, rels)):
            if r != "prep" or h == 0:
                continue
            objs = [c for c, (hc, rc) in enumerate(zip(heads, rels)) if hc == p + 1 and rc == "pobj"]
            if not objs:
                continue
            skip.add(p)
            for c in objs:
                skip.add(c)
                arcs.append((h - 1, f"prep_{words[p]}", c))
    for c, (h, r) in enumerate(zip(heads, rels)):
        if h != 0 and c not in skip:
            arcs.append((h - 1, r, c))
    arcs.sort(key=lambda a: (a[2], a[0]))
    for h, r, c in arcs:
        yield words[h], f"{words[c]}/{r}"
        yield words[c], f"{words[h]}/{r}-1"


def corpus_contexts(parses: Iterable[ParseLike], *, lowercase: bool = True,
                    collapse_prep: bool = True) -> Iterator[tuple[str, str]]:
    for parse in parses:
        yield from dependency_contexts(parse, lowercase=lowercase, collapse_prep=collapse_prep)

"""Which of spaCy's annotations a parse holds, and which of spaCy's components make them.

Every parse holds its words, sentence boundaries, heads and relations. The others (PTB tags,
UPOS, lemmas, entity types: `ANNOTATIONS`) are made only when a requested feature reads them
(`prior.pipeline.features.base.annotations_of`): a ``dep,sdoi`` build runs none of the
components below, a ``wup`` build all of them. Leaving a component out changes nothing else: in
en_core_web_sm each runs after those whose output it reads (the tagger on the shared
``tok2vec``, the attribute ruler on the tags, the rule lemmatizer on UPOS), and ``ner`` and
``senter`` have their own embedding layers. What a parse holds is recorded with it (the parses
segment's ``annotations``): the parse id does not change, and a parse made without an annotation
is never read by a feature that needs it (`prior.featurestore.segments.SegmentStore.parses`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from prior.errors import PriorError
from prior.featurestore.parse_columns import ANNOTATIONS

__all__ = ["ALL", "ANNOTATIONS", "COMPONENTS", "closure", "skipped_components"]

ALL = frozenset(ANNOTATIONS)
#: an annotation → those its component reads (made with it)
_REQUIRES = {"upos": ("tags",), "lemmas": ("upos",)}
#: an annotation → the spaCy components that make it
COMPONENTS = {"tags": ("tagger",), "upos": ("attribute_ruler",), "lemmas": ("lemmatizer",), "ents": ("ner",)}
#: the shared embedding layer, read by the tagger and by spaCy's own parser
TOK2VEC = "tok2vec"


def closure(wanted: Iterable[str]) -> frozenset[str]:
    """``wanted`` and every annotation its components read (lemmas need UPOS, UPOS needs tags)."""
    out: set[str] = set()
    todo = list(wanted)
    while todo:
        name = todo.pop()
        if name not in ALL:
            raise PriorError(f"unknown parse annotation {name!r}; known: {', '.join(ANNOTATIONS)}")
        if name not in out:
            out.add(name)
            todo += _REQUIRES.get(name, ())
    return frozenset(out)


def skipped_components(pipe_names: Sequence[str], wanted: Iterable[str]) -> list[str]:
    """The components of a pipeline (``pipe_names``, the enabled ones) that make none of the
    annotations ``wanted`` needs: those to disable. ``tok2vec`` stays while the tagger or spaCy's
    parser (which read it) runs."""
    needed = closure(wanted)
    unwanted = {c for name, comps in COMPONENTS.items() if name not in needed for c in comps}
    skip = [name for name in pipe_names if name in unwanted]
    if TOK2VEC in pipe_names and not ({"tagger", "parser"} & (set(pipe_names) - set(skip))):
        skip.append(TOK2VEC)
    return skip

"""How DAFA's features compare words: one choice shared by the dependency matrices and tf-idf.

DAFA's equations (dafa.txt eq. 2, 4, 5) compare words for equality and count them; the paper
does not say on which form. ``prior`` compares the lowercased surface form by default
(``"lower"``) and offers the lowercased lemma (``"lemma"``). The trigram and subgraph
matrices and the tf-idf weights of one build must use the same choice, so the `dep` feature
set passes one value to both (see prior/pipeline/features/registry.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, get_args

from prior.errors import PriorError

WordCompare = Literal["lower", "lemma"]
WORD_COMPARE_CHOICES: tuple[str, ...] = get_args(WordCompare)


def check_compare(compare: str) -> WordCompare:
    """Return ``compare`` if it is a known choice, else raise a `PriorError` naming the choices."""
    if compare not in WORD_COMPARE_CHOICES:
        raise PriorError(
            f"unknown word comparison {compare!r}: use one of {', '.join(WORD_COMPARE_CHOICES)}"
        )
    return compare  # type: ignore[return-value]


class HasWords(Protocol):
    """What word forms read of a parse."""

    @property
    def words(self) -> Sequence[str]: ...

    @property
    def lemmas(self) -> Sequence[str]: ...


def word_forms(parse: HasWords, compare: WordCompare = "lower") -> list[str]:
    """The form of each word that DAFA compares: lowercased word, or lowercased lemma.

    An empty lemma (a parser that gives none) falls back to the lowercased word.
    """
    check_compare(compare)
    if compare == "lemma":
        return [(lemma or word).lower() for word, lemma in zip(parse.words, parse.lemmas)]
    return [word.lower() for word in parse.words]

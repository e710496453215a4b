"""Label normalization: raw label text of a dataset -> its normalized label, or a reason to skip.

Class labels are normalized to the Hugging Face names of each dataset (GLUE, snli, scitail),
in their order, so a class index means the same as there. Scores are floats checked against
the dataset's range.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from prior.pipeline.datasets.types import Label, LabelKind


class Unusable(Exception):
    """Raised by a normalizer: the raw label cannot be used; the message is the reason."""


Normalizer = Callable[[object], Label]


@dataclass(frozen=True)
class LabelScheme:
    """How one dataset labels its pairs."""

    kind: LabelKind
    labels: tuple[str, ...]  # class names in index order; () for scores
    normalize: Normalizer


def classes(mapping: Mapping[str, str], *, special: Mapping[str, str] | None = None,
            order: tuple[str, ...]) -> LabelScheme:
    """Class labels: raw text (stripped) -> normalized name via ``mapping``.

    ``special`` maps raw values to a skip reason (SNLI's "-": no gold label). Anything else
    is outside the label set and skipped.
    """
    special = dict(special or {})
    known = sorted(mapping)

    def normalize(raw: object) -> Label:
        text = str(raw).strip()
        if text in mapping:
            return mapping[text]
        if text in special:
            raise Unusable(special[text])
        raise Unusable(f"label {text!r} is not one of {known}")

    return LabelScheme("class", order, normalize)


def score(low: float, high: float) -> LabelScheme:
    """A similarity score: a finite float in [low, high]."""

    def normalize(raw: object) -> Label:
        text = str(raw).strip()
        try:
            value = float(text)
        except ValueError:
            raise Unusable(f"score {text!r} is not a number") from None
        if not math.isfinite(value):
            raise Unusable(f"score {text!r} is not a finite number")
        if not low <= value <= high:
            raise Unusable(f"score {text!r} is outside [{low:g}, {high:g}]")
        return value

    return LabelScheme("score", (), normalize)


_VOTES = re.compile(r"^\((\d),6\)$")
TWITTER_DEBATABLE = ("debatable: 3 of 6 annotators said paraphrase; the corpus README "
                     "discards n == 3")


def twitter_votes() -> LabelScheme:
    """Twitter-URL's ``(n,6)`` votes, by the rule of the corpus README
    (lanwuwei/Twitter-URL-Corpus):

    "If n<=2, we treat them as non-paraphrase; if n>=4, we treat them as paraphrase; if
    n==3, we discard them." (On the test file this keeps 9,334 pairs, the README's count.)
    Discarded pairs are counted as skips with the reason ``TWITTER_DEBATABLE``.
    """

    def normalize(raw: object) -> Label:
        text = str(raw).strip()
        m = _VOTES.match(text)
        if m is None or int(m.group(1)) > 6:
            raise Unusable(f"label {text!r} is not of the form (n,6) with n in 0..6")
        n = int(m.group(1))
        if n == 3:
            raise Unusable(TWITTER_DEBATABLE)
        return "paraphrase" if n >= 4 else "not_paraphrase"

    return LabelScheme("class", ("not_paraphrase", "paraphrase"), normalize)


NLI3 = ("entailment", "neutral", "contradiction")
SNLI_NO_GOLD = "no gold label ('-'): the annotators reached no majority (SNLI README: leave out)"

SNLI = classes({c: c for c in NLI3}, special={"-": SNLI_NO_GOLD}, order=NLI3)
SICK = classes({c.upper(): c for c in NLI3}, order=NLI3)
SICK_R = score(1.0, 5.0)
STSB = score(0.0, 5.0)
GLUE_ENTAIL = classes({"entailment": "entailment", "not_entailment": "not_entailment"},
                      order=("entailment", "not_entailment"))
MRPC = classes({"0": "not_equivalent", "1": "equivalent"}, order=("not_equivalent", "equivalent"))
QQP = classes({"0": "not_duplicate", "1": "duplicate"}, order=("not_duplicate", "duplicate"))
SCITAIL = classes({"entails": "entailment", "neutral": "neutral"}, order=("entailment", "neutral"))
TWITTER = twitter_votes()

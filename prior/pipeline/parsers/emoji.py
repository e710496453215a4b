"""Emoji sequences as one word: spaCy's English tokenizer splits emoji as punctuation, so a
zero-width-joiner sequence (👨‍👩‍👧 "family", 🏳️‍🌈, 👩‍💻) became five or more words, and an emoji
with a skin tone (👍🏽) or a presentation selector (❤️) two. :func:`join_emoji_sequences` merges
the tokens of each such sequence back into one word, right after tokenization (before tagging),
so every backend sees it as one word.

A sequence (Unicode TS #51 in spirit, no emoji table needed): a character followed by one or
more joiner parts — U+FE0F (emoji presentation), a skin-tone modifier (U+1F3FB–U+1F3FF), a
combining keycap (U+20E3), tag characters (U+E0020–U+E007F, subdivision flags), or U+200D
(zero width joiner) and the next character. Text without these characters is untouched.
"""

from __future__ import annotations

import re
from typing import Any

#: joins the emoji sequences of a Doc (a spaCy pipeline component, first after the tokenizer)
COMPONENT = "prior_emoji_sequences"
_PART = "\ufe0f\U0001f3fb-\U0001f3ff\u20e3\U000e0020-\U000e007f"
SEQUENCE = re.compile(f"[^\\s{_PART}\u200d](?:[{_PART}]|\u200d[^\\s\u200d])+")
_JOINERS = re.compile(f"[{_PART}\u200d]")


def join_emoji_sequences(doc: Any) -> Any:
    """``doc`` with the tokens of each emoji sequence (module docstring) merged into one; a
    sequence that does not start and end on token boundaries is left as it is."""
    if not _JOINERS.search(doc.text):
        return doc
    spans = []
    for match in SEQUENCE.finditer(doc.text):
        span = doc.char_span(match.start(), match.end())
        if span is not None and len(span) > 1:
            spans.append(span)
    if spans:
        with doc.retokenize() as retokenizer:
            for span in spans:
                retokenizer.merge(span)
    return doc


def add_emoji_component(nlp: Any) -> None:
    """Put :func:`join_emoji_sequences` first in ``nlp``'s pipeline (registered once per process)."""
    from spacy.language import Language

    if not Language.has_factory(COMPONENT):
        Language.component(COMPONENT, func=join_emoji_sequences)
    if COMPONENT not in nlp.pipe_names:
        nlp.add_pipe(COMPONENT, first=True)

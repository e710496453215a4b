"""The parse record and the `DependencyParser` protocol every backend implements.

spaCy tokenizes, tags, lemmatizes and finds entities for every backend, so the words of a
sentence are the same whichever parser gives its heads and relations. A "sentence" of a
dataset may hold several grammatical sentences (RTE, QNLI premises): its parse is then a
forest, one root (head 0) per grammatical sentence, heads indexing the whole text.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

PARSE_FIELDS = ("words", "lemmas", "upos", "tags", "heads", "rels", "ents")

# The longest sentence a build parses, in words (whitespace-separated), and in characters per
# allowed word: the longest sentence of the supported datasets' files has 239 words (RTE
# train) and 1,412 characters (QNLI test). A longer one is not parsed (parse time and memory
# grow faster than its length: 2,000 words took > 300 s and > 16 GB); its pair gets no features.
MAX_WORDS = 256
CHARS_PER_WORD = 20


@dataclass(frozen=True)
class TooLong:
    """Why a text is not parsed: its word and character counts and the word limit it broke
    (the character limit is ``max_words * CHARS_PER_WORD``). ``str()`` names the limit broken."""

    words: int
    characters: int
    max_words: int

    def __str__(self) -> str:
        if self.words > self.max_words:
            return f"{self.words} words, over the {self.max_words}-word limit"
        return (f"{self.characters:,} characters, over the {self.max_words * CHARS_PER_WORD:,}-character limit "
                f"({CHARS_PER_WORD} characters per allowed word)")


def over_limit(text: str, max_words: int = MAX_WORDS) -> TooLong | None:
    """Why ``text`` is too long to parse (more than ``max_words`` words or
    ``max_words * CHARS_PER_WORD`` characters), else None. Counts without tokenizing, so a
    5,000-word (or 1 MB) line costs nothing."""
    words = len(text.split())
    if words > max_words or len(text) > max_words * CHARS_PER_WORD:
        return TooLong(words, len(text), max_words)
    return None


@dataclass(frozen=True)
class Parse:
    """One analysed sentence; all fields have one entry per word.

    heads are 1-based like CoNLL-U: heads[i] == 0 marks a root, heads[i] == j points to word j
    (words[j - 1]). ents holds the entity type of the word's entity ("" outside entities).
    """

    words: tuple[str, ...]
    lemmas: tuple[str, ...]
    upos: tuple[str, ...]
    tags: tuple[str, ...]
    heads: tuple[int, ...]
    rels: tuple[str, ...]
    ents: tuple[str, ...]

    def __post_init__(self) -> None:
        n = len(self.words)
        for name in PARSE_FIELDS[1:]:
            if len(getattr(self, name)) != n:
                raise ValueError(f"Parse.{name} has {len(getattr(self, name))} entries for {n} words")
        for i, h in enumerate(self.heads):
            if not 0 <= h <= n or h == i + 1:
                raise ValueError(f"Parse.heads[{i}] = {h} is not a valid head for {n} words")

    def __len__(self) -> int:
        return len(self.words)

    def to_record(self) -> dict[str, list[Any]]:
        return {name: list(getattr(self, name)) for name in PARSE_FIELDS}

    @classmethod
    def from_record(cls, record: Mapping[str, Sequence[Any] | None]) -> Parse:
        """The Parse of a stored record. A field the record does not hold (null: no build of the
        sentence annotated it, `prior.pipeline.parsers.annotations`) is empty strings, as a
        parser gives it; a build's features are never served such a record for a field they
        read (`prior.featurestore.segments.SegmentStore.parses`, ``needs``)."""
        n = len(record["words"] or ())
        return cls(**{name: tuple(value if (value := record[name]) is not None else [""] * n) for name in PARSE_FIELDS})


@runtime_checkable
class DependencyParser(Protocol):
    """A backend that turns raw texts into `Parse` records, batched.

    ``name`` is the backend's registry name; ``fingerprint()`` returns everything that
    identifies its output (backend, model name, model checksum, settings) and feeds the parse
    id of the store. ``parse`` gives words, heads and relations, and of the other fields those
    of ``annotations`` (`prior.pipeline.parsers.annotations`; the others are empty strings).
    ``parse_words`` parses pre-tokenized words (gold tokens, for evaluation) and returns (heads,
    rels) per sentence.
    """

    name: str

    def fingerprint(self) -> dict[str, Any]: ...

    def parse(self, texts: Sequence[str], annotations: Collection[str] = ...) -> list[Parse]: ...

    def parse_words(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[str]]]: ...

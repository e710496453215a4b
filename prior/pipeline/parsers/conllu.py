"""A small CoNLL-U reader and writer (basic trees only).

Choices:
- Comment lines (``#``) are kept per sentence as ``comments`` (``# text = ...`` gives ``text``).
- Multi-word token lines (``1-2``) are skipped: the syntactic words they cover are the tokens
  we parse and score, as in the CoNLL 2018 shared task's word-level evaluation.
- Empty nodes (``1.1``, enhanced dependencies only) are skipped: the basic tree never points to
  them, so heads of the remaining words are unchanged.
- A malformed line (wrong column count, non-integer or out-of-range head, ids not 1..n in
  order) raises :class:`~prior.errors.DataError` naming the file, line and column.
- A file need not end with a blank line; several blank lines count as one separator.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prior.errors import DataError

N_COLUMNS = 10


@dataclass(frozen=True)
class ConlluSentence:
    """One sentence's syntactic words with their gold (or predicted) basic tree."""

    words: tuple[str, ...]
    lemmas: tuple[str, ...]
    upos: tuple[str, ...]
    xpos: tuple[str, ...]
    heads: tuple[int, ...]
    rels: tuple[str, ...]
    comments: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return len(self.words)

    @property
    def text(self) -> str | None:
        for comment in self.comments:
            key, _, value = comment.lstrip("#").strip().partition("=")
            if key.strip() == "text" and _:
                return value.strip()
        return None


def parse_conllu(lines: Iterable[str], *, source: str = "<string>") -> Iterator[ConlluSentence]:
    """Yield the sentences of CoNLL-U ``lines``; ``source`` names the file in errors."""
    rows: list[list[str]] = []
    lines_of: list[int] = []
    comments: list[str] = []

    def flush() -> ConlluSentence:
        heads: list[int] = []
        for i, (row, number) in enumerate(zip(rows, lines_of), 1):
            if row[0] != str(i):
                raise DataError(f"word ids must run 1..n in order; found {row[0]!r} at position {i}",
                                file=source, row=number, field="ID")
            try:
                head = int(row[6])
            except ValueError:
                raise DataError(f"HEAD {row[6]!r} is not an integer", file=source, row=number, field="HEAD") from None
            if not 0 <= head <= len(rows):
                raise DataError(f"HEAD {head} outside 0..{len(rows)}", file=source, row=number, field="HEAD")
            heads.append(head)
        return ConlluSentence(
            words=tuple(r[1] for r in rows), lemmas=tuple(r[2] for r in rows),
            upos=tuple(r[3] for r in rows), xpos=tuple(r[4] for r in rows),
            heads=tuple(heads), rels=tuple(r[7] for r in rows), comments=tuple(comments),
        )

    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            if rows:
                yield flush()
            rows, lines_of, comments = [], [], []
            continue
        if line.startswith("#"):
            comments.append(line)
            continue
        cols = line.split("\t")
        if len(cols) != N_COLUMNS:
            raise DataError(f"expected {N_COLUMNS} tab-separated columns, found {len(cols)}",
                            file=source, row=number)
        if "-" in cols[0] or "." in cols[0]:
            continue  # multi-word token or empty node: see module docstring
        rows.append(cols)
        lines_of.append(number)
    if rows:
        yield flush()


def read_conllu(path: str | Path) -> list[ConlluSentence]:
    """All sentences of a CoNLL-U file (see :func:`parse_conllu`)."""
    path = Path(path)
    if not path.is_file():
        from prior.errors import NotFoundError

        raise NotFoundError(f"CoNLL-U file {path} does not exist")
    with path.open(encoding="utf-8") as handle:
        return list(parse_conllu(handle, source=str(path)))


def format_conllu(sentences: Sequence[ConlluSentence]) -> str:
    """CoNLL-U text of ``sentences`` (basic trees; FEATS, DEPS and MISC written as ``_``)."""
    out: list[str] = []
    for sent in sentences:
        out.extend(sent.comments)
        for i in range(len(sent)):
            out.append("\t".join((str(i + 1), sent.words[i], sent.lemmas[i], sent.upos[i], sent.xpos[i],
                                  "_", str(sent.heads[i]), sent.rels[i], "_", "_")))
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def write_conllu(sentences: Sequence[ConlluSentence], path: str | Path) -> None:
    Path(path).write_text(format_conllu(sentences), encoding="utf-8")

"""Read and write word-embedding files: word2vec text and binary, GloVe text, fastText ``.vec``.

Formats (``fmt``):

- ``word2vec`` — text; a header line ``<count> <dim>``, then ``word v1 … vd`` per line. A
  fastText ``.vec`` file is exactly this format.
- ``word2vec-binary`` — the header line as text, then per word ``word`` + one space + ``dim``
  little-endian float32 values (+ an optional newline), as word2vec's ``-binary 1`` writes.
- ``glove`` — text, no header: ``word v1 … vd`` per line; the dimension is the number of
  numbers that end the first line. A word may contain spaces (glove.840B has a few, such as
  ``at name@domain.com``): the last ``dim`` fields are the vector, what precedes them is the
  word. A line is rejected as having the wrong dimension when the field before its last
  ``dim`` fields is itself a number (so a multi-word entry may not end in a number, and the
  first line's word may not end in one either).
- ``auto`` (default) — ``.bin`` files are binary; otherwise a first line of two integers
  means word2vec/fastText text, anything else GloVe. After such a header, a body that is not
  UTF-8 text without control characters (the first 64 KiB are looked at) is read as binary.

Files may be gzip-compressed (``.gz``). Duplicate words keep their first vector (counted in
``Embeddings.duplicates``). Blank lines are skipped. Vectors are float32.

Strictness (our choice; a damaged file never becomes a silently wrong vocabulary): every
problem raises `DataError` naming the file, the line (the entry number for binary files)
and the field (``word``, ``vector``, ``value k of d``, the header's ``count`` or ``dim``):
a line of a header file must hold exactly a word and ``dim`` numbers (as gensim requires);
values must be finite numbers (NaN and infinity are refused); the number of entries must be
the header's count (unless ``limit`` stops reading first); an empty file, or one without a
vector, is an error.
"""

from __future__ import annotations

import gzip
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

import numpy as np

from prior.errors import DataError, NotFoundError

Format = Literal["auto", "word2vec", "word2vec-binary", "glove"]
FORMATS: tuple[str, ...] = ("auto", "word2vec", "word2vec-binary", "glove")


@dataclass
class Embeddings:
    """A vocabulary and its vectors: ``vectors[i]`` is the vector of ``words[i]``."""

    words: list[str]
    vectors: np.ndarray  # (V, d) float32
    duplicates: int = 0
    fmt: str = ""
    _index: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != len(self.words):
            raise DataError(f"{len(self.words)} words for vectors of shape {self.vectors.shape}")

    def __len__(self) -> int:
        return len(self.words)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {w: i for i, w in enumerate(self.words)}
        return self._index

    def vector(self, word: str) -> np.ndarray:
        return self.vectors[self.index[word]]

    def nearest(self, word: str, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` words of highest cosine similarity to ``word`` (itself excluded)."""
        unit = self.vectors / np.maximum(np.linalg.norm(self.vectors, axis=1, keepdims=True), 1e-12)
        sims = unit @ unit[self.index[word]]
        sims[self.index[word]] = -np.inf
        top = np.argsort(-sims, kind="stable")[:k]
        return [(self.words[i], float(sims[i])) for i in top]


def _open(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _stem_suffix(path: Path) -> str:
    return Path(path.stem).suffix if path.suffix == ".gz" else path.suffix


# A number as embedding files write them (no "nan"/"inf" words: those are GloVe vocabulary).
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SNIFF = 1 << 16  # bytes after the header looked at to tell text from binary


def _header(line: bytes) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def _is_text(sample: bytes) -> bool:
    """Whether bytes look like UTF-8 text lines (binary float32 data almost never does)."""
    cut = sample.rfind(b"\n")
    if 0 <= cut < len(sample) - 1:
        sample = sample[:cut + 1]
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":  # a character cut by the sample's end is fine
            return False
        text = sample[:exc.start].decode("utf-8", errors="strict")
    return _CONTROL.search(text) is None


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format ``auto`` resolves to for this file (see the module docstring)."""
    p = Path(path)
    if _stem_suffix(p) == ".bin":
        return "word2vec-binary"
    with _open(p) as fh:
        if _header(fh.readline()) is None:
            return "glove"
        return "word2vec" if _is_text(fh.read(_SNIFF)) else "word2vec-binary"


def _trailing_numbers(fields: Sequence[str]) -> int:
    """How many fields at the end of a line are numbers (the first field is always the word)."""
    k = 0
    for f in reversed(fields[1:]):
        if _NUMBER.fullmatch(f) is None:
            break
        k += 1
    return k


def _vector(values: Sequence[str], path: Path, lineno: int, dim: int) -> np.ndarray:
    """The float32 vector of one line; `DataError` naming the field when a value is bad."""
    try:
        vec = np.array(values, dtype=np.float32)
    except ValueError:
        vec = None
    if vec is not None and np.isfinite(vec).all():
        return vec
    for k, value in enumerate(values, start=1):
        try:
            ok = math.isfinite(float(value))
        except ValueError:
            raise DataError(f"not a number: {value!r}", file=str(path), row=lineno,
                            field=f"value {k} of {dim}") from None
        if not ok:
            raise DataError(f"{value!r} is not a finite number", file=str(path), row=lineno,
                            field=f"value {k} of {dim}")
    raise AssertionError("unreachable: a bad value was found above")


def _text_rows(fh: IO[bytes], path: Path, dim: int | None, first_line: int
               ) -> Iterator[tuple[str, np.ndarray, int]]:
    """(word, vector, line) of each non-blank line.

    ``dim`` given (word2vec/fastText text, from the header): a line is exactly a word and
    ``dim`` numbers. ``dim`` None (GloVe): the first line's trailing numbers give the dimension;
    a word may contain spaces, but a line whose field before its last ``dim`` numbers is also
    a number has the wrong dimension.
    """
    strict = dim is not None
    for lineno, raw in enumerate(fh, start=first_line):
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8 text ({exc.reason}); a binary word2vec file needs "
                            "fmt='word2vec-binary'", file=str(path), row=lineno) from None
        if not line.strip():
            continue
        fields = line.rstrip(" ").split(" ")
        if dim is None:
            dim = min(_trailing_numbers(fields), len(fields) - 1)
            if dim < 1:
                raise DataError("a line needs a word and at least one number", file=str(path),
                                row=lineno)
            word_part = fields[1:len(fields) - dim]
            if any(_NUMBER.fullmatch(f) for f in word_part):
                # "a 1 x 3": numbers on both sides of a non-number; the word is "a", x is bad
                k = len(fields) - dim - 1
                raise DataError(f"not a number: {fields[k]!r}", file=str(path), row=lineno,
                                field=f"value {k} of {len(fields) - 1}")
        numbers = len(fields) - 1
        if numbers < dim or (strict and numbers > dim):
            raise DataError(f"expected a word and {dim} numbers, found {len(fields)} fields "
                            f"({numbers} after the word)", file=str(path), row=lineno,
                            field="vector")
        if not strict and numbers > dim and _NUMBER.fullmatch(fields[-dim - 1]):
            raise DataError(f"expected {dim} numbers (the dimension of line {first_line}), found "
                            f"{min(_trailing_numbers(fields), numbers)}", file=str(path),
                            row=lineno, field="vector")
        word = " ".join(fields[:-dim])
        if not word:
            raise DataError("the line has no word before its numbers", file=str(path),
                            row=lineno, field="word")
        yield word, _vector(fields[-dim:], path, lineno, dim), lineno


def _binary_rows(fh: IO[bytes], path: Path, count: int, dim: int
                 ) -> Iterator[tuple[str, np.ndarray, int]]:
    """(word, vector, entry number) of each of the ``count`` entries the header announces."""
    width = 4 * dim
    for n in range(1, count + 1):
        chunks: list[bytes] = []
        while True:
            ch = fh.read(1)
            if not ch:
                raise DataError(f"file ends inside entry {n} of {count} (the header's count)",
                                file=str(path), field="word")
            if ch == b" ":
                break
            if ch != b"\n" or chunks:
                chunks.append(ch)
        data = fh.read(width)
        if len(data) != width:
            raise DataError(f"file ends inside the vector of entry {n} of {count} "
                            f"({len(data)} of {width} bytes)", file=str(path), field="vector")
        word = b"".join(chunks).decode("utf-8", errors="replace")
        if not word:
            raise DataError(f"entry {n} of {count} has an empty word", file=str(path), field="word")
        vec = np.frombuffer(data, dtype="<f4").astype(np.float32)
        if not np.isfinite(vec).all():
            k = int(np.flatnonzero(~np.isfinite(vec))[0]) + 1
            raise DataError(f"entry {n} ({word!r}) holds {vec[k - 1]}, not a finite number",
                            file=str(path), field=f"value {k} of {dim}")
        yield word, vec, n
    rest = fh.read(_SNIFF)
    if rest.strip():
        raise DataError(f"data follows the {count} entries the header announces: is the count "
                        "in the header wrong?", file=str(path), row=1, field="count")


def read_embeddings(path: str | os.PathLike[str], fmt: str = "auto", *,
                    limit: int | None = None) -> Embeddings:
    """Read an embedding file (see the module docstring); ``limit`` keeps the first N words.

    Raises `DataError` naming the file, the line (entry for binary files) and the field for
    a malformed file, and before anything is written anywhere: a caller storing the result
    never stores part of a bad file.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise NotFoundError(f"embedding file {p} does not exist")
    if fmt not in FORMATS:
        raise DataError(f"unknown embedding format {fmt!r}; use one of {', '.join(FORMATS)}",
                        file=str(p))
    if p.stat().st_size == 0:
        raise DataError("the file is empty", file=str(p))
    resolved = detect_format(p) if fmt == "auto" else fmt
    words: list[str] = []
    vecs: list[np.ndarray] = []
    seen: set[str] = set()
    duplicates = 0
    count: int | None = None
    entries = 0
    with _open(p) as fh:
        if resolved == "glove":
            rows = _text_rows(fh, p, None, 1)
        else:
            header = _header(fh.readline())
            if header is None:
                raise DataError("first line is not '<count> <dim>' (a word2vec/fastText header); "
                                "pass fmt='glove' for a file without one", file=str(p), row=1)
            count, dim = header
            if dim < 1:
                raise DataError(f"the header gives dimension {dim}", file=str(p), row=1,
                                field="dim")
            rows = (_binary_rows(fh, p, count, dim) if resolved == "word2vec-binary"
                    else _text_rows(fh, p, dim, 2))
        for word, vec, where in rows:
            if limit is not None and len(words) >= limit:
                break
            entries += 1
            if count is not None and entries > count:
                raise DataError(f"more entries than the {count} the header (line 1) announces",
                                file=str(p), row=where)
            if word in seen:
                duplicates += 1
                continue
            seen.add(word)
            words.append(word)
            vecs.append(vec)
    if count is not None and entries < count and (limit is None or len(words) < limit):
        raise DataError(f"the header announces {count} vectors, the file holds {entries}: "
                        "is it cut short?", file=str(p), row=1, field="count")
    if not words:
        raise DataError("no vectors in file", file=str(p))
    return Embeddings(words=words, vectors=np.stack(vecs), duplicates=duplicates, fmt=resolved)


def write_word2vec_text(path: str | os.PathLike[str], words: Sequence[str], vectors: np.ndarray,
                        *, precision: int = 6) -> Path:
    """Write the standard word2vec text format (``<count> <dim>`` header; fastText ``.vec`` too).

    Written to a temporary file beside ``path`` and renamed into place when complete.
    """
    p = Path(path).expanduser()
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape[0] != len(words):
        raise DataError(f"{len(words)} words for {vectors.shape[0]} vectors", file=str(p))
    for i, w in enumerate(words):
        if not w or any(ch.isspace() for ch in w):
            raise DataError(f"word {w!r} is empty or contains whitespace; the word2vec text "
                            "format cannot hold it", file=str(p), row=i + 2)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp{os.getpid()}")
    fmt = f"%.{precision}g"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(f"{len(words)} {vectors.shape[1]}\n")
            for w, v in zip(words, vectors):
                fh.write(w + " " + " ".join(fmt % x for x in v.tolist()) + "\n")
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()
    return p


def write_word2vec_binary(path: str | os.PathLike[str], words: Sequence[str],
                          vectors: np.ndarray) -> Path:
    """Write word2vec's binary format (used by tests and by users who want it)."""
    p = Path(path).expanduser()
    vectors = np.asarray(vectors, dtype="<f4")
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "wb") as fh:
        fh.write(f"{len(words)} {vectors.shape[1]}\n".encode())
        for w, v in zip(words, vectors):
            fh.write(w.encode("utf-8") + b" " + v.tobytes() + b"\n")
    return p

"""Read and write word-embedding files: word2vec text and binary, GloVe text, fastText ``.vec``.

Formats (``fmt``):

- ``word2vec`` — text; a header line ``<count> <dim>``, then ``word v1 … vd`` per line. A
  fastText ``.vec`` file is exactly this format.
- ``word2vec-binary`` — the header line as text, then per word ``word`` + one space + ``dim``
  little-endian float32 values (+ an optional newline), as word2vec's ``-binary 1`` writes.
- ``glove`` — text, no header: ``word v1 … vd`` per line; the dimension comes from the first
  line. A word may contain spaces (glove.840B has a few): the last ``dim`` fields are the
  vector, what precedes them is the word.
- ``auto`` (default) — ``.bin`` files are binary; otherwise a first line of two integers
  means word2vec/fastText text, anything else GloVe. A file whose header is two integers but
  whose body is not text is read as binary.

Files may be gzip-compressed (``.gz``). Duplicate words keep their first vector (counted in
``Embeddings.duplicates``). Malformed lines raise `DataError` naming the file and line.
Vectors are float32.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

import numpy as np

from featurestore.errors import DataError, NotFoundError

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


def _header(line: bytes) -> tuple[int, int] | None:
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format ``auto`` resolves to for this file (see the module docstring)."""
    p = Path(path)
    if _stem_suffix(p) == ".bin":
        return "word2vec-binary"
    with _open(p) as fh:
        first = fh.readline()
        if _header(first) is None:
            return "glove"
        second = fh.readline(1 << 20)
    try:
        fields = second.decode("utf-8").rstrip("\r\n").rstrip(" ").split(" ")
        header = _header(first)
        assert header is not None
        if len(fields) >= header[1] + 1:
            np.array(fields[-header[1]:], dtype=np.float32)
            return "word2vec"
    except (UnicodeDecodeError, ValueError):
        pass
    return "word2vec-binary"


def _text_rows(fh: IO[bytes], path: Path, dim: int | None, first_line: int
               ) -> Iterator[tuple[str, np.ndarray, int]]:
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
            dim = len(fields) - 1
            if dim < 1:
                raise DataError("a line needs a word and at least one number", file=str(path),
                                row=lineno)
        if len(fields) < dim + 1:
            raise DataError(f"expected a word and {dim} numbers, found {len(fields)} fields",
                            file=str(path), row=lineno)
        word = " ".join(fields[:-dim])
        try:
            vec = np.array(fields[-dim:], dtype=np.float32)
        except ValueError as exc:
            raise DataError(f"not a number: {exc}", file=str(path), row=lineno) from None
        yield word, vec, lineno


def _binary_rows(fh: IO[bytes], path: Path, count: int, dim: int
                 ) -> Iterator[tuple[str, np.ndarray, int]]:
    width = 4 * dim
    for n in range(count):
        chunks = []
        while True:
            ch = fh.read(1)
            if not ch:
                raise DataError(f"file ends inside entry {n + 1} of {count}", file=str(path))
            if ch == b" ":
                break
            if ch != b"\n" or chunks:
                chunks.append(ch)
        data = fh.read(width)
        if len(data) != width:
            raise DataError(f"file ends inside the vector of entry {n + 1} of {count}",
                            file=str(path))
        word = b"".join(chunks).decode("utf-8", errors="replace")
        yield word, np.frombuffer(data, dtype="<f4").astype(np.float32), n + 2


def read_embeddings(path: str | os.PathLike[str], fmt: str = "auto", *,
                    limit: int | None = None) -> Embeddings:
    """Read an embedding file (see the module docstring); ``limit`` keeps the first N words."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise NotFoundError(f"embedding file {p} does not exist")
    if fmt not in FORMATS:
        raise DataError(f"unknown embedding format {fmt!r}; use one of {', '.join(FORMATS)}",
                        file=str(p))
    resolved = detect_format(p) if fmt == "auto" else fmt
    words: list[str] = []
    vecs: list[np.ndarray] = []
    seen: set[str] = set()
    duplicates = 0
    with _open(p) as fh:
        if resolved == "glove":
            rows = _text_rows(fh, p, None, 1)
            dim = None
        else:
            header = _header(fh.readline())
            if header is None:
                raise DataError("first line is not '<count> <dim>' (a word2vec/fastText header); "
                                "pass fmt='glove' for a file without one", file=str(p), row=1)
            count, dim = header
            rows = (_binary_rows(fh, p, count, dim) if resolved == "word2vec-binary"
                    else _text_rows(fh, p, dim, 2))
        for word, vec, _ in rows:
            if limit is not None and len(words) >= limit:
                break
            if word in seen:
                duplicates += 1
                continue
            seen.add(word)
            words.append(word)
            vecs.append(vec)
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

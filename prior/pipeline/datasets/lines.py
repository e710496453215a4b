"""Reading text files line by line as an editor numbers them, strictly as UTF-8.

Choice for bytes that are not UTF-8: the read stops with a :class:`DataError` naming the file,
the line and the byte offset (0-based, from the start of the file). A file in another encoding
is a wrong file, not a bad row; skipping its rows one by one would hide that. Re-encode it
(``iconv -f latin1 -t utf-8``) and read again.

Lines are split on ``\\n`` only; a ``\\r`` before it (CRLF files: MRPC, SICK) is removed, and
a UTF-8 byte-order mark at the start of the file (MRPC) is dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prior.errors import DataError

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Line:
    number: int  # 1-based
    offset: int  # byte offset of the line's first byte in the file
    text: str  # without the line terminator


def iter_lines(path: Path) -> Iterator[Line]:
    """Yield every line of ``path`` (blank lines included) with its number and byte offset."""
    offset = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            start = offset
            offset += len(raw)
            body = raw
            if number == 1 and body.startswith(BOM):
                body, start = body[len(BOM):], start + len(BOM)
            if body.endswith(b"\n"):
                body = body[:-1]
                if body.endswith(b"\r"):
                    body = body[:-1]
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataError(
                    f"bytes that are not UTF-8 at byte offset {start + e.start} "
                    f"({body[e.start:e.start + 4]!r}); re-encode the file as UTF-8 "
                    "(e.g. iconv -f latin1 -t utf-8) and read it again",
                    file=str(path), row=number,
                ) from None
            yield Line(number, start, text)


def file_sha256(path: Path) -> str:
    """sha256 of the file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

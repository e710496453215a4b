"""Turning files into numbered records of named fields: TSV, quoted CSV, JSON lines, Parquet.

A record is either usable fields or a problem (the row is then skipped and counted by the
caller). Blank lines are not records: they carry nothing, so they are passed over (the
Twitter-URL test file has 250 of them). Everything else that cannot be split into the
expected fields becomes a problem, never a silent drop.

TSV files of the official releases (GLUE, SNLI/MNLI .txt, STS, SICK, MRPC, SciTail,
Twitter-URL) are split on tabs with no quote handling (csv.QUOTE_NONE), as GLUE and the
Hugging Face loaders read them: their fields hold unbalanced double quotes.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prior.errors import DataError
from prior.hints import option
from prior.pipeline.datasets.lines import iter_lines

ROW_FIELD = "(row)"  # the `field` of a skip that concerns the whole record
EXTRA = "(extra)"  # key of the fields beyond the named ones (headerless formats)


@dataclass(frozen=True)
class Record:
    row: int
    fields: dict[str, Any] | None  # None when the record could not be split
    problem: str = ""


def _require(path: Path, row: int, have: Sequence[str], required: Sequence[str]) -> None:
    missing = [c for c in required if c not in have]
    if missing:
        raise DataError(
            f"header lacks column(s) {missing}; it has {list(have)}. Is this the right file "
            f"for this dataset? Otherwise give the file as {option('dataset', 'FILE')} and name its columns with "
            f"{option('text_a', 'COL')} {option('text_b', 'COL')} {option('label', 'COL')}",
            file=str(path), row=row,
        )


def iter_tsv(path: Path, *, required: Sequence[str]) -> Iterator[tuple[list[str], Record]]:
    """A tab-separated file whose first line names the columns.

    Yields (header, record). Every data line must have exactly as many fields as the header
    (a stray tab would shift the columns). Raises DataError if a required column is absent.
    """
    header: list[str] | None = None
    for line in iter_lines(path):
        if header is None:
            header = [h.strip() for h in line.text.split("\t")]
            _require(path, line.number, header, required)
            continue
        if line.text == "":
            continue
        parts = line.text.split("\t")
        if len(parts) != len(header):
            yield header, Record(line.number, None,
                                 f"expected {len(header)} tab-separated fields, found {len(parts)}")
        else:
            yield header, Record(line.number, dict(zip(header, parts, strict=True)))
    if header is None:
        raise DataError("the file is empty (no header line)", file=str(path))


def iter_tsv_fixed(path: Path, names: Sequence[str], *, extra: bool) -> Iterator[Record]:
    """A tab-separated file without a header; columns are named by position.

    A line needs at least ``len(names)`` fields; more are allowed only if ``extra``, and are
    then given as a list under the key ``EXTRA``.
    """
    for line in iter_lines(path):
        if line.text == "":
            continue
        parts = line.text.split("\t")
        if len(parts) < len(names) or (not extra and len(parts) > len(names)):
            want = f"at least {len(names)}" if extra else str(len(names))
            problem = f"expected {want} tab-separated fields, found {len(parts)}"
            yield Record(line.number, None, problem)
        else:
            fields: dict[str, Any] = dict(zip(names, parts[: len(names)], strict=True))
            if extra:
                fields[EXTRA] = parts[len(names):]
            yield Record(line.number, fields)


def iter_quoted(path: Path, *, delimiter: str, required: Sequence[str]) -> Iterator[Record]:
    """A delimited file with a header and RFC 4180 quoting; a quoted field may span lines.

    ``row`` is the line on which the record starts.
    """
    numbered = iter_lines(path)
    state = {"line": 0}

    def texts() -> Iterator[str]:
        for line in numbered:
            state["line"] = line.number
            yield line.text + "\n"

    reader = csv.reader(texts(), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    while True:
        start = state["line"] + 1
        try:
            parts = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            yield Record(start, None, f"cannot split the record: {e}")
            continue
        if header is None:
            header = [h.strip() for h in parts]
            _require(path, start, header, required)
            continue
        if not parts:
            continue
        if len(parts) != len(header):
            yield Record(start, None, f"expected {len(header)} fields, found {len(parts)}")
        else:
            yield Record(start, dict(zip(header, parts, strict=True)))
    if header is None:
        raise DataError("the file is empty (no header line)", file=str(path))


def iter_jsonl(path: Path) -> Iterator[Record]:
    """JSON lines: one object per line."""
    for line in iter_lines(path):
        if line.text.strip() == "":
            continue
        try:
            obj = json.loads(line.text)
        except json.JSONDecodeError as e:
            yield Record(line.number, None, f"not valid JSON: {e.msg} at column {e.colno}")
            continue
        except RecursionError:  # Python's parser recurses once per level of [ or {
            yield Record(line.number, None, "JSON nested too deeply to read (thousands of levels of [ or {)")
            continue
        if not isinstance(obj, dict):
            yield Record(line.number, None, f"a JSON {type(obj).__name__}, not an object")
            continue
        yield Record(line.number, obj)


def iter_parquet(path: Path, columns: Sequence[str]) -> Iterator[Record]:
    """Parquet rows (1-based record numbers), only the named columns, batch by batch."""
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise DataError(f"not a readable Parquet file: {e}", file=str(path)) from e
    _require(path, 0, pf.schema_arrow.names, columns)
    row = 0
    for batch in pf.iter_batches(columns=list(columns), batch_size=4096):
        for rec in batch.to_pylist():
            row += 1
            yield Record(row, rec)

"""A reader for any CSV/TSV/JSONL/Parquet file with named text and label columns.

Formats by suffix: ``.csv`` (comma, RFC 4180 quoting, quoted fields may span lines);
``.tsv`` and ``.txt`` (tab, first line names the columns, no quote handling, as GLUE files);
``.jsonl``/``.ndjson`` (one JSON object per line); ``.parquet``/``.pq``.

Labels: ``label_kind="class"`` (default) reads the label as text (numbers become their
decimal text, e.g. 1 -> "1"); with ``labels=(...)`` any other value is skipped and counted,
without it the label set is every distinct label read, sorted. ``label_kind="score"`` reads
a finite float, optionally checked against ``score_range``. Without ``label`` the pairs are
unlabelled (label_kind "none").
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from prior.errors import DataError, NotFoundError
from prior.pipeline.datasets import labels as L
from prior.pipeline.datasets.collect import Columns, collect
from prior.pipeline.datasets.lines import file_sha256
from prior.pipeline.datasets.tables import Record, iter_jsonl, iter_parquet, iter_quoted, iter_tsv
from prior.pipeline.datasets.types import LabelKind, Origin, SplitData

SUFFIXES = (".csv", ".tsv", ".txt", ".jsonl", ".ndjson", ".parquet", ".pq")


def _open_classes(labels: tuple[str, ...] | None) -> L.LabelScheme:
    if labels is not None:
        return L.classes({str(x): str(x) for x in labels}, order=tuple(str(x) for x in labels))

    def normalize(raw: object) -> str:
        text = str(raw).strip()
        if not text:
            raise L.Unusable("empty label")
        return text

    return L.LabelScheme("class", (), normalize)


def _records(path: Path, required: list[str]) -> Iterator[Record]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return iter_quoted(path, delimiter=",", required=required)
    if suffix in (".tsv", ".txt"):
        return (r for _, r in iter_tsv(path, required=required))
    if suffix in (".jsonl", ".ndjson"):
        return iter_jsonl(path)
    if suffix in (".parquet", ".pq"):
        return iter_parquet(path, required)
    raise DataError(f"cannot tell the format of {path.name!r} from its suffix; "
                    f"supported: {list(SUFFIXES)}", file=str(path))


def read_file(path: str | Path, *, text_a: str, text_b: str, label: str | None = None,
              id: str | None = None, label_kind: Literal["class", "score"] = "class",
              labels: tuple[str, ...] | None = None,
              score_range: tuple[float, float] | None = None, split: str = "all",
              dataset: str | None = None, limit: int | None = None,
              origin: Origin = "path") -> SplitData:
    """Read pairs from columns ``text_a``/``text_b`` (and ``label``, ``id``) of any table file.

    ``dataset`` defaults to the file's stem. Unusable rows are skipped and counted as with
    the official readers; the first ``limit`` usable pairs are returned.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise NotFoundError(f"no such file: {path} (searched only there: an explicit path)")
    if label_kind not in ("class", "score"):
        raise DataError(f"label_kind must be 'class' or 'score', not {label_kind!r}")
    required = [c for c in (text_a, text_b, label, id) if c is not None]
    if label is None:
        scheme: L.LabelScheme | None = None
    elif label_kind == "score":
        low, high = score_range or (-math.inf, math.inf)
        scheme = L.score(low, high)
    else:
        scheme = _open_classes(labels)
    got = collect(_records(path, required), path, Columns(text_a, text_b, label, id), scheme,
                  limit)
    kind: LabelKind = "none" if scheme is None else scheme.kind
    found = scheme.labels if scheme is not None else ()
    if scheme is not None and kind == "class" and not found:
        found = tuple(sorted({str(p.label) for p in got.pairs}))
    return SplitData(dataset or path.stem, split, path, str(path), origin, kind, found,
                     got.pairs, got.skipped, file_sha256(path))

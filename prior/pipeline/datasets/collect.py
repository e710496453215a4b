"""Turning records into pairs and counted skips, up to a limit of usable pairs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from prior.errors import DataError
from prior.pipeline.datasets.labels import LabelScheme, Unusable
from prior.pipeline.datasets.tables import ROW_FIELD, Record
from prior.pipeline.datasets.types import PairRow, Skip


@dataclass(frozen=True)
class Columns:
    """Which record fields hold the pair; ``label`` None when the source has no labels.

    ``id`` may name several fields, whose values are then joined with "_" (MRPC's two
    sentence ids, STS's file/year/id).
    """

    text_a: str
    text_b: str
    label: str | None
    id: str | tuple[str, ...] | None = None


@dataclass
class Collected:
    pairs: list[PairRow] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)


def check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise DataError(f"limit must be a non-negative integer or None, not {limit!r}")


def collect(records: Iterable[Record], path: Path | str, columns: Columns,
            scheme: LabelScheme | None, limit: int | None) -> Collected:
    """Read records until ``limit`` usable pairs (all if None); skip and count the rest.

    A record is skipped when it cannot be split, a text field is missing or empty (after
    stripping whitespace), or its label is missing or not usable by ``scheme``. Records after
    the limit is reached are not read, so their problems are not counted.
    """
    check_limit(limit)
    out = Collected()
    file = str(path)
    if limit == 0:
        return out
    for rec in records:
        if rec.fields is None:
            out.skipped.append(Skip(file, rec.row, ROW_FIELD, rec.problem))
            continue
        pair = _pair(rec, columns, scheme, file, out.skipped)
        if pair is not None:
            out.pairs.append(pair)
            if limit is not None and len(out.pairs) >= limit:
                break
    return out


def _text(value: object) -> str | None:
    if value is None:
        return None
    return str(value).strip()


def _pair(rec: Record, columns: Columns, scheme: LabelScheme | None, file: str,
          skipped: list[Skip]) -> PairRow | None:
    fields = rec.fields
    assert fields is not None
    texts = []
    for name in (columns.text_a, columns.text_b):
        if name not in fields:
            skipped.append(Skip(file, rec.row, name, "field is missing"))
            return None
        text = _text(fields[name])
        if not text:
            skipped.append(Skip(file, rec.row, name, "empty sentence"))
            return None
        texts.append(text)
    label = None
    if columns.label is not None and scheme is not None:
        if columns.label not in fields or fields[columns.label] is None:
            skipped.append(Skip(file, rec.row, columns.label, "label is missing"))
            return None
        try:
            label = scheme.normalize(fields[columns.label])
        except Unusable as e:
            skipped.append(Skip(file, rec.row, columns.label, str(e)))
            return None
    return PairRow(rec.row, texts[0], texts[1], label, _ident(fields, columns.id))


def _ident(fields: dict[str, object], spec: str | tuple[str, ...] | None) -> str | None:
    if spec is None:
        return None
    names = (spec,) if isinstance(spec, str) else spec
    values = [str(fields[n]).strip() for n in names if fields.get(n) not in (None, "")]
    return "_".join(values) if len(values) == len(names) else None

"""The records every dataset reader returns: pairs, skipped rows and one read split."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

LabelKind = Literal["class", "score", "none"]
Origin = Literal["path", "data_dir", "bundled", "hub"]
Label = str | float | None


@dataclass(frozen=True)
class PairRow:
    """One usable sentence pair.

    ``row`` is the 1-based line number where the record starts in its source file, as a
    person finds it in an editor (a header is line 1, so the first data line of a file with
    a header is row 2). For Parquet files and hub datasets it is the 1-based record number.
    Texts are as in the file with surrounding whitespace stripped.
    """

    row: int
    text_a: str
    text_b: str
    label: Label
    id: str | None


@dataclass(frozen=True)
class Skip:
    """A record that was read but could not be used, and why."""

    file: str
    row: int
    field: str
    reason: str


@dataclass
class SplitData:
    """One split of one dataset as read from one source.

    ``label_kind`` is "none" when the source has no labels (GLUE test files); ``labels`` is
    then still the dataset's label set, so a model knows its classes. ``path`` is None only
    for hub datasets; ``location`` is always a printable place (a path or ``hf://…``).
    ``source_sha256`` is the sha256 of the whole source file (also when ``limit`` stopped the
    read early); for hub data it is the sha256 of the records read (see ``hub.py``).
    """

    dataset: str
    split: str
    path: Path | None
    location: str
    origin: Origin
    label_kind: LabelKind
    labels: tuple[str, ...]
    pairs: list[PairRow] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    source_sha256: str = ""

    def __len__(self) -> int:
        return len(self.pairs)

    def skip_counts(self) -> dict[str, int]:
        """Skipped records per reason, most frequent first."""
        counts: dict[str, int] = {}
        for s in self.skipped:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass(frozen=True)
class SplitInfo:
    """Where one split of a named dataset would be read from now."""

    split: str
    location: str  # a resolved path, "hub: …", or "not found"
    origin: Origin | None


@dataclass(frozen=True)
class DatasetInfo:
    """A named dataset: its splits, label kind and labels, and where each split resolves."""

    name: str
    title: str
    label_kind: LabelKind
    labels: tuple[str, ...]
    splits: tuple[SplitInfo, ...]

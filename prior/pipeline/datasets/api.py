"""The public entry points: read one split of a named dataset (or of any file), list datasets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prior.errors import DataError
from prior.hints import option
from prior.pipeline.datasets.collect import check_limit
from prior.pipeline.datasets.generic import read_file
from prior.pipeline.datasets.hub import HubUnavailable, hub_location, hub_note, read_hub
from prior.pipeline.datasets.lines import file_sha256
from prior.pipeline.datasets.registry import RELEASE_PAIRS, SPECS, get_spec
from prior.pipeline.datasets.resolve import locate, not_found, search_plan
from prior.pipeline.datasets.types import DatasetInfo, SplitData, SplitInfo


def read_split(dataset: str | Path, split: str, *, path: str | Path | None = None,
               data_dir: str | Path | None = None, limit: int | None = None,
               hub: bool = True, **columns: Any) -> SplitData:
    """Read ``split`` of a named dataset, or of a file when ``dataset`` is a Path.

    Named datasets (see :func:`list_datasets`) are found as resolve.py describes: ``path``,
    then ``data_dir`` or ``$PRIOR_DATA_DIR``, then the bundled slices, then (if ``hub`` and
    the `datasets` library is installed and online) the Hugging Face hub. A ``Path`` (or a
    string naming an existing file) is read by :func:`read_file` with ``columns``
    (``text_a=..., text_b=..., label=...``). ``limit``: the first N usable pairs.
    """
    check_limit(limit)
    if isinstance(dataset, Path) or (isinstance(dataset, str) and dataset.lower() not in SPECS
                                     and Path(dataset).expanduser().is_file()):
        return read_file(Path(dataset), split=split, limit=limit, **columns)
    spec = get_spec(dataset)
    if columns:
        raise DataError(f"column names {sorted(columns)} are for files read by path; dataset "
                        f"{spec.name!r} has a fixed format")
    split = spec.split_name(split)
    explicit = Path(path) if path is not None else None
    root = Path(data_dir) if data_dir is not None else None
    found = locate(spec, split, path=explicit, data_dir=root)
    if found is None:
        plan = search_plan(spec, split, path=explicit, data_dir=root)
        note = "not tried (an explicit path was given)" if explicit is not None else (
            f"not tried (not asked for: name the split with {option('split')}, or pass {option('hub')})" if not hub else hub_note(spec, split))
        if note is None:
            try:
                return read_hub(spec, split, limit)
            except HubUnavailable as e:
                note = str(e)
        raise not_found(spec, split, plan, note)
    read = spec.reader(found.path, split, limit)
    return SplitData(spec.name, split, found.path, str(found.path), found.origin,
                     read.label_kind, spec.scheme.labels, read.collected.pairs,
                     read.collected.skipped, file_sha256(found.path))


@dataclass(frozen=True)
class Source:
    """Where a split would be read from and the checksum of that file (nothing parsed)."""

    dataset: str  # the dataset's own name (a file's stem)
    split: str
    location: str
    sha256: str


def source_of(dataset: str | Path, split: str, *, data_dir: str | Path | None = None) -> Source | None:
    """The local file ``read_split`` would read for ``split``, and its sha256, without parsing it;
    None where it would not read a local file (the hub)."""
    if isinstance(dataset, Path) or (isinstance(dataset, str) and dataset.lower() not in SPECS
                                     and Path(dataset).expanduser().is_file()):
        path = Path(dataset).expanduser()
        return Source(path.stem, split, str(path), file_sha256(path))
    spec = get_spec(dataset)
    split = spec.split_name(split)
    found = locate(spec, split, data_dir=Path(data_dir) if data_dir is not None else None)
    if found is None:
        return None
    return Source(spec.name, split, str(found.path), file_sha256(found.path))


def release_pairs(dataset: str, split: str) -> int | None:
    """The usable pairs of ``split`` in the full release of a named dataset whose slice is
    bundled (None where not known)."""
    return RELEASE_PAIRS.get((dataset.lower(), split))


def dataset_splits(dataset: str) -> tuple[str, ...]:
    """The split names of a named dataset (its aliases are accepted by read_split too)."""
    return get_spec(dataset).splits


def list_datasets(*, data_dir: str | Path | None = None) -> list[DatasetInfo]:
    """Every named dataset with, for each split, where it would be read from now.

    Nothing is read and the hub is not contacted: a split with no local file shows the hub
    source it would try, or "not found".
    """
    root = Path(data_dir) if data_dir is not None else None
    out = []
    for spec in SPECS.values():
        splits = []
        for split in spec.splits:
            found = locate(spec, split, data_dir=root)
            if found is not None:
                splits.append(SplitInfo(split, str(found.path), found.origin))
            elif hub_note(spec, split) is None:
                splits.append(SplitInfo(split, f"hub: {hub_location(spec, split)}", "hub"))
            else:
                splits.append(SplitInfo(split, "not found", None))
        out.append(DatasetInfo(spec.name, spec.title, spec.scheme.kind, spec.scheme.labels,
                               tuple(splits)))
    return out

"""``prior store export``: a feature's frame as a hive-partitioned Parquet dataset that Polars,
pyarrow, DuckDB and Hugging Face ``datasets`` read without `prior`.

Layout below the output folder, one partition per dataset split::

    dataset=<dataset>/split=<split>/part-0.parquet   (part-1, … past ROWS_PER_PART rows)

Each file holds the columns of ``Store.frame`` for that split (row, pair_key, key_a, key_b,
label, id, texts, both parses, the feature's matrices as nested lists); ``dataset`` and
``split`` come from the folder names (``pl.scan_parquet(out, hive_partitioning=True)``,
``pyarrow.dataset.dataset(out, partitioning="hive")``). Types are the portable ones (``string``,
``list``; not Arrow's large or view types) so that every Parquet reader takes them; the file's
schema metadata ``prior`` records the feature, the split and the entries read (JSON).

Replacing: exporting a split again writes its new files into a fresh folder beside the output
folder (never inside it: a scan of the output would read it), then swaps whole folders by two
renames (old partition out, new one in) and removes the old one. A reader sees the old
partition, the new one, or, between the two renames, none; never a mix of old and new parts.
Other partitions are left as they are. Two exports of the same split at once: the later
rename fails and its files are removed. The output must therefore be a local folder whose
parent is writable (object storage has no rename; copy the folder there afterwards).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from prior.errors import DataError, NotFoundError
from prior.featurestore.scan import SplitScan
from prior.featurestore.selection import Request
from prior.featurestore.splits import read_splits
from prior.hints import option

if TYPE_CHECKING:
    from prior.featurestore.entries import EntryInfo
    from prior.featurestore.segments import SegmentStore

ROWS_PER_PART = 100_000
ROW_GROUP_ROWS = 2_048  # row groups small enough to stream a split of large matrices


@dataclass(frozen=True)
class ExportedSplit:
    dataset: str
    split: str
    rows: int
    folder: Path
    files: tuple[str, ...]
    entries: tuple[EntryInfo, ...]  # the entries read
    skipped: str = ""  # the pairs left out because their build skipped a sentence (`SplitRows.note`)


def portable_type(typ: pa.DataType) -> pa.DataType:
    """``typ`` with Arrow's large and view strings and lists as plain ``string`` and ``list``."""
    if pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return pa.string()
    if pa.types.is_large_binary(typ) or pa.types.is_binary_view(typ):
        return pa.binary()
    if pa.types.is_large_list(typ) or pa.types.is_list(typ) or pa.types.is_list_view(typ):
        return pa.list_(portable_type(typ.value_type))
    return typ


def portable_table(frame: pl.DataFrame, metadata: Mapping[str, str]) -> pa.Table:
    table = frame.to_arrow()
    schema = pa.schema([pa.field(f.name, portable_type(f.type), f.nullable) for f in table.schema],
                       metadata=dict(metadata))
    return table.cast(schema)


def local_folder(out: str | os.PathLike[str], store: SegmentStore | None = None) -> Path:
    """The output folder as a local path; an fsspec URL, a file, or a folder inside ``store``
    (its root, ``segments/``, ``catalog/``, …: the store holds only what it committed) is a
    `DataError`."""
    text = os.fspath(out)
    if "://" in text:
        raise DataError(f"export writes to a local folder, not {text}: its partitions are replaced by renames, "
                        "which object storage lacks; export locally, then copy the folder")
    path = Path(text).expanduser().absolute()
    if store is not None and store.fs.local:
        root = Path(store.fs.root)
        if path.resolve() == root or root in path.resolve().parents:
            raise DataError(f"{path} is inside the store at {root}, which holds only what its builds commit; "
                            f"give {option('out')} a folder outside it")
    if path.exists() and not path.is_dir():
        raise DataError(f"{path} is a file; give a folder to export into")
    return path


def _unwritable(folder: Path, exc: OSError) -> DataError:
    return DataError(f"cannot write the export to {folder} ({exc.strerror or exc or type(exc).__name__}); "
                     f"give {option('out')} a folder you can write")


def write_partition(out: Path, dataset: str, split: str, parts: pa.Table | Iterable[pa.Table], *,
                    rows_per_part: int = ROWS_PER_PART) -> tuple[Path, tuple[str, ...]]:
    """Write ``parts`` as ``out/dataset=…/split=…/part-*.parquet``, replacing that partition
    whole (module docstring); return the folder and its file names. ``parts``: one table (cut
    into ``rows_per_part`` rows per file) or the files' tables one after the other, made as they
    are written (so a split is never held whole)."""
    if isinstance(parts, pa.Table):
        table = parts
        parts = (table.slice(start, rows_per_part) for start in range(0, max(table.num_rows, 1), rows_per_part))
    parent = out / f"dataset={dataset}"
    final = parent / f"split={split}"
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.export-", dir=out.parent))
    try:
        fresh = staging / "new"
        fresh.mkdir()
        names = []
        for i, part in enumerate(parts):
            name = f"part-{i}.parquet"
            pq.write_table(part, fresh / name, compression="zstd", row_group_size=ROW_GROUP_ROWS)
            names.append(name)
        old = staging / "old"
        moved = False
        if final.exists():
            os.rename(final, old)
            moved = True
        try:
            os.rename(fresh, final)
        except OSError:
            if moved and not final.exists():
                os.rename(old, final)
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final, tuple(names)


def _row_parts(store: SegmentStore, source: SplitScan, dataset: str, split: str, rows_per_part: int,
               metadata: Mapping[str, str], count: list[int]) -> Iterator[pa.Table]:
    """The split's frame as tables of ``rows_per_part`` pair rows each, in row order, each read
    by itself (a filtered scan: only its rows' sentences, parses and feature items are read), so
    an export holds one part at a time; ``count`` gets the rows written. A split with no rows
    gives one empty part."""
    rows = source.rows["row"]
    starts = range(0, max(rows.len(), 1), rows_per_part)
    for start in starts:
        if rows.is_empty():
            frame = source.lazy().collect()
        else:
            lo, hi = rows[start], rows[min(start + rows_per_part, rows.len()) - 1]
            frame = source.lazy().filter(pl.col("row").is_between(lo, hi)).collect()
        count[0] += frame.height
        yield portable_table(frame, metadata)


def export_parquet(store: SegmentStore, feature: str, *, dataset: str, out: str | os.PathLike[str],
                   splits: Sequence[str] | None = None, request: Request | None = None,
                   rows_per_part: int = ROWS_PER_PART) -> list[ExportedSplit]:
    """Export ``feature`` of ``dataset``'s ``splits`` (default: every split the store holds) to
    ``out`` (module docstring). Entries are selected as ``Store.frame`` selects them, for every
    split before anything is written, so a bad argument writes nothing."""
    folder = local_folder(out, store)
    splits_held = read_splits(store)  # a split whose pairs records are all gone fails when read
    present = [s for d, s in splits_held if d == dataset]
    if not present:
        known = ", ".join(sorted({d for d, _ in splits_held})) or "none"
        raise NotFoundError(f"{store.location} has no dataset {dataset!r} (present: {known})")
    wanted = list(dict.fromkeys(splits)) if splits else present
    if missing := [s for s in wanted if s not in present]:
        raise NotFoundError(f"{store.location} has no split {', '.join(missing)} of {dataset} "
                            f"(present: {', '.join(present)})")
    sources = {split: SplitScan(store, feature, dataset=dataset, split=split, request=request) for split in wanted}
    try:
        folder.mkdir(parents=True, exist_ok=True)  # an output that cannot be made fails before any read
    except OSError as exc:
        raise _unwritable(folder, exc) from None
    done = []
    for split, source in sources.items():
        meta = {"prior": json.dumps({"feature": feature, "dataset": dataset, "split": split, "store": store.location,
                                     "entries": [{"spec": e.spec, "key": e.key} for e in source.entries]})}
        written = [0]
        try:
            path, files = write_partition(folder, dataset, split,
                                          _row_parts(store, source, dataset, split, rows_per_part, meta, written))
        except OSError as exc:  # a full disk, a folder that vanished: what was exported before stays
            raise _unwritable(folder, exc) from None
        done.append(ExportedSplit(dataset, split, written[0], path, files, tuple(source.entries),
                                  source.split_rows.note))
    return done

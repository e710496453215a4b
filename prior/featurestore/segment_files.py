"""A committed segment's files, read and written: Parquet tables (whole, or the rows of some
keys) and Zarr flat arrays (whole, or some items' values), each checked against its catalog
record before it is decoded (`prior.featurestore.checked`). `prior.featurestore.segments` and the
query modules read segments through these functions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from prior.errors import PriorError
from prior.featurestore import keys as keymod
from prior.featurestore.catalog import Segment
from prior.featurestore.checked import (
    CheckedRanges,
    check_streamed,
    damaged,
    folder_files,
    is_verified,
    read_checked,
    read_checked_files,
)
from prior.featurestore.fs import READ_FILES_AT_ONCE, StoreFS, concurrently
from prior.featurestore.key_numbers import KeyTextError, frame_key_numbers
from prior.featurestore.parse_columns import ANNOTATIONS
from prior.featurestore.read_ahead import read_ahead
from prior.featurestore.tensors import KeptPieces, numpy_column, read_flat, read_flat_files, read_flat_ranges
from prior.layouts.ragged import Ragged, item_starts


def held_annotations(segment: Segment) -> frozenset[str]:
    """The annotations (of `ANNOTATIONS`) a parses segment holds; the others are null in it."""
    held = segment.target.get("annotations")
    return frozenset(ANNOTATIONS) if held is None else frozenset(held)


def polars_frame(table: pa.Table) -> pl.DataFrame:
    """A Parquet table as a Polars frame (``pl.from_arrow`` types a table's result loosely)."""
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def source_of(segment: Segment) -> str:
    """A pairs segment's source: the file's checksum and the options it was read with."""
    return keymod.canonical_json([segment.target["source_sha256"], segment.meta.get("reader")])


def arrow_owned(data: bytes) -> pa.Buffer:
    """``data`` copied into memory Arrow allocates. A buffer that wraps a Python object
    (``pa.BufferReader(data)`` does) takes the GIL when its last reference goes, and a threaded
    read's worker thread may drop that reference after the main thread has returned: at
    interpreter exit such a late release meets a finalizing interpreter, the thread is ended by
    ``pthread_exit`` inside a C++ destructor, and the process aborts ("terminate called without
    an active exception", exit 134) after the command's work is done. Arrow's own memory is
    released without Python."""
    buffer = pa.allocate_buffer(len(data))
    pa.FixedSizeBufferWriter(buffer).write(data)
    return buffer


def read_parquet(fs: StoreFS, segment: Segment, inner: str, columns: Sequence[str] | None = None) -> pa.Table:
    """A committed Parquet file (checked against its record on its first read in this process);
    a file that still cannot be decoded is a `StoreError` naming it, never a decoder's traceback.
    Arrow's worker threads never hold a Python object (`arrow_owned`): the checked bytes are
    decoded from Arrow's memory, a local file from its path, and a file of an object store (a
    Python file object) in the calling thread."""
    with _parquet_file(fs, segment, inner) as (pf, threads):
        return pf.read(columns=list(columns) if columns else None, use_threads=threads)


def parquet_parts(fs: StoreFS, segment: Segment, inner: str, columns: Sequence[str] | None,
                  rows: int) -> Iterator[pa.Table]:
    """A committed Parquet file (checked as `read_parquet` checks it) as tables of its row
    groups, in order, consecutive ones joined up to ``rows`` rows: a large file's text is
    decoded a part at a time, never held whole. Arrow decodes a row group whole, so a file
    written with larger row groups (by an earlier `prior`) gives one table per group."""
    wanted = list(columns) if columns else None
    with _parquet_file(fs, segment, inner) as (pf, threads):
        sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
        start = 0
        while start < len(sizes):
            stop, held = start + 1, sizes[start]
            while stop < len(sizes) and held + sizes[stop] <= rows:
                held += sizes[stop]
                stop += 1
            yield pf.read_row_groups(list(range(start, stop)), columns=wanted, use_threads=threads)
            start = stop


def read_string_lists(fs: StoreFS, segment: Segment, inner: str, column: str) -> list[pa.ListArray]:
    """A list-of-strings column of a committed Parquet file (checked as `read_parquet` checks
    it), one array per row group, its strings read as the indices into the row group's
    dictionary that Parquet stores (``read_dictionary``): no string is made per value, and a
    parse's words read 2 to 5 times as fast as plain strings dictionary-encoded afterwards
    (bench/RESULTS.md, "The loader on a compacted store; parse words read as dictionaries").
    Arrow reads a nested column this way only one row group at a time."""
    with _parquet_file(fs, segment, inner, dictionary=column) as (pf, threads):
        return [pf.read_row_group(i, columns=[column], use_threads=threads).column(column).combine_chunks()
                for i in range(pf.metadata.num_row_groups)]


@contextmanager
def _parquet_file(fs: StoreFS, segment: Segment, inner: str,
                  dictionary: str | None = None) -> Iterator[tuple[pq.ParquetFile, bool]]:
    """The file opened for `read_parquet`, `parquet_parts` and `read_string_lists`
    (``dictionary``: the column whose strings are read as dictionary indices), and whether
    Arrow may decode it with its threads (not a Python file object's). A file that cannot be
    opened or decoded, here or in the reader's body, is a `StoreError` naming it."""
    # One file, read by `ParquetFile`: `pq.read_table` goes through `pyarrow.dataset`, whose
    # import pulls in pandas (0.2-0.3 s in every process that reads: the CLI, each worker).
    try:
        if not is_verified(fs, segment, inner):
            source: Any = pa.BufferReader(arrow_owned(read_checked(fs, segment, inner)))
            threads = True
        elif fs.local:
            source, threads = pa.OSFile(fs.path(f"{segment.folder}/{inner}")), True
        else:
            source, threads = fs.open(f"{segment.folder}/{inner}", "rb"), False
        with source, pq.ParquetFile(source) as pf:
            if dictionary is None:
                yield pf, threads
                return
            # the leaf of a list column: ``words.list.element`` (``.list.item`` in older writers)
            leaves = [pf.metadata.schema.column(i).path for i in range(pf.metadata.num_columns)]
            wanted = [leaf for leaf in leaves if leaf.startswith(f"{dictionary}.")]
            with pq.ParquetFile(source, metadata=pf.metadata, read_dictionary=wanted) as strings:
                yield strings, threads
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise damaged(segment, inner, f"cannot be read ({type(exc).__name__}: {exc})") from None


def _polars_source(fs: StoreFS, segment: Segment, inner: str) -> Any:
    """What Polars reads a committed file from: its checked bytes on the first read in this
    process, then its path (local) or its bytes (an object store)."""
    import io

    if not is_verified(fs, segment, inner):
        return io.BytesIO(read_checked(fs, segment, inner))
    rel = f"{segment.folder}/{inner}"
    return fs.path(rel) if fs.local else io.BytesIO(fs.read_bytes(rel))


def read_frame(fs: StoreFS, segment: Segment, inner: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """A committed Parquet file as a Polars frame, checked as `read_parquet` checks it, decoded
    by Polars into its own memory: for the many small files of a split (`read_frames`), about
    twice as fast as through Arrow and without Arrow's per-file buffers (a 500k-pair split's
    rows: 0.8 against 1.1 s, 330 against 400 MB of RSS). The same frame as
    ``polars_frame(read_parquet(...))`` (tested)."""
    try:
        return pl.read_parquet(_polars_source(fs, segment, inner), columns=list(columns) if columns else None)
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise damaged(segment, inner, f"cannot be read ({type(exc).__name__}: {exc})") from None


# Reading many small files is mostly per-file work (open, footer, decode) that releases the
# GIL: a few threads read a split's hundreds of segments ~2x faster on 2 cores.
_READ_THREADS = 4


def read_frames(fs: StoreFS, segments: Sequence[Segment], inner: str, columns: Sequence[str] | None = None,
                numbers: Sequence[str] = ()) -> list[pl.DataFrame]:
    """`read_frame` of ``inner`` in each of ``segments``, in order; many files are read by a
    few threads. The key columns ``numbers`` are converted to numbers (`prior.featurestore.key_numbers`)
    a bounded group of rows at a time (`frame_groups`). The first file that cannot be read, or
    whose key column holds a value that is not a key, is its `StoreError`."""
    if not numbers:
        return _read_each(fs, segments, inner, columns)
    parts: list[list[pl.DataFrame]] = [[] for _ in segments]
    for group, joined in frame_groups(fs, segments, inner, columns, numbers):
        at = 0
        for k, height in group:
            parts[k].append(joined.slice(at, height))
            at += height
    return [part[0] if len(part) == 1 else pl.concat(part) for part in parts]


def frame_groups(fs: StoreFS, segments: Sequence[Segment], inner: str, columns: Sequence[str] | None,
                 numbers: Sequence[str]) -> Iterator[tuple[list[tuple[int, int]], pl.DataFrame]]:
    """``inner`` of ``segments`` read a bounded group of rows at a time, in order: each group's
    parts, (the segment's position in ``segments``, rows), and their rows joined, the key
    columns ``numbers`` as numbers. Small files are read 16 at a time, by a few threads, up to
    `KEY_GROUP_ROWS` rows (by their records' row counts); a file of more rows (a compacted
    segment) on its own, a few row groups at a time (`parquet_parts`). Converted file by file, a
    split's hundreds of small files would pay the conversion's fixed cost each; converted at the
    end, all their key text would be held at once, and a compacted file's 250k rows of it at
    once raised the numbered split's RSS by 198 MiB at 500k pairs (110 read by row groups). A
    reader that keeps only what it derives of each group (`prior.featurestore.numbered_split`)
    never holds the whole table. The first file whose key column holds a value that is not a
    key is its `StoreError`. The next group is read and converted by a thread while the caller
    uses this one (`prior.featurestore.read_ahead`)."""
    return read_ahead(_frame_groups(fs, segments, inner, columns, numbers))


def _frame_groups(fs: StoreFS, segments: Sequence[Segment], inner: str, columns: Sequence[str] | None,
                  numbers: Sequence[str]) -> Iterator[tuple[list[tuple[int, int]], pl.DataFrame]]:
    for first, group in _groups(segments):
        if len(group) == 1 and group[0].rows > KEY_GROUP_ROWS:
            offset = 0
            for frame in map(polars_frame, parquet_parts(fs, group[0], inner, columns, KEY_GROUP_ROWS)):
                yield [(first, frame.height)], _key_numbers(inner, [(group[0], offset)], [frame], numbers)
                offset += frame.height
            continue
        frames = _read_each(fs, group, inner, columns)
        yield ([(first + k, f.height) for k, f in enumerate(frames)],
               _key_numbers(inner, [(segment, 0) for segment in group], frames, numbers))


def _groups(segments: Sequence[Segment]) -> Iterator[tuple[int, Sequence[Segment]]]:
    """`frame_groups`' groups of ``segments``: (the first one's position, the group). A file of
    more than `KEY_GROUP_ROWS` rows is a group of its own."""
    start = 0
    while start < len(segments):
        stop, rows = start + 1, segments[start].rows
        while (rows <= KEY_GROUP_ROWS and stop < len(segments) and stop - start < _KEY_GROUP_FILES
               and rows + segments[stop].rows <= KEY_GROUP_ROWS):
            rows += segments[stop].rows
            stop += 1
        yield start, segments[start:stop]
        start = stop


def _key_numbers(inner: str, parts: Sequence[tuple[Segment, int]], frames: list[pl.DataFrame],
                 numbers: Sequence[str]) -> pl.DataFrame:
    """The frames joined, the key columns ``numbers`` as numbers. ``parts``: each frame's
    segment and the row of its file it starts at. A value that is no key is the `StoreError`
    of its file, naming its row there."""
    try:
        return frame_key_numbers(pl.concat(frames, how="vertical_relaxed"), numbers)
    except KeyTextError:  # name the file that holds it
        for (segment, offset), frame in zip(parts, frames):
            try:
                frame_key_numbers(frame, numbers)
            except KeyTextError as exc:
                located = KeyTextError(exc.row + offset, frame[str(exc.column)][exc.row], exc.column)
                raise damaged(segment, inner, str(located)) from None
        raise


# files whose keys are converted together (`read_frames`): what a read holds of key text at once
_KEY_GROUP_FILES = 4 * _READ_THREADS
#: rows whose keys a read converts at once (`frame_groups`)
KEY_GROUP_ROWS = 1 << 16


def _read_each(fs: StoreFS, segments: Sequence[Segment], inner: str,
               columns: Sequence[str] | None) -> list[pl.DataFrame]:
    """`read_frame` of each segment: on a local disk by `_READ_THREADS` threads (the work is
    the files' decoding), on an object store by as many as `READ_FILES_AT_ONCE` (each file
    waits on a round trip there)."""
    if fs.local:
        threads = _READ_THREADS if len(segments) >= 2 * _READ_THREADS else 1
    else:
        threads = READ_FILES_AT_ONCE
    return concurrently(segments, lambda s: read_frame(fs, s, inner, columns), threads)


def key_items(fs: StoreFS, segments: Sequence[Segment], inner: str, column: str) -> pl.DataFrame:
    """Every key in ``column`` of the ``inner`` table of ``segments`` with where it lies: ``seg``
    (the segment's position in ``segments``) and ``item`` (its row in that table), in segment
    order, duplicates kept. Only the key column is read. (A split's index locates its keys
    while reading the key columns instead: `prior.featurestore.located`.)"""
    frames = read_frames(fs, segments, inner, [column])
    if not frames:
        return pl.DataFrame(schema={"key": pl.String, "seg": pl.Int32, "item": pl.Int32})
    sizes = np.array([f.height for f in frames], dtype=np.int64)
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    return pl.DataFrame({"key": pl.concat([f.to_series() for f in frames]).cast(pl.String),
                         "seg": np.repeat(np.arange(len(frames), dtype=np.int32), sizes),
                         "item": (np.arange(int(sizes.sum()), dtype=np.int64) - starts).astype(np.int32)})


def read_parquet_where(fs: StoreFS, segment: Segment, inner: str, columns: Sequence[str], key: str,
                       keys: pl.Series) -> pl.DataFrame:
    """The rows of a committed Parquet file whose ``key`` column is in ``keys``, with ``key``
    and ``columns`` (checked as `read_parquet` checks): read by Polars, which decodes the other
    columns only for the matching rows, so a few rows of a large table cost about its key
    column. A file that cannot be decoded is a `StoreError` naming it."""
    source = _polars_source(fs, segment, inner)
    wanted = list(dict.fromkeys([key, *columns]))
    try:
        return (pl.scan_parquet(source).select(wanted).filter(pl.col(key).is_in(keys.implode()))
                .collect())
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        raise damaged(segment, inner, f"cannot be read ({type(exc).__name__}: {exc})") from None


def array_files(fs: StoreFS, segment: Segment, names: Sequence[str]) -> dict[str, bytes]:
    """The checked bytes of the Zarr group's ``zarr.json`` and of every recorded file of its
    arrays ``names``, by path inside the group (`read_checked_files`: on an object store,
    fetched at once)."""
    inners = _array_inners(segment, names)
    return {inner[len("arrays/"):]: data for inner, data in read_checked_files(fs, segment, inners).items()}


def _array_inners(segment: Segment, names: Sequence[str]) -> list[str]:
    """The group's ``zarr.json`` and every recorded file of its arrays ``names``, by path in the segment."""
    return ["arrays/zarr.json", *(inner for name in names for inner in folder_files(segment, f"arrays/{name}"))]


#: on an object store, a shard of at least this many bytes is read by ranges once checked
#: (`array_sources`); a smaller one is fetched whole
RANGED_REMOTE_BYTES = 4 << 20


def array_sources(fs: StoreFS, segment: Segment, names: Sequence[str],
                  kept: KeptPieces | None = None) -> dict[str, bytes | CheckedRanges]:
    """`array_files`, except for the shards that are read by byte ranges (`CheckedRanges`: the
    shard's index, then only the pieces a read needs) instead of whole:

    - on a local disk, a shard this process already checked (its first read reads it whole,
      checks it and decodes from those bytes);
    - on an object store, a shard of at least `RANGED_REMOTE_BYTES`, checked first without
      being kept (`check_streamed`). A compacted segment's shard holds tens of megabytes, and
      every piece of a split that a reader takes from it would fetch them all again once a
      reader's cache no longer holds it; a smaller shard is fetched whole (one round trip, and
      a trainer keeps it: `prior.trainers.reader`).

    ``kept``: where the shards read by ranges keep the pieces they fetch (a reader's cache)."""
    inners = _array_inners(segment, names)
    if fs.local:
        ranged = {inner for inner in inners if inner.endswith("/c/0") and is_verified(fs, segment, inner)}
    else:
        ranged = set(check_large_shards(fs, segment, names))
    files: dict[str, bytes | CheckedRanges] = dict(
        read_checked_files(fs, segment, [inner for inner in inners if inner not in ranged]))
    files.update({inner: CheckedRanges(fs, segment, inner, kept) for inner in ranged})
    return {inner[len("arrays/"):]: files[inner] for inner in inners}


def check_large_shards(fs: StoreFS, segment: Segment, names: Sequence[str]) -> list[str]:
    """On an object store, the shards of arrays ``names`` of at least `RANGED_REMOTE_BYTES`,
    checked (`check_streamed`: a shard this process checked before is not fetched again);
    on a local disk, none."""
    if fs.local:
        return []
    large = [inner for inner in _array_inners(segment, names) if inner.endswith("/c/0") and inner in segment.files
             and int(segment.files[inner]["size"]) >= RANGED_REMOTE_BYTES]
    check_streamed(fs, segment, large)
    return large


def read_arrays(fs: StoreFS, segment: Segment, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The flat arrays ``names`` of a segment's Zarr group: the group's ``zarr.json`` and every
    recorded file of those arrays (their ``zarr.json`` and chunks) are checked first, then
    decoded from the checked bytes; the group's other arrays are not read. A group that still
    cannot be decoded is a `StoreError` naming the segment."""
    files = array_files(fs, segment, names)
    try:
        known = {name: read_flat(files, name) for name in names}
        rest = [name for name, values in known.items() if values is None]
        decoded = read_flat_files(files, rest) if rest else {}
        return {name: values if values is not None else decoded[name] for name, values in known.items()}
    except Exception as exc:  # noqa: BLE001 - zarr raises many types; all mean the same here
        raise damaged(segment, "arrays/", f"cannot be read ({type(exc).__name__}: {exc})") from None


def index_columns(table: pa.Table, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The ``offset``, ``rows`` and ``cols`` columns of arrays ``names`` in a feature segment's
    index table, as int64 numpy arrays (what `read_items` reads of it, converted once)."""
    return {f"{n}.{part}": np.asarray(numpy_column(table, f"{n}.{part}"), dtype=np.int64)
            for n in names for part in ("offset", "rows", "cols")}


def read_items(fs: StoreFS, segment: Segment, index: pa.Table | Mapping[str, np.ndarray], names: Sequence[str],
               positions: np.ndarray, files: Mapping[str, bytes | CheckedRanges] | None = None) -> dict[str, Ragged]:
    """Items ``positions`` (rows of the segment's ``index``: its table, or its `index_columns`,
    of any integer type) of the flat arrays ``names``, as `Ragged` in that order: the files are checked as by
    `read_arrays` (``files``: their `array_sources` or `array_files`, when the caller keeps
    them; else `array_sources`: a shard checked before is read by ranges), then only those items'
    values are kept, from the pieces that hold them
    (`prior.featurestore.tensors.read_flat_ranges`); an array stored otherwise is decoded whole
    and the items taken from it."""
    sources: Mapping[str, bytes | CheckedRanges] = array_sources(fs, segment, names) if files is None else files
    rows = np.asarray(positions, dtype=np.int64)
    columns = index if isinstance(index, Mapping) else index_columns(index, names)
    out: dict[str, Ragged] = {}
    for name in names:
        offsets, nrows, ncols = (columns[f"{name}.{part}"][rows].astype(np.int64, copy=False)
                                 for part in ("offset", "rows", "cols"))
        sizes = nrows * np.where(ncols < 0, 1, ncols)
        try:
            values = read_flat_ranges(sources, name, offsets, sizes)
            if values is None:
                held = {} if files is None else {k: v for k, v in files.items() if isinstance(v, bytes)}
                if files is None or len(held) < len(files):  # a shard read by ranges: fetched whole now
                    held = array_files(fs, segment, [name])
                whole = read_flat_files(held, [name])[name]
                out[name] = Ragged(whole, offsets, nrows, ncols).take(np.arange(len(rows)))
                continue
        except PriorError:
            raise
        except Exception as exc:  # noqa: BLE001 - zarr and arrow raise many types; all mean the same here
            raise damaged(segment, "arrays/", f"cannot be read ({type(exc).__name__}: {exc})") from None
        out[name] = Ragged(values, item_starts(sizes), nrows, ncols)
    return out


def indexed_items(index: pa.Table, arrays: Mapping[str, np.ndarray], component: str) -> Ragged:
    """A feature segment's items of ``component``: its flat array with the offsets and shapes
    of the segment's index (`prior.featurestore.tensors`)."""
    columns = index_columns(index, [component])
    return Ragged(arrays[component], columns[f"{component}.offset"], columns[f"{component}.rows"],
                  columns[f"{component}.cols"])


def write_parquet(fs: StoreFS, rel: str, table: pa.Table) -> None:
    """A segment's Parquet table, in row groups of `KEY_GROUP_ROWS` rows: a compacted segment's
    keys are then read a row group at a time (`frame_groups`); a file of fewer rows is one row
    group, as before."""
    fs.makedirs(rel.rsplit("/", 1)[0])
    with fs.open(rel, "wb") as fh:
        pq.write_table(table, fh, compression="zstd", row_group_size=KEY_GROUP_ROWS)


def parquet_writer(fs: StoreFS, name: str, table: pa.Table) -> Callable[[str], list[str]]:
    """A segment's ``write`` for one Parquet file."""
    def write(folder: str) -> list[str]:
        write_parquet(fs, f"{folder}/{name}", table)
        return [name]

    return write

"""Ragged word-level arrays in Zarr v3: flattened 1-D arrays with offsets and shapes.

Zarr has no ragged arrays, so a segment keeps, per component, every item's array flattened
into one 1-D Zarr array (one file: a shard of zstd pieces, `write_flat`) and records each
item's offset and shape in the segment's Parquet index: ``<component>.offset`` (int64),
``<component>.rows`` and ``<component>.cols`` (int32; cols is -1 for a 1-D vector). Arrays of
one or two dimensions are supported — every feature of the papers is a word vector or a word
matrix.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow as pa

from prior.featurestore.errors import StoreError
from prior.featurestore.fs import StoreFS
from prior.layouts.ragged import Ragged

if TYPE_CHECKING:
    from zarr.abc.store import Store

# zarr is imported where arrays are written or read, not with the store: a rebuild that reads
# no arrays (a no-op) skips its 0.2 s import

ZSTD_LEVEL = 5
#: values per zstd piece of a flat array: 128 KiB of float32, so that a scan of 1,000 items spread
#: over a 500k-pair split decompresses about a fifth of a segment's `wup` values, not all of them
PIECE_VALUES = 32_768


def zarr_store(fs: StoreFS, rel: str, *, read_only: bool) -> Store:
    import zarr

    if fs.local:
        return zarr.storage.LocalStore(fs.path(rel), read_only=read_only)
    # the store's own fsspec options (endpoint, credentials): Zarr opens its own (async) instance
    return zarr.storage.FsspecStore.from_url(f"{fs.url}/{rel}", storage_options=fs.fs_kwargs, read_only=read_only)


def flatten(name: str, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One flat array and the index columns for a component's arrays (all of one dtype)."""
    try:
        ragged = Ragged.from_arrays([np.asarray(a) for a in arrays])
    except ValueError as exc:
        raise StoreError(f"component {name!r}: {exc}; only 1 or 2 dimensions are stored") from None
    return ragged.values, {f"{name}.offset": ragged.offsets, f"{name}.rows": ragged.rows.astype(np.int32),
                           f"{name}.cols": ragged.cols.astype(np.int32)}


def write_flat(fs: StoreFS, rel: str, flats: Mapping[str, np.ndarray], *, piece: int = PIECE_VALUES) -> None:
    """Each flat array as one Zarr file: a shard of zstd pieces of ``piece`` values each (Zarr
    v3's ``sharding_indexed`` codec, its index at the end), so that a read of a few items
    decompresses only the pieces that hold them."""
    import zarr
    from zarr.codecs import ZstdCodec

    group = zarr.open_group(zarr_store(fs, rel, read_only=False), mode="w")
    for name, flat in flats.items():
        length = max(1, flat.shape[0])
        inner = min(piece, length)
        arr = group.create_array(name=name, shape=flat.shape, dtype=flat.dtype, chunks=(inner,),
                                 shards=(-(-length // inner) * inner,), compressors=ZstdCodec(level=ZSTD_LEVEL))
        if flat.size:
            arr[:] = flat


def read_flat_files(files: Mapping[str, bytes], names: Sequence[str]) -> dict[str, np.ndarray]:
    """The flat arrays ``names`` of a Zarr group given as its files' bytes (path in the group →
    content), as the store's checked reads hand them over: decoded in memory, so what is
    decoded is exactly what was checked."""
    import zarr
    from zarr.core.buffer import cpu

    memory = zarr.storage.MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in files.items()}, read_only=True)
    group = zarr.open_group(memory, mode="r")
    arrays = {name: group[name] for name in names}
    return {name: np.asarray(arr[:]) for name, arr in arrays.items() if isinstance(arr, zarr.Array)}


_NO_PIECE = 2**64 - 1  # a shard index's offset and size of a piece never written (all fill values)


@dataclass(frozen=True)
class FlatLayout:
    """How a flat array's values lie in its one file: ``piece`` values per zstd piece of a
    shard (`write_flat`)."""

    dtype: np.dtype
    length: int
    piece: int
    fill: np.ndarray  # the fill value, as a 0-d array of ``dtype``

    @property
    def pieces(self) -> int:
        return -(-max(1, self.length) // self.piece)


def _bytes_then_zstd(codecs: object) -> bool:
    if not (isinstance(codecs, list) and len(codecs) == 2 and all(isinstance(c, dict) for c in codecs)):
        return False
    first, second = codecs
    return bool(first.get("name") == "bytes" and first.get("configuration", {}).get("endian", "little") == "little"
                and second.get("name") == "zstd")


def flat_layout(meta: Mapping[str, object]) -> FlatLayout | None:
    """The layout of a flat array from its ``zarr.json``, when it is one `write_flat` writes,
    else None: the caller then lets Zarr decode it."""
    shape, grid, codecs = meta.get("shape"), meta.get("chunk_grid"), meta.get("codecs")
    if not (isinstance(shape, list) and len(shape) == 1 and isinstance(grid, dict) and isinstance(codecs, list)):
        return None
    if meta.get("chunk_key_encoding") != {"name": "default", "configuration": {"separator": "/"}}:
        return None
    length = int(shape[0])
    chunk = grid.get("configuration", {}).get("chunk_shape")
    if grid.get("name") != "regular" or not isinstance(chunk, list) or len(chunk) != 1:
        return None
    try:
        dtype = np.dtype(str(meta.get("data_type"))).newbyteorder("<")
        fill = np.array(meta.get("fill_value", 0), dtype=dtype)
    except (TypeError, ValueError):
        return None
    if len(codecs) != 1 or not isinstance(codecs[0], dict) or codecs[0].get("name") != "sharding_indexed":
        return None
    conf = codecs[0].get("configuration", {})
    inner = conf.get("chunk_shape")
    index_codecs = conf.get("index_codecs")
    if not (isinstance(inner, list) and len(inner) == 1 and _bytes_then_zstd(conf.get("codecs"))
            and conf.get("index_location", "end") == "end" and isinstance(index_codecs, list)
            and [c.get("name") if isinstance(c, dict) else None for c in index_codecs] == ["bytes", "crc32c"]):
        return None
    piece = int(inner[0])
    if piece < 1 or chunk != [-(-max(1, length) // piece) * piece]:  # one shard holds the array
        return None
    return FlatLayout(dtype, length, piece, fill)


class ByteRanges(Protocol):
    """A file read by byte ranges instead of whole (a shard that this process already checked:
    `prior.featurestore.checked.CheckedRanges`). One that also has ``read_ranges(spans)`` (the
    bytes of each (offset, length), in order) is asked for a read's ranges together: on an
    object store they are then fetched at once, not one round trip after another."""

    @property
    def size(self) -> int: ...

    def read(self, offset: int, length: int) -> bytes: ...


class KeptPieces(Protocol):
    """Where a shard read by ranges keeps the compressed pieces it fetched, by (its ``tag``,
    piece number): a reader's bounded cache (`prior.trainers.caches.LruCache`), which a later
    read of the same pieces takes them from instead of fetching them again."""

    def peek(self, key: Hashable) -> object | None: ...

    def put(self, key: Hashable, value: bytes, size: int | None = None) -> object: ...


#: compressed bytes of a shard's pieces one read asks for together (`_pieces`)
RANGES_AT_ONCE = 16 << 20
#: bytes between two ranges of a shard up to which they are fetched as one (`_fetch`): over a
#: network the bytes cost, and a batch's requests go out concurrently. On a compacted 500k-pair
#: store on moto, its pieces kept, an epoch fetched 418 MiB with 256 KiB, 864 MiB with 1 MiB (in
#: a third of the requests) and 1,848 MiB when shards were fetched whole (bench/RESULTS.md, "A
#: compacted store on S3")
RANGE_GAP = 256 << 10


def _reader(data: bytes | ByteRanges) -> tuple[int, Callable[[int, int], bytes | memoryview]]:
    """The size of a shard held as bytes or read by ranges, and how to read a range of it."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data)
        return len(view), lambda offset, length: view[offset:offset + length]
    return data.size, data.read


def _fetch(data: bytes | ByteRanges, spans: list[tuple[int, int]]) -> list[bytes | memoryview]:
    """The bytes of each (offset, length) of ``spans`` of a shard: views of bytes held, else its
    ranges together where it reads them so (`ByteRanges`; two following each other at most
    `RANGE_GAP` apart as one), else one by one."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data)
        return [view[offset:offset + length] for offset, length in spans]
    together = getattr(data, "read_ranges", None)
    if together is None or len(spans) < 2:
        return [data.read(offset, length) for offset, length in spans]
    # a span that starts at most RANGE_GAP bytes after the one before it ends is fetched with it
    cuts = [0, *(k for k in range(1, len(spans)) if not 0 <= spans[k][0] - sum(spans[k - 1]) <= RANGE_GAP),
            len(spans)]
    joined = [(spans[a][0], sum(spans[b - 1]) - spans[a][0]) for a, b in itertools.pairwise(cuts)]
    out: list[bytes | memoryview] = []
    for (a, b), (start, _), got in zip(itertools.pairwise(cuts), joined, together(joined)):
        view = memoryview(got)
        out.extend(view[offset - start:offset - start + length] for offset, length in spans[a:b])
    return out


def _pieces(layout: FlatLayout, data: bytes | ByteRanges, wanted: Sequence[int]) -> Iterator[tuple[int, np.ndarray]]:
    """(position, values) of the pieces ``wanted`` (ascending) of a sharded array: its index
    read from the end, then each run of wanted pieces stored one after the other read as one
    range (of a shard on disk, only what the pieces take), the runs of about `RANGES_AT_ONCE`
    bytes asked for together (`_fetch`). A shard read by ranges that names a `KeptPieces`
    (``kept``, under its ``tag``) takes the compressed pieces held there, and keeps there the
    ones it fetched."""
    n = layout.pieces
    total, read = _reader(data)
    size = n * 16 + 4  # (offset, nbytes) as little-endian uint64 per piece, then a crc32c
    if total < size:
        raise StoreError(f"its shard has {total} bytes, fewer than its index of {n} pieces")
    index = np.frombuffer(read(total - size, size), dtype="<u8", count=2 * n).reshape(n, 2)  # from the end
    nbytes = layout.piece * layout.dtype.itemsize
    kept: KeptPieces | None = None if isinstance(data, (bytes, bytearray, memoryview)) else getattr(data, "kept", None)
    tag = getattr(data, "tag", None)
    held: dict[int, bytes] = {}
    if kept is not None:
        for i in wanted:
            got = kept.peek((tag, i))
            if isinstance(got, bytes):
                held[i] = got
    unwritten = {int(i) for i in wanted if int(index[i, 0]) == _NO_PIECE and int(index[i, 1]) == _NO_PIECE}
    todo = [i for i in wanted if i not in held and i not in unwritten]
    if kept is not None:  # the pieces stored in a gap that is fetched anyway (`_fetch`) are kept too
        todo = _with_gaps(index, todo)
    wanted_set = set(wanted)
    fetched: dict[int, bytes | memoryview] = {}
    next_group = iter(_groups(_stored_runs(index, todo, total - size)))
    for i in wanted:
        if i in unwritten:
            yield i * layout.piece, np.full(layout.piece, layout.fill, dtype=layout.dtype)
            continue
        raw: bytes | memoryview | None = held.pop(i, None)
        if raw is None:
            while i not in fetched:  # the pieces are wanted in order: the next group holds it
                group = next(next_group)
                for (k, end, offset, _), got in zip(group, _fetch(data, [(o, n) for _, _, o, n in group])):
                    run_bytes = memoryview(got)
                    for j in todo[k:end]:
                        part: bytes | memoryview = run_bytes[int(index[j, 0]) - offset:int(index[j].sum()) - offset]
                        if kept is not None:
                            part = bytes(part)
                            kept.put((tag, j), part)
                        if j in wanted_set:
                            fetched[j] = part
            raw = fetched.pop(i)
        values = pa.decompress(pa.py_buffer(raw), decompressed_size=nbytes, codec="zstd", asbytes=True)
        yield i * layout.piece, np.frombuffer(values, dtype=layout.dtype)


def _stored_runs(index: np.ndarray, todo: list[int], end_of_pieces: int) -> list[tuple[int, int, int, int]]:
    """(k, end, offset, length) for each run ``todo[k:end]`` of pieces (ascending) stored one
    after the other, from byte ``offset`` for ``length`` bytes."""
    runs: list[tuple[int, int, int, int]] = []
    k = 0
    while k < len(todo):
        end = k + 1
        while end < len(todo) and int(index[todo[end], 0]) == int(index[todo[end - 1]].sum()):
            end += 1
        offset, stop = int(index[todo[k], 0]), int(index[todo[end - 1]].sum())
        if stop > end_of_pieces:
            raise StoreError(f"piece {todo[end - 1]} lies outside its shard")
        runs.append((k, end, offset, stop - offset))
        k = end
    return runs


def _groups(runs: list[tuple[int, int, int, int]]) -> list[list[tuple[int, int, int, int]]]:
    """``runs`` (`_stored_runs`) in groups of about `RANGES_AT_ONCE` bytes, asked for together."""
    groups: list[list[tuple[int, int, int, int]]] = []
    held = 0  # bytes of the last group
    for run in runs:
        if groups and held + run[3] <= RANGES_AT_ONCE:
            groups[-1].append(run)
            held += run[3]
        else:
            groups.append([run])
            held = run[3]
    return groups


def _with_gaps(index: np.ndarray, todo: list[int]) -> list[int]:
    """``todo`` (ascending pieces of a shard's ``index``) with the pieces between two of them
    added where those are stored one after the other between them, in at most `RANGE_GAP`
    bytes: what `_fetch` would fetch with them anyway."""
    out = todo[:1]
    for i in todo[1:]:
        prev = out[-1]
        gap = int(index[i, 0]) - int(index[prev].sum())
        if i - prev > 1 and 0 <= gap <= RANGE_GAP:
            ends = index[prev:i].sum(axis=1)  # where pieces prev..i-1 end
            if bool((index[prev + 1:i + 1, 0] == ends).all()):
                out.extend(range(prev + 1, i))
        out.append(i)
    return out


def _runs(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same values in the same order as fewer ranges: empty ranges dropped, and each range
    that starts where the one before it stops joined to it (a segment's consecutive items,
    which a piece of the split reads)."""
    keep = sizes > 0
    starts, sizes = starts[keep], sizes[keep]
    if len(starts) < 2:
        return starts, sizes
    first = np.flatnonzero(np.concatenate([[True], starts[1:] != starts[:-1] + sizes[:-1]]))
    return starts[first], np.add.reduceat(sizes, first)


def read_flat_ranges(files: Mapping[str, bytes | ByteRanges], name: str, starts: np.ndarray,
                     sizes: np.ndarray) -> np.ndarray | None:
    """The values ``[starts[i], starts[i] + sizes[i])`` of flat array ``name``, one range after
    the other, from its files' bytes (as `read_flat_files` takes them; its shard may be given
    as `ByteRanges` instead), or None when the array is not laid out as `write_flat` lays it
    (the caller then decodes it whole with Zarr). Only the pieces holding a range are read and
    decompressed, and only the values asked for are kept."""
    import json

    text = files.get(f"{name}/zarr.json")
    if not isinstance(text, (bytes, bytearray, memoryview)):
        return None
    try:
        meta = json.loads(text)
    except ValueError:
        return None
    layout = flat_layout(meta) if isinstance(meta, dict) else None
    if layout is None:
        return None
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    stops = starts + sizes
    if len(starts) and (starts.min() < 0 or stops.max() > layout.length):
        raise StoreError(f"array {name!r}: an item's range lies outside its {layout.length} values")
    out = np.empty(int(sizes.sum()), dtype=layout.dtype)
    starts, sizes = _runs(starts, sizes)
    stops = starts + sizes
    where = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else sizes
    order = np.argsort(starts, kind="stable").tolist()  # every run is non-empty (`_runs`)
    if not order:
        return out
    data = files.get(f"{name}/c/0")
    if data is None:  # never written: every value is the fill value
        out[:] = layout.fill
        return out
    first, last = starts[order] // layout.piece, (stops[order] - 1) // layout.piece
    wanted = sorted({int(p) for a, b in zip(first, last) for p in range(int(a), int(b) + 1)})
    blocks = _pieces(layout, data, wanted)
    k = 0
    for pos, block in blocks:
        end = pos + block.size
        j = k
        while j < len(order) and starts[order[j]] < end:
            r = order[j]
            lo, hi = max(int(starts[r]), pos), min(int(stops[r]), end)
            if hi > lo:
                dst = int(where[r]) + lo - int(starts[r])
                out[dst:dst + hi - lo] = block[lo - pos:hi - pos]
            j += 1
        while k < len(order) and stops[order[k]] <= end:
            k += 1
        if k == len(order):
            break
    if k < len(order):
        raise StoreError(f"array {name!r}: its chunk ends before value {starts[order[k]]}")
    return out


def read_flat(files: Mapping[str, bytes], name: str) -> np.ndarray | None:
    """The whole flat array ``name`` by `read_flat_ranges` (None: not a layout it knows)."""
    import json

    try:
        meta = json.loads(files[f"{name}/zarr.json"])
        length = int(meta["shape"][0])
    except (KeyError, ValueError, TypeError, IndexError):
        return None
    return read_flat_ranges(files, name, np.array([0], np.int64), np.array([length], np.int64))


def arrow_array(values: np.ndarray) -> pa.Array:
    """A 1-D numpy array as an Arrow array, through Polars: ``pa.array`` imports pandas when it is
    installed (0.3 s in a process that has not yet)."""
    import polars as pl

    array = pl.Series(values).to_arrow()
    assert isinstance(array, pa.Array)
    return array


def numpy_column(table: pa.Table, name: str) -> np.ndarray:
    """Column ``name`` of an Arrow table as a numpy array (without pyarrow's pandas import)."""
    return numpy_array(table.column(name))


def numpy_array(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow array as a numpy array, through Polars: pyarrow's own conversions (``to_numpy``,
    ``np.asarray``, ``fill_null``, ``pa.array``, ``pa.scalar``) import pandas where it is
    installed, up to a second in a fresh loader worker. Nulls of an integer array become NaN in
    a float array, as pyarrow gives them."""
    import polars as pl

    return pl.from_arrow(array).to_numpy()


def nested_column(ragged: Ragged, index: np.ndarray) -> pa.Array:
    """Arrow list column of the items at ``index`` (-1 = null): vectors as lists, matrices as
    lists of rows. Built without Python loops over cells."""
    present = index >= 0
    items = ragged.take(np.where(present, index, 0))
    r = np.where(present, items.rows, 0)
    c = items.cols
    matrix = bool(np.any(c[present] >= 0)) if present.any() else False
    sizes = np.where(present, items.sizes(), 0)
    keep = np.repeat(present, items.sizes())
    value_arr = arrow_array(items.values[keep])
    mask = arrow_array(~present)
    if not matrix:
        outer = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return pa.LargeListArray.from_arrays(arrow_array(outer), value_arr, mask=mask)
    row_len = np.repeat(np.maximum(c, 0), r)
    inner = np.concatenate([[0], np.cumsum(row_len)]).astype(np.int64)
    outer = np.concatenate([[0], np.cumsum(r)]).astype(np.int64)
    inner_arr = pa.LargeListArray.from_arrays(arrow_array(inner), value_arr)
    return pa.LargeListArray.from_arrays(arrow_array(outer), inner_arr, mask=mask)

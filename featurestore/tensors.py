"""Ragged word-level arrays in Zarr v3: flattened 1-D arrays with offsets and shapes.

Zarr has no ragged arrays, so a segment keeps, per component, every item's array flattened
into one 1-D Zarr array (one chunk, zstd) and records each item's offset and shape in the
segment's Parquet index: ``<component>.offset`` (int64), ``<component>.rows`` and
``<component>.cols`` (int32; cols is -1 for a 1-D vector). Arrays of one or two dimensions
are supported — every feature of the papers is a word vector or a word matrix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

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


def write_flat(fs: StoreFS, rel: str, flats: Mapping[str, np.ndarray]) -> None:
    import zarr
    from zarr.codecs import ZstdCodec

    group = zarr.open_group(zarr_store(fs, rel, read_only=False), mode="w")
    for name, flat in flats.items():
        arr = group.create_array(name=name, shape=flat.shape, dtype=flat.dtype,
                                 chunks=(max(1, flat.shape[0]),), compressors=ZstdCodec(level=ZSTD_LEVEL))
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


def _single_zstd_chunk(meta: Mapping[str, object]) -> np.dtype | None:
    """The dtype of a flat array stored as the writer above stores it (1-D, one chunk holding the
    whole array, little-endian bytes then zstd), else None."""
    shape, grid, codecs = meta.get("shape"), meta.get("chunk_grid"), meta.get("codecs")
    if not (isinstance(shape, list) and len(shape) == 1 and isinstance(grid, dict) and isinstance(codecs, list)):
        return None
    chunk = grid.get("configuration", {}).get("chunk_shape")
    if grid.get("name") != "regular" or chunk != [max(1, shape[0])] or len(codecs) != 2:
        return None
    if meta.get("chunk_key_encoding") != {"name": "default", "configuration": {"separator": "/"}}:
        return None
    first, second = codecs
    if first.get("name") != "bytes" or first.get("configuration", {}).get("endian", "little") != "little":
        return None
    if second.get("name") != "zstd":
        return None
    try:
        return np.dtype(str(meta.get("data_type"))).newbyteorder("<")
    except TypeError:
        return None


_BLOCK = 1 << 22  # bytes decompressed at a time by `read_flat_ranges`


def read_flat_ranges(files: Mapping[str, bytes], name: str, starts: np.ndarray,
                     sizes: np.ndarray) -> np.ndarray | None:
    """The values ``[starts[i], starts[i] + sizes[i])`` of flat array ``name``, one range after
    the other, from its files' bytes (as `read_flat_files` takes them), or None when the array
    is not stored as `write_flat` stores it (the caller then decodes it whole). The chunk is
    decompressed as a stream, a block at a time, keeping only the values asked for and stopping
    after the last one: a few items of a large segment cost neither the whole array's memory
    nor a decoder pass over its tail."""
    import json

    try:
        meta = json.loads(files[f"{name}/zarr.json"])
    except (KeyError, ValueError):
        return None
    dtype = _single_zstd_chunk(meta) if isinstance(meta, dict) else None
    if dtype is None or f"{name}/c/0" not in files:  # no chunk: all fill values, zarr's to decode
        return None
    starts = np.asarray(starts, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    stops = starts + sizes
    total = int(meta["shape"][0])
    if len(starts) and (starts.min() < 0 or stops.max() > total):
        raise StoreError(f"array {name!r}: an item's range lies outside its {total} values")
    out = np.empty(int(sizes.sum()), dtype=dtype)
    where = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else sizes
    order = [int(i) for i in np.argsort(starts, kind="stable") if sizes[i] > 0]
    if not order:
        return out
    stream = pa.CompressedInputStream(pa.BufferReader(files[f"{name}/c/0"]), "zstd")
    block_values = max(1, _BLOCK // dtype.itemsize)
    pos, k, carry = 0, 0, b""
    while k < len(order):
        raw = carry + stream.read(block_values * dtype.itemsize)
        usable = len(raw) - len(raw) % dtype.itemsize
        if usable == 0:
            raise StoreError(f"array {name!r}: its chunk ends before value {starts[order[k]]}")
        block, carry = np.frombuffer(memoryview(raw)[:usable], dtype=dtype), raw[usable:]
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
        pos = end
    return out


def _arrow(values: np.ndarray) -> pa.Array:
    """A 1-D numpy array as an Arrow array, through Polars: ``pa.array`` imports pandas when it is
    installed (0.3 s in a process that has not yet)."""
    import polars as pl

    array = pl.Series(values).to_arrow()
    assert isinstance(array, pa.Array)
    return array


def numpy_column(table: pa.Table, name: str) -> np.ndarray:
    """Column ``name`` of an Arrow table as a numpy array (without pyarrow's pandas import)."""
    import polars as pl

    return pl.from_arrow(table.select([name])).to_series().to_numpy()  # type: ignore[union-attr]


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
    value_arr = _arrow(items.values[keep])
    mask = _arrow(~present)
    if not matrix:
        outer = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return pa.LargeListArray.from_arrays(_arrow(outer), value_arr, mask=mask)
    row_len = np.repeat(np.maximum(c, 0), r)
    inner = np.concatenate([[0], np.cumsum(row_len)]).astype(np.int64)
    outer = np.concatenate([[0], np.cumsum(r)]).astype(np.int64)
    inner_arr = pa.LargeListArray.from_arrays(_arrow(inner), value_arr)
    return pa.LargeListArray.from_arrays(_arrow(outer), inner_arr, mask=mask)

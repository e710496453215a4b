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
    value_arr = pa.array(items.values[keep])
    mask = pa.array(~present)
    if not matrix:
        outer = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return pa.LargeListArray.from_arrays(pa.array(outer), value_arr, mask=mask)
    row_len = np.repeat(np.maximum(c, 0), r)
    inner = np.concatenate([[0], np.cumsum(row_len)]).astype(np.int64)
    outer = np.concatenate([[0], np.cumsum(r)]).astype(np.int64)
    inner_arr = pa.LargeListArray.from_arrays(pa.array(inner), value_arr)
    return pa.LargeListArray.from_arrays(pa.array(outer), inner_arr, mask=mask)

"""Checked reads: a committed segment's file is used only after it matches its catalog record.

Every file a reader takes from a committed segment (a Parquet table, a Zarr chunk, a
``zarr.json``) is compared with the size and blake2b its catalog record lists before its content
is decoded, so a flipped byte gives a `StoreError` naming the segment, the file and the repair —
never wrong data, and never a decoder's error (zstd, base64, Thrift) from deep inside a library.

Cost: each file is hashed once per process. Committed segments never change (a new write is a
new segment id; ``gc`` removes a segment's record before its files), so a file that matched
once is trusted for the rest of the process: the cache is keyed by store location, segment id,
file name and expected digest. The first read of a file reads it whole (hashing needs every
byte) and decodes from those same bytes; later reads go straight to the file, so a Parquet
reader may again read only the columns it needs, and a reader of a few items of a flat array
only its shard's index and the pieces holding them (:class:`CheckedRanges`). On an object
store a large shard is checked without being kept (`check_streamed`: its bytes hashed as they
arrive, a few megabytes at a time), then read by ranges too.

On a local disk a file reached through a link is refused before it is read (a store holds no links).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from prior.featurestore.catalog import Segment, repair
from prior.featurestore.errors import StoreError
from prior.featurestore.fs import StoreFS, concurrently

if TYPE_CHECKING:
    from prior.featurestore.tensors import KeptPieces

# files of one segment an object store's read fetches at once (`read_checked_files`)
FETCH_THREADS = 8
#: bytes of a file `check_streamed` holds at once
CHECK_CHUNK = 8 << 20

T = TypeVar("T")

_VERIFIED: set[tuple[str, str, str, str]] = set()
_LOCK = threading.Lock()


def _key(fs: StoreFS, segment: Segment, inner: str) -> tuple[str, str, str, str]:
    return (fs.url, segment.id, inner, str(segment.files[inner]["blake2b"]))


def is_verified(fs: StoreFS, segment: Segment, inner: str) -> bool:
    """Whether this process already found ``inner`` of ``segment`` intact."""
    return inner in segment.files and _key(fs, segment, inner) in _VERIFIED


def damaged(segment: Segment, inner: str, problem: str) -> StoreError:
    """The error for a committed file that cannot be used."""
    return StoreError(f"segment {segment.id} ({segment.kind}) file {inner}: {problem}; {repair()}")


def read_checked(fs: StoreFS, segment: Segment, inner: str) -> bytes:
    """The bytes of file ``inner`` of a committed ``segment``, checked against its record
    (size, then blake2b) unless this process checked them before."""
    rel, verified = _checkable(fs, segment, inner)
    with _reading(segment, inner):
        data = fs.read_bytes(rel)
    if not verified:
        _accept(fs, segment, inner, len(data), hashlib.blake2b(data, digest_size=16).hexdigest())
    return data


def read_checked_files(fs: StoreFS, segment: Segment, inners: Sequence[str]) -> dict[str, bytes]:
    """`read_checked` of each of ``inners``, by name. On an object store the files are fetched
    at once by a few threads: each is a round trip (a Zarr array's ``zarr.json`` and chunks, a
    reader's every piece), so one after another they cost their latencies added up."""
    return dict(zip(inners, _each(fs, inners, lambda inner: read_checked(fs, segment, inner))))


def check_streamed(fs: StoreFS, segment: Segment, inners: Sequence[str]) -> None:
    """Check files ``inners`` of a committed ``segment`` against their records (size, then
    blake2b) without keeping them: each read `CHECK_CHUNK` bytes at a time and hashed as it
    comes (on an object store the files at once, by a few threads, as `read_checked_files`
    fetches them). A file this process checked before is not read again. Afterwards each is
    read by ranges (`CheckedRanges`): a shard of tens of megabytes fetched whole for every
    read of a few of its pieces would be fetched many times over."""
    _each(fs, [inner for inner in inners if not is_verified(fs, segment, inner)],
          lambda inner: _check_streamed(fs, segment, inner))


def _check_streamed(fs: StoreFS, segment: Segment, inner: str) -> None:
    rel, _ = _checkable(fs, segment, inner)
    size, digest, offset = int(segment.files[inner]["size"]), hashlib.blake2b(digest_size=16), 0
    with _reading(segment, inner):
        while True:
            data = fs.read_range(rel, offset, CHECK_CHUNK)
            digest.update(data)
            offset += len(data)
            if len(data) < CHECK_CHUNK or offset > size:
                break
    _accept(fs, segment, inner, offset, digest.hexdigest(), whole=False)


def _checkable(fs: StoreFS, segment: Segment, inner: str) -> tuple[str, bool]:
    """File ``inner``'s path in the store and whether this process checked it before; a file
    the segment's record does not list, or one reached through a link, is refused."""
    if inner not in segment.files:
        raise damaged(segment, inner, "is not listed in the segment's catalog record")
    rel = f"{segment.folder}/{inner}"
    verified = _key(fs, segment, inner) in _VERIFIED
    if not verified and not fs.inside(rel):
        raise damaged(segment, inner, "is reached through a link (a store holds none; not followed)")
    return rel, verified


@contextmanager
def _reading(segment: Segment, inner: str) -> Iterator[None]:
    """A read of file ``inner`` of ``segment``: a file missing, or not a file, is a `StoreError` naming it."""
    try:
        yield
    except FileNotFoundError:
        raise damaged(segment, inner, "is missing") from None
    except OSError as exc:  # a folder where the file belongs, a file where a folder does
        raise damaged(segment, inner, f"cannot be read as a file ({type(exc).__name__})") from None


def _accept(fs: StoreFS, segment: Segment, inner: str, nbytes: int, blake2b: str, *, whole: bool = True) -> None:
    """Trust file ``inner`` for the rest of the process when its ``nbytes`` and ``blake2b``
    (hex digest) are those its record lists; else a `StoreError` naming it. ``whole`` False:
    read in chunks, which stop past the recorded size (a longer file has more bytes)."""
    size = int(segment.files[inner]["size"])
    if nbytes != size:
        held = "more" if nbytes > size and not whole else f"{nbytes}"
        raise damaged(segment, inner, f"has {held} bytes where the catalog records {size}")
    if blake2b != segment.files[inner]["blake2b"]:
        raise damaged(segment, inner, "does not match its checksum (its content changed)")
    with _LOCK:
        _VERIFIED.add(_key(fs, segment, inner))


def _each(fs: StoreFS, inners: Sequence[str], work: Callable[[str], T]) -> list[T]:
    """``work`` of each of ``inners``, in order: on an object store by a few threads at once
    (each file a round trip there)."""
    return concurrently(inners, work, 1 if fs.local else FETCH_THREADS)


@dataclass(frozen=True)
class CheckedRanges:
    """A committed file this process already checked whole (`is_verified`), read by byte
    ranges: what is read is trusted as every later read of a checked file is (module
    docstring), and a file that no longer has the bytes it was checked with is a `StoreError`
    naming it. The read that ends at the file's end (a shard's index, which every read of its
    pieces reads first) is kept by the object: a reader that keeps the object (on an object
    store, `prior.trainers.reader`) fetches it once."""

    fs: StoreFS
    segment: Segment
    inner: str
    #: where the pieces read from it are kept (`prior.featurestore.tensors.KeptPieces`), if anywhere
    kept: KeptPieces | None = field(default=None, compare=False, repr=False)
    _tail: dict[tuple[int, int], bytes] = field(default_factory=dict, compare=False, repr=False)

    @property
    def tag(self) -> tuple[str, str, str]:
        """What its pieces are kept under: the store, the segment, the file."""
        return (self.fs.url, self.segment.id, self.inner)

    @property
    def size(self) -> int:
        """The file's size in bytes, as its catalog record lists it."""
        return int(self.segment.files[self.inner]["size"])

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes from byte ``offset``."""
        kept = self._tail.get((offset, length))
        if kept is not None:
            return kept
        data = self.read_ranges([(offset, length)])[0]
        if offset + length == self.size:
            self._tail.clear()
            self._tail[(offset, length)] = data
        return data

    def read_ranges(self, spans: Sequence[tuple[int, int]]) -> list[bytes]:
        """The bytes of each (offset, length) of ``spans``, in that order (on an object store
        fetched at once: `StoreFS.read_ranges`)."""
        for offset, length in spans:
            if offset < 0 or length < 0 or offset + length > self.size:
                raise damaged(self.segment, self.inner, f"has no bytes {offset}-{offset + length} "
                                                        f"(it has {self.size})")
        with _reading(self.segment, self.inner):
            got = self.fs.read_ranges(f"{self.segment.folder}/{self.inner}", spans)
        for (offset, length), data in zip(spans, got):
            if len(data) != length:
                raise damaged(self.segment, self.inner, f"ends before byte {offset + length}: it is shorter than "
                                                        f"the {self.size} bytes it was checked with")
        return got


def folder_files(segment: Segment, prefix: str) -> list[str]:
    """The recorded files below ``prefix/`` of the segment, sorted (a Zarr array's ``zarr.json``
    and chunks). Files present on disk but not recorded are never read."""
    start = prefix.rstrip("/") + "/"
    return [inner for inner in sorted(segment.files) if inner.startswith(start)]


def forget(location: str | None = None) -> None:
    """Drop what this process checked (of one store location, or all): the next read of each
    file is checked again. For tests and benchmarks."""
    with _LOCK:
        if location is None:
            _VERIFIED.clear()
        else:
            _VERIFIED.difference_update({k for k in _VERIFIED if k[0] == location})


def checked_count(location: str) -> int:
    """How many files of the store at ``location`` this process has checked."""
    return sum(1 for k in _VERIFIED if k[0] == location)


__all__ = ["CHECK_CHUNK", "FETCH_THREADS", "CheckedRanges", "check_streamed", "checked_count", "damaged",
           "folder_files", "forget", "is_verified", "read_checked", "read_checked_files"]

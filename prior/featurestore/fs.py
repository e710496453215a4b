"""File-system access for the store: a local directory or any fsspec URL.

One small wrapper so the rest of `featurestore` never cares where the store lives. Commits
rely on one atomic step: on a local file system a rename (``os.replace``); on object stores a
single-object put, which is atomic there.

Every path goes through :meth:`StoreFS.path`, which refuses a relative path that could leave
the root (absolute, ``..``, empty parts, backslashes, NUL): a last guard behind the checks of
the names that make up store paths (``names.py``, ``catalog.py``). On a local disk a store
holds no links: reading, listing, sizing or writing anything reached through one is refused
(`StoreError`), wherever it points; ``remove`` removes a link itself, never what it points to.

A store's storage options (its `StoreRef`, ``prior.featurestore.ref``) go to fsspec as they are, with one exception:
fsspec's listings cache is always off. Other processes (a build's workers, other builds) commit
segments while this one runs, and a cached listing of ``catalog/`` hides them: reads missed
segments and a build reported the store's size as it was before its workers wrote.
"""

from __future__ import annotations

import os
import posixpath
import re
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from prior.featurestore.errors import StoreError
from prior.featurestore.ref import StoreRef

# a local file younger than this gets no content tag (see StoreFS.listdir_tagged)
LOCAL_TAG_AGE_NS = 2_000_000_000


#: files of an object store read or checked at once (the catalog's records, a split's key
#: columns, verify's files): each is a round trip there
READ_FILES_AT_ONCE = 16

T = TypeVar("T")
R = TypeVar("R")


def concurrently(items: Sequence[T], work: Callable[[T], R], threads: int) -> list[R]:
    """``work`` of each of ``items``, in order, by up to ``threads`` threads (one: in this
    thread). A pool per call: a loader worker forked while a shared pool's threads lived would
    inherit a pool without threads. The first error raised is raised here."""
    if threads < 2 or len(items) < 2:
        return [work(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(threads, len(items)), thread_name_prefix="prior-io") as pool:
        return list(pool.map(work, items))


def temporary_of(name: str, target: str) -> bool:
    """Whether ``name`` is the temporary file that :meth:`StoreFS.write_atomic` writes beside
    the file named ``target`` on a local disk: ``<target>.tmp-`` and 32 hex digits."""
    return re.fullmatch(re.escape(target) + r"\.tmp-[0-9a-f]{32}", name) is not None


class StoreFS:
    """Paths inside the store are POSIX-style and relative to its root."""

    def __init__(self, store: StoreRef | str | os.PathLike[str]) -> None:
        ref = StoreRef.of(store)
        text = str(ref.location)
        #: what fsspec is given: the store's options, listings cache off (see the module's docstring)
        self.fs_kwargs: dict[str, Any] = {**ref.options(), "use_listings_cache": False}
        self.fs, root = fsspec.core.url_to_fs(text, **self.fs_kwargs)
        self.local = isinstance(self.fs, LocalFileSystem)
        #: the files live in this process's memory: other processes (workers) cannot see them
        self.in_process = isinstance(self.fs, MemoryFileSystem)
        self.root = str(Path(root).resolve()) if self.local else root.rstrip("/")
        self.url = self.root if self.local else text.rstrip("/")

    def path(self, rel: str) -> str:
        if not rel:
            return self.root
        if rel.startswith("/") or "\\" in rel or "\x00" in rel or any(p in ("", ".", "..") for p in rel.split("/")):
            raise StoreError(f"refusing the path {rel!r}: it could point outside the store at {self.url}")
        return posixpath.join(self.root, rel)

    def inside(self, rel: str) -> bool:
        """Whether ``rel`` really lies inside the root: on a local disk no part of it below the
        root is a link (a store never holds links; one is refused wherever it points, so
        nothing outside is ever reached through it). Object stores have no links."""
        if not self.local:
            return True
        path = self.root
        for part in self.path(rel)[len(self.root):].strip("/").split("/"):
            path = f"{path}/{part}"
            if os.path.islink(path):
                return False
        return True

    def _content(self, rel: str) -> str:
        """The path of ``rel`` to read, list or write: `StoreError` when it is reached through a link."""
        if not self.inside(rel):
            raise StoreError(f"{rel} in the store at {self.url} is reached through a link; "
                             "a store holds none, so it is not followed")
        return self.path(rel)

    def exists(self, rel: str) -> bool:
        return bool(self.fs.exists(self.path(rel)))

    def makedirs(self, rel: str) -> None:
        self.fs.makedirs(self._content(rel), exist_ok=True)

    def read_bytes(self, rel: str) -> bytes:
        return bytes(self.fs.cat_file(self._content(rel)))

    def read_files(self, rels: Sequence[str]) -> list[bytes | OSError]:
        """The bytes of each file of ``rels``, in that order, or the `OSError` reading it
        raised (missing: `FileNotFoundError`). On an object store `READ_FILES_AT_ONCE` at a
        time (each file is a round trip there: one after another, a catalog of a thousand
        records cost a thousand latencies); on a local disk one by one. A file reached through a
        link (local) is a `StoreError`, as for `read_bytes`."""
        def read(rel: str) -> bytes | OSError:
            try:
                return self.read_bytes(rel)
            except OSError as exc:
                return exc

        return concurrently(rels, read, 1 if self.local else READ_FILES_AT_ONCE)

    def read_range(self, rel: str, offset: int, length: int) -> bytes:
        """``length`` bytes of file ``rel`` from byte ``offset`` (fewer where the file ends
        before them)."""
        path = self._content(rel)
        if self.local:
            with open(path, "rb") as fh:
                fh.seek(offset)
                return fh.read(length)
        return bytes(self.fs.cat_file(path, start=offset, end=offset + length))

    def read_ranges(self, rel: str, spans: Sequence[tuple[int, int]]) -> list[bytes]:
        """`read_range` of each (offset, length) of ``spans``, in that order: on a local disk
        through one open file; on an object store as concurrent requests (fsspec's
        ``cat_ranges``: each range is a round trip there, and one after another they would cost
        their latencies added up)."""
        if not spans:
            return []
        path = self._content(rel)
        if self.local:
            with open(path, "rb") as fh:
                out = []
                for offset, length in spans:
                    fh.seek(offset)
                    out.append(fh.read(length))
                return out
        if len(spans) == 1:
            return [self.read_range(rel, *spans[0])]
        got = self.fs.cat_ranges([path] * len(spans), [o for o, _ in spans], [o + n for o, n in spans],
                                 on_error="raise")
        return [bytes(b) for b in got]

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Write so that readers see either nothing or the whole file."""
        target = self._content(rel)
        if self.local:
            tmp = f"{target}.tmp-{uuid.uuid4().hex}"  # what temporary_of recognises
            Path(tmp).parent.mkdir(parents=True, exist_ok=True)
            try:
                with open(tmp, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
        else:
            self.fs.pipe_file(target, data)

    def listdir(self, rel: str) -> list[str]:
        """Names (not paths) directly under ``rel``; empty when it does not exist or is not a
        folder (`prior.featurestore.tree` reports a file where a folder belongs)."""
        path = self._content(rel)
        if self.local and not os.path.isdir(path):
            return []
        try:
            entries = self.fs.ls(path, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(posixpath.basename(e.rstrip("/")) for e in entries)

    def listdir_tagged(self, rel: str) -> dict[str, str | None]:
        """Names directly under ``rel`` → a tag that changes whenever that file's content does,
        where the listing gives one (an object store's ETag, with the size), else None.

        On a local disk the tag is ``local:`` + inode, size and modification time (one
        ``scandir``, no file opened), for regular files last modified more than
        `LOCAL_TAG_AGE_NS` ago: a file rewritten within the clock's granularity of its last write
        could keep its time, so a younger file gets None (read again). Records are replaced by
        a rename (a new inode), so a changed record always has a new tag."""
        if self.local:
            if not self.inside(rel):
                return dict.fromkeys(self.listdir(rel))  # refused there, one line
            now = time.time_ns()
            tagged_local: dict[str, str | None] = {}
            try:
                with os.scandir(self.path(rel)) as entries:
                    for entry in entries:
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:  # renamed or removed since the listing (another
                            continue  # process's temporary file, committed): not this listing's
                        fresh = entry.is_file(follow_symlinks=False) and now - st.st_mtime_ns > LOCAL_TAG_AGE_NS
                        tagged_local[entry.name] = (f"local:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
                                                    if fresh else None)
            except FileNotFoundError:  # the folder itself is not there
                return {}
            except NotADirectoryError:
                raise StoreError(f"{rel} in the store at {self.url} is a file where a folder belongs; nothing "
                                 "removes it: put back what belongs there (from a copy of the store), or build "
                                 "into a new store") from None
            return dict(sorted(tagged_local.items()))
        try:
            entries = self.fs.ls(self._content(rel), detail=True)
        except FileNotFoundError:
            return {}
        tagged = {}
        for entry in entries:
            etag = entry.get("ETag") or entry.get("etag")
            tagged[posixpath.basename(entry["name"].rstrip("/"))] = f"{etag}:{entry.get('size')}" if etag else None
        return dict(sorted(tagged.items()))

    def walk_files(self, rel: str) -> list[str]:
        """All files below ``rel``, as store-relative paths."""
        base = self._content(rel)
        if not self.fs.exists(base):
            return []
        prefix = self.root.rstrip("/") + "/"
        out = []
        for full in self.fs.find(base):
            full = full if not self.local else str(Path(full))
            out.append(full[len(prefix):] if full.startswith(prefix) else full)
        return sorted(out)

    def size(self, rel: str) -> int:
        return int(self.fs.size(self._content(rel)))

    def remove(self, rel: str) -> None:
        """Remove a file or a folder with everything in it; a link is removed, never followed."""
        path = self.path(rel)
        if self.local and os.path.islink(path):
            os.unlink(path)
            return
        self.fs.rm(path, recursive=True)

    def remove_entry(self, folder: str, name: str) -> None:
        """Remove the entry ``name`` directly inside ``folder`` (a file, a folder, a link: the
        link itself), whatever characters its name holds (a backslash, say), as long as it is
        one name: no ``/``, NUL, ``.`` or ``..``. ``gc`` removes catalog and lease entries that
        are no valid record this way."""
        if not name or "/" in name or "\x00" in name or name in (".", ".."):
            raise StoreError(f"refusing to remove {folder}/{name!r} in the store at {self.url}: not one name")
        if not self.inside(folder):
            raise StoreError(f"{folder} in the store at {self.url} is reached through a link; not followed")
        path = posixpath.join(self.path(folder), name)
        if self.local and os.path.islink(path):
            os.unlink(path)
        elif self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    def is_file(self, rel: str) -> bool:
        """Whether ``rel`` is a file (not a folder)."""
        return bool(self.fs.isfile(self.path(rel)))

    def open(self, rel: str, mode: str = "rb") -> Any:  # an fsspec file object
        return self.fs.open(self._content(rel), mode)

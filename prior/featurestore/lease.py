"""Leases: how a build tells `gc` (and later builds) that it is alive and which folders are its own.

Below the store's root::

    leases/<lease id>.json          owner, host, pid, started, renewed, expires, seconds
    leases/<lease id>/<segment id>  a claim: one empty file per segment folder the build creates

A build takes a lease before its first write (writing the lease file is also the check that
the store can be written) and a background thread renews it every ``seconds / 6``; the build
removes it when it ends. Every segment its driver or workers create is claimed *before* its
folder is made. Only files are written, each in one atomic step, so this works on a local disk
and on object stores alike, through `StoreFS`.

Rules that make `gc` and builds safe together:

- ``gc`` lists the segment folders *first*, then reads the leases and their claims, then the
  catalog. A folder that existed when listed was claimed before, so its claim is seen unless
  its build released the lease, which it does only after committing (then the catalog read
  that follows shows the segment). ``gc`` removes only folders that are neither committed nor
  claimed by a live lease, and refuses to run at all while a live lease exists unless forced.
- A lease is dead once ``expires`` has passed, or at once when its process is gone: a lease
  written on this host whose pid no longer runs (a killed build frees the store without
  waiting out its lease time). A dead lease is never renewed again. A writer
  commits only while its lease has at least ``seconds / 3`` left (renewals come every
  ``seconds / 6``, so a build whose renewals stalled for half the lease's time stops committing
  long before anyone may treat it as dead), checked right before its catalog record is written.
- A build starts by removing what its dead predecessors left: their claimed, uncommitted
  folders and their lease files (:func:`clean_dead`).

Expiry compares wall clocks: the hosts of a build's driver and of whoever runs ``gc`` must
agree within a small part of the lease's time. ``$PRIOR_LEASE_SECONDS`` sets the lease time
(default 120 s).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prior.errors import DataError
from prior.featurestore.catalog import CATALOG, SEGMENTS, is_segment_id, new_segment_id
from prior.featurestore.errors import StoreError
from prior.featurestore.fs import StoreFS
from prior.paths import positive_number

LEASES = "leases"
ENV_SECONDS = "PRIOR_LEASE_SECONDS"
DEFAULT_SECONDS = 120.0
ID_LENGTH = 33  # new_segment_id(): 20 digits, "-", 12 hex digits


MAX_SECONDS = 86400.0  # a lease time, and how far ahead an expiry may lie, is at most a day
SKEW = 60.0  # how far ahead of its lease time an expiry may lie (clocks of two hosts differ)


def lease_seconds() -> float:
    """``$PRIOR_LEASE_SECONDS`` (read on each call), else the default; `DataError` when malformed
    or longer than `MAX_SECONDS`."""
    seconds = positive_number(ENV_SECONDS, DEFAULT_SECONDS, "seconds")
    if seconds > MAX_SECONDS:
        raise DataError(f"{ENV_SECONDS}={seconds:g} is longer than the longest lease, {MAX_SECONDS:g} s")
    return seconds


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class LeaseInfo:
    id: str
    owner: str
    host: str
    pid: int
    started: float
    expires: float
    seconds: float

    def live(self, now: float | None = None) -> bool:
        """Not expired, not expiring further ahead than its lease time allows (a lease time
        of at most `MAX_SECONDS`, plus `SKEW`: a lease file claiming to live longer, say one
        edited to expire in a year, counts as dead, so it cannot keep ``gc`` refusing forever),
        and its process not known to be gone (:meth:`gone`)."""
        now = time.time() if now is None else now
        return now < self.expires <= now + min(self.seconds, MAX_SECONDS) + SKEW and not self.gone()

    def gone(self) -> bool:
        """Whether the lease's process is known to have ended: it was written on this host
        and no process has its pid. (A pid taken again by another process counts as alive: the
        lease then waits out its time, as one from another host does.)"""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except (PermissionError, OverflowError, OSError):  # alive under another user, or unusable
            return False
        return False

    def describe(self) -> str:
        left = self.expires - time.time()
        if self.gone():
            state = "its process is gone"
        else:
            state = f"expires in {left:.0f} s" if left > 0 else f"expired {-left:.0f} s ago"
        return f"{self.owner} on {self.host} (pid {self.pid}) since {_stamp(self.started)}, lease {self.id}, {state}"

    def to_json(self) -> bytes:
        return json.dumps({"id": self.id, "owner": self.owner, "host": self.host, "pid": self.pid,
                           "started": self.started, "renewed": time.time(), "expires": self.expires,
                           "seconds": self.seconds}, sort_keys=True).encode()


def _path(lease_id: str) -> str:
    return f"{LEASES}/{lease_id}.json"


def read_lease(fs: StoreFS, lease_id: str) -> LeaseInfo | None:
    """The lease's file, or None when it is gone or unreadable (a damaged lease counts as dead)."""
    try:
        raw = json.loads(fs.read_bytes(_path(lease_id)))
        if raw["id"] != lease_id:
            return None
        return LeaseInfo(id=lease_id, owner=str(raw["owner"]), host=str(raw["host"]), pid=int(raw["pid"]),
                         started=float(raw["started"]), expires=float(raw["expires"]), seconds=float(raw["seconds"]))
    except (OSError, ValueError, KeyError, TypeError, StoreError):  # a folder, a link (StoreError): dead
        return None


def lease_ids(fs: StoreFS) -> set[str]:
    """Lease ids with a lease file or claims under ``leases/`` (temporary files of a lease file
    being written do not count: that lease is not yet there, and not dead)."""
    return {name[:ID_LENGTH] for name in fs.listdir(LEASES)
            if is_segment_id(name[:ID_LENGTH]) and name[ID_LENGTH:] in ("", ".json")}


def read_leases(fs: StoreFS) -> tuple[list[LeaseInfo], set[str]]:
    """(live leases, ids of dead ones: expired, of a process that is gone, damaged, or claims
    left without a lease file)."""
    live, dead = [], set()
    for info, lease_id in _leases(fs):
        if info is not None and info.live():
            live.append(info)
        else:
            dead.add(lease_id)
    return live, dead


def gone_builds(fs: StoreFS) -> list[str]:
    """A line for each lease whose process is gone (a build killed on this host): dead at once."""
    return [info.describe() for info, _ in _leases(fs) if info is not None and info.gone()]


def _leases(fs: StoreFS) -> list[tuple[LeaseInfo | None, str]]:
    return [(read_lease(fs, lease_id), lease_id) for lease_id in sorted(lease_ids(fs))]


def claims(fs: StoreFS, lease_id: str) -> set[str]:
    """Segment ids the lease has claimed."""
    return {name for name in fs.listdir(f"{LEASES}/{lease_id}") if is_segment_id(name)}


def claim(fs: StoreFS, lease_id: str, segment_id: str) -> None:
    """Claim a segment id for a lease; called before the segment's folder is made."""
    fs.write_atomic(f"{LEASES}/{lease_id}/{segment_id}", b"")


def check_live(fs: StoreFS, lease_id: str) -> None:
    """`StoreError` unless the lease exists and has at least a third of its time left."""
    info = read_lease(fs, lease_id)
    if info is None:
        raise StoreError(f"this build's lease {lease_id} is gone from {fs.url} (removed as dead by another "
                         "build or `prior store gc`); nothing more is committed: rerun the build")
    left = info.expires - time.time()
    if left < info.seconds / 3:
        raise StoreError(f"this build's lease {lease_id} on {fs.url} was not renewed in time ({left:.0f} s left "
                         f"of {info.seconds:.0f}); nothing more is committed: rerun the build")


def stale(fs: StoreFS, rel: str) -> bool:
    """Whether a temporary file is older than a lease's time (its writer is surely gone);
    False when its age cannot be told."""
    try:
        modified = fs.fs.modified(fs.path(rel))
    except (NotImplementedError, OSError, ValueError, AttributeError):
        return False
    if modified.tzinfo is None:
        modified = modified.replace(tzinfo=UTC)
    return bool((datetime.now(UTC) - modified).total_seconds() > lease_seconds())


def remove_lease(fs: StoreFS, lease_id: str) -> None:
    """Remove a lease's claims, file and temporary files (claims first: a lease file without
    claims is harmless, claims without a lease file count as dead)."""
    for name in fs.listdir(LEASES):
        if name.startswith(lease_id) and name != f"{lease_id}.json" and fs.exists(f"{LEASES}/{name}"):
            fs.remove(f"{LEASES}/{name}")
    if fs.exists(_path(lease_id)):
        fs.remove(_path(lease_id))


def probe_writable(fs: StoreFS, lease_id: str) -> None:
    """Write, read back and remove a small file beside the lease (a worker's check that it can
    write the store with its own credentials); `StoreError` saying why not."""
    rel = f"{LEASES}/{lease_id}.probe-{uuid.uuid4().hex[:8]}"
    try:
        fs.write_atomic(rel, b"probe")
        ok = fs.read_bytes(rel) == b"probe"
        fs.remove(rel)
    except Exception as exc:  # noqa: BLE001 - any backend error means: cannot write here
        raise StoreError(f"cannot write to the store at {fs.url} ({type(exc).__name__}: {exc})") from None
    if not ok:
        raise StoreError(f"the store at {fs.url} did not give back what was written to it")


def clean_dead(fs: StoreFS, dead: set[str], committed: set[str]) -> list[str]:
    """Remove the uncommitted segment folders claimed by dead leases, then the leases; returns
    the store paths removed (folders first). ``committed``: segment ids in the catalog."""
    removed = []
    for lease_id in sorted(dead):
        for sid in sorted(claims(fs, lease_id) - committed):
            if fs.exists(f"{SEGMENTS}/{sid}"):
                fs.remove(f"{SEGMENTS}/{sid}")
                removed.append(f"{SEGMENTS}/{sid}")
        remove_lease(fs, lease_id)
        removed.append(f"{LEASES}/{lease_id}")
    return removed


class Lease:
    """A lease held by this process, renewed by a daemon thread until released.

    ``with Lease(fs, "prior build sick") as lease: …`` — ``lease.id`` is what writers in other
    processes (the build's workers) pass to `open_store(..., lease=)`; they never renew it.
    """

    def __init__(self, fs: StoreFS, owner: str, *, seconds: float | None = None) -> None:
        self.fs = fs
        self.seconds = lease_seconds() if seconds is None else float(seconds)
        self.info = LeaseInfo(id=new_segment_id(), owner=owner, host=socket.gethostname(), pid=os.getpid(),
                              started=time.time(), expires=0.0, seconds=self.seconds)
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def id(self) -> str:
        return self.info.id

    def _write(self) -> None:
        self.info = LeaseInfo(**{**self.info.__dict__, "expires": time.time() + self.seconds})
        self.fs.write_atomic(_path(self.id), self.info.to_json())

    def acquire(self) -> Lease:
        """Write the lease file and start renewing; `StoreError` when the store cannot be written."""
        try:
            self.fs.makedirs(LEASES)
            self._write()
            back = read_lease(self.fs, self.id)
        except Exception as exc:  # noqa: BLE001 - any backend error means: cannot write here
            raise StoreError(f"cannot write to the store at {self.fs.url} ({type(exc).__name__}: {exc})") from None
        if back is None:
            raise StoreError(f"the store at {self.fs.url} did not give back the lease file written to it")
        self._thread = threading.Thread(target=self._keep, name=f"lease-{self.id}", daemon=True)
        self._thread.start()
        return self

    def renew(self) -> bool:
        """Extend the lease; False (and ``lost`` says why) when it is gone or has less than a
        third of its time left (then commits have stopped and it must not come back to life)."""
        current = read_lease(self.fs, self.id)
        if current is None or current.expires - time.time() < self.seconds / 3:
            self.lost = "its file was removed" if current is None else "it was not renewed in time"
            return False
        self._write()
        return True

    def _keep(self) -> None:
        while not self._stop.wait(self.seconds / 6):
            try:
                if not self.renew():
                    return
            except Exception as exc:  # noqa: BLE001 - a failed renewal is retried; commits check expiry
                self.lost = f"renewal failed: {type(exc).__name__}: {exc}"

    def release(self) -> None:
        """Stop renewing; remove the folders this lease claimed but never committed (a build
        that failed cleans up after itself), then the lease."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            committed = {name[:-len(".json")] for name in self.fs.listdir(CATALOG) if name.endswith(".json")}
        except StoreError:  # the catalog cannot be listed (a link): which folders are garbage is unknown
            remove_lease(self.fs, self.id)
            return
        clean_dead(self.fs, {self.id}, committed)

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


__all__ = ["LEASES", "Lease", "LeaseInfo", "check_live", "claim", "claims", "clean_dead", "gone_builds",
           "lease_seconds", "probe_writable", "read_lease", "read_leases", "remove_lease"]

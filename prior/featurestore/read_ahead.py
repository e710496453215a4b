"""An iterator whose next item is made by a thread while the caller uses the one before.

A pass over a split's segments (`prior.featurestore.segment_files.frame_groups`) alternates two
kinds of work: reading a group of files and converting its key text to numbers (Parquet and
Polars, which release the GIL), then looking the group's keys up (NumPy and Polars again). Done
in turn, one of a machine's cores waits while the other works. :func:`read_ahead` runs the
reading on a thread of its own, one item ahead: what it holds beyond the caller's item is the
one made ahead and the one being made.

The items come in their order; an error raised while making one is raised to the caller in its
place, after the items before it. When the iterator ends, or the caller closes it early, the
thread has ended: a process forked afterwards (a loader's workers) inherits no thread midway
through a read.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar, cast

T = TypeVar("T")

_WAIT_S = 0.05  # how often a thread with an item no one takes looks whether the caller stopped


def read_ahead(items: Iterable[T]) -> Iterator[T]:
    """``items`` in order, each made on a thread while the caller uses the one before (module
    docstring)."""
    ready: queue.Queue[tuple[bool, object]] = queue.Queue(maxsize=1)
    stopped = threading.Event()

    def hand(outcome: tuple[bool, object]) -> bool:
        """Put ``outcome`` for the caller; False once the caller has stopped."""
        while not stopped.is_set():
            try:
                ready.put(outcome, timeout=_WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def make() -> None:
        try:
            for item in items:
                if not hand((True, item)) or stopped.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 - raised to the caller in the item's place, whatever it is
            hand((False, exc))
            return
        hand((False, None))

    thread = threading.Thread(target=make, name="prior-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            made, value = ready.get()
            if made:
                yield cast(T, value)
            elif value is None:
                return
            else:
                raise cast(BaseException, value)
    finally:
        stopped.set()
        thread.join()  # at most the item being made: one group of files


__all__ = ["read_ahead"]

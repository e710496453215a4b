"""The loader workers' pipes, widened where the system allows it.

A batch crosses from a loader worker to the training process through a pipe (the
``multiprocessing.Queue`` that ``torch.utils.data.DataLoader`` reads its workers' results from).
A DAFA batch of 32 pairs is about half a megabyte (its (B, T, T) grid), and a Linux pipe holds
64 KiB: the worker writes a batch in eight parts, each waiting for the training process to read
the one before. With as many busy processes as cores, each wait is a trip through the scheduler,
and on 2 cores the loader delivered about 20k pairs/s where one process alone made 35k
(bench/RESULTS.md, "The loader's pipes widened").

:func:`worker_context` is the platform's default multiprocessing context (the same start
method) whose queues ask Linux for pipes of :data:`PIPE_BYTES` (``F_SETPIPE_SZ``; at most
``/proc/sys/fs/pipe-max-size``, 1 MiB by default), so a batch is written in one or two parts.
Nothing else changes: the same processes, the same pickled batches. Where the system has no
such call (macOS, Windows) the context is ``None``, the DataLoader's own; where it refuses one
(a user past ``/proc/sys/fs/pipe-user-pages-soft``), that pipe keeps its size.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context as mpc
import multiprocessing.queues
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

#: the capacity asked for each pipe of a loader's queues
PIPE_BYTES = 1 << 20

_SET: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
_GET: int | None = getattr(fcntl, "F_GETPIPE_SZ", None)


def pipe_capacity(fd: int) -> int | None:
    """The capacity in bytes of the pipe at ``fd``; ``None`` where the system does not say."""
    if fcntl is None or _GET is None:
        return None
    return int(fcntl.fcntl(fd, _GET))


def widen(fd: int, size: int = PIPE_BYTES) -> bool:
    """Ask for ``size`` bytes of capacity for the pipe at ``fd`` (capped at the system's
    ``pipe-max-size``); False where the system has no such call or refuses it."""
    if fcntl is None or _SET is None:
        return False
    try:
        fcntl.fcntl(fd, _SET, min(size, _max_size()))
    except OSError:  # EPERM past the user's pipe pages, EBUSY when it holds more than asked
        return False
    return True


def _max_size() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return PIPE_BYTES


class _WideQueues:
    """A context whose queues' pipes are widened (mixed into the standard contexts below)."""

    def Queue(self, maxsize: int = 0) -> multiprocessing.queues.Queue[Any]:  # multiprocessing's name
        queue: multiprocessing.queues.Queue[Any] = super().Queue(maxsize)  # type: ignore[misc]
        reader = getattr(queue, "_reader", None)  # the queue's receiving end (a Connection)
        if reader is not None:
            widen(reader.fileno())
        return queue


_CONTEXTS: dict[str, type[mpc.BaseContext]] = {}
if _SET is not None:
    class WideForkContext(_WideQueues, mpc.ForkContext):
        pass

    class WideForkServerContext(_WideQueues, mpc.ForkServerContext):
        pass

    class WideSpawnContext(_WideQueues, mpc.SpawnContext):
        pass

    _CONTEXTS = {"fork": WideForkContext, "forkserver": WideForkServerContext, "spawn": WideSpawnContext}


def worker_context() -> mpc.BaseContext | None:
    """The loader's multiprocessing context: the default start method's, its queues widened;
    ``None`` (the DataLoader's default) where pipes cannot be widened."""
    wide = _CONTEXTS.get(multiprocessing.get_start_method())
    return None if wide is None else wide()


__all__ = ["PIPE_BYTES", "pipe_capacity", "widen", "worker_context"]

"""The pipe a loader's batches cross, widened where the system allows it.

A batch crosses from a loader worker to the training process through a pipe (the
``multiprocessing.Queue`` that ``torch.utils.data.DataLoader`` reads its workers' results from).
A DAFA batch of 32 pairs is about half a megabyte (its (B, T, T) grid), and a Linux pipe holds
64 KiB: the worker writes a batch in eight parts, each waiting for the training process to read
the one before. With as many busy processes as cores, each wait is a trip through the scheduler
(bench/RESULTS.md, "The loader's pipe widened; a checked shard read by ranges").

:func:`widen_results` asks Linux for a result pipe of :data:`PIPE_BYTES` (``F_SETPIPE_SZ``, at
most ``/proc/sys/fs/pipe-max-size``: 1 MiB by default), so a batch goes through in one or two
writes. Only that pipe: the workers' index queues carry a few bytes a batch, and every pipe's
capacity counts against the user's ``/proc/sys/fs/pipe-user-pages-soft`` (64 MiB by default,
past which the system gives every new pipe of the user 8 KiB). Nothing else changes: the same
processes, the same pickled batches. Where the system has no such call (macOS, Windows), refuses
it (a user at that limit), or the DataLoader's iterator holds no result queue where torch 2
keeps it, the pipe keeps its size.
"""

from __future__ import annotations

from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

#: the capacity asked for the pipe of a loader's results
PIPE_BYTES = 1 << 20

_SET: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only (None without fcntl, on Windows)
_GET: int | None = getattr(fcntl, "F_GETPIPE_SZ", None)


def pipe_capacity(fd: int) -> int | None:
    """The capacity in bytes of the pipe at ``fd``; ``None`` where the system does not say."""
    if _GET is None:
        return None
    return int(fcntl.fcntl(fd, _GET))


def widen(fd: int, size: int = PIPE_BYTES) -> bool:
    """Ask for ``size`` bytes of capacity for the pipe at ``fd`` (capped at the system's
    ``pipe-max-size``); False where the system has no such call or refuses it."""
    if _SET is None:
        return False
    try:
        fcntl.fcntl(fd, _SET, min(size, _max_size()))
    except OSError:  # EPERM at the user's pipe pages, EBUSY when it holds more than asked
        return False
    return True


def _max_size() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return PIPE_BYTES


def result_pipe(batches: Any) -> int | None:
    """The file descriptor a DataLoader iterator reads its workers' batches from; ``None``
    without workers or where torch keeps it elsewhere."""
    queue = getattr(batches, "_worker_result_queue", None)  # torch.utils.data's multiprocessing iterator
    reader = getattr(queue, "_reader", None)  # multiprocessing.Queue's receiving Connection
    return None if reader is None else int(reader.fileno())


def widen_results(batches: Any, size: int = PIPE_BYTES) -> bool:
    """Widen the pipe of a DataLoader iterator's results (module docstring); False where it
    stays as it was."""
    fd = result_pipe(batches)
    return fd is not None and widen(fd, size)


__all__ = ["PIPE_BYTES", "pipe_capacity", "result_pipe", "widen", "widen_results"]

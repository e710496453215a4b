"""The pipe a loader's batches cross: widened where the system allows it, only that one, and a
refusal that leaves a working pipe (`prior.trainers.pipes`)."""

from __future__ import annotations

import multiprocessing
import os
import sys

import numpy as np
import pytest

from prior.trainers import pipes
from prior.trainers.pipes import PIPE_BYTES, pipe_capacity, result_pipe, widen, widen_results

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")


def max_size() -> int:
    with open("/proc/sys/fs/pipe-max-size", encoding="ascii") as f:
        return int(f.read())


def default_size() -> int:
    """What the system gives a new pipe (16 pages: 64 KiB with 4 KiB pages)."""
    read, write = os.pipe()
    try:
        size = pipe_capacity(read)
        assert size is not None
        return size
    finally:
        os.close(read)
        os.close(write)


def refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    """The system refuses every widening (a user at its pipe pages)."""
    real = pipes.fcntl.fcntl

    def fcntl(fd: int, cmd: int, *arg: int) -> int:
        if cmd == pipes._SET:
            raise PermissionError(1, "Operation not permitted")
        return real(fd, cmd, *arg)

    monkeypatch.setattr(pipes.fcntl, "fcntl", fcntl)


@linux
def test_pipes_widen_asks_for_a_batch_sized_pipe() -> None:
    read, write = os.pipe()
    try:
        assert widen(read)
        assert pipe_capacity(read) == pipe_capacity(write) == min(PIPE_BYTES, max_size()) > default_size()
    finally:
        os.close(read)
        os.close(write)


@linux
def test_pipes_a_refused_widening_keeps_a_working_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    refuse(monkeypatch)
    queue = multiprocessing.get_context().Queue()
    assert not widen(queue._reader.fileno())
    assert pipe_capacity(queue._reader.fileno()) == default_size()
    queue.put({"grid": np.arange(10, dtype=np.float32)})
    assert np.array_equal(queue.get(timeout=10)["grid"], np.arange(10, dtype=np.float32))


def _send(queue: multiprocessing.Queue, array: np.ndarray) -> None:  # type: ignore[type-arg]
    queue.put(array)


@linux
def test_pipes_a_batch_larger_than_the_widened_pipe_crosses_whole() -> None:
    context = multiprocessing.get_context()
    queue = context.Queue()
    assert widen(queue._reader.fileno())
    array = np.random.default_rng(0).random((32, 128, 128), dtype=np.float32)  # 2 MiB: two writes
    process = context.Process(target=_send, args=(queue, array))
    process.start()
    got = queue.get(timeout=60)
    process.join(60)
    assert np.array_equal(got, array)


def test_pipes_nothing_to_widen_without_a_result_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    assert result_pipe(iter([])) is None  # 0 workers: batches made in this process
    assert not widen_results(iter([]))
    monkeypatch.setattr(pipes, "_SET", None)  # a system without F_SETPIPE_SZ
    assert not widen(0)

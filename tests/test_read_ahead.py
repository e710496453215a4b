"""`prior.featurestore.read_ahead`: the items in order, made on a thread one ahead of the
caller, an error in its place, and no thread left once the iterator ends or is closed."""

from __future__ import annotations

import threading
import time

import pytest

from prior.featurestore.read_ahead import read_ahead


def threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "prior-read-ahead"]


def test_the_items_come_in_order_and_are_made_on_another_thread() -> None:
    makers: list[str] = []

    def items():
        for i in range(50):
            makers.append(threading.current_thread().name)
            yield i

    assert list(read_ahead(items())) == list(range(50))
    assert set(makers) == {"prior-read-ahead"} and not threads()


def test_at_most_two_items_are_made_beyond_the_one_in_hand() -> None:
    made = []

    def items():
        for i in range(10):
            made.append(i)
            yield i

    it = read_ahead(items())
    assert next(it) == 0
    time.sleep(0.3)  # time enough to make every item, were it not bounded
    assert len(made) <= 3  # the one taken, the one queued, the one waiting to be queued
    assert list(it) == list(range(1, 10))


def test_an_error_comes_in_its_items_place() -> None:
    def items():
        yield 1
        yield 2
        raise KeyError("the third")

    got = []
    with pytest.raises(KeyError, match="the third"):
        for item in read_ahead(items()):
            got.append(item)
    assert got == [1, 2] and not threads()


def test_a_caller_that_stops_early_leaves_no_thread() -> None:
    made = []

    def items():
        for i in range(1000):
            made.append(i)
            yield i

    for item in read_ahead(items()):
        if item == 3:
            break
    assert not threads()
    assert len(made) <= 6  # stopped at its next item, not at the end

"""A catalog listing while other processes commit: a temporary record renamed away between the
directory read and its ``stat`` is left out of the listing, never the whole listing.

Found by a 500k-pair build (`bench/scale.py`): a feature task listed ``catalog/`` while another
worker's ``write_atomic`` renamed its temporary file; the vanished entry's ``FileNotFoundError``
emptied the whole listing, and the task saw a store without parses.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import prior.featurestore.fs as fs_module
from prior.featurestore.fs import StoreFS


class _Vanishing:
    """A directory entry whose file is gone by the time it is looked at."""

    def __init__(self, entry: os.DirEntry[str]) -> None:
        self.name = entry.name

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        raise FileNotFoundError(self.name)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        raise FileNotFoundError(self.name)


class _Listing:
    def __init__(self, entries: list[Any]) -> None:
        self.entries = entries

    def __enter__(self) -> list[Any]:
        return self.entries

    def __exit__(self, *exc: object) -> None:
        return None


def test_an_entry_renamed_away_during_the_listing_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "catalog").mkdir()
    for name in ("a.json", "b.json", "c.json.tmp-1"):
        (tmp_path / "catalog" / name).write_text("{}")
    real_scandir = os.scandir

    def scandir(path: str) -> _Listing:
        with real_scandir(path) as entries:
            found = sorted(entries, key=lambda e: e.name)
        return _Listing([_Vanishing(e) if ".tmp-" in e.name else e for e in found])

    monkeypatch.setattr(fs_module.os, "scandir", scandir)
    listing = StoreFS(tmp_path).listdir_tagged("catalog")
    assert sorted(listing) == ["a.json", "b.json"]


def test_a_missing_folder_lists_nothing(tmp_path: Path) -> None:
    assert StoreFS(tmp_path).listdir_tagged("catalog") == {}

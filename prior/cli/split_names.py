"""Split names as users type them, mapped to the names a store holds the splits under.

`prior build --split dev` reads SICK's trial split and stores it as ``trial``: a registered
dataset's readers accept other names for its splits (``dev`` and ``validation`` for SICK's
``trial``, ``validation`` for GLUE's ``dev``; `prior.pipeline.datasets.registry`). The commands
that read a split (`prior train --dev-split/--eval-split`, `prior eval`, `prior show`,
`prior store frame` and `export`) accept the same names: :func:`stored_split` maps one to the
name its dataset stores it under, and names the dataset's splits for a name it does not have.
A dataset read from a file has no other names: its splits are read as given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from prior.errors import NotFoundError
from prior.featurestore.splits import read_splits
from prior.pipeline.datasets.registry import SPECS, DatasetSpec

if TYPE_CHECKING:
    from prior.featurestore import Store


def stored_split(store: Store, dataset: str, split: str) -> str:
    """The name ``store`` holds ``split`` of ``dataset`` under: ``split`` itself where the store
    holds it (or holds no split of ``dataset`` at all: the read's own error then lists the
    datasets present), else the registered dataset's own name for it (``dev`` -> SICK's
    ``trial``). A name the registered dataset does not have is a `NotFoundError` listing its
    splits, the names it accepts, and the splits ``store`` holds."""
    held = [s for d, s in read_splits(store) if d == dataset]
    spec = _registered(store, dataset)
    if split in held or not held or spec is None:
        return split
    try:
        return spec.split_name(split)
    except NotFoundError as missing:
        raise NotFoundError(f"{missing}; {store.location} holds "
                            + ", ".join(f"{dataset}/{s}" for s in held)) from None


def stored_splits(store: Store, dataset: str, splits: Sequence[str]) -> list[str]:
    """:func:`stored_split` of each of ``splits``, in order."""
    return [stored_split(store, dataset, s) for s in splits]


def _registered(store: Store, dataset: str) -> DatasetSpec | None:
    """The registered dataset the store's ``dataset`` was read as (its latest pairs record),
    None for one read from a file."""
    segs = [s for s in store.segments("pairs") if s.target["dataset"] == dataset]
    reader = (segs[-1].meta.get("reader") or {}) if segs else {}
    name = reader.get("dataset")
    return SPECS.get(name) if isinstance(name, str) else None


__all__ = ["stored_split", "stored_splits"]

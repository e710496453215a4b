"""The dataset a run trains on, as the store holds it: resolved once, then passed as a value.

A stored dataset is a name (``sick``, or a file's ``--name``) with splits; its pairs records say
what it was read as — a registered dataset (``mrpc``, whose papers' settings and metrics apply
under any stored name) or a file (a path and its columns). :class:`StoredDataset` holds what
a run needs of that: the name, what it was read as, the file when there is one, and the splits
present, so that the dev split, the task's metrics, and the split a printed eval line names all
come from one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from prior.errors import NotFoundError, PriorError
from prior.featurestore import Store
from prior.featurestore.recipe import Recipe, read_recorded, render
from prior.featurestore.splits import read_splits
from prior.hints import option

#: a dataset's dev split, by the names the readers give it (SICK calls it "trial")
DEV_SPLITS = ("dev", "trial", "dev_matched", "validation")
#: the split a finished run is scored on, in order of preference
EVAL_SPLITS = ("test", "test_matched", *DEV_SPLITS)


@dataclass(frozen=True)
class StoredDataset:
    """A dataset in the store (module docstring)."""

    name: str
    read_as: str  # the registered dataset it was read as, else its name
    file: str | None  # the file it was read from, None for a registered dataset
    splits: tuple[str, ...]

    @classmethod
    def resolve(cls, store: Store, name: str | None, split: str = "train") -> StoredDataset:
        """``name`` as the store holds it, which must have ``split``; else a one-line error
        listing the datasets that have one (also when ``name`` is None). A split whose pairs
        records are all gone while later records name it counts as present (`read_splits`):
        reading it is then the error that names its build, and no run quietly goes without it
        (a dev split, the split it is scored on)."""
        present = read_splits(store)
        if name is None or (name, split) not in present:
            raise _no_split(store, name, split, present)
        segs = [s for s in store.segments("pairs") if s.target["dataset"] == name]
        reader = segs[-1].meta.get("reader") or {} if segs else {}
        recipe = read_recorded(segs[-1].meta) if segs else None
        file = recipe.dataset if recipe is not None and recipe.dataset and _is_path(recipe.dataset) else None
        return cls(name, str(reader.get("dataset") or name), file, tuple(sorted({s for d, s in present if d == name})))

    def dev_split(self) -> str | None:
        """The first of :data:`DEV_SPLITS` the dataset has, else None."""
        return next((s for s in DEV_SPLITS if s in self.splits), None)

    def eval_split(self, train_split: str = "train") -> str:
        """The split to score a finished run on: the test split, else a dev split, else the
        training split itself (a file with one split)."""
        return next((s for s in EVAL_SPLITS if s in self.splits), train_split)


def _is_path(dataset: str) -> bool:
    return "/" in dataset or "\\" in dataset or "." in dataset


def _no_split(store: Store, name: str | None, split: str, present: list[tuple[str, str]]) -> PriorError:
    if name is not None and any(d == name for d, _ in present):
        return PriorError(store.missing_split(name, split))
    have = sorted({d for d, s in present if s == split})
    listed = ", ".join(have) if have else f"none (build one with `{render(Recipe(dataset='NAME', store=store.location))}`)"
    if name is None:
        return PriorError(f"name the dataset to train on with {option('dataset')}; datasets with a {split} split in "
                          f"{store.location}: {listed}")
    return NotFoundError(f"{store.location} has no {name}/{split}; datasets with a {split} split: {listed}")


__all__ = ["DEV_SPLITS", "EVAL_SPLITS", "StoredDataset"]

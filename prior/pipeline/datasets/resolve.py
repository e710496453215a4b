"""Finding the file of a named dataset's split.

Order (first hit wins; environment variables are read at call time, never at import):

1. an explicit ``path``: a file is used as it is; a directory is searched as the dataset's
   folder (and as a data directory holding the dataset's folder);
2. ``data_dir`` given by the caller, else ``$PRIOR_DATA_DIR``: ``<dir>/<folder>/<file>`` for
   each of the dataset's folder names and candidate file names
   (``PRIOR_DATA_DIR=/work/shared/data`` finds the full copies there);
3. the slices bundled with the project: ``$PRIOR_BUNDLED_DATA`` if set, else the package data
   shipped with `prior` (`prior.shipped`: ``data/`` in a checkout, ``prior/data`` when installed);
4. the Hugging Face hub (see hub.py), tried by the caller when nothing local was found.

Within one folder, a split's candidate file names are tried in the registry's order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from prior.errors import NotFoundError
from prior.hints import option
from prior.pipeline.datasets.registry import DatasetSpec
from prior.pipeline.datasets.types import Origin
from prior.shipped import shipped_data_dir


@dataclass(frozen=True)
class Located:
    path: Path
    origin: Origin


def bundled_dir() -> Path:
    """The bundled slices: $PRIOR_BUNDLED_DATA, else the ones shipped with the package."""
    env = os.environ.get("PRIOR_BUNDLED_DATA")
    if env:
        return Path(env).expanduser()
    return shipped_data_dir()


def data_dir_from_env() -> Path | None:
    env = os.environ.get("PRIOR_DATA_DIR")
    return Path(env).expanduser() if env else None


def missing_data_dir(data_dir: Path | None = None) -> str | None:
    """A one-line warning when the data directory (``data_dir``, else ``$PRIOR_DATA_DIR``) is
    given but does not exist: named datasets are then read from the bundled slices, a few
    hundred pairs each, which nothing else would tell. None when it exists or none is given."""
    root = Path(data_dir).expanduser() if data_dir is not None else data_dir_from_env()
    if root is None or root.is_dir():
        return None
    named = (option("data_dir", str(data_dir)) if data_dir is not None
             else f"PRIOR_DATA_DIR={os.environ.get('PRIOR_DATA_DIR')}")
    what = "is not a directory" if root.exists() else "does not exist"
    return (f"the data directory {named} {what}: named datasets are read from the slices bundled with prior "
            "(a few hundred pairs a split)")


def _in_folder(folder: Path, names: tuple[str, ...]) -> list[Path]:
    return [folder / n for n in names]


def _in_root(root: Path, spec: DatasetSpec, names: tuple[str, ...]) -> list[Path]:
    return [p for folder in spec.folders for p in _in_folder(root / folder, names)]


def search_plan(spec: DatasetSpec, split: str, *, path: Path | None = None,
                data_dir: Path | None = None) -> list[tuple[Origin, Path]]:
    """Every place that would be tried for ``split``, in order (nothing is read)."""
    names = spec.files[split]
    plan: list[tuple[Origin, Path]] = []
    if path is not None:
        path = Path(path).expanduser()
        if path.is_dir():
            plan += [("path", p) for p in _in_folder(path, names) + _in_root(path, spec, names)]
        else:
            plan.append(("path", path))
        return plan
    root = Path(data_dir).expanduser() if data_dir is not None else data_dir_from_env()
    if root is not None:
        plan += [("data_dir", p) for p in _in_root(root, spec, names)]
    plan += [("bundled", p) for p in _in_root(bundled_dir(), spec, names)]
    return plan


def locate(spec: DatasetSpec, split: str, *, path: Path | None = None,
           data_dir: Path | None = None) -> Located | None:
    """The first existing file of the search plan, or None."""
    for origin, p in search_plan(spec, split, path=path, data_dir=data_dir):
        if p.is_file():
            return Located(p, origin)
    return None


def not_found(spec: DatasetSpec, split: str, plan: list[tuple[Origin, Path]],
              hub_note: str) -> NotFoundError:
    """The error for a split found nowhere, on one line: every place searched, what the hub
    said, and the flags that point the build at a copy."""
    places = ", ".join(f"{p} ({origin})" for origin, p in plan)
    return NotFoundError(
        f"no file for dataset {spec.name!r} split {split!r} (searched {places}; Hugging Face hub: {hub_note}); "
        f"pass {option('data_dir', 'DIR')} (or set PRIOR_DATA_DIR) to a directory holding a {spec.folders[0]}/ "
        f"folder with the official file, or give the file itself as {option('dataset', 'FILE')}")

"""What the environment says, read when asked for, never at import time (so tests and users
can change it): where things live (``PRIOR_HOME``, ``PRIOR_STORE``, ``PRIOR_DATA_DIR``) and
the numbers some parts read (:func:`positive_number`). `prior env` prints them all."""

from __future__ import annotations

import os
from pathlib import Path

from prior.errors import DataError


def prior_home() -> Path:
    """``$PRIOR_HOME``, else ``$XDG_CACHE_HOME/prior``, else ``~/.cache/prior``."""
    if env := os.environ.get("PRIOR_HOME"):
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "prior"


def default_store() -> str:
    """``$PRIOR_STORE`` (a directory or fsspec URL), else ``$PRIOR_HOME/store``."""
    return os.environ.get("PRIOR_STORE") or str(prior_home() / "store")


def data_dir() -> Path | None:
    """``$PRIOR_DATA_DIR``: where full dataset copies live (``<dir>/<dataset>/…``), if set."""
    env = os.environ.get("PRIOR_DATA_DIR")
    return Path(env).expanduser() if env else None


def positive_number(name: str, default: float, unit: str) -> float:
    """``$name`` as a positive number of ``unit``, else ``default`` when unset or empty; a
    malformed value is a `DataError` naming the variable."""
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise DataError(f"{name}={raw!r} is not a number of {unit}") from None
    if not value > 0:
        raise DataError(f"{name}={raw!r} must be a positive number of {unit}")
    return value

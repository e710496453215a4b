"""Where things live. Every path is resolved when asked for, never at import time."""

from __future__ import annotations

import os
from pathlib import Path


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

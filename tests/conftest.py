"""Shared fixtures. Every test runs with PRIOR_HOME in a temporary folder (caches, stores and
Dask scratch never touch the user's), no default store, and progress bars off."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# Errors that name a build render it through the renderer `prior.cli` installs when imported
# (library code alone gets a plain description, `tests/test_recipe.py`); tests that assert the
# printed `prior build` lines must not depend on whether another test imported the CLI first.
import prior.cli  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def session_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("prior-home")


@pytest.fixture(autouse=True)
def _isolated_paths(monkeypatch: pytest.MonkeyPatch, session_home: Path) -> None:
    monkeypatch.setenv("PRIOR_HOME", str(session_home))
    monkeypatch.delenv("PRIOR_STORE", raising=False)
    monkeypatch.delenv("PRIOR_DATA_DIR", raising=False)
    monkeypatch.setenv("PRIOR_NO_PROGRESS", "1")


@pytest.fixture
def shared_data() -> Path:
    """The full dataset copies beside the checkout (../shared/data); skip where absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} not present")
    return SHARED_DATA


@pytest.fixture(scope="module")
def wordnet(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """nltk's WordNet reader as `load_wordnet()` gives it (private copy under a temporary
    PRIOR_HOME); skips the test where WordNet is not installed."""
    from prior.errors import ResourceError
    from prior.pipeline.resources.wordnet import load_wordnet

    home = tmp_path_factory.mktemp("prior_home")
    old = os.environ.get("PRIOR_HOME")
    os.environ["PRIOR_HOME"] = str(home)
    try:
        yield load_wordnet()
    except ResourceError as exc:
        pytest.skip(f"WordNet unavailable: {exc}")
    finally:
        if old is None:
            os.environ.pop("PRIOR_HOME", None)
        else:
            os.environ["PRIOR_HOME"] = old

"""Shared fixtures. Every test runs with PRIOR_HOME in a temporary folder (caches, stores and
Dask scratch never touch the user's), no default store, and progress bars off."""

from __future__ import annotations

from pathlib import Path

import pytest

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

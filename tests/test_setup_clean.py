"""A clean set-up: building the package prints no setuptools warning, and what a build leaves in
the checkout (``build/``, ``dist/``) cannot change ruff's verdict, so ``make test`` passes after
``pip install .`` in the same checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.test_wheel import copy_sources

REPO = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).with_name("ruff")


def test_setup_wheel_build_prints_no_setuptools_warning(tmp_path: Path) -> None:
    src = copy_sources(tmp_path / "src")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                           "--no-index", "--disable-pip-version-check", "-w", str(tmp_path / "out"), str(src)],
                          capture_output=True, text=True, check=True)
    text = done.stdout + done.stderr
    assert "would be ignored" not in text and "SetuptoolsDeprecationWarning" not in text
    warnings = [line for line in text.splitlines() if "warning" in line.lower()
                and "byte-compiling is disabled" not in line]  # pip's own -B, not the package's configuration
    assert warnings == []


def test_setup_build_and_dist_folders_leave_ruff_verdict_alone(tmp_path: Path) -> None:
    """A checkout (its tracked files, in a git repository so .gitignore applies as it does for a
    user) with what `pip install .` leaves: build/lib/prior/… and a wheel in dist/."""
    if not RUFF.exists():
        import pytest

        pytest.skip("ruff is not installed beside this Python (pip install -e .[test])")
    checkout = tmp_path / "checkout"
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for name in tracked.splitlines():
        if (REPO / name).is_file() and name.endswith((".py", ".toml", ".gitignore")):
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    shutil.copytree(checkout / "prior", checkout / "build" / "lib" / "prior")
    (checkout / "dist").mkdir()
    (checkout / "dist" / "prior-0.1.0-py3-none-any.whl").write_bytes(b"")
    done = subprocess.run([str(RUFF), "check", "--no-cache", "."], cwd=checkout, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]

"""Files shipped with `prior`: the default biaffine parser model (``data/parser``) and the
bundled dataset slices (``data/<dataset>/``).

They live in the repository's ``data/`` folder, beside the package: a checkout and an editable
install read them there; a wheel installs them inside the package, as ``prior/data`` (the
``package-dir`` mapping of pyproject.toml). Nothing here reads the environment:
``$PRIOR_PARSER_MODEL`` and ``$PRIOR_BUNDLED_DATA`` override these places where the parser and
dataset code look them up.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["parser_model_dir", "shipped_data_dir"]


def shipped_data_dir() -> Path:
    """The folder of shipped data: ``prior/data`` in an installed wheel, else the repository's
    ``data/`` beside the package (a checkout, an editable install)."""
    package = Path(__file__).resolve().parent
    installed = package / "data"
    return installed if installed.is_dir() else package.parent / "data"


def parser_model_dir() -> Path:
    """The shipped parser model's folder."""
    return shipped_data_dir() / "parser"

"""Files shipped with `prior` as package data: the default biaffine parser model
(``data/parser``) and the bundled dataset slices (``data/<dataset>/``).

They live in ``data/`` beside this module wherever the package is installed (a wheel holds
them in ``prior/data``; a checkout links ``prior/data`` to the repository's ``data/``).
Nothing here reads the environment: ``$PRIOR_PARSER_MODEL`` and ``$PRIOR_BUNDLED_DATA``
override these places where the parser and dataset code look them up.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["parser_model_dir", "shipped_data_dir"]


def shipped_data_dir() -> Path:
    """The folder of shipped data (resolved: the repository's ``data/`` in a checkout)."""
    return (Path(__file__).parent / "data").resolve()


def parser_model_dir() -> Path:
    """The shipped parser model's folder."""
    return shipped_data_dir() / "parser"

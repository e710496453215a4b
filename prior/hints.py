"""How a message names an option the user gives, without spelling a flag.

Every layer raises errors that tell the user what to do, and the command line's syntax lives
in `prior.cli` alone: a message below it writes ``option("parser")`` (the option's Python
name) or ``option("backbone", "PATH")``, and the text comes from the namer installed with
:func:`set_option_namer` — the `prior` command installs one that writes ``--parser`` and
``--backbone PATH``; without it a library user reads ``parser`` and ``backbone=PATH``.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["option", "set_option_namer"]

OptionNamer = Callable[[str, "str | None"], str]


def _words(name: str, value: str | None) -> str:
    return f"{name}={value}" if value is not None else f"`{name}`"


_namer: OptionNamer = _words


def set_option_namer(namer: OptionNamer) -> None:
    """Make ``namer`` write every option a message names from now on."""
    global _namer
    _namer = namer


def option(name: str, value: str | None = None) -> str:
    """How a message names the option ``name`` (a parameter's Python name, e.g. ``"parser"``,
    ``"drop_damaged"``), with ``value`` when given."""
    return _namer(name, value)

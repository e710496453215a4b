"""Names that may become part of a path: the one check every such name passes.

A store is data someone may hand you, so nothing read from it may name a path. Segment ids
(``catalog.new_segment_id``) have their own fixed pattern; every other name that is stored and
may end up in a file or folder name — a dataset, a split, a feature component (a Zarr array
name), a file inside a segment, a checkpoint folder derived from a dataset — passes
:func:`check_name` when it is written and again when it is read back.

Allowed: ASCII letters, digits, ``.``, ``_``, ``-`` and ``+``; at most ``MAX_NAME`` characters;
not starting with ``.`` (no ``.``, ``..`` or hidden files) and no ``..`` anywhere. So no
separator (``/``, ``\\``), no NUL, no space, no drive letter, and no name that a file system
could read as anything but one plain entry. Choice: a fixed allow-list rather than escaping
names, so a name reads the same in the catalog, on disk and on the command line.
"""

from __future__ import annotations

import re

from prior.featurestore.errors import StoreError

MAX_NAME = 128
_NAME = re.compile(r"[A-Za-z0-9_+\-][A-Za-z0-9_.+\-]*")
#: a file inside a segment folder: names joined by "/" (e.g. ``arrays/wup/c/0``)
MAX_FILE_DEPTH = 8


def name_problem(value: object) -> str | None:
    """Why ``value`` is not an allowed name, or None when it is."""
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    if not value:
        return "is empty"
    if len(value) > MAX_NAME:
        return f"is longer than {MAX_NAME} characters"
    if ".." in value:
        return "contains '..'"
    if not _NAME.fullmatch(value):
        return ("may hold only ASCII letters, digits, '.', '_', '-' and '+' and may not start with '.' "
                "(no separators, spaces or control characters)")
    return None


def check_name(kind: str, value: object) -> str:
    """``value`` when it is an allowed ``kind`` name (dataset, split, component, …), else
    `StoreError` saying what is wrong with it."""
    problem = name_problem(value)
    if problem is not None:
        raise StoreError(f"{kind} name {value!r} {problem}")
    return value  # type: ignore[return-value]


def file_problem(value: object) -> str | None:
    """Why ``value`` is not an allowed segment-relative file path (allowed names joined by
    ``/``, at most ``MAX_FILE_DEPTH`` deep), or None when it is."""
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    parts = value.split("/")
    if len(parts) > MAX_FILE_DEPTH:
        return f"is more than {MAX_FILE_DEPTH} folders deep"
    for part in parts:
        if (problem := name_problem(part)) is not None:
            return f"has a part {part!r} that {problem}"
    return None

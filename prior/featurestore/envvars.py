"""Numbers read from the environment: on each call (never at import, so tests and users can
change them), a malformed value is a `DataError` naming the variable."""

from __future__ import annotations

import os

from prior.featurestore.errors import DataError


def positive_number(name: str, default: float, unit: str) -> float:
    """``$name`` as a positive number of ``unit``, else ``default`` when unset or empty."""
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise DataError(f"{name}={raw!r} is not a number of {unit}") from None
    if not value > 0:
        raise DataError(f"{name}={raw!r} must be a positive number of {unit}")
    return value

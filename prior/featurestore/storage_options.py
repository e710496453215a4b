"""fsspec storage options of a store (endpoint, credentials, profile, anon, …): where they come
from and how they are written.

- ``open_store(location, storage_options={...})`` uses exactly the options given (``{}`` too);
  ``storage_options=None`` (the default) takes them from ``$PRIOR_STORAGE_OPTIONS``, a JSON
  object, read on each call (never at import).
- The command line starts from ``$PRIOR_STORAGE_OPTIONS`` and lets each option it is given
  replace its key (``prior.cli.store_flags``).
- A build resolves its options once, in the driver, and hands them to every task and to the
  checks run on the workers: a worker never reads its own environment for them, so a build's
  processes all reach the store the same way.

Values may hold secrets: no message of this module or of the store repeats a value.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from prior.errors import DataError

ENV = "PRIOR_STORAGE_OPTIONS"


def from_env() -> dict[str, Any]:
    """``$PRIOR_STORAGE_OPTIONS`` as a dict; ``{}`` when unset or empty; `DataError` naming the
    variable when it is not a JSON object."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise DataError(f"${ENV} is not valid JSON ({exc}); give a JSON object, e.g. "
                        '\'{"endpoint_url": "http://127.0.0.1:9000"}\'') from None
    if not isinstance(value, dict):
        raise DataError(f"${ENV} holds a JSON {type(value).__name__}, not an object; give e.g. "
                        '\'{"endpoint_url": "http://127.0.0.1:9000"}\'')
    return value


def resolve(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options a store is opened with: a copy of ``options``, or the environment's when None."""
    return from_env() if options is None else dict(options)

"""A store's handle: its location and the fsspec storage options it is opened with (endpoint,
credentials, profile, anon, …), one value, :class:`StoreRef`, that travels whole: to
`open_store`, to a build's Dask tasks, to the stores a prediction reaches.

- ``StoreRef(location, storage_options={...})`` uses exactly the options given (``{}`` too);
  ``storage_options=None`` (the default) takes them from ``$PRIOR_STORAGE_OPTIONS``, a JSON
  object, read when the store is opened (never at import). An opened store's ``ref`` holds
  the options it was opened with.
- The command line starts from ``$PRIOR_STORAGE_OPTIONS`` and lets each option it is given
  replace its key (``prior.cli.store_flags``).
- A build resolves its options once, in the driver, and hands its store's ``ref`` to every
  task and to the checks run on the workers: a worker never reads its own environment for
  them, so a build's processes all reach the store the same way.

Values may hold secrets: no message of this module or of the store repeats a value, and a
``StoreRef`` shows the option names only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from prior.errors import DataError

ENV = "PRIOR_STORAGE_OPTIONS"


@dataclass(frozen=True)
class StoreRef:
    """Where a store is and how to reach it. ``location``: a directory or an fsspec URL; None:
    the default place of whoever opens it (`open_store`: ``$PRIOR_STORE``, else
    ``$PRIOR_HOME/store``). ``storage_options``: the fsspec options (module docstring); None:
    ``$PRIOR_STORAGE_OPTIONS`` when opened."""

    location: str | None = None
    storage_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.location is not None:
            object.__setattr__(self, "location", os.fspath(self.location))
        if self.storage_options is not None:  # a copy: the caller's dict may change later
            object.__setattr__(self, "storage_options", dict(self.storage_options))

    @classmethod
    def of(cls, store: StoreRef | str | os.PathLike[str] | None) -> StoreRef:
        """``store`` as a handle: a `StoreRef` as it is, a path or URL with the environment's options."""
        return store if isinstance(store, StoreRef) else cls(None if store is None else os.fspath(store))

    def or_at(self, location: str | os.PathLike[str]) -> StoreRef:
        """This handle, at ``location`` when it names none (the options kept)."""
        return self if self.location is not None else replace(self, location=os.fspath(location))

    def at(self, location: str | os.PathLike[str]) -> StoreRef:
        """Another store reached with these options (a training store beside a prediction store)."""
        return replace(self, location=os.fspath(location))

    def options(self) -> dict[str, Any]:
        """The options the store is opened with: a copy of the given ones, or the environment's."""
        return from_env() if self.storage_options is None else dict(self.storage_options)

    def __repr__(self) -> str:  # never the values: they may be secrets
        keys = "from $" + ENV if self.storage_options is None else ", ".join(sorted(self.storage_options)) or "none"
        return f"StoreRef({self.location!r}, storage options: {keys})"


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

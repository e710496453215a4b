"""How a checkpoint records the store it was trained from, so that a later `prior eval` or
`prior predict` reaches it the same way — without writing a secret into the checkpoint.

``prior.json`` keeps the store's location and its storage options, except those that hold
secrets (an option named like a key, a secret, a token, a password or a credential, at any
depth of a nested option such as ``client_kwargs``): of those only the names are kept
(``storage_secrets``). A later reader supplies them as it supplies any credentials — from
``$PRIOR_STORAGE_OPTIONS``, its own storage options, or the environment the backend reads (an
AWS profile, ``AWS_ACCESS_KEY_ID``); a profile name is not a secret and is kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from prior.featurestore import StoreRef

_SECRET = re.compile(r"key|secret|token|passw|credential|signature|sas", re.IGNORECASE)
#: option names that match the pattern but hold no secret
_NOT_SECRET = frozenset({"key_prefix", "use_listings_cache", "skip_instance_cache"})


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name)) and name not in _NOT_SECRET


def split_secrets(options: Mapping[str, Any], prefix: str = "") -> tuple[dict[str, Any], list[str]]:
    """(the options without their secrets, the dotted names of the secrets left out)."""
    kept: dict[str, Any] = {}
    secrets: list[str] = []
    for name, value in options.items():
        dotted = f"{prefix}{name}"
        if is_secret(str(name)):
            secrets.append(dotted)
        elif isinstance(value, Mapping):
            inner, more = split_secrets(value, f"{dotted}.")
            kept[name] = inner
            secrets += more
        else:
            kept[name] = value
    return kept, secrets


def record_store(ref: StoreRef) -> dict[str, Any]:
    """What ``prior.json`` keeps of a store handle (module docstring)."""
    options, secrets = split_secrets(ref.options())
    return {"store": ref.location, "storage_options": options, "storage_secrets": sorted(secrets)}


def recorded_store(trained: Mapping[str, Any], given: StoreRef | str | None) -> StoreRef:
    """The store a checkpoint's data is read from: the one ``given`` names, else the training
    store, reached with ``given``'s options (or the environment's) over the options the
    checkpoint recorded."""
    ref = StoreRef.of(given)
    if ref.location is not None:
        return ref
    recorded = trained.get("storage_options")
    options = {**(recorded if isinstance(recorded, Mapping) else {}), **ref.options()}
    return StoreRef(str(trained["store"]), options)


__all__ = ["is_secret", "record_store", "recorded_store", "split_secrets"]

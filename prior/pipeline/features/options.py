"""Feature options (``BuildOptions.feature_options``: feature → name → value; on the command line
``prior build -o dep.nu=0.25``, parsed by ``prior.cli.key_value``).

An option changes the feature's resolved parameters, and so its entry key: a build with
``nu`` 0.25 for ``dep`` adds a second DAFA entry beside the default one instead of overwriting it.

The names each feature accepts are checked against its constructor before any work starts
(:func:`check_options`), so a typo fails in a second with the list of accepted names, not
after an hour of parsing.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prior.errors import PriorError


def accepted_names(constructor: Callable[..., Any]) -> list[str]:
    """Keyword parameters a feature constructor accepts."""
    params = inspect.signature(constructor).parameters.values()
    return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]


def check_options(feature: str, options: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """PriorError naming the unknown option(s) of ``feature`` and the accepted ones."""
    allowed = sorted(accepted)
    if unknown := sorted(set(options) - set(allowed)):
        listed = ", ".join(allowed) if allowed else "none"
        raise PriorError(f"unknown option(s) for feature {feature}: {', '.join(unknown)}; "
                         f"accepted: {listed}")

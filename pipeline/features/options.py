"""Feature options from the command line: ``prior build -o dep.nu=0.25 -o wup.preset=uerbert-code``.

Each option is ``<feature>.<name>=<value>``. Values are read as JSON scalars where they parse
as one (``0.25`` → float, ``3`` → int, ``true``/``false`` → bool, ``null`` → None), else as the
literal string (``uerbert-code``). An option changes the feature's resolved parameters, and so
its entry key: a build with ``-o dep.nu=0.25`` adds a second DAFA entry beside the default one
instead of overwriting it.

The names each feature accepts are checked against its constructor before any work starts
(:func:`check_options`), so a typo fails in a second with the list of accepted names, not
after an hour of parsing.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prior.featurestore.errors import PriorError


def parse_value(text: str) -> Any:
    """A JSON scalar where ``text`` is one, else ``text`` itself."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, (dict, list)):
        raise PriorError(f"feature option value {text!r}: only single values (numbers, true/false, "
                         "null, text) are accepted")
    return value


def parse_feature_options(items: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``["dep.nu=0.25", "wup.preset=uerbert-code"]`` → ``{"dep": {"nu": 0.25}, "wup": {...}}``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        feature, dot, name = key.strip().partition(".")
        if not sep or not dot or not feature or not name:
            raise PriorError(f"feature option {item!r} is not of the form FEATURE.NAME=VALUE "
                             "(e.g. dep.nu=0.25)")
        options = out.setdefault(feature, {})
        if name in options:
            raise PriorError(f"feature option {feature}.{name} is given twice")
        options[name] = parse_value(raw.strip())
    return out


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

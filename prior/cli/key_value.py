"""The one ``K=V`` parser of the command line: ``-o FEATURE.NAME=VALUE`` (build options and
read picks), ``--feature-param K=V``, ``--storage-option KEY=VALUE`` and a model's ``-o K=V``.

The first ``=`` splits an item; the key is stripped. A value is read as JSON where it parses
(``0.25`` → float, ``3`` → int, ``true``/``false`` → bool, ``null`` → None, ``{"a": 1}`` → dict),
else kept as the literal text (``uerbert-code``). Feature options take single values only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from prior.errors import PriorError


def split_item(item: str) -> tuple[str, str] | None:
    """(the stripped key, the value's text) of ``K=V``; None when there is no ``=`` or no key."""
    key, sep, value = item.partition("=")
    key = key.strip()
    return (key, value) if sep and key else None


def read_value(text: str, *, single: bool = False) -> Any:
    """JSON where ``text`` parses, else ``text``; ``single``: a list or object is an error."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if single and isinstance(value, (dict, list)):
        raise PriorError(f"feature option value {text!r}: only single values (numbers, true/false, "
                         "null, text) are accepted")
    return value


def parse_value(text: str) -> Any:
    """A feature option's or a read parameter's value: a JSON scalar where ``text`` is one, else ``text``."""
    return read_value(text, single=True)


def key_value(item: str) -> tuple[str, Any]:
    """``K=V`` → (K, V read as a single value); `PriorError` when ``item`` is not ``K=V``."""
    if (split := split_item(item)) is None:
        raise PriorError(f"expected K=V, got {item!r}")
    return split[0], parse_value(split[1].strip())


def parse_feature_options(items: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``["dep.nu=0.25", "wup.preset=uerbert-code"]`` → ``{"dep": {"nu": 0.25}, "wup": {...}}``."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        split = split_item(item)
        feature, dot, name = (split[0] if split else "").partition(".")
        if split is None or not dot or not feature or not name:
            raise PriorError(f"feature option {item!r} is not of the form FEATURE.NAME=VALUE "
                             "(e.g. dep.nu=0.25)")
        options = out.setdefault(feature, {})
        if name in options:
            raise PriorError(f"feature option {feature}.{name} is given twice")
        options[name] = parse_value(split[1].strip())
    return out

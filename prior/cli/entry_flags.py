"""The flags every reading command shares to pick a feature entry (`prior.featurestore.selection`):
``--feature-param K=V``, ``-o FEATURE.K=V`` (the form ``prior build -o`` takes) and
``--entry KEYPREFIX``. Without them a read uses the feature's default entry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import typer

from prior.cli.key_value import key_value
from prior.errors import PriorError
from prior.layouts.views import VIEWS

#: names a read may give (for help texts): the registered views, then any other entry name
READABLE = ", ".join([*VIEWS, "sdoi", "wup", "any other entry name"])

FeatureParamOpt = Annotated[list[str] | None, typer.Option(
    "--feature-param", help="Read the entry whose options or parameters include K=V (repeatable), "
                            "e.g. preset=uerbert-code; default: the entry a build without -o makes.")]
FeatureOptionOpt = Annotated[list[str] | None, typer.Option(
    "--option", "-o", help="FEATURE.K=V, as given to `prior build -o` (repeatable), e.g. -o wup.preset=uerbert-code.")]
EntryOpt = Annotated[str | None, typer.Option(
    "--entry", help="Read the entry with this key prefix (see `prior store info`).")]


def split_dotted(items: Iterable[str], features: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """(feature params from ``FEATURE.K=V`` items whose FEATURE is one of ``features``, the other
    items unchanged). An item ``X.K=V`` whose X is no such name is an error: it is neither a
    feature parameter of this read nor a plain ``K=V``."""
    names = set(features)
    params: dict[str, Any] = {}
    rest: list[str] = []
    for item in items:
        key, _ = key_value(item)
        prefix, dot, name = key.partition(".")
        if not dot:
            rest.append(item)
            continue
        if prefix not in names or not name:
            raise PriorError(f"option {item!r}: {prefix!r} is not the feature read here "
                             f"({', '.join(sorted(names)) or 'none'}); use FEATURE.K=V with one of those")
        if name in params:
            raise PriorError(f"feature parameter {name} is given twice")
        params[name] = key_value(item)[1]
    return params, rest


def read_params(feature_params: list[str] | None, options: list[str] | None,
                features: Iterable[str]) -> dict[str, Any] | None:
    """Selection parameters from ``--feature-param K=V`` and ``-o FEATURE.K=V``; None when none."""
    params = dict(key_value(item) for item in feature_params or [])
    dotted, plain = split_dotted(options or [], features)
    if plain:
        raise PriorError(f"-o takes FEATURE.K=V here, not {plain[0]!r}")
    if twice := sorted(set(params) & set(dotted)):
        raise PriorError(f"feature parameter {', '.join(twice)} is given twice")
    return {**params, **dotted} or None


def feature_names(feature: str | None) -> list[str]:
    """Names a ``-o`` prefix may use for a read of ``feature`` (a view or entry name): the name
    itself, the entries of its view and the build feature that makes them."""
    if feature is None:
        return []
    view = VIEWS.get(feature)
    names = {feature}
    if view is not None:
        names.update(view.entries)
        if view.built_by:
            names.add(view.built_by)
    return sorted(names)


def check_readable(feature: str, held: Iterable[str]) -> None:
    """A one-line error for a feature name that no read can give: not a view, not a feature a
    build makes (`prior.pipeline.features.registry`, plug-ins included) and not an entry the store
    holds (``held``: their names), so no build line is offered for a name no build knows."""
    from prior.pipeline.features.registry import FEATURE_SETS

    held = set(held)
    if feature in VIEWS or feature in FEATURE_SETS or feature in held:
        return
    known = sorted({*VIEWS, *FEATURE_SETS, *held})
    raise PriorError(f"unknown feature {feature!r}: the store holds no {feature!r} entry and no build makes one; "
                     f"known: {', '.join(known)}")

"""Feature sets by CLI name. One name may build several store entries (``dep`` builds the
per-pair DAFA matrices and the per-sentence tf-idf weights). Imports are lazy, so listing or
building one feature never loads another's resources."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from prior.errors import PriorError
from prior.featurestore.recipe import render_options
from prior.pipeline.features.options import accepted_names, check_options

if TYPE_CHECKING:
    from prior.pipeline.features.base import Feature
    from prior.pipeline.features.context import FeatureOptions


def _sdoi(options: FeatureOptions) -> list[Feature]:
    from prior.pipeline.features.sdoi import SdoiFeature

    sdoi_options = options.feature_options.get("sdoi", {})
    check_options("sdoi", sdoi_options, accepted_names(SdoiFeature))
    return [SdoiFeature(**sdoi_options)]


def _wup(options: FeatureOptions) -> list[Feature]:
    from prior.pipeline.features.wup import WupFeature

    wup_options = options.feature_options.get("wup", {})
    check_options("wup", wup_options, accepted_names(WupFeature))
    return [WupFeature(**wup_options)]


def _dep(options: FeatureOptions) -> list[Feature]:
    from prior.pipeline.features.dep import dep_feature_set

    return dep_feature_set(options.feature_options.get("dep", {}))


def _emb(options: FeatureOptions) -> list[Feature]:
    """Checks that an embedding file (or resource, or an entry to restore) is given and exists
    before any work starts; the file's content is checked when the build reads it, before
    anything is written."""
    from prior.errors import NotFoundError
    from prior.pipeline.features.emb import EmbFeature, no_embedding_file

    emb_options = options.feature_options.get("emb", {})
    check_options("emb", emb_options, [n for n in accepted_names(EmbFeature) if n != "embeddings"])
    if options.embeddings is None and emb_options.get("resource") is None and "emb" not in options.restore:
        raise no_embedding_file()
    if options.embeddings is not None and not options.embeddings.expanduser().is_file():
        raise NotFoundError(f"embedding file {options.embeddings} does not exist")
    return [EmbFeature(embeddings=options.embeddings, **emb_options)]


FEATURE_SETS: dict[str, Callable[[FeatureOptions], list[Feature]]] = {
    "sdoi": _sdoi,
    "wup": _wup,
    "dep": _dep,
    "emb": _emb,
}


def register_feature_set(name: str, factory: Callable[[FeatureOptions], list[Feature]]) -> None:
    """Make ``prior build --features NAME`` build ``factory(options)``'s features (what one line
    of :data:`FEATURE_SETS` does for the built-in ones). The factory receives the build's
    options; ``options.feature_options.get(NAME, {})`` holds the ``-o NAME.K=V`` values."""
    if name in FEATURE_SETS:
        raise PriorError(f"a feature set named {name!r} is registered already")
    FEATURE_SETS[name] = factory


def plan_features(names: list[str] | tuple[str, ...], options: FeatureOptions) -> list[tuple[Feature, str]]:
    """The features to build for CLI names, in order, each entry once, with the CLI name of the
    feature set that makes each (``dep`` makes ``tfidf`` and ``dep``)."""
    out: list[tuple[Any, str]] = []
    if stray := sorted(set(options.feature_options) - set(names)):
        raise PriorError(f"options given for feature(s) not being built: {', '.join(stray)} "
                         f"(building {', '.join(names)})")
    for name in names:
        if name not in FEATURE_SETS:
            raise PriorError(f"unknown feature {name!r}; known: {', '.join(sorted(FEATURE_SETS))}")
        try:
            made = list(FEATURE_SETS[name](options))
        except (ValueError, TypeError) as exc:  # a value of the wrong kind (-o dep.nu=abc)
            given = render_options(name, options.feature_options.get(name, {}))
            raise PriorError(f"feature {name}: option value not accepted ({given or 'defaults'}): {exc}") from None
        for feature in made:
            if all(f.name != feature.name for f, _ in out):
                out.append((feature, name))
    return out


def features_for(names: list[str] | tuple[str, ...], options: FeatureOptions) -> list[Feature]:
    """The features to build for CLI names, in order, each entry once."""
    return [feature for feature, _ in plan_features(names, options)]


def entry_options(feature: Feature, given: dict[str, Any]) -> dict[str, Any]:
    """The options of a feature set (``-o dep.nu=0.25``) that reach ``feature``'s constructor
    with a value other than its default: ``{}`` marks the entry a build without options makes."""
    signature = inspect.signature(type(feature))
    out = {}
    for name, value in given.items():
        param = signature.parameters.get(name)
        if param is not None and (param.default is inspect.Parameter.empty or value != param.default):
            out[name] = value
    return out

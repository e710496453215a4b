"""The models by name: each a Hugging Face BERT subclass changing only what its paper changes.

A model is one file under ``prior/trainers/models/`` (a `PriorBertModel` subclass with its
``model_name`` and the ``feature`` it reads) plus one line in :data:`MODELS`, or, from outside
the package, one call of :func:`register_model`. Classes are imported when first used, so
listing the names (the CLI's help) needs no torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prior.trainers.models.base import PriorBertModel

#: model name → "module:Class"
MODELS: dict[str, str] = {
    "bert": "prior.trainers.models.bert:BertPairModel",
    "bert-sim": "prior.trainers.models.bert_sim:BertSimModel",
    "sgnet": "prior.trainers.models.sgnet:SgNetModel",
    "dafa": "prior.trainers.models.dafa:DafaModel",
    "gibert": "prior.trainers.models.gibert:GiBertModel",
    "cda": "prior.trainers.models.cda:CdaModel",
}


def register_model(cls: type[PriorBertModel]) -> type[PriorBertModel]:
    """Add a model class under its ``model_name`` (usable as a class decorator)."""
    if cls.model_name in MODELS and _LOADED.get(cls.model_name) is not cls:
        raise ValueError(f"a model named {cls.model_name!r} is registered already")
    MODELS[cls.model_name] = f"{cls.__module__}:{cls.__qualname__}"
    _LOADED[cls.model_name] = cls
    return cls


_LOADED: dict[str, Any] = {}


def model_class(name: str) -> type[PriorBertModel]:
    """The class registered under ``name`` (imported on first use); KeyError when unknown."""
    if name not in _LOADED:
        module, _, attr = MODELS[name].partition(":")
        cls = getattr(importlib.import_module(module), attr)
        if cls.model_name != name:
            raise ValueError(f"{MODELS[name]} is model {cls.model_name!r}, registered as {name!r}")
        _LOADED[name] = cls
    return _LOADED[name]


class _Classes(Mapping[str, "type[PriorBertModel]"]):
    """:data:`MODELS` as classes, each imported when looked up."""

    def __getitem__(self, name: str) -> type[PriorBertModel]:
        return model_class(name)

    def __contains__(self, name: object) -> bool:
        return name in MODELS

    def __iter__(self) -> Iterator[str]:
        return iter(MODELS)

    def __len__(self) -> int:
        return len(MODELS)


MODEL_CLASSES: Mapping[str, type[PriorBertModel]] = _Classes()

_EXPORTS = {"PriorBertModel": "prior.trainers.models.base", "BertPairModel": "prior.trainers.models.bert",
            "BertSimModel": "prior.trainers.models.bert_sim", "SgNetModel": "prior.trainers.models.sgnet",
            "DafaModel": "prior.trainers.models.dafa", "GiBertModel": "prior.trainers.models.gibert",
            "CdaModel": "prior.trainers.models.cda"}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'prior.trainers.models' has no attribute {name!r}")


__all__ = ["MODELS", "MODEL_CLASSES", "model_class", "register_model", *_EXPORTS]

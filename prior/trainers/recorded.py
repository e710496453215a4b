"""A resumed run's own configuration, read back from its saved state (`prior train --resume RUN`).

A run records in ``prior.json`` what it was asked (``spec``: the model spec and the data spec,
`prior.trainers.config`) and the store it read (location and non-secret options,
`prior.trainers.store_record`). Resuming needs nothing else: ``prior train --resume RUN``.
Options given beside ``--resume`` must agree with the run's own, except its settings (a
resumed run may go on for more epochs); a store may be named again (with credentials the
record left out).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from prior.errors import PriorError
from prior.featurestore import StoreRef
from prior.hints import option
from prior.trainers.checkpoint import CheckpointError
from prior.trainers.config import DataSpec, ModelSpec
from prior.trainers.registry import parse_model_name
from prior.trainers.resume import LAST, resume_meta, state_dir
from prior.trainers.store_record import recorded_store

#: options beside --resume that name the run's model or data (they must agree with the record)
_MODEL = {"model": "model", "backbone": "backbone", "seed": "seed"}
_DATA = {"dataset": "dataset", "limit": "limit", "sample": "sample", "sample_seed": "sample_seed",
         "dev_split": "dev_split", "view": "view", "parser": "parser", "parse": "parse", "shuffle_window": "window",
         "features": "features"}
_FIXED = ("option", "feature_param", "entry")


@dataclass(frozen=True)
class RecordedRun:
    output: Path  # the run folder
    store: StoreRef
    model: ModelSpec
    data: DataSpec

    def with_given(self, given: Mapping[str, Any], overrides: Mapping[str, Any]) -> tuple[ModelSpec, DataSpec]:
        """The run's specs, with the settings ``overrides`` given; any other option given must
        agree with the run's own (one line otherwise)."""
        for name in _FIXED:
            if given.get(name):
                raise PriorError(f"{option(name)} with {option('resume')}: a resumed run keeps its model options and "
                                 "feature entries; give it without")
        for name, field in {**_MODEL, **_DATA}.items():
            mine = getattr(self.model if name in _MODEL else self.data, field)
            if name in given and given[name] != mine and not (name == "model" and _same_model(given[name], mine)):
                raise PriorError(f"{option(name, str(given[name]))} with {option('resume')}: the run was started with "
                                 f"{mine!r}; a resumed run reads the data and trains the model it started with")
        if "eval_split" in given:
            data = replace(self.data, eval_splits=tuple(given["eval_split"]))
        else:
            data = self.data
        return replace(self.model, overrides={**self.model.overrides, **overrides}), data


def _same_model(given: str, recorded: str) -> bool:
    return parse_model_name(given) == parse_model_name(recorded)


def recorded_config(path: Path | str, given: StoreRef) -> RecordedRun:
    """The run saved at ``path`` (a run folder or its ``last/``): its folder, store and specs."""
    folder = state_dir(path)
    meta = resume_meta(folder)
    spec = meta.get("spec")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("model"), Mapping) or \
            not isinstance(spec.get("data"), Mapping):
        raise CheckpointError(f"{folder / 'prior.json'} records no run spec (it was saved by an older prior): "
                              "it cannot be resumed; train again")
    try:
        model = ModelSpec(**_known(ModelSpec, spec["model"]))
        data = DataSpec(**{**_known(DataSpec, spec["data"]),
                           "eval_splits": tuple(spec["data"].get("eval_splits") or ())})
    except TypeError as exc:
        raise CheckpointError(f"{folder / 'prior.json'}: its run spec is damaged ({exc}); train again") from None
    run = folder.parent if folder.name in (LAST, f"{LAST}.previous") else folder
    store = given if given.location is not None else recorded_store(meta["fingerprints"]["train"], given)
    return RecordedRun(run, store, model, data)


def _known(cls: type, raw: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in raw.items() if k in names}


__all__ = ["RecordedRun", "recorded_config"]

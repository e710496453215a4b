"""Checkpoints: written (:func:`save_checkpoint`), checked and read back (:func:`load_checkpoint`).

A checkpoint folder holds ``save_pretrained``'s safetensors weights and config, the tokenizer,
and ``prior.json``: the model, settings, data fingerprints and versions, and the sha256 of every
file ``save_pretrained`` wrote next to it (``model.safetensors``, ``config.json``, the
tokenizer's files) under ``files_sha256``. Nothing is pickled. :func:`check_checkpoint` refuses,
with one :class:`CheckpointError` line naming the file and what to do:

- a folder without ``prior.json``, or one that is not a JSON object, names no known model or
  lacks the fields prediction and evaluation read;
- weights only as ``pytorch_model.bin`` (a pickle, which can run code): never loaded;
- no ``*.safetensors`` weights, or a recorded file missing;
- a recorded file whose content changed (a flipped byte in the weights, an edited config).

A checkpoint saved before checksums were recorded is loaded with a warning (logged, one
line); the loader still refuses pickled weights, keys that do not fit the model (an altered
config) and unreadable files, each as one line.

The view a model was trained on (a variant of its feature, DAFA's ablations) is read by
:func:`stored_view` alone. Checkpoints written before the option was named ``view`` recorded it
as ``dep_view``: such a ``prior.json`` is refused in one line that says how to convert it
(rename the key to ``view``; its value ``"dep"`` becomes ``null``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from prior.errors import PriorError

if TYPE_CHECKING:
    from prior.trainers.models.base import PriorBertModel

log = logging.getLogger(__name__)

META_FILE = "prior.json"
CHECKSUMS = "files_sha256"
#: not in the checksums: prior.json itself and `last/`'s resume state (prior.trainers.loop's
#: OPTIMIZER_FILE and STATE_FILE, written after the checkpoint)
NOT_CHECKSUMMED = (META_FILE, "optimizer.safetensors", "trainer_state.json", "rng.safetensors")
PICKLED_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


class CheckpointError(PriorError):
    """A checkpoint folder that cannot be loaded as it is (missing, damaged, altered, pickled)."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_checksums(directory: Path) -> dict[str, str]:
    """sha256 of every plain file in ``directory`` but ``prior.json`` (which records them) and
    the resume state a ``last/`` folder gets after it (rewritten each epoch)."""
    return {p.name: sha256_of(p) for p in sorted(directory.iterdir())
            if p.is_file() and p.name not in NOT_CHECKSUMMED}


def read_meta(directory: Path) -> dict[str, Any]:
    """``prior.json`` of a checkpoint folder, checked to name a known model and hold the fields
    that loading, prediction and evaluation read."""
    from prior.trainers.models import MODEL_CLASSES

    path = directory / META_FILE
    if not path.is_file():
        raise CheckpointError(f"{directory} is not a prior checkpoint (no {META_FILE}); give the "
                              "`best/` or `last/` folder of a `prior train` output")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{path} is damaged (not JSON: {exc}); restore the checkpoint or train it again") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path} is damaged (not a JSON object); restore the checkpoint or train it again")
    model = meta.get("model")
    if not isinstance(model, str) or model not in MODEL_CLASSES:
        raise CheckpointError(f"{path} names the model {model!r}, which this prior does not have (known: "
                              f"{', '.join(MODEL_CLASSES)}); it was written by another version or altered")
    problem = _missing_field(meta)
    if problem:
        raise CheckpointError(f"{path} is damaged ({problem}); restore the checkpoint or train it again")
    return meta


def stored_view(meta: Mapping[str, Any]) -> str | None:
    """The view a checkpoint's model was trained on (``prior.json``'s ``view``); None: its
    feature as stored."""
    view = meta.get("view")
    return None if view in (None, meta.get("feature")) else str(view)


def trained_features(meta: Mapping[str, Any]) -> str:
    """How a checkpoint's run read its feature (``prior.json``'s ``features``,
    `prior.trainers.config.DataSpec.features`): ``stored``, or ``neutral`` for a run trained
    without it, which is then read so again unless asked otherwise."""
    return str(meta.get("features") or "stored")


def _missing_field(meta: Mapping[str, Any]) -> str | None:
    settings, fingerprints = meta.get("settings"), meta.get("fingerprints")
    if not isinstance(settings, dict) or not all(isinstance(settings.get(k), int) for k in ("batch_size", "max_length")):
        return "settings.batch_size and settings.max_length must be integers"
    train = fingerprints.get("train") if isinstance(fingerprints, dict) else None
    if not isinstance(train, dict) or not isinstance(train.get("store"), str) or \
            not isinstance(train.get("parse"), (str, type(None))) or "parse" not in train:
        return "fingerprints.train needs the training store and parse"
    if not isinstance(meta.get("dataset"), str) or not isinstance(meta.get("label_kind"), str):
        return "dataset and label_kind must be names"
    if not isinstance(meta.get("feature", 0), (str, type(None))):
        return "feature must be a name or null"
    if "dep_view" in meta and "view" not in meta:
        return ('it records "dep_view", the name "view" had before; rename the key to "view" (a value "dep" '
                "becomes null) to load it")
    if not isinstance(meta.get("view"), (str, type(None))):
        return "view must be a name or null"
    checksums = meta.get(CHECKSUMS)
    if checksums is not None and not (isinstance(checksums, dict) and all(
            isinstance(k, str) and "/" not in k and "\\" not in k and k not in ("", ".", "..") and isinstance(v, str)
            for k, v in checksums.items())):
        return f"{CHECKSUMS} must map file names to sha256 digests"
    return None


def check_checkpoint(directory: Path, meta: Mapping[str, Any]) -> None:
    """Refuse a checkpoint whose weights are pickled, missing or not those it recorded (module
    docstring); warn (one logged line) where it records no checksums."""
    weights = sorted(p.name for p in directory.glob("*.safetensors") if p.is_file() and p.name not in NOT_CHECKSUMMED)
    pickled = [name for name in PICKLED_WEIGHTS if (directory / name).exists()]
    recorded: Mapping[str, str] | None = meta.get(CHECKSUMS)
    if recorded is None:
        if not weights:
            raise _no_weights(directory, pickled)
        log.warning("%s records no checksums of its files (saved by an older prior): loaded unchecked; "
                    "save it again to record them", directory)
        return
    for name, digest in recorded.items():
        path = directory / name
        if not path.is_file():
            if name.endswith(".safetensors"):
                raise _no_weights(directory, pickled, name)
            raise CheckpointError(f"{path} is missing: the checkpoint is incomplete; restore it or train it again")
        if sha256_of(path) != digest:
            raise CheckpointError(f"{path} does not match the sha256 recorded in {directory / META_FILE} "
                                  "(damaged or replaced); restore the checkpoint or train it again")
    if not any(name.endswith(".safetensors") for name in recorded):
        raise _no_weights(directory, pickled)


def save_checkpoint(directory: Path, model: PriorBertModel, tokenizer: Any, meta: Mapping[str, Any]) -> None:
    """``save_pretrained`` (safetensors) + tokenizer + ``prior.json``, which records the sha256
    of every file written."""
    from prior.trainers import backbones

    directory.mkdir(parents=True, exist_ok=True)
    with backbones.quiet_hf():
        model.save_pretrained(directory)
        tokenizer.save_pretrained(directory)
    meta = {**meta, CHECKSUMS: file_checksums(directory)}
    (directory / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")


def load_checkpoint(directory: Path | str) -> tuple[PriorBertModel, Any, dict[str, Any]]:
    """(model, tokenizer, prior.json) of a checkpoint folder; one that is damaged, altered or
    pickled is a one-line `CheckpointError`."""
    from prior.trainers.models import MODEL_CLASSES

    directory = Path(directory)
    meta = read_meta(directory)
    check_checkpoint(directory, meta)
    return (*load_weights(directory, MODEL_CLASSES[meta["model"]]), meta)


def checkpoint_dir(path: Path | str) -> Path:
    """A checkpoint folder: ``path`` itself, or the ``best/`` of a `prior train` output folder."""
    path = Path(path)
    if not (path / META_FILE).is_file() and (path / "best" / META_FILE).is_file():
        return path / "best"
    return path


def load_weights(directory: Path, cls: type[PriorBertModel]) -> tuple[PriorBertModel, Any]:
    """(model, tokenizer) of a checked checkpoint folder: safetensors only, every weight of the
    model present and fitting (an altered config is refused, not half-initialised)."""
    from prior.trainers import backbones

    _check_readable(directory)
    try:
        with backbones.quiet_hf():
            # mismatched sizes are reported in the loading info (and refused below), not raised
            loaded: Any = cls.from_pretrained(directory, use_safetensors=True, output_loading_info=True,
                                              ignore_mismatched_sizes=True)
            model, info = loaded
    except Exception as exc:  # noqa: BLE001 - transformers and safetensors raise OSError, ValueError, RuntimeError, SafetensorError, ...
        raise CheckpointError(f"{directory}: the model cannot be loaded ({type(exc).__name__}: {_first_line(exc)}); "
                              "restore the checkpoint or train it again") from None
    unfit = {k: v for k, v in dict(info).items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
    if unfit:
        what = "; ".join(f"{k.replace('_', ' ')}: {', '.join(map(str, list(v)[:3]))}" for k, v in unfit.items())
        raise CheckpointError(f"{directory}: the weights do not fit {directory / 'config.json'} ({what}); the "
                              "config or the weights were altered: restore the checkpoint or train it again")
    try:
        tokenizer = backbones.load_tokenizer(str(directory))
    except PriorError as exc:
        raise CheckpointError(f"{directory}: its tokenizer cannot be loaded ({_first_line(exc)}); restore the "
                              "checkpoint or train it again") from None
    return cast("PriorBertModel", model), tokenizer


def _check_readable(directory: Path) -> None:
    """config.json is a JSON object and every weights file's safetensors header reads (only the
    header: the tensors are read by the loader)."""
    from safetensors import SafetensorError, safe_open

    config = directory / "config.json"
    try:
        if not isinstance(json.loads(config.read_text(encoding="utf-8")), dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        raise CheckpointError(f"{config} is missing: restore the checkpoint or train it again") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{config} is damaged ({_first_line(exc)}); restore the checkpoint or train it "
                              "again") from None
    for path in sorted(directory.glob("*.safetensors")):
        if path.name in NOT_CHECKSUMMED:
            continue
        try:
            with safe_open(str(path), framework="pt") as handle:
                handle.keys()
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(f"{path} cannot be read ({type(exc).__name__}: {_first_line(exc)}); restore the "
                                  "checkpoint or train it again") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _no_weights(directory: Path, pickled: list[str], name: str = "model.safetensors") -> CheckpointError:
    if pickled:
        return CheckpointError(f"{directory} holds {pickled[0]} instead of {name}: prior loads safetensors "
                               "weights only (a pickle can run code); convert it yourself if you trust it, "
                               "or train the model again")
    return CheckpointError(f"{directory / name} is missing: the checkpoint has no weights; restore it or "
                           "train it again")


__all__ = ["CHECKSUMS", "META_FILE", "CheckpointError", "check_checkpoint", "checkpoint_dir", "file_checksums",
           "load_checkpoint", "load_weights", "read_meta", "save_checkpoint", "sha256_of", "stored_view",
           "trained_features"]

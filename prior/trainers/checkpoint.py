"""A checkpoint folder's integrity: what is checked before a checkpoint is loaded.

When :func:`prior.trainers.loop.save_checkpoint` writes a checkpoint, ``prior.json`` records the
sha256 of every file ``save_pretrained`` wrote next to it (``model.safetensors``,
``config.json``, the tokenizer's files) under ``files_sha256``. :func:`check_checkpoint`
then refuses, with one :class:`CheckpointError` line naming the file and what to do:

- a folder without ``prior.json``, or one that is not a JSON object, names no known model or
  lacks the fields prediction and evaluation read;
- weights only as ``pytorch_model.bin`` (a pickle, which can run code): never loaded;
- no ``*.safetensors`` weights, or a recorded file missing;
- a recorded file whose content changed (a flipped byte in the weights, an edited config).

A checkpoint saved before checksums were recorded is loaded with a warning (logged, one
line); the loader still refuses pickled weights, keys that do not fit the model (an altered
config) and unreadable files, each as one line.
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
NOT_CHECKSUMMED = (META_FILE, "optimizer.safetensors", "trainer_state.json")
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


__all__ = ["CHECKSUMS", "CheckpointError", "check_checkpoint", "file_checksums", "load_weights", "read_meta", "sha256_of"]

"""The biaffine parser as files we ship: ``model.safetensors`` + ``config.json``, no pickle.

``config.json`` holds the format tag, the supar model's constructor settings, the vocabularies
(words, characters, relations) and how words are turned into ids, the training record and a
blake2b checksum of ``model.safetensors``. :func:`load_artifact` rebuilds supar's
``BiaffineDependencyModel`` from these two files alone (no dill, no ``torch.load``).

Choices:
- Weights may be stored in float16 (halves the size); they are cast back to float32 on load,
  so inference runs in float32 on CPU. The round-trip test pins the heads this gives.
- The checksum (model file + the JSON's content) is the model's identity in parse fingerprints.
- Any missing, unreadable or inconsistent file raises :class:`ResourceError` naming the file
  and what to do (retrain with ``prior parser train`` / reinstall, or use ``--parser spacy``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prior.errors import ResourceError
from prior.hints import option
from prior.shipped import parser_model_dir

if TYPE_CHECKING:  # torch is imported where a model is built: fingerprints need only the files
    import torch

FORMAT = "prior-biaffine-dep/1"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
def _fallback() -> str:
    return f"use {option('parser', 'spacy')}, or retrain it with `prior parser train` (see docs/parsers.md)"

_JSON_TYPES = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class Vocabularies:
    """How supar's LSTM + char biaffine model turns words into ids (its CoNLL transform, explicit)."""

    words: tuple[str, ...]
    chars: tuple[str, ...]
    rels: tuple[str, ...]
    lower: bool
    pad: str
    unk: str
    bos: str
    fix_len: int
    _word_ids: dict[str, int] = field(init=False, repr=False, compare=False)
    _char_ids: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_word_ids", {w: i for i, w in enumerate(self.words)})
        object.__setattr__(self, "_char_ids", {c: i for i, c in enumerate(self.chars)})

    @property
    def word_pad(self) -> int:
        return self._word_ids[self.pad]

    def word_id(self, word: str) -> int:
        ids = self._word_ids
        return ids.get(word.lower() if self.lower else word, ids[self.unk])

    def char_ids(self, word: str) -> list[int]:
        ids = self._char_ids
        unk = ids[self.unk]
        return [ids.get(c, unk) for c in word] or [unk]

    @property
    def char_pad(self) -> int:
        return self._char_ids[self.pad]

    @property
    def char_bos(self) -> int:
        return self._char_ids[self.bos]

    @property
    def word_bos(self) -> int:
        return self._word_ids[self.bos]

    def to_json(self) -> dict[str, Any]:
        return {"words": list(self.words), "chars": list(self.chars), "rels": list(self.rels),
                "lower": self.lower, "pad": self.pad, "unk": self.unk, "bos": self.bos,
                "fix_len": self.fix_len}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Vocabularies:
        return cls(words=tuple(data["words"]), chars=tuple(data["chars"]), rels=tuple(data["rels"]),
                   lower=bool(data["lower"]), pad=data["pad"], unk=data["unk"], bos=data["bos"],
                   fix_len=int(data["fix_len"]))


def vocabularies_from_supar(transform: Any) -> Vocabularies:
    """Read the vocabularies of a supar CoNLL transform (LSTM encoder, char feature only)."""
    word, char = transform.FORM[0], transform.FORM[2]
    if char is None or getattr(transform, "CPOS", None) is not None:
        raise ResourceError("only supar LSTM models with the char feature (no tag feature) are supported")
    return Vocabularies(words=tuple(word.vocab.itos), chars=tuple(char.vocab.itos),
                        rels=tuple(transform.DEPREL.vocab.itos), lower=bool(word.lower),
                        pad=word.pad, unk=word.unk, bos=word.bos, fix_len=int(char.fix_len))


def model_settings_from_supar(args: Any) -> dict[str, Any]:
    """The JSON-able subset of supar's args: all the model constructor needs."""
    settings: dict[str, Any] = {}
    for key, value in dict(args.items()).items():
        if isinstance(value, _JSON_TYPES):
            settings[key] = value
        elif isinstance(value, (list, tuple)) and all(isinstance(v, _JSON_TYPES) for v in value):
            settings[key] = list(value)
    for drop in ("path", "train", "dev", "test", "device", "checkpoint", "build", "local_rank", "mode", "conf"):
        settings.pop(drop, None)
    if settings.get("encoder") != "lstm" or settings.get("feat") != ["char"]:
        raise ResourceError(f"only LSTM + char supar models can be exported; this one has "
                            f"encoder={settings.get('encoder')!r} feat={settings.get('feat')!r}")
    return settings


def _file_digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def export_model(model: torch.nn.Module, settings: dict[str, Any], vocab: Vocabularies, out_dir: str | Path,
                 *, dtype: str = "float16", training: dict[str, Any] | None = None,
                 name: str = "prior-biaffine-ewt") -> Path:
    """Write ``model.safetensors`` (``dtype``) and ``config.json`` to ``out_dir``."""
    import supar
    import torch
    from safetensors.torch import save_file

    if dtype not in ("float16", "float32"):
        raise ResourceError(f"dtype must be float16 or float32, not {dtype!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    target = getattr(torch, dtype)
    tensors = {k: (v.detach().to(target) if v.is_floating_point() else v.detach()).contiguous().cpu()
               for k, v in model.state_dict().items()}
    weights = out / WEIGHTS_FILE
    tmp = weights.with_suffix(".tmp")
    save_file(tensors, str(tmp), metadata={"format": FORMAT})
    tmp.chmod(0o644)
    tmp.replace(weights)
    config = {
        "format": FORMAT,
        "name": name,
        "architecture": "supar.models.BiaffineDependencyModel",
        "dtype": dtype,
        "model": settings,
        "vocab": vocab.to_json(),
        "training": training or {},
        "versions": {"supar": supar.__version__, "torch": torch.__version__},
        "weights_blake2b": _file_digest(weights),
    }
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def export_supar_checkpoint(checkpoint: str | Path, out_dir: str | Path, *, dtype: str = "float16",
                            training: dict[str, Any] | None = None) -> Path:
    """Convert a supar checkpoint (dill pickle: trusted files only) into our artifact."""
    from supar import BiaffineDependencyParser

    from prior.pipeline.parsers.supar_compat import trusted_supar_load

    with trusted_supar_load():
        parser = BiaffineDependencyParser.load(str(checkpoint))
    settings = model_settings_from_supar(parser.model.args)
    return export_model(parser.model, settings, vocabularies_from_supar(parser.transform), out_dir,
                        dtype=dtype, training=training)


@dataclass
class LoadedModel:
    model: torch.nn.Module
    vocab: Vocabularies
    name: str
    checksum: str
    config: dict[str, Any]


def read_config(model_dir: str | Path) -> tuple[dict[str, Any], str]:
    """Validate the two files of an artifact; return its config and identity checksum.

    Cheap (reads JSON, hashes the weights file, builds no model): used for parse fingerprints.
    """
    model_dir = Path(model_dir)
    config_path, weights = model_dir / CONFIG_FILE, model_dir / WEIGHTS_FILE
    for path in (config_path, weights):
        if not path.is_file():
            raise ResourceError(f"biaffine parser model file {path} is missing; {_fallback()}")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        if config.get("format") != FORMAT:
            raise ValueError(f"format is {config.get('format')!r}, expected {FORMAT!r}")
        Vocabularies.from_json(config["vocab"])
        settings = dict(config["model"])
        # the constructor would fetch (and unpickle) a transformer for any other encoder or feature
        if settings.get("encoder") != "lstm" or settings.get("feat") != ["char"] or settings.get("bert"):
            raise ValueError(f"model settings encoder={settings.get('encoder')!r} feat={settings.get('feat')!r} "
                             f"bert={settings.get('bert')!r}; only the LSTM + char model is supported")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResourceError(f"biaffine parser config {config_path} is damaged ({exc}); {_fallback()}") from None
    checksum = _file_digest(weights)
    if checksum != config.get("weights_blake2b"):
        raise ResourceError(f"biaffine parser weights {weights} do not match the checksum in {config_path} "
                            f"(damaged or replaced file); {_fallback()}")
    identity = hashlib.blake2b(digest_size=16)
    identity.update(checksum.encode())
    identity.update(json.dumps({"model": config["model"], "vocab": config["vocab"]}, sort_keys=True).encode())
    return config, identity.hexdigest()


def load_artifact(model_dir: str | Path) -> LoadedModel:
    """Rebuild the supar model from ``config.json`` + ``model.safetensors`` (no pickle)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    from supar.models import BiaffineDependencyModel

    model_dir = Path(model_dir)
    config, checksum = read_config(model_dir)
    weights = model_dir / WEIGHTS_FILE
    try:
        tensors = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as exc:
        raise ResourceError(f"biaffine parser weights {weights} cannot be read ({exc}); {_fallback()}") from None
    settings = dict(config["model"])
    settings["device"] = "cpu"
    model = BiaffineDependencyModel(**settings)
    state = {k: (v.float() if v.is_floating_point() else v) for k, v in tensors.items()}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise ResourceError(f"biaffine parser weights {weights} do not fit {model_dir / CONFIG_FILE} ({exc}); "
                            f"{_fallback()}") from None
    model.eval()
    return LoadedModel(model=model, vocab=Vocabularies.from_json(config["vocab"]),
                       name=str(config.get("name", "biaffine")), checksum=checksum, config=config)


def default_model_dir() -> Path:
    """``$PRIOR_PARSER_MODEL``, else the model shipped with the package (`prior.shipped`;
    resolved when called)."""
    if env := os.environ.get("PRIOR_PARSER_MODEL"):
        return Path(env).expanduser()
    return parser_model_dir()


# The sentence splitter the biaffine backend asks spaCy for (spacy_backend.sentence_splitter)
SENTENCES_FOR_BIAFFINE = "senter"


def biaffine_fingerprint(name: str, checksum: str, spacy_part: dict[str, Any], sentences: str,
                         int8: bool = False) -> dict[str, Any]:
    """The biaffine backend's identity: model, decoding, spaCy annotator and the component that
    splits sentences ("senter" or "parser": boundaries differ on a few texts); for
    ``biaffine-int8`` also its weights ("int8-rows": `prior.pipeline.parsers.int8_rows`). Where
    the model runs (CPU or CUDA) and how it is batched are not part of it."""
    out = {"backend": "biaffine-int8" if int8 else "biaffine", "model": name, "model_checksum": checksum,
           "decode": "mst-single-root", **spacy_part, "sentences": sentences}
    return {**out, "weights": "int8-rows"} if int8 else out


def fingerprint_of_spec(arg: str, int8: bool = False) -> dict[str, Any] | None:
    """The fingerprint of ``biaffine[:arg]`` (``biaffine-int8[:arg]`` with ``int8``) from the files alone (no torch, no spaCy import);
    None where the model must be loaded (a supar file or published name)."""
    from prior.pipeline.parsers.spacy_backend import fingerprint_of_package, splitter_of_package

    path = default_model_dir() if not arg else Path(arg).expanduser()
    if not path.is_dir():
        return None
    config, checksum = read_config(path)
    return biaffine_fingerprint(str(config.get("name", "biaffine")), checksum, fingerprint_of_package(),
                                splitter_of_package(None, SENTENCES_FOR_BIAFFINE), int8=int8)

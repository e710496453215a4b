"""SG-Net's syntax-guided self-attention mask ("SDOI", sgnet.txt §3.2–3.3).

Per sentence, ``M[i, j] = 1`` iff word j is an ancestor of word i in the dependency tree or
j == i, else 0: row i is the word, columns are the words it may attend to (its "syntactic
dependency of interest"). Stored per sentence; the pair grid (block-diagonal, special tokens
attending to themselves, word pieces sharing their word's row and column, masked logits set to
−∞) is built by the trainer.

Choices where the paper is silent:
- A parse may be a forest (several roots, head 0): a dataset "sentence" holding several
  grammatical sentences. Each word then sees only the ancestors in its own tree; no word is
  linked across trees.
- The self-loop is always kept (the paper's "or j = i"); some of the authors' scripts drop it
  for single-piece words, a bug we do not reproduce.
- Heads that form a cycle cannot come from a tree: `DataError`, never a silent mask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from featurestore.errors import DataError
from pipeline.parsers.base import Parse


def sdoi_mask(heads: Sequence[int]) -> np.ndarray:
    """n×n uint8 mask, ``M[i, j] = 1`` iff j is an ancestor of i or j == i.

    ``heads`` are 1-based (0 marks a root), as in `Parse`. Raises `DataError` on a head out of
    range or a cycle.
    """
    n = len(heads)
    parent = np.asarray(heads, dtype=np.int64).reshape(n) - 1  # -1 = root
    if n and (parent.min() < -1 or parent.max() >= n):
        raise DataError(f"heads {list(heads)} point outside the sentence's {n} words; "
                        "heads must be 0 (root) or 1..n", field="heads")
    mask = np.eye(n, dtype=np.uint8)
    # Memoized walk: each word's row is its parent's row (which holds the parent itself).
    done = np.zeros(n, dtype=bool)
    for start in range(n):
        if done[start]:
            continue
        chain: list[int] = []
        on_chain: set[int] = set()
        i = start
        while i != -1 and not done[i]:
            if i in on_chain:
                cycle = chain[chain.index(i):]
                raise DataError(
                    f"heads {list(heads)} form a cycle through words "
                    f"{', '.join(str(w + 1) for w in cycle)} (1-based); a dependency parse must be "
                    "a tree or forest: check the parser output", field="heads")
            chain.append(i)
            on_chain.add(i)
            i = int(parent[i])
        # Fill the chain top-down: the first resolved ancestor row (or none at a root) is known.
        for w in reversed(chain):
            p = int(parent[w])
            if p != -1:
                mask[w] |= mask[p]
            done[w] = True
    return mask


class SdoiFeature:
    """The ``sdoi`` feature: one ``sdoi`` component (n×n uint8) per sentence."""

    name = "sdoi"
    version = 1
    scope = "sentence"
    components = ("sdoi",)

    def params(self) -> dict[str, Any]:
        """Fixed semantics, stated so that a change of meaning would change the entry key."""
        return {"relation": "ancestor-or-self", "roots": "forest-per-tree", "dtype": "uint8"}

    def setup(self) -> None:
        """Nothing to load."""

    def compute(self, items: Sequence[Parse]) -> list[dict[str, np.ndarray]]:
        out = []
        for k, parse in enumerate(items):
            try:
                out.append({"sdoi": sdoi_mask(parse.heads)})
            except DataError as exc:
                raise DataError(f"sentence {k} of the batch ({' '.join(parse.words)!r}): {exc}") from exc
        return out

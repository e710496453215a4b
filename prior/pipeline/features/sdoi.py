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
- The self-loop is always kept (the paper's "or j = i").
- Heads that form a cycle cannot come from a tree: `DataError`, never a silent mask.

The authors' released code (cooelf/SG-Net: ``convert_head_to_span`` in convert_span.py, the
masks built in run_squad2.py) differs from the paper in two ways; ``relation="span-interval"``
reproduces them so that their numbers can be compared, and is never the default:

1. A word's subtree becomes the *interval* of positions it covers, [leftmost, rightmost]
   descendant-or-self; word i sees word j iff i lies in j's interval. For a projective tree
   that is the paper's relation. For a non-projective tree the interval also holds words
   outside j's subtree: they see j although j is not their ancestor (j may be their
   descendant or unrelated).
2. Intervals of one word piece are skipped (``if start_ix != end_ix``), so a leaf word of one
   piece has no self-loop (its row keeps its ancestors). At word level, where the stored mask
   lives, that is every leaf (``leaf_self_loops=False``); a leaf split into several pieces
   keeps, in their code, a column on its first piece, which a word-level mask cannot express.

In a forest each tree's words get their own intervals (the authors hang every root under one
virtual root); trees that interleave, which a sentence splitter does not produce, would see
each other's words through them, like any non-projective arc.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prior.errors import DataError, PriorError
from prior.layouts.kinds import SentenceMask
from prior.pipeline.features.base import FeatureBase
from prior.pipeline.parsers.base import Parse

RELATIONS = ("ancestor-or-self", "span-interval")


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


def span_interval_mask(heads: Sequence[int], leaf_self_loops: bool = True) -> np.ndarray:
    """n×n uint8 mask of the authors' code: ``M[i, j] = 1`` iff left_j <= i <= right_j.

    [left_j, right_j] is the span of positions covered by j's subtree (j included), as
    ``convert_head_to_span`` computes it. With ``leaf_self_loops=False`` one-word intervals
    (leaves) are skipped as the authors' training scripts skip one-piece intervals: a leaf's
    column is empty, so it does not see itself. Same input checks as :func:`sdoi_mask`.
    """
    below = sdoi_mask(heads).astype(bool)  # below[i, j]: j is an ancestor of i, or j == i
    n = below.shape[0]
    if n == 0:
        return np.zeros((0, 0), dtype=np.uint8)
    left = below.argmax(axis=0)                       # first row in column j's subtree
    right = n - 1 - below[::-1].argmax(axis=0)        # last row
    pos = np.arange(n)[:, None]
    mask = (pos >= left[None, :]) & (pos <= right[None, :])
    if not leaf_self_loops:
        mask[:, left == right] = False
    return mask.astype(np.uint8)


class SdoiFeature(FeatureBase):
    """The ``sdoi`` feature: one ``sdoi`` component (n×n uint8) per sentence.

    ``relation``: ``"ancestor-or-self"`` (the paper, default) or ``"span-interval"`` (the
    authors' code, see the module docstring). ``leaf_self_loops`` applies to ``span-interval``
    only (``False``: the authors' skipped one-word intervals); the paper's relation always
    holds j = i.
    """

    name = "sdoi"
    version = 1
    scope = "sentence"
    components = ("sdoi",)
    layout = SentenceMask("sdoi")

    def __init__(self, relation: str = "ancestor-or-self", leaf_self_loops: bool = True) -> None:
        if relation not in RELATIONS:
            raise PriorError(f"sdoi: unknown relation {relation!r}; choose one of {', '.join(RELATIONS)}")
        if not isinstance(leaf_self_loops, bool):
            raise PriorError(f"sdoi: leaf_self_loops must be true or false, not {leaf_self_loops!r}")
        if relation == "ancestor-or-self" and not leaf_self_loops:
            raise PriorError("sdoi: leaf_self_loops=false applies to relation=span-interval only; the "
                             "paper's relation (ancestor-or-self) always lets a word see itself")
        self.relation = relation
        self.leaf_self_loops = leaf_self_loops

    def annotations(self) -> frozenset[str]:
        """Heads (and words, in its error messages) only."""
        return frozenset()

    def params(self) -> dict[str, Any]:
        """Resolved semantics, stated so that a change of meaning would change the entry key.

        The default's dict is the one this feature has had since version 1 (its entries keep
        their keys); the leaf rule appears for ``span-interval`` only, since "ancestor-or-self"
        already says that every word sees itself.
        """
        if self.relation == "ancestor-or-self":
            return {"relation": "ancestor-or-self", "roots": "forest-per-tree", "dtype": "uint8"}
        return {"relation": self.relation, "leaf_self_loops": self.leaf_self_loops,
                "roots": "forest-per-tree", "dtype": "uint8"}

    def setup(self) -> None:
        """Nothing to load."""

    def compute(self, items: Sequence[Parse]) -> list[dict[str, np.ndarray]]:
        out = []
        for k, parse in enumerate(items):
            try:
                if self.relation == "ancestor-or-self":
                    out.append({"sdoi": sdoi_mask(parse.heads)})
                else:
                    out.append({"sdoi": span_interval_mask(parse.heads, self.leaf_self_loops)})
            except DataError as exc:
                raise DataError(f"sentence {k} of the batch ({' '.join(parse.words)!r}): {exc}") from exc
        return out

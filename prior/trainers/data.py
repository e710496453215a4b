"""A whole split in memory, read through the loader's own path: what evaluation, prediction and
tests read (training streams, `prior.trainers.loader`).

:func:`load_split` resolves the split (`prior.trainers.split_index.index_split`, or the
record of it a run kept: `prior.trainers.index_cache`; its rows, the feature's entries selected
by the store's entry contract, the parse) and reads every pair with a
`prior.trainers.reader.SplitReader`, the code that reads a training batch: the same word
pieces and the same feature values, by the feature's storage layout alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from prior.featurestore import Store
from prior.featurestore.selection import Request
from prior.trainers.features import MissingFeatureError
from prior.trainers.index_cache import cached_index_split
from prior.trainers.pair_data import PairData
from prior.trainers.reader import SplitReader


def load_split(store: Store, dataset: str, split: str, tokenizer: Any, *, max_length: int = 128,
               feature: str | None = None, request: Request | None = None,
               limit: int | None = None, view: str | None = None,
               entries: dict[str, str] | None = None, parse: str | None = None,
               parser: str | None = None) -> PairData:
    """Read one split (and the feature a model reads, as the model input its layout names)
    from the store, whole.

    The feature's entries are the default ones, or those ``request`` picks by its ``params``
    or ``entry`` (a key prefix), or exactly the recorded ``entries`` (name → key, what
    `prior eval` passes from a checkpoint); ``view`` reads a registered variant view of the
    feature instead (DAFA's ablations). The words are those of the feature's parse; without a
    feature, of ``parse`` (an id: what a checkpoint recorded), else of the parse of ``parser``
    (a ``--parser`` value; default: the default parser), never of "the latest" parse
    (`prior.featurestore.selection.select_parse`)."""
    index = cached_index_split(store, dataset, split, feature=feature, view=view, request=request,
                               entries=entries, parse=parse, parser=parser, limit=limit)
    return SplitReader(index, tokenizer, max_length).read(np.arange(len(index)))


__all__ = ["MissingFeatureError", "PairData", "load_split"]

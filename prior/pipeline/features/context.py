"""What a feature's ``prepare`` and ``restore`` receive from the build (`prior.pipeline.build`
makes it): the store, the dataset and its splits' pairs, the build's options and the parses.

Its own module, below both the build and the features, so that the features can name it
(and the options they read, `FeatureOptions`) without importing the build that imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from prior.errors import NotFoundError
from prior.featurestore.store import Store
from prior.pipeline.parsers.base import Parse


class FeatureOptions(Protocol):
    """What feature factories (`prior.pipeline.features.registry`) and features read of a build's
    options; `prior.pipeline.build.BuildOptions` is one. Named here, so that the features never
    import the build."""

    @property
    def feature_options(self) -> dict[str, dict[str, Any]]:
        """feature name → its ``-o NAME.K=V`` values"""

    @property
    def embeddings(self) -> Path | None:
        """the embedding file of a first ``emb`` build"""

    @property
    def restore(self) -> dict[str, dict[str, Any]]:
        """feature name → an entry's recorded params to restore instead of preparing them"""


@dataclass
class BuildContext:
    """What a feature's ``prepare`` may use (in the driver, after parsing)."""

    store: Store
    dataset: str
    options: FeatureOptions
    parse: str
    split_pairs: dict[str, list[tuple[str, str, str]]]  # split -> (pair_key, key_a, key_b)
    _parses: Callable[[Sequence[str]], list[Parse]]
    unparsed: set[str] = field(default_factory=set)  # sentences this build could not parse

    @property
    def splits(self) -> list[str]:
        return list(self.split_pairs)

    def split_keys(self, split: str) -> list[str]:
        """Unique sentence keys of a split of this dataset, in first-seen order, of the pairs
        whose two sentences are parsed (a pair with a sentence too long or impossible to parse
        is skipped for every feature). A split this build did not read (one a feature's options
        name, such as the split an IDF table is counted on) is read from the store as every
        reader reads it (`Store.split_rows`): one that lacks rows is a `ShortSplitError`."""
        if split in self.split_pairs:
            rows = self.split_pairs[split]
            skip = self.unparsed
        else:
            df = self.store.split_rows(self.dataset, split, parse=self.parse).rows
            rows = list(zip(df["pair_key"], df["key_a"], df["key_b"]))
            parsed = self.store.parsed_keys(self.parse)
            skip = {k for _, a, b in rows for k in (a, b) if k not in parsed}
        return list(dict.fromkeys(k for _, a, b in rows if a not in skip and b not in skip for k in (a, b)))

    def parses(self, sentence_keys: Sequence[str]) -> list[Parse]:
        return self._parses(sentence_keys)

    def words(self, sentence_keys: Sequence[str], lemmas: bool = True) -> list[tuple[list[str], list[str]]]:
        """(words, lemmas) of each sentence, in order: what comparing word forms needs, read
        without building whole parses. ``lemmas``: whether the caller reads them (else a
        sentence parsed without them is read too, its lemmas empty)."""
        needs = {"lemmas"} if lemmas else set()
        df = self.store.parses(sentence_keys, parse=self.parse, columns=("words", "lemmas"), needs=needs)
        found = {key: (words, lemmas if lemmas is not None else [""] * len(words))  # not annotated: not read
                 for key, words, lemmas in zip(df["sent_key"].to_list(), df["words"].to_list(), df["lemmas"].to_list())}
        if missing := [k for k in sentence_keys if k not in found]:
            held = f" with {', '.join(sorted(needs))}" if needs else ""
            raise NotFoundError(f"{self.store.location}: parse {self.parse} holds {len(missing)} sentence(s) of "
                                f"{self.dataset} not{held}, e.g. {missing[0]}; build that split with this feature")
        return [found[k] for k in sentence_keys]

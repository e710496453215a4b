"""A split resolved once, before any pair is read: its pairs as small integers and where each
pair's data lies in the store.

:func:`index_split` reads the split's rows as numbers
(`prior.featurestore.numbered_split`: checked against the split's manifest, read a group of
files at a time, of each pair only its key, its two sentences' numbers and its label code; the
pairs whose build skipped a sentence of the parse read left out and counted, a warning saying
so), selects the feature's entries and the parse (`prior.featurestore.selection`), and
locates every key in the segments that hold it: their key columns only, a group of rows at a
time, looked up among the split's sorted keys (`prior.featurestore.located`). The selection's
coverage check is that location, so each entry's files are read once; every key is held as the
128-bit number it spells (`prior.featurestore.key_numbers`). What it keeps is a few integers
per pair — its two sentences (numbered within the split), its label, and per pair entry the
segment and item holding its value — and per sentence the same for its parse and sentence
entries: about 16 bytes per pair plus 8 per entry, where the split's texts, words and feature
values would take kilobytes. While it is built it holds besides, per pair and per sentence, its
key (16 bytes) and its place in the split's sorted keys (20 bytes): never a frame of the
split's rows, nor an index over an entry's keys (bench/RESULTS.md, "The split's index located
while the segments are read"). The loader (`prior.trainers.reader`) reads the values themselves
piece by piece as the run goes.

``fingerprint`` is what a checkpoint records of the data (`prior.json`): the store, the
split, its pair count and a digest of its pair keys in order, the parse and the entries; a
resumed run compares it with the store it reads (`prior.trainers.resume`).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from prior.errors import DataError
from prior.featurestore import Store, StoreRef, open_store
from prior.featurestore.catalog import Segment
from prior.featurestore.key_numbers import KEY_DIGITS, key_text_bytes, key_texts
from prior.featurestore.located import Located
from prior.featurestore.numbered_split import MISSING_LABEL, NumberedCoverage, NumberedSplit
from prior.featurestore.recipe import FeatureRecipe, render
from prior.featurestore.selection import ParseSelectionError, Request, build_recipe, select_parse
from prior.featurestore.splits import skipped_note
from prior.layouts.views import resolve_view
from prior.trainers.features import FeaturePlan, MissingFeatureError, plan_feature

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Locator:
    """Where each key's item lies: item ``item[i]`` (its row in the segment's table) of
    ``segments[seg[i]]``."""

    segments: tuple[Segment, ...]
    seg: np.ndarray  # int32 (keys,)
    item: np.ndarray  # int32 (keys,)


@dataclass(frozen=True)
class SplitIndex:
    """One split of a store, resolved (module docstring)."""

    ref: StoreRef
    dataset: str
    split: str
    label_kind: str
    label_names: tuple[str, ...]
    labels: np.ndarray | None  # int64 class ids or float32 scores, (n,)
    sent_a: np.ndarray  # int32 (n,): the pair's first sentence, numbered within the split
    sent_b: np.ndarray  # int32 (n,)
    words: Locator  # per sentence: its parse record
    pair_locs: dict[str, Locator] = field(default_factory=dict)  # pair entry key → per pair
    sentence_locs: dict[str, Locator] = field(default_factory=dict)  # sentence entry key → per sentence
    plan: FeaturePlan | None = None
    fingerprint: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # pairs left out (their build skipped a sentence), by reason

    @property
    def note(self) -> str:
        """What a read says of the pairs left out (`prior.featurestore.splits.skipped_note`)."""
        return skipped_note(self.dataset, self.split, self.skipped)

    def __len__(self) -> int:
        return len(self.sent_a)

    @property
    def sentences(self) -> int:
        return len(self.words.seg)

    @property
    def location(self) -> str:
        return str(self.ref.location)

    def pair_keys(self, positions: np.ndarray | None = None) -> np.ndarray:
        """The keys of the pairs at ``positions`` (default: all), read again from the store's
        split rows: the index keeps none."""
        served = open_store(self.ref, create=False).split_rows(self.dataset, self.split, parse=self.fingerprint["parse"])
        keys = served.rows["pair_key"].head(len(self))
        every = np.asarray(keys.to_list(), dtype=object)
        return every if positions is None else every[np.asarray(positions, dtype=np.int64)]


def _labels(numbered: NumberedSplit) -> np.ndarray | None:
    """Class ids (int64) or scores (float32) of a numbered split's labels; None for an
    unlabelled split (a label kind of neither, or a class label missing)."""
    codes, names = numbered.labels, numbered.label_names
    if codes is None or numbered.label_kind == "score":
        return codes
    if bool((codes == MISSING_LABEL).any()):
        return None
    unknown = codes >= len(names)
    if unknown.any():
        label = numbered.unknown_labels[int(codes[int(np.argmax(unknown))]) - len(names)]
        raise DataError(f"{numbered.dataset}/{numbered.split}: label {label!r} is not one of {names}", field="label")
    return codes.astype(np.int64)


def locator(found: Located, keys: pl.Series) -> tuple[Locator, int]:
    """Where each of ``keys`` lies (`prior.featurestore.located.Located.of`), and how many of
    them the segments do not hold."""
    seg, item = found.of(keys)
    return Locator(found.segments, seg, item), int((seg < 0).sum())


def pairs_digest(pair_keys: pl.Series) -> str:
    """A digest of a split's pair keys in order (as text or as numbers: the same digest): the
    same pairs in the same order, the same digest. It hashes each key's text and a newline."""
    h = hashlib.blake2b(digest_size=16)
    for start in range(0, pair_keys.len(), 1 << 16):
        chunk = pair_keys.slice(start, 1 << 16)
        if chunk.dtype == pl.String:
            h.update("".join(f"{k}\n" for k in chunk.to_list()).encode())
            continue
        lines = np.full((chunk.len(), KEY_DIGITS + 1), ord("\n"), dtype=np.uint8)
        lines[:, :KEY_DIGITS] = key_text_bytes(chunk)
        h.update(lines.tobytes())
    return h.hexdigest()


def index_split(store: Store, dataset: str, split: str, *, feature: str | None = None, view: str | None = None,
                request: Request | None = None, entries: dict[str, str] | None = None, parse: str | None = None,
                parser: str | None = None, limit: int | None = None) -> SplitIndex:
    """Resolve ``dataset``/``split`` (module docstring) for a model reading ``feature`` (None:
    words only), read as ``view`` when given. The entries are the default ones, or those
    ``request`` picks, or exactly the recorded ``entries`` (name → key: what `prior eval` passes
    from a checkpoint). Without a feature the words are those of ``parse`` (a recorded id),
    else of ``parser``'s parse (default: the default parser's). ``limit``: the first pairs only."""
    plan = None
    # the split's rows as numbers and the entries' keys, read once for all below
    coverage = NumberedCoverage(store)
    if feature is not None:
        plan = plan_feature(store, feature, dataset, split, view=view, request=request, entries=entries,
                            coverage=coverage)
        parse = plan.parse
    else:
        resolve_view(None, view)  # a view given to a model that reads no feature: its one line
        try:
            texts = key_texts(coverage.numbered(dataset, split).sentences).to_list()
            parse = select_parse(store, texts, parse=parse, parser=parser, dataset=dataset, split=split)
        except ParseSelectionError as exc:
            raise MissingFeatureError(str(exc), recipe=exc.recipe) from None
    # the split's pairs as the store serves a read of this parse: checked against its manifest,
    # the pairs whose build skipped a sentence left out (and counted in the note)
    served, skipped = coverage.served_numbered(dataset, split, parse)
    note = skipped_note(dataset, split, skipped)
    if note:  # said again by each read of a recorded index (`prior.trainers.index_cache`)
        log.warning(note)
    if limit is not None:
        served = served.head(limit)
    if served.height == 0:
        raise DataError(f"{store.location}: {dataset}/{split} has no pairs" + (f" ({note})" if note else ""))
    labels = _labels(served)
    kind, names = served.label_kind, served.label_names
    sent_a, sent_b, sentences, pair_keys, pairs = (served.sent_a, served.sent_b, served.sentences, served.pair_key,
                                                   served.height)
    # the keys were located while the selection read the entries (`NumberedCoverage`); the
    # parse's records are located the same way
    words = _words(store, coverage, dataset, split, parse, sentences, feature)
    pair_locs: dict[str, Locator] = {}
    sentence_locs: dict[str, Locator] = {}
    for info in plan.entries if plan else ():
        loc, missing = locator(coverage.take_located(info, dataset, split),
                               pair_keys if info.scope == "pair" else sentences)
        if missing:  # the selection checked coverage: only a concurrent gc gets here
            raise MissingFeatureError(f"entry {info.spec} {info.key[:12]} lost {missing} items of {dataset}/{split} "
                                      "while being read; read again")
        (pair_locs if info.scope == "pair" else sentence_locs)[info.key] = loc
    del served
    coverage.forget_split(dataset, split)
    fingerprint = {"store": store.location, "dataset": dataset, "split": split, "pairs": pairs,
                   "pairs_digest": pairs_digest(pair_keys), "parse": parse,
                   "parser": store.parse_ids().get(parse) if parse else None,
                   "entries": dict(plan.fingerprint) if plan else {},
                   "view": plan.read if plan and plan.read != feature else None}
    return SplitIndex(store.ref, dataset, split, kind, names, labels, sent_a, sent_b, words, pair_locs,
                      sentence_locs, plan, fingerprint, dict(skipped))


def _words(store: Store, coverage: NumberedCoverage, dataset: str, split: str, parse: str | None,
           sentences: pl.Series, feature: str | None) -> Locator:
    """Where each sentence's parse record lies; `MissingFeatureError` with the build line that
    parses what is missing."""
    segments = [s for s in store.segments("parses") if s.target["parse"] == parse]
    loc, missing = locator(coverage.located(segments, "parses.parquet", "sent_key", dataset, split, "sentence", parse),
                           sentences)
    if missing:
        recipe = build_recipe(store, dataset=dataset, split=split, parse=parse,
                              features=[FeatureRecipe(feature or "sdoi")])
        raise MissingFeatureError(f"{store.location}: {missing} sentences of {dataset}/{split} "
                                  f"have no parse {str(parse)[:12]}; restore them with: {render(recipe)}",
                                  recipe=recipe)
    return loc


__all__ = ["Locator", "SplitIndex", "index_split", "locator", "pairs_digest"]

"""Features of new sentence pairs, built exactly as a trained model's store entries were: the
pipeline half of `prior predict` (the model half is `prior.trainers.predict`).

A checkpoint records the store entries its feature was read from (their keys, parameters and
parse). :func:`build_pairs` builds the same entries for new pairs with :func:`prior.pipeline.build.build`:

- the same parse: the parser spec must give the recorded parse id, else `PredictMismatchError`
  before anything is parsed. The spec is the caller's ``parser`` (the person running it may
  name any parser) or else ``recorded_parser`` (what the checkpoint or its training store
  recorded), which may name only a parser that loads no pickle
  (`prior.pipeline.parsers.check_recorded_spec`), checked before any parser file is opened;
- the same parameters: each entry's recorded options go to its feature set, and what a build
  would count from the dataset being built (DAFA's IDF table, GiBERT's vocabulary) is taken
  from the recorded parameters instead (`Feature.restore`), so new sentences get the weights
  and word ids the training data gave. A built entry whose key differs from the recorded one
  (another WordNet, another feature version here) is a `PredictMismatchError`;
- the resources those parameters name (a 32-hex content key that is a resource of the
  model's training store) are copied into the target store when it lacks them; copies keep
  their content keys.

The pairs become a dataset of the target store named after their content (``predict-`` and
16 hex characters of the hash of the input file and its text columns; split ``all``), so
predicting the same input again reuses its pairs, parses and features.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prior.errors import DataError, PriorError
from prior.featurestore import StoreRef, open_store
from prior.featurestore import keys as K
from prior.featurestore.errors import StoreError
from prior.featurestore.store import EntryInfo, SplitRows, Store
from prior.hints import option

_RESOURCE_KEY = re.compile(r"[0-9a-f]{32}")


class PredictMismatchError(PriorError):
    """The features this installation computes are not those the model was trained on."""


@dataclass
class BuiltPairs:
    """Where the pairs went (``store``'s ``dataset``/``split``) and the input rows that could
    not be used (reason -> count, and the first few as ``file:row [field] reason``): rows the
    reader could not use, and pairs with a sentence the build could not parse (over the word
    limit, or the parser failed), which get no prediction."""

    store: str
    dataset: str
    split: str
    skipped: dict[str, int] = field(default_factory=dict)
    skip_examples: list[str] = field(default_factory=list)


def build_pairs(store: StoreRef | str | None, *, entries: Sequence[EntryInfo], parse: str, parser: str | None = None,
                pairs: Sequence[tuple[str, str]] | None = None, file: str | Path | None = None,
                text_a: str = "sentence1", text_b: str = "sentence2", resources: StoreRef | str | None = None,
                workers: int = 0, progress: bool = False, recorded_parser: str | None = None,
                recorded_in: str = "the model", max_words: int | None = None) -> BuiltPairs:
    """Write ``pairs`` (or the pairs of ``file``, any table `prior build` reads, with the
    columns ``text_a``/``text_b``) into ``store`` and build their parse ``parse`` (made by
    ``parser``, else by ``recorded_parser``, the spec ``recorded_in`` names, else by the
    build's default) and the ``entries`` (module docstring). ``resources``: the store the
    entries were built in, whose resources are copied when ``store`` lacks them. A store at a
    URL is reached with its `StoreRef`'s options (a plain location: ``$PRIOR_STORAGE_OPTIONS``).
    ``max_words``: a longer sentence is not parsed and its pair is skipped (default: the build's
    limit)."""
    if (pairs is None) == (file is None):
        raise PriorError("give pairs or a file, not both or neither")
    if parser is None and recorded_parser is not None:
        from prior.pipeline.parsers import check_recorded_spec

        parser = check_recorded_spec(recorded_parser, recorded_in)  # before any parser file is opened
    with tempfile.TemporaryDirectory(prefix="prior-predict-") as tmp:
        if pairs is not None:
            file = Path(tmp) / "pairs.jsonl"
            file.write_text("".join(json.dumps({"a": a, "b": b}, ensure_ascii=False) + "\n" for a, b in pairs),
                            encoding="utf-8")
            text_a, text_b = "a", "b"
        assert file is not None
        return _build(store, Path(file).expanduser(), entries, parse, parser, text_a, text_b, resources,
                      workers, progress, max_words)


def _build(store_ref: StoreRef | str | None, file: Path, entries: Sequence[EntryInfo], parse: str,
           parser: str | None, text_a: str, text_b: str, resources: StoreRef | str | None, workers: int,
           progress: bool, max_words: int | None) -> BuiltPairs:
    from prior.pipeline.build import DEFAULT_PARSER, BuildOptions, NoUsablePairsError, RunOptions, build
    from prior.pipeline.datasets.lines import file_sha256
    from prior.pipeline.parsers import fingerprint_of
    from prior.pipeline.parsers.base import MAX_WORDS

    if not file.is_file():
        raise PriorError(f"no such file: {file}")
    spec = parser or DEFAULT_PARSER
    here = K.parse_id(fingerprint_of(spec))
    if here != parse:
        raise PredictMismatchError(f"parser {spec} gives parse {here[:12]}, but the model was trained on parse "
                                   f"{parse[:12]}: install the parser model it was trained with, or name it "
                                   f"with {option('parser')}")
    store = open_store(store_ref)
    copy_resources(store, entries, resources)
    built_by = list(dict.fromkeys(e.built_by or e.name for e in entries))
    options: dict[str, dict[str, object]] = {name: {} for name in built_by}
    for e in entries:
        options[e.built_by or e.name].update(e.options)
    content = f"{file_sha256(file)}\0{text_a}\0{text_b}".encode()
    name = "predict-" + hashlib.blake2b(content, digest_size=8).hexdigest()
    try:
        report = build(BuildOptions(
            dataset=str(file), name=name, features=tuple(built_by), parser=spec,
            feature_options={k: v for k, v in options.items() if v},
            columns={"text_a": text_a, "text_b": text_b, "label": None, "label_kind": "class"},
            restore={e.name: dict(e.params) for e in entries}, max_words=max_words or MAX_WORDS),
            RunOptions(store=store.ref, workers=workers, progress=progress))
    except NoUsablePairsError as exc:  # the build's message names its flags; a predict user gave pairs
        reasons = ", ".join(f"{n} {reason}" for reason, n in exc.counts.items()) or "no rows"
        where = f"; e.g. row {exc.row}" if exc.row is not None else ""
        raise DataError(f"no usable pair in the input ({reasons}){where}", file=str(file)) from None
    for e in entries:
        made = report.entries.get(e.spec)
        if made != e.key:
            raise PredictMismatchError(f"feature {e.spec} computes entry {str(made)[:12]} here, but the model "
                                       f"read entry {e.key[:12]} (params {e.params}); a resource or the feature's "
                                       "version differs from the training machine's")
    split = report.splits[0]
    unparsed = _check_usable(store, report, file)
    return BuiltPairs(store=store.location, dataset=report.dataset, split=split.split,
                      skipped={**split.skipped, **unparsed.skipped},
                      skip_examples=[*split.skip_examples, *_parse_examples(report, unparsed.skipped_pairs)])


def _parse_examples(report: Any, count: int) -> list[str]:
    """The first parse failures of the build (``row N …: why``), at most ``count``: a failure
    reads "DATASET/SPLIT FILE row N …: why", and the input's store name, its file's place and
    the build's option mean nothing to a predict user."""
    failures: list[str] = next((st.failures for st in report.stages if st.name == "parse" and st.failures), [])
    return [_plain(f) for f in failures[:min(count, 5)]]


def _plain(failure: str) -> str:
    where, _, why = failure.partition(": ")
    row = where[where.find(" row ") + 1:] if " row " in where else where
    return f"{row}: {why}".replace(f" ({option('max_words')})", "")


def _check_usable(store: Store, report: Any, file: Path) -> SplitRows:
    """The input's pairs as a prediction reads them (`Store.split_rows`: the pairs with a
    sentence the build could not parse left out, counted by reason); a one-line `DataError`
    when none is left: every row was skipped when read, or every pair has a sentence that
    could not be parsed."""
    split = report.splits[0]
    if split.pairs == 0:
        reasons = ", ".join(f"{n} {reason}" for reason, n in split.skipped.items()) or "no rows"
        example = f"; e.g. {split.skip_examples[0]}" if split.skip_examples else ""
        raise DataError(f"no usable pair in the input ({reasons}){example}", file=str(file))
    store.refresh()  # the build committed through its own handle
    served = store.split_rows(report.dataset, split.split, parse=report.parse)
    if served.rows.is_empty():
        examples = _parse_examples(report, 1)
        raise DataError("no pair of the input can be parsed" + (f"; e.g. {examples[0]}" if examples else ""))
    return served


def copy_resources(store: Store, entries: Sequence[EntryInfo], source: StoreRef | str | None) -> list[str]:
    """Copy into ``store`` the resources of ``source`` that the entries' parameters name and
    ``store`` lacks; returns their keys. A resource's key is its content's, so the copy has
    the same key and the entry parameters naming it stay valid. A ``source`` that cannot be
    opened copies nothing (models whose entries name no resource need none)."""
    wanted = [v for e in entries for v in e.params.values() if isinstance(v, str) and _RESOURCE_KEY.fullmatch(v)]
    have = {s.target["key"] for s in store.segments("resource")}
    missing = [k for k in dict.fromkeys(wanted) if k not in have]
    if not missing or source is None or StoreRef.of(source).location == store.location:
        return []
    try:
        src = open_store(source, create=False)
    except PriorError:  # moved or offline: an entry that needs a resource fails when it reads it
        return []
    held = {s.target["key"] for s in src.segments("resource")}
    copied = []
    for key in missing:
        if key not in held:  # a parameter that only looks like a key (a content hash)
            continue
        res = src.read_resource(key)
        new = store.write_resource(res.kind, res.table, arrays=res.arrays, meta=res.meta)
        if new != key:
            raise StoreError(f"resource {key} of {src.location} copied into {store.location} has key {new}: "
                             "its content changed in the copy")
        copied.append(key)
    return copied

"""Which feature entry a read uses: the one contract behind ``Store.frame``, ``prior show``,
``prior store frame``, ``prior train``, ``prior eval`` and the Python API.

A store may hold several entries of one feature: the default and variants built with
``prior build -o FEATURE.NAME=VALUE``, entries computed from another parse, entries that
cover other datasets. A read names what it wants and gets exactly that, or an error that
lists the candidates:

- no parameters: the *default* entry, the one a build without ``-o`` makes (an entry with no
  non-default options; never "the latest");
- ``params`` (``--feature-param K=V``, ``-o FEATURE.K=V``): entries whose options or resolved
  parameters equal every given value, and whose every non-default option was asked for
  (``-o dep.nu=0.25`` picks the entry that differs from the default in ``nu`` alone);
- ``entry``: a key prefix picks one entry directly.

With a dataset and split, exactly one candidate must hold every item of that split (every
pair for a pair feature, both sentences of every pair for a sentence feature). An entry that
holds some but not all of them is an error naming how many are missing and the ``prior build``
line that adds them, replayed from what the store recorded of the builds that made the
entry, the split's pairs and the parse. Several complete candidates are an error that lists
each with what distinguishes it and the flag that picks it.

Parses are selected the same way (:func:`select_parse`). A read of a feature uses the parse
its entry was computed from. A read without a feature (the ``bert`` and ``cda`` models,
``prior embed train``) uses the parse of the parser it names (``--parser``), by default the
parse of the default parser (``biaffine``), and a checkpoint's read the parse it recorded;
never "the latest parse". The chosen parse must hold every sentence read, otherwise the error
names how many are missing, the ``prior build`` line that parses them and the parses present
that do hold them, with the ``--parser`` value that picks each.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prior.errors import NotFoundError
from prior.featurestore.rebuild import build_recipe, feature_recipe, pairs_recipe, parser_spec, recorded_spec
from prior.featurestore.recipe import (
    EntryPick,
    FeatureRecipe,
    Recipe,
    render,
    render_entry_pick,
    render_parse_pick,
)
from prior.featurestore.splits import checked_rows, leave_out_skipped
from prior.hints import option

if TYPE_CHECKING:
    import polars as pl

    from prior.featurestore.catalog import Segment
    from prior.featurestore.entries import EntryInfo
    from prior.featurestore.segments import SegmentStore

# the recipes of what a store lacks live in `prior.featurestore.rebuild`; named here too, where
# readers of the selection contract look for them
__all__ = ["DEFAULT_PARSER", "AmbiguousEntryError", "Coverage", "EntrySelectionError", "IncompleteEntryError",
           "ParseSelectionError", "Request", "build_recipe", "feature_recipe", "pairs_recipe", "parse_of",
           "parser_spec", "recorded_parsers", "recorded_spec", "select_entry", "select_parse"]


# The parser a build uses and a read without a feature reads the parse of, unless told otherwise
# (the papers parse with Dozat & Manning's biaffine parser; "spacy" stays available).
DEFAULT_PARSER = "biaffine"


class EntrySelectionError(NotFoundError):
    """No single entry of a feature matches what a read asked for; ``recipe``: the build that
    makes one, when the message names it."""

    def __init__(self, message: str, *, recipe: Recipe | None = None) -> None:
        super().__init__(message)
        self.recipe = recipe


class AmbiguousEntryError(EntrySelectionError):
    """Several entries match and hold the requested split: the read must say which."""


class IncompleteEntryError(EntrySelectionError):
    """The entry asked for lacks some items of the requested split."""

    def __init__(self, message: str, *, entry: EntryInfo, missing: int, needed: int, recipe: Recipe) -> None:
        super().__init__(message, recipe=recipe)
        self.entry, self.missing, self.needed = entry, missing, needed

    @property
    def command(self) -> str:
        """The build that adds what is missing, as the installed renderer writes it."""
        assert self.recipe is not None
        return render(self.recipe)


@dataclass(frozen=True)
class Request:
    """What a read asks for: parameters, or an entry key prefix, and optionally the parse."""

    params: Mapping[str, Any] | None = None
    entry: str | None = None
    parse: str | None = None

    def describe(self) -> str:
        if self.entry:
            return f"entry {self.entry}"
        if self.params:
            return "params " + ", ".join(f"{k}={_show(v)}" for k, v in sorted(self.params.items()))
        return "default params"


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def matches(entry: EntryInfo, params: Mapping[str, Any] | None) -> bool:
    """``entry`` has every given value (as an option or a resolved parameter) and deviates from
    its feature's defaults only where asked."""
    params = params or {}
    options = entry.options
    for key, value in params.items():
        if key in options:
            if options[key] != value:
                return False
        elif key not in entry.params or entry.params[key] != value:
            return False
    return all(key in params for key in options)


def known_keys(entries: Sequence[EntryInfo]) -> set[str]:
    """Names a read may select these entries by: their options and resolved parameters."""
    return {k for e in entries for k in (*e.params, *e.options)}


# --------------------------------------------------------------------------- coverage
class Coverage:
    """Which keys each entry holds and which each split needs, read once per selection. A
    split's rows are checked against its manifest (`prior.featurestore.splits`); what an entry
    needs of them leaves out the pairs its parse's build skipped. A split's index holds the
    keys as numbers and reads its splits as numbered splits instead of frames
    (`prior.featurestore.numbered_split.NumberedCoverage`)."""

    def __init__(self, store: SegmentStore) -> None:
        self.store = store
        self._held: dict[str, tuple[list[Segment], pl.DataFrame]] = {}
        self._need: dict[tuple[str, str, str, str | None], pl.Series] = {}
        self._rows: dict[tuple[str, str], pl.DataFrame] = {}
        self._skipped: dict[str, dict[str, str]] = {}

    def rows(self, dataset: str, split: str) -> pl.DataFrame:
        """The split's pair rows, checked against its manifest (`splits.checked_rows`), read once
        per selection."""
        if (dataset, split) not in self._rows:
            self._rows[dataset, split] = checked_rows(self.store, dataset, split)
        return self._rows[dataset, split]

    def held(self, entry: EntryInfo) -> tuple[list[Segment], pl.DataFrame]:
        """The entry's segments and the keys they hold with where each lies
        (`SegmentStore.entry_items`), read once per selection."""
        if entry.key not in self._held:
            self._held[entry.key] = self.store.entry_items(entry)
        return self._held[entry.key]

    def skipped(self, parse: str | None) -> dict[str, str]:
        """The sentences ``parse``'s builds skipped → why (`SegmentStore.skipped_sentences`)."""
        if parse is None:
            return {}
        if parse not in self._skipped:
            self._skipped[parse] = self.store.skipped_sentences(parse)
        return self._skipped[parse]

    def _columns(self, dataset: str, split: str, scope: str, parse: str | None) -> list[pl.Series]:
        """The split's key columns an entry of ``scope`` on ``parse`` holds items of (the pairs'
        keys, or both sentences' keys), the pairs its build skipped left out; not distinct."""
        rows, _ = leave_out_skipped(self.rows(dataset, split), self.skipped(parse))
        return [rows["pair_key"]] if scope == "pair" else [rows["key_a"], rows["key_b"]]

    def needed(self, dataset: str, split: str, scope: str, parse: str | None) -> pl.Series:
        """The distinct keys of the split an entry of ``scope`` on ``parse`` must hold."""
        key = (dataset, split, scope, parse)
        if key not in self._need:
            from prior.featurestore.key_index import distinct_keys

            self._need[key] = distinct_keys(*self._columns(dataset, split, scope, parse))
        return self._need[key]

    def lacking(self, entry: EntryInfo, dataset: str, split: str) -> int:
        """How many distinct keys of the split the entry lacks."""
        have = self.held(entry)[1]["key"]
        need = self.needed(dataset, split, entry.scope, entry.parse)
        # an anti-join: 2.4x faster than `is_in` on 500k keys alone (both sides hashed in parallel)
        return need.to_frame("key").join(have.to_frame("key"), on="key", how="anti").height

    def missing(self, entry: EntryInfo, dataset: str, split: str) -> tuple[int, int]:
        """(items of the split the entry lacks, items the split needs of it)."""
        return self.lacking(entry, dataset, split), self.needed(dataset, split, entry.scope, entry.parse).len()

    def forget_split(self, dataset: str, split: str) -> None:
        """Let go of the split's rows and the distinct keys `needed` made of them (a reader that has
        taken what it needs of them: their memory goes with the last reference)."""
        self._rows.pop((dataset, split), None)
        for key in [k for k in self._need if k[:2] == (dataset, split)]:
            del self._need[key]

    def covered_splits(self, entry: EntryInfo) -> list[str]:
        """``dataset/split`` names of every split in the store the entry holds completely."""
        return [f"{d}/{s}" for d, s in self.store.datasets() if self.lacking(entry, d, s) == 0]


# --------------------------------------------------------------------------- selection
def _label(entry: EntryInfo) -> str:
    if not entry.options:
        return "default"
    return " ".join(f"{k}={_show(v)}" for k, v in sorted(entry.options.items()))


def entries_line(entries: Sequence[EntryInfo]) -> str:
    """What a read shows, for a person: each entry's spec, key prefix and non-default options."""
    return "; ".join(f"{e.spec} entry {e.key[:12]} {_label(e)}" for e in entries)


def pick_flags(entry: EntryInfo) -> str:
    """How a read selects ``entry``: its options, and always its key prefix."""
    return render_entry_pick(EntryPick(entry.built_by or entry.name, dict(entry.options), entry.key[:12]))


def describe_entries(entries: Sequence[EntryInfo], coverage: Coverage) -> str:
    """One line per entry: key prefix, spec, non-default options, parse, splits held, flags."""
    parses = {e.parse for e in entries}
    lines = []
    for e in entries:
        covers = coverage.covered_splits(e)
        parse = f"  parse {str(e.parse)[:8]}" if len(parses) > 1 else ""
        lines.append(f"  {e.key[:12]}  {e.spec}  {_label(e)}{parse}  holds "
                     f"{', '.join(covers) if covers else 'no complete split'}  → {pick_flags(e)}")
    return "\n".join(lines)


def select_entry(store: SegmentStore, name: str, *, dataset: str | None = None, split: str | None = None,
                 request: Request | None = None, version: int | None = None,
                 built_by: str | None = None, coverage: Coverage | None = None) -> EntryInfo:
    """The one entry of feature ``name`` that ``request`` names and that holds every item of
    ``dataset``/``split`` (module docstring). Without a dataset the entry must be the only
    match in the store. ``built_by`` names the build feature for hints when the store has no
    entry of ``name`` yet (``dep`` for ``tfidf``)."""
    from prior.layouts.views import VIEWS

    request = request or Request()
    coverage = coverage or Coverage(store)
    built_by = built_by or (VIEWS[name].built_by if name in VIEWS else None)
    present = [e for e in store.entries(name) if version is None or e.version == version]
    if request.entry:
        found = [e for e in present if e.key.startswith(request.entry)]
        if len(found) > 1:
            raise AmbiguousEntryError(f"entry prefix {request.entry!r} matches {len(found)} {name!r} entries; "
                                      f"give more characters:\n{describe_entries(found, coverage)}")
    else:
        found = [e for e in present if (request.parse is None or e.parse == request.parse)
                 and matches(e, request.params)]
    if dataset is None or split is None:
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise AmbiguousEntryError(f"{store.location} has {len(found)} {name!r} entries with "
                                      f"{request.describe()}; pick one:\n{describe_entries(found, coverage)}")
        raise _not_found(store, name, present, request, coverage, None, None, built_by)

    lacks = {e.key: coverage.lacking(e, dataset, split) for e in found}
    complete = [e for e in found if lacks[e.key] == 0]
    if len(complete) == 1:
        return complete[0]
    if len(complete) > 1:
        raise AmbiguousEntryError(
            f"{store.location} has {len(complete)} {name!r} entries with {request.describe()} that hold "
            f"{dataset}/{split}; pick one:\n{describe_entries(complete, coverage)}")
    # the split's distinct keys counted only here, where some entry lacks some of them
    partial = [e for e in found if lacks[e.key] < coverage.needed(dataset, split, e.scope, e.parse).len()]
    target = found[0] if len(found) == 1 else partial[0] if len(partial) == 1 else None
    if target is not None:
        missing, needed = lacks[target.key], coverage.needed(dataset, split, target.scope, target.parse).len()
        what = "pairs" if target.scope == "pair" else "sentences"
        recipe = build_recipe(store, dataset=dataset, split=split,
                              features=[feature_recipe(target, name, built_by)], parse=target.parse)
        message = (f"entry {target.spec} {target.key[:12]} ({_label(target)}) lacks {missing} of the {needed} "
                   f"{what} of {dataset}/{split}; add them with\n  {render(recipe)}")
        others = [e for e in present if e not in found and coverage.lacking(e, dataset, split) == 0]
        if others:
            message += f"\nor read an entry that holds {dataset}/{split}:\n{describe_entries(others, coverage)}"
        raise IncompleteEntryError(message, entry=target, missing=missing, needed=needed, recipe=recipe)
    raise _not_found(store, name, present, request, coverage, dataset, split, built_by)


def _not_found(store: SegmentStore, name: str, present: Sequence[EntryInfo], request: Request,
               coverage: Coverage, dataset: str | None, split: str | None,
               built_by: str | None) -> EntrySelectionError:
    where = f" that holds {dataset}/{split}" if dataset else ""
    message = f"{store.location} has no {name!r} entry with {request.describe()}{where}"
    recipe = None
    if present:
        message += f"; present:\n{describe_entries(present, coverage)}"
    else:
        held = sorted({e.name for e in store.entries()})
        message += f" (it holds no {name!r} entry at all; features it holds: {', '.join(held) or 'none'})"
    if not request.entry:
        unknown = sorted(set(request.params or {}) - known_keys(present))
        if unknown and present:
            known = ", ".join(sorted(known_keys(present))) or "none"
            message += f"\n(no {name!r} entry has a parameter {', '.join(unknown)}; known: {known})"
        built = next((e.built_by for e in present if e.built_by), None)
        recipe = build_recipe(store, dataset=dataset, split=split, parse=request.parse,
                              features=[feature_recipe(None, name, built or built_by, request.params)])
        message += f"\nbuild it with\n  {render(recipe)}"
    return EntrySelectionError(message, recipe=recipe)


# --------------------------------------------------------------------------- views
def split_params(names: Sequence[str], params: Mapping[str, Any] | None,
                 entries_of: Callable[[str], Sequence[EntryInfo]]) -> list[dict[str, Any]]:
    """The given parameters each of a view's entries is selected by: a key goes to every entry
    name whose entries know it; a key no entry knows goes to the first (whose selection then
    fails, naming the known keys and the build line that makes such an entry)."""
    params = dict(params or {})
    known = {n: known_keys(entries_of(n)) for n in names}
    out = [{k: v for k, v in params.items() if k in known[n]} for n in names]
    out[0].update({k: v for k, v in params.items() if not any(k in known[n] for n in names)})
    return out


# --------------------------------------------------------------------------- parses
class ParseSelectionError(NotFoundError):
    """No single parse holds the sentences a read without a feature needs; ``recipe``: the
    build that parses them, when the message names it."""

    def __init__(self, message: str, *, recipe: Recipe | None = None) -> None:
        super().__init__(message)
        self.recipe = recipe


def recorded_parsers(store: SegmentStore) -> dict[str, str]:
    """Parse id → the parser spec that made it, in the order the parses were first written."""
    out: dict[str, str] = {}
    for seg in store.segments("parses"):
        out.setdefault(seg.target["parse"], recorded_spec(seg.target))
    return out


def select_parse(store: SegmentStore, keys: Sequence[str], *, parse: str | None = None, parser: str | None = None,
                 dataset: str | None = None, split: str | None = None) -> str:
    """The parse a read of the sentences ``keys`` (of ``dataset``/``split``, for messages)
    uses when no feature entry decides it: ``parse`` (an id or a prefix: what a checkpoint
    recorded), else the parse whose recorded parser spec is ``parser`` (default
    :data:`DEFAULT_PARSER`). Exactly one such parse must hold every key but those its builds
    skipped (their pairs are left out of the read: `prior.featurestore.splits`); the error
    otherwise names the missing count, the build line that parses them (every split of the
    dataset the store holds, so that the reads that follow, an evaluation's test split
    included, find them too) and the parses that hold them."""
    recorded = recorded_parsers(store)
    wanted = list(dict.fromkeys(keys))
    if parse is None:
        parser = parser or DEFAULT_PARSER
    candidates, asked = _named_parses(recorded, parse, parser or DEFAULT_PARSER)
    if parse is None and parser == DEFAULT_PARSER:
        asked += f" (the default; pick another with {option('parser')})"
    lacking: dict[str, int] = {}

    def lacks(p: str) -> int:  # the other parses are read only for the error message
        if p not in lacking:
            held = store.parsed_keys(p)
            skipped = store.skipped_sentences(p)
            lacking[p] = sum(1 for k in wanted if k not in held and k not in skipped)
        return lacking[p]

    complete = [p for p in candidates if lacks(p) == 0]
    where = f"{dataset}/{split}" if dataset and split else "the sentences read"
    if len(complete) == 1:
        return complete[0]
    if len(complete) > 1:
        raise ParseSelectionError(f"{store.location} has {len(complete)} parses that are {asked} and hold {where}; "
                                  f"pick one with {option('parse')}:\n{describe_parses(complete, recorded)}")
    if candidates:
        best = min(candidates, key=lacks)
        named = "" if parse is not None and best.startswith(parse[:12]) else f", {best[:12]}"
        message = f"{lacking[best]} of the {len(wanted)} sentences of {where} are not in the {asked}{named}"
    else:
        message = f"{store.location} holds no {asked}"
    # a parse the store holds: its recorded parser (build_recipe marks one that loads a
    # pickle); none: the reader's own parser
    recipe = None
    if candidates or parser is not None:
        splits = [s for d, s in store.datasets() if d == dataset] if dataset is not None else []
        every = ",".join(dict.fromkeys([*(([split]) if split else []), *splits])) or split
        recipe = build_recipe(store, dataset=dataset, split=every, features=[FeatureRecipe("sdoi")],
                              **({"parse": candidates[0]} if candidates else {"parser": parser}))
        message += f"; parse them with\n  {render(recipe)}"
    others = [p for p in recorded if p not in candidates and lacks(p) == 0]
    if others:
        message += f"\nor read a parse that holds {where}:\n{describe_parses(others, recorded)}"
    raise ParseSelectionError(message, recipe=recipe)


def _named_parses(recorded: Mapping[str, str], parse: str | None, parser: str) -> tuple[list[str], str]:
    """The parses ``parse`` (an id prefix) names, else those ``parser`` made, and how to say
    what was asked."""
    if parse is not None:
        return [p for p in recorded if p.startswith(parse)], f"parse {parse[:12]}"
    return [p for p, spec in recorded.items() if spec == parser], f"parse of parser {parser}"


def parse_of(store: SegmentStore, *, parse: str | None = None, parser: str | None = None) -> str:
    """The one parse ``parse`` (an id prefix) names, else the one made with ``parser`` (a
    parser spec; default :data:`DEFAULT_PARSER`), whatever sentences it holds: what a read of
    every parsed sentence uses (``prior embed train``)."""
    recorded = recorded_parsers(store)
    found, asked = _named_parses(recorded, parse, parser or DEFAULT_PARSER)
    if len(found) == 1:
        return found[0]
    if found:
        raise ParseSelectionError(f"{store.location} has {len(found)} parses matching {asked}; pick one "
                                  f"with {option('parse')}:\n{describe_parses(found, recorded)}")
    held = f"; parses present:\n{describe_parses(list(recorded), recorded)}" if recorded else " (it holds no parse)"
    raise ParseSelectionError(f"{store.location} holds no {asked}{held}")


def describe_parses(parses: Sequence[str], recorded: Mapping[str, str]) -> str:
    """One line per parse: id prefix, parser, and the option that picks it."""
    lines = []
    for p in parses:
        spec = recorded.get(p)
        pick = render_parse_pick(spec, p[:12])
        lines.append(f"  {p[:12]}  parser {spec}  → {pick}")
    return "\n".join(lines)

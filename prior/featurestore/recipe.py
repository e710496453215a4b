"""What a build was asked, as data: the record a store keeps of each build, and how errors say
"build this".

A :class:`Recipe` names the dataset source (a registered name or a file, with the reader's
options), the split, the row limit, the features with their non-default options and input
files, the parser (its spec text, e.g. ``biaffine`` or ``spacy:en_core_web_sm``) and the store.
Pairs segments record the recipe that read them (metadata key ``"recipe"``), feature entries
the part that makes them (their features); an error that tells how to add what is missing
carries a recipe composed from those records.

Nothing below the command line spells a flag: the text of a recipe comes from the renderer
installed with :func:`set_renderer` (the ``prior`` command installs one that writes a ``prior
build …`` line). Without one, :class:`PlainRenderer` describes a recipe in words, for library
users. Stores written before recipes were recorded hold a list of command-line arguments
instead (``"build_args"``); :func:`recipe_from_build_args` reads that frozen historic format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

#: a file's reader options when not told otherwise (GLUE-style column names)
DEFAULT_COLUMNS: dict[str, str | None] = {"text_a": "sentence1", "text_b": "sentence2", "label": "label",
                                          "label_kind": "class"}


@dataclass(frozen=True)
class FeatureRecipe:
    """One feature of a build: its build name (``dep`` makes ``tfidf`` too), its options that
    differ from the defaults, and the input files it reads (``embeddings``: a path)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    inputs: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.options:
            out["options"] = dict(sorted(self.options.items()))
        if self.inputs:
            out["inputs"] = dict(self.inputs)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FeatureRecipe:
        return cls(name=str(d["name"]), options=dict(d.get("options") or {}),
                   inputs={str(k): str(v) for k, v in (d.get("inputs") or {}).items()})


@dataclass(frozen=True)
class Recipe:
    """What a build is asked to do (every field optional: a record holds what it knows).

    ``dataset``: a registered name or a file's absolute path; ``name``: the dataset's name in
    the store when not its own; ``data_dir``: where full copies of a named dataset live;
    ``columns``: a file's reader options that differ from :data:`DEFAULT_COLUMNS`.
    ``recorded_parser_loads_code``: ``parser`` was read from a store's records and loads a
    pickle (a renderer warns; never recorded)."""

    dataset: str | None = None
    name: str | None = None
    data_dir: str | None = None
    columns: Mapping[str, str | None] = field(default_factory=dict)
    split: str | None = None
    limit: int | None = None
    features: tuple[FeatureRecipe, ...] = ()
    parser: str | None = None
    store: str | None = None
    recorded_parser_loads_code: bool = False

    def with_(self, **changes: Any) -> Recipe:
        return replace(self, **changes)

    def source(self) -> Recipe:
        """Only how the dataset is read (what a split's other records may reuse)."""
        return Recipe(dataset=self.dataset, name=self.name, data_dir=self.data_dir, columns=self.columns)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict holding only the fields that are set."""
        out: dict[str, Any] = {}
        for key in ("dataset", "name", "data_dir", "split", "limit", "parser", "store"):
            if (value := getattr(self, key)) is not None:
                out[key] = value
        if self.columns:
            out["columns"] = dict(self.columns)
        if self.features:
            out["features"] = [f.to_dict() for f in self.features]
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Recipe:
        limit = d.get("limit")
        return cls(dataset=d.get("dataset"), name=d.get("name"), data_dir=d.get("data_dir"),
                   columns=dict(d.get("columns") or {}), split=d.get("split"),
                   limit=int(limit) if limit is not None else None,
                   features=tuple(FeatureRecipe.from_dict(f) for f in d.get("features") or ()),
                   parser=d.get("parser"), store=d.get("store"))


def read_recorded(record: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> Recipe | None:
    """The recipe a segment's metadata or an entry's target records: its ``"recipe"``, else
    its historic ``"build_args"`` (``options``: the entry's recorded options), else None."""
    if isinstance(value := record.get("recipe"), Mapping):
        return Recipe.from_dict(value)
    if args := record.get("build_args"):
        return recipe_from_build_args([str(a) for a in args], options)
    return None


# --------------------------------------------------------------------------- the historic format
# Stores written before recipes were recorded keep, with a split's pairs and with each feature
# entry, the command-line arguments that read or made them. That format is frozen: these are
# the only arguments it ever held ("-o" values are taken from the entry's recorded options).
_OLD_SOURCE = {"--dataset": "dataset", "--name": "name", "--data-dir": "data_dir"}
_OLD_COLUMNS = {"--text-a": "text_a", "--text-b": "text_b", "--label": "label", "--label-kind": "label_kind"}
_OLD_INPUTS = {"--embeddings": "embeddings"}


def recipe_from_build_args(args: Sequence[str], options: Mapping[str, Any] | None = None) -> Recipe:
    """The recipe an old ``"build_args"`` list records: ``--dataset X [--name N] [--data-dir D]
    [--text-a C …]`` (a split's pairs) or ``--features F [-o F.K=V …] [--embeddings P]`` (an
    entry, whose options are ``options``)."""
    fields: dict[str, Any] = {}
    columns: dict[str, str | None] = {}
    inputs: dict[str, str] = {}
    feature = None
    for flag, value in zip(args[::2], args[1::2]):
        if flag in _OLD_SOURCE:
            fields[_OLD_SOURCE[flag]] = value
        elif flag in _OLD_COLUMNS:
            columns[_OLD_COLUMNS[flag]] = value or None
        elif flag in _OLD_INPUTS:
            inputs[_OLD_INPUTS[flag]] = value
        elif flag == "--features":
            feature = value
    features = (FeatureRecipe(feature, dict(options or {}), inputs),) if feature else ()
    return Recipe(columns=columns, features=features, **fields)


# --------------------------------------------------------------------------- rendering
@dataclass(frozen=True)
class EntryPick:
    """How a read picks one feature entry: by the options it was built with (when any), or by
    its key prefix."""

    feature: str
    options: Mapping[str, Any]
    entry: str


class Renderer(Protocol):
    """Text for a recipe and for the picks an entry- or parse-selection error offers."""

    def recipe(self, recipe: Recipe) -> str: ...

    def entry_pick(self, pick: EntryPick) -> str: ...

    def options(self, feature: str, options: Mapping[str, Any]) -> str: ...

    def parse_pick(self, parser: str | None, parse: str) -> str: ...


def _value(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


class PlainRenderer:
    """Words for library users: what to build, not a command line."""

    def recipe(self, recipe: Recipe) -> str:
        parts = ["a build" + (f" of dataset {recipe.dataset}" if recipe.dataset else "")]
        if recipe.name:
            parts.append(f"named {recipe.name}")
        if recipe.columns:
            parts.append("columns " + ", ".join(f"{k}={v}" for k, v in recipe.columns.items()))
        if recipe.limit is not None:
            parts.append(f"limit {recipe.limit}")
        if recipe.split:
            parts.append(f"split {recipe.split}")
        for f in recipe.features:
            opts = ", ".join(f"{k}={_value(v)}" for k, v in sorted(f.options.items()))
            inputs = ", ".join(f"{k} {v}" for k, v in f.inputs.items())
            given = "; ".join(x for x in (opts, inputs) if x)
            parts.append(f"feature {f.name}" + (f" with {given}" if given else ""))
        if recipe.parser:
            parts.append(f"parser {recipe.parser}")
            if recipe.recorded_parser_loads_code:
                parts.append("(a parser the store recorded that loads a pickle: use it only if you made that file)")
        if recipe.store:
            parts.append(f"into {recipe.store}")
        return " ".join(parts)

    def entry_pick(self, pick: EntryPick) -> str:
        opts = self.options(pick.feature, pick.options)
        return (f"options {opts} or " if opts else "") + f"entry {pick.entry}"

    def options(self, feature: str, options: Mapping[str, Any]) -> str:
        return ", ".join(f"{feature}.{k}={_value(v)}" for k, v in sorted(options.items()))

    def parse_pick(self, parser: str | None, parse: str) -> str:
        return f"parser {parser}" if parser else f"parse {parse}"


_renderer: Renderer = PlainRenderer()


def set_renderer(renderer: Renderer) -> None:
    """Make ``renderer`` write every recipe and pick an error message shows from now on."""
    global _renderer
    _renderer = renderer


def render(recipe: Recipe) -> str:
    return _renderer.recipe(recipe)


def render_entry_pick(pick: EntryPick) -> str:
    return _renderer.entry_pick(pick)


def render_options(feature: str, options: Mapping[str, Any]) -> str:
    """A feature's build options as the user gives them."""
    return _renderer.options(feature, options)


def render_parse_pick(parser: str | None, parse: str) -> str:
    return _renderer.parse_pick(parser, parse)

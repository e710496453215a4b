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
users.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from prior.featurestore.names import name_problem
from prior.featurestore.parse_columns import ANNOTATIONS
from prior.parser_spec import ParserSpec, ParserSpecError

#: a file's reader options when not told otherwise (GLUE-style column names); the only reader
#: options a recipe may record
DEFAULT_COLUMNS: dict[str, str | None] = {"text_a": "sentence1", "text_b": "sentence2", "label": "label",
                                          "label_kind": "class"}
LABEL_KINDS = ("class", "score")
#: the input files a feature's recipe may record
INPUT_FILES = ("embeddings",)


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
    #: parse annotations to make beyond those the features read (a rebuild of a dropped parse
    #: that held them: `prior.featurestore.missing`)
    annotate: tuple[str, ...] = ()
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
        if self.annotate:
            out["annotate"] = list(self.annotate)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Recipe:
        limit = d.get("limit")
        return cls(dataset=d.get("dataset"), name=d.get("name"), data_dir=d.get("data_dir"),
                   columns=dict(d.get("columns") or {}), split=d.get("split"),
                   limit=int(limit) if limit is not None else None,
                   features=tuple(FeatureRecipe.from_dict(f) for f in d.get("features") or ()),
                   parser=d.get("parser"), store=d.get("store"), annotate=tuple(d.get("annotate") or ()))


def read_recorded(record: Mapping[str, Any]) -> Recipe | None:
    """The recipe a segment's metadata or an entry's target records (its ``"recipe"``), else
    None. A recorded recipe that fails :func:`recorded_recipe_problem` is None too: nothing read
    from a store is rendered unchecked (the catalog reports such a record as damaged)."""
    if recorded_recipe_problem(record) is not None:
        return None
    if isinstance(value := record.get("recipe"), Mapping):
        return Recipe.from_dict(value)
    return None


# --------------------------------------------------------------------------- checking recorded recipes
# A store is data someone may hand you: a recipe it records is rendered into lines a user runs,
# so every recorded value is checked against the schema before anything renders it.
_RECIPE_FIELDS = frozenset({"dataset", "name", "data_dir", "columns", "split", "limit", "features", "parser",
                            "store", "annotate"})
_FEATURE_FIELDS = frozenset({"name", "options", "inputs"})
_FEATURE_NAME = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9_]+)*")
_OPTION_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_SPLIT = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+-]*(,[A-Za-z0-9_+][A-Za-z0-9_.+-]*)*")
MAX_TEXT = 4096


def text_problem(value: object) -> str | None:
    """Why ``value`` cannot be a recorded path, name or column (a non-empty string of at most
    :data:`MAX_TEXT` characters, no control character, not starting with ``-``), or None."""
    if not isinstance(value, str):
        return f"is a {type(value).__name__}, not a string"
    if not value or len(value) > MAX_TEXT:
        return "is empty" if not value else f"is longer than {MAX_TEXT} characters"
    if value.startswith("-"):
        return "starts with '-'"
    if _has_control(value):
        return "holds a control character"
    return None


def _option_value_problem(value: object) -> str | None:
    """Feature options take single values: JSON scalars, texts without control characters."""
    if value is None or isinstance(value, bool | int | float):
        return None
    if isinstance(value, str):
        return "holds a control character" if _has_control(value) else None
    return f"is a {type(value).__name__}, not a single value"


def _has_control(value: str) -> bool:
    return any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in value)


def options_problem(options: object) -> str | None:
    """What is wrong with a feature's recorded options (option names by their pattern; values
    JSON scalars, texts without control characters), or None."""
    if not isinstance(options, Mapping):
        return "are not an object"
    for key, value in options.items():
        if not isinstance(key, str) or not _OPTION_NAME.fullmatch(key):
            return f"name {key!r}, which is no option name"
        if (problem := _option_value_problem(value)) is not None:
            return f"give {key} a value that {problem}"
    return None


def _feature_problem(raw: object) -> str | None:
    if not isinstance(raw, Mapping):
        return "is not an object"
    if unknown := set(raw) - _FEATURE_FIELDS:
        return f"has unknown field(s) {sorted(map(str, unknown))}"
    name = raw.get("name")
    if not isinstance(name, str) or not _FEATURE_NAME.fullmatch(name):
        return f"has a name {name!r} that is no feature name"
    if (problem := options_problem(raw.get("options") or {})) is not None:
        return f"has options that {problem}"
    inputs = raw.get("inputs") or {}
    if not isinstance(inputs, Mapping):
        return "has inputs that are not an object"
    for key, value in inputs.items():
        if key not in INPUT_FILES:
            return f"has an input {key!r} that is none of {', '.join(INPUT_FILES)}"
        if (problem := text_problem(value)) is not None:
            return f"has an input {key} whose value {problem}"
    return None


def recipe_problem(raw: object) -> str | None:
    """What is wrong with a recipe's JSON form (:meth:`Recipe.to_dict`) as a store recorded
    it, or None: known fields only; the dataset, data dir, store and columns plain texts (no
    control character, none starting with ``-``); reader options among
    :data:`DEFAULT_COLUMNS`; names, splits and feature and option names by their patterns; a
    positive limit; a parser spec that parses."""
    if not isinstance(raw, Mapping):
        return "is not an object"
    if unknown := set(raw) - _RECIPE_FIELDS:
        return f"has unknown field(s) {sorted(map(str, unknown))}"
    for key in ("dataset", "name", "data_dir", "store", "parser"):
        if key in raw and (problem := text_problem(raw[key])) is not None:
            return f"has a {key} that {problem}"
    if "name" in raw and (problem := name_problem(raw["name"])) is not None:
        return f"has a name that {problem}"
    if "parser" in raw:
        try:
            ParserSpec.parse(raw["parser"])
        except ParserSpecError:
            return f"has a parser {raw['parser']!r} that is no parser spec"
    if "split" in raw and not (isinstance(raw["split"], str) and _SPLIT.fullmatch(raw["split"])):
        return f"has a split {raw['split']!r} that is no split name"
    if "limit" in raw and not (type(raw["limit"]) is int and raw["limit"] > 0):
        return f"has a limit {raw['limit']!r} that is no positive integer"
    if "annotate" in raw and not (isinstance(raw["annotate"], list) and set(raw["annotate"]) <= set(ANNOTATIONS)):
        return f"has annotations {raw['annotate']!r} that are not among {', '.join(ANNOTATIONS)}"
    columns = raw.get("columns") or {}
    if not isinstance(columns, Mapping):
        return "has columns that are not an object"
    for key, value in columns.items():
        if key not in DEFAULT_COLUMNS:
            return f"has a reader option {key!r} that is none of {', '.join(DEFAULT_COLUMNS)}"
        if value is not None and (problem := text_problem(value)) is not None:
            return f"has a column {key} that {problem}"
        if key == "label_kind" and value not in LABEL_KINDS:
            return f"has a label_kind {value!r} that is none of {', '.join(LABEL_KINDS)}"
    features = raw.get("features") or []
    if not isinstance(features, list):
        return "has features that are not a list"
    for f in features:
        if (problem := _feature_problem(f)) is not None:
            return f"has a feature that {problem}"
    return None


def recorded_recipe_problem(record: Mapping[str, Any]) -> str | None:
    """What is wrong with the recipe a segment's metadata or an entry's target records (its
    ``"recipe"``), or None (also when it records none)."""
    if "recipe" in record:
        problem = recipe_problem(record["recipe"])
        return None if problem is None else f"records a recipe that {problem}"
    return None


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

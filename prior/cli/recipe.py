"""A recipe as the ``prior build …`` line that makes it, and the read flags that pick an entry
or a parse: the one place that spells these flags for messages. ``prior.cli`` installs
:class:`CommandLines` when it is imported, so every error below the CLI prints runnable lines."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from prior.featurestore.recipe import EntryPick, Recipe, set_renderer
from prior.hints import set_option_namer
from prior.parser_spec import loads_code

#: appended to a line whose --parser value the store recorded and which loads a pickle (a shell
#: comment, so the line still runs as printed)
TRUST_NOTE = ("  # this --parser value comes from the store's records and loads a pickle, "
              "which can run code: run the line only if you made that file")
#: after the ``--parse ID`` offered for a parse whose recorded spec loads a pickle
PICK_BY_ID = " (its recorded parser loads a pickle, which can run code: picked by id, nothing is loaded)"


#: the `prior build` flag of each reader option and input file a recipe may hold (the recipe's
#: schema allows no other: `prior.featurestore.recipe.recipe_problem`)
COLUMN_FLAGS = {key: "--" + key.replace("_", "-") for key in ("text_a", "text_b", "label", "label_kind")}
INPUT_FLAGS = {"embeddings": "--embeddings"}


def _value(value: Any) -> str:
    """An option's value as ``-o F.K=V`` writes it: JSON, except a text that reads back as
    itself (`prior.cli.key_value.parse_value` reads JSON where the text parses, stripped)."""
    if isinstance(value, str) and value == value.strip():
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value)


def _option(flag: str, value: str) -> list[str]:
    """``flag`` and its value as arguments: one ``flag=value`` argument when the value could be
    read as an option of its own (it starts with ``-``), so no value ever becomes a flag."""
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def build_args(recipe: Recipe) -> list[str]:
    """The ``prior build`` arguments (without ``prior build``) of ``recipe``."""
    args: list[str] = []
    if recipe.dataset is not None:
        args += _option("--dataset", recipe.dataset)
    if recipe.name:
        args += _option("--name", recipe.name)
    if recipe.data_dir:
        args += _option("--data-dir", recipe.data_dir)
    for key, value in recipe.columns.items():
        args += _option(COLUMN_FLAGS[key], "" if value is None else str(value))
    if recipe.limit is not None:
        args += ["--limit", str(recipe.limit)]
    if recipe.split is not None:
        args += _option("--split", recipe.split)
    if recipe.features:
        args += _option("--features", ",".join(f.name for f in recipe.features))
    for f in recipe.features:
        for key, value in sorted(f.options.items()):
            args += ["-o", f"{f.name}.{key}={_value(value)}"]
        for key, path in f.inputs.items():
            args += _option(INPUT_FLAGS[key], path)
    if recipe.parser:
        args += _option("--parser", recipe.parser)
    if recipe.annotate:
        args += _option("--annotate", ",".join(recipe.annotate))
    if recipe.store is not None:
        args += _option("--store", recipe.store)
    return args


#: options whose flag is not ``--`` + the parameter's name in kebab case
OPTION_FLAGS = {"feature_options": "-o", "option": "-o"}


def flag_of(name: str) -> str:
    """The command line's flag of the option whose Python name is ``name``."""
    return OPTION_FLAGS.get(name) or "--" + name.replace("_", "-")


class CommandLines:
    """Recipes as ``prior build`` lines; picks as read flags; option names as flags."""

    def option(self, name: str, value: str | None = None) -> str:
        return flag_of(name) if value is None else shlex.join(_option(flag_of(name), value))

    def recipe(self, recipe: Recipe) -> str:
        line = shlex.join(["prior", "build", *build_args(recipe)])
        return line + TRUST_NOTE if recipe.recorded_parser_loads_code else line

    def entry_pick(self, pick: EntryPick) -> str:
        options = self.options(pick.feature, pick.options)
        return (options + " or " if options else "") + shlex.join(_option("--entry", pick.entry))

    def options(self, feature: str, options: Mapping[str, Any]) -> str:
        return shlex.join([arg for k, v in sorted(options.items()) for arg in ("-o", f"{feature}.{k}={_value(v)}")])

    def parse_pick(self, parser: str | None, parse: str) -> str:
        """``--parser SPEC`` for a parse whose recorded spec loads nothing; else ``--parse ID``,
        which picks the same parse by id without naming the spec (a read never loads a parser):
        a spec the store recorded that would load a pickle is never offered as a flag."""
        if parser and not loads_code(parser):
            return shlex.join(_option("--parser", parser))
        return shlex.join(["--parse", parse]) + (PICK_BY_ID if parser else "")


def install() -> None:
    lines = CommandLines()
    set_renderer(lines)
    set_option_namer(lines.option)

"""A recipe as the ``prior build …`` line that makes it, and the read flags that pick an entry
or a parse: the one place that spells these flags for messages. ``prior.cli`` installs
:class:`CommandLines` when it is imported, so every error below the CLI prints runnable lines."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from prior.featurestore.recipe import EntryPick, Recipe, set_renderer

#: appended to a line whose --parser value the store recorded and which loads a pickle (a shell
#: comment, so the line still runs as printed)
TRUST_NOTE = ("  # this --parser value comes from the store's records and loads a pickle, "
              "which can run code: run the line only if you made that file")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def build_args(recipe: Recipe) -> list[str]:
    """The ``prior build`` arguments (without ``prior build``) of ``recipe``."""
    args: list[str] = []
    if recipe.dataset is not None:
        args += ["--dataset", recipe.dataset]
    if recipe.name:
        args += ["--name", recipe.name]
    if recipe.data_dir:
        args += ["--data-dir", recipe.data_dir]
    for key, value in recipe.columns.items():
        args += [_flag(key), "" if value is None else str(value)]
    if recipe.limit is not None:
        args += ["--limit", str(recipe.limit)]
    if recipe.split is not None:
        args += ["--split", recipe.split]
    if recipe.features:
        args += ["--features", ",".join(f.name for f in recipe.features)]
    for f in recipe.features:
        for key, value in sorted(f.options.items()):
            args += ["-o", f"{f.name}.{key}={_value(value)}"]
        for key, path in f.inputs.items():
            args += [_flag(key), path]
    if recipe.parser:
        args += ["--parser", recipe.parser]
    if recipe.store is not None:
        args += ["--store", recipe.store]
    return args


class CommandLines:
    """Recipes as ``prior build`` lines; picks as read flags."""

    def recipe(self, recipe: Recipe) -> str:
        line = shlex.join(["prior", "build", *build_args(recipe)])
        return line + TRUST_NOTE if recipe.recorded_parser_loads_code else line

    def entry_pick(self, pick: EntryPick) -> str:
        options = self.options(pick.feature, pick.options)
        return (options + " or " if options else "") + f"--entry {pick.entry}"

    def options(self, feature: str, options: Mapping[str, Any]) -> str:
        return " ".join(f"-o {feature}.{k}={_value(v)}" for k, v in sorted(options.items()))

    def parse_pick(self, parser: str | None, parse: str) -> str:
        return f"--parser {shlex.quote(parser)}" if parser else f"--parse {parse}"


def install() -> None:
    set_renderer(CommandLines())

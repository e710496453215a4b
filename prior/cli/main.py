"""The `prior` command. Each command lives in its own module and only parses options.

Help is written by click's plain formatter (typer's ``rich_markup_mode=None``, which every
command and group below inherits): two columns whose description column keeps at least half of
an 80-column terminal, flags without a type label, and each command listed with its whole first
paragraph, wrapped, never cut (:class:`HelpGroup`).
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from prior.cli import embed as embed_cli
from prior.cli import parser as parser_cli
from prior.cli import store as store_cli
from prior.cli.build import build_cmd
from prior.cli.datasets import datasets_cmd
from prior.cli.env import env_cmd
from prior.cli.plugins import CODE_FLAG, load_user_code
from prior.cli.predict import predict_cmd
from prior.cli.show import show_cmd
from prior.cli.train import eval_, train
from prior.errors import PriorError


class HelpGroup(TyperGroup):
    """A command group whose help lists every command with the whole first paragraph of its
    description, wrapped to the terminal (click would cut it at one line with "...")."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:  # a click Context and HelpFormatter
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                text = command.short_help or inspect.cleandoc(command.help or "").split("\n\n")[0]
                rows.append((name, " ".join(text.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class PriorGroup(HelpGroup):
    """The top-level command: before any command runs, loads the entry points and imports each
    ``--code FILE.py`` typed as an option, wherever it stands on the line (never a value of
    another option: `prior.cli.plugins`). Every command's help
    lists ``--code`` too."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        code = next((p for p in self.params if p.name == "code"), None)
        if code is not None:
            shown = copy.copy(code)
            shown.expose_value = False  # parsed here, never by the command: for its --help only
            _list_in_help(self, shown)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # a click Context (typer vendors click)
        try:
            args = load_user_code(args, self)
        except PriorError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None
        return super().parse_args(ctx, args)


def _list_in_help(group: Any, option: Any) -> None:
    for command in getattr(group, "commands", {}).values():
        if hasattr(command, "commands"):
            _list_in_help(command, option)
        elif all(p.name != option.name for p in command.params):
            command.params.append(option)


app = typer.Typer(name="prior", cls=PriorGroup, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  help="Prior-knowledge features for sentence-pair models: build once, train every method.")


def _version(value: bool) -> None:
    if value:
        import prior

        typer.echo(f"prior {prior.__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    code: Annotated[list[Path] | None, typer.Option(
        CODE_FLAG, metavar="FILE.py", help="Python file to import before the command runs (repeatable; "
        "accepted anywhere on the line, e.g. `prior train NAME --code my_model.py`): its "
        "register_feature_set / register_model calls add features and models.")] = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version of prior and exit.")] = False,
) -> Any:
    """Prior-knowledge features for sentence-pair models: build once, train every method."""
    # --code is consumed by PriorGroup.parse_args before parsing; declared here for --help


app.command("build")(build_cmd)
app.command("datasets")(datasets_cmd)
app.command("env")(env_cmd)
app.command("show")(show_cmd)
app.command("train")(train)
app.command("eval")(eval_)
app.command("predict")(predict_cmd)
app.add_typer(store_cli.app, name="store", cls=HelpGroup)
app.add_typer(parser_cli.app, name="parser", cls=HelpGroup)
app.add_typer(embed_cli.app, name="embed", cls=HelpGroup)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

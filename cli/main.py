"""The `prior` command. Each command lives in its own module and only parses options."""

from __future__ import annotations

import typer

from cli import store as store_cli
from cli.build import build_cmd
from cli.datasets import datasets_cmd
from cli.env import env_cmd

app = typer.Typer(name="prior", no_args_is_help=True, add_completion=False,
                  help="Prior-knowledge features for sentence-pair models: build once, train every method.")
app.command("build")(build_cmd)
app.command("datasets")(datasets_cmd)
app.command("env")(env_cmd)
app.add_typer(store_cli.app, name="store")


def main() -> None:
    app()


if __name__ == "__main__":
    main()

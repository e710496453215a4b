"""The `prior` command. Each command lives in its own module and only parses options."""

from __future__ import annotations

import typer

from cli import embed as embed_cli
from cli import parser as parser_cli
from cli import store as store_cli
from cli.build import build_cmd
from cli.console import plain_flags_in_help
from cli.datasets import datasets_cmd
from cli.env import env_cmd
from cli.predict import predict_cmd
from cli.show import show_cmd
from cli.train import eval_, train

plain_flags_in_help()
app = typer.Typer(name="prior", no_args_is_help=True, add_completion=False,
                  help="Prior-knowledge features for sentence-pair models: build once, train every method.")
app.command("build")(build_cmd)
app.command("datasets")(datasets_cmd)
app.command("env")(env_cmd)
app.command("show")(show_cmd)
app.command("train")(train)
app.command("eval")(eval_)
app.command("predict")(predict_cmd)
app.add_typer(store_cli.app, name="store")
app.add_typer(parser_cli.app, name="parser")
app.add_typer(embed_cli.app, name="embed")


def main() -> None:
    from pipeline.startup import skip_pandas_detection

    skip_pandas_detection()  # the `prior` process never hands pandas objects to pyarrow
    app()


if __name__ == "__main__":
    main()

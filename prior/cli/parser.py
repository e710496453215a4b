"""`prior parser train|eval`: only parses options and calls prior.pipeline.parsers functions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prior.cli.console import console, friendly_errors

app = typer.Typer(name="parser", no_args_is_help=True, add_completion=False,
                  help="Train and evaluate dependency parsers (biaffine, spacy).")


@app.command("train")
@friendly_errors
def train_cmd(
    train: Annotated[list[Path], typer.Option("--train", exists=True, dir_okay=False,
                                              help="CoNLL-U training file (repeat for several).")],
    dev: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="CoNLL-U dev file (model selection).")],
    out: Annotated[Path, typer.Option(help="Where to write model.safetensors + config.json.")] = Path("parser-model"),
    run_dir: Annotated[Path | None, typer.Option(help="supar's working files and log (default OUT/run).")] = None,
    epochs: Annotated[int, typer.Option(min=1)] = 40,
    patience: Annotated[int, typer.Option(min=1, help="Stop after this many epochs without a better dev LAS.")] = 100,
    lstm_layers: Annotated[int, typer.Option(min=1)] = 2,
    lstm_hidden: Annotated[int, typer.Option(min=1)] = 300,
    embed: Annotated[int, typer.Option(min=1, help="Word embedding size (random init).")] = 100,
    batch_size: Annotated[int, typer.Option(min=1, help="Tokens per batch.")] = 2000,
    lr: Annotated[float, typer.Option(min=0.0)] = 2e-3,
    seed: Annotated[int, typer.Option()] = 1,
    threads: Annotated[int, typer.Option(min=1, help="torch threads.")] = 1,
    dtype: Annotated[str, typer.Option(help="Stored weight type: float16 or float32.")] = "float16",
    resume: Annotated[bool, typer.Option(help="Continue the run in --run-dir from its checkpoint (best dev epoch, with optimizer state) up to --epochs.")] = False,
) -> None:
    """Train supar's biaffine parser (LSTM + char) on CoNLL-U files and export it (no pickle)."""
    from prior.pipeline.parsers.train import TrainSettings, train_parser

    settings = TrainSettings(epochs=epochs, patience=patience, n_lstm_layers=lstm_layers, n_lstm_hidden=lstm_hidden,
                             n_embed=embed, batch_size=batch_size, lr=lr, seed=seed, threads=threads)
    out_dir = train_parser(train, dev, out, run_dir, settings, dtype=dtype, resume=resume)
    console.print(f"model written to {out_dir}")


@app.command("eval")
@friendly_errors
def eval_cmd(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Gold CoNLL-U file.")],
    parser: Annotated[str, typer.Option(help="biaffine, spacy, or biaffine:<model dir, file or supar name>.")]
    = "biaffine",
) -> None:
    """UAS / LAS of a parser on gold words; the last line reads `UAS=<x> LAS=<y>` (punct excluded)."""
    from prior.pipeline.parsers.evaluate import evaluate_file
    from prior.progress import stage_bars

    with stage_bars() as progress:
        result = evaluate_file(parser, file, progress)
    full, uni = result.full, result.universal
    console.print(f"parser {parser}: {result.sentences} sentences, {full.words_punct} words "
                  f"({full.words} without punctuation)")
    console.print(f"with punctuation:    UAS={full.uas_punct:.2f} LAS={full.las_punct:.2f}")
    console.print(f"universal labels:    LAS={uni.las:.2f} (punct excluded)  LAS={uni.las_punct:.2f} (with punct)")
    typer.echo(f"UAS={full.uas:.2f} LAS={full.las:.2f}")

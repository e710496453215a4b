"""`prior show`: one pair's words and feature matrix, as text and optionally as a heatmap."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from prior.cli.console import console, friendly_errors
from prior.cli.entry_flags import READABLE, EntryOpt, FeatureOptionOpt, FeatureParamOpt, feature_names, read_params
from prior.cli.store_flags import StorageOptionOpt, StoreOpt, store_ref


@friendly_errors
def show_cmd(
    dataset: Annotated[str, typer.Option("--dataset", "-d", help="Dataset name as stored (see `prior store info`).")],
    pair: Annotated[str, typer.Option(help="Row number in its split, or the pair key (a unique prefix of ≥ 6 characters).")],
    feature: Annotated[str, typer.Option(help=f"A feature (entry) or view: {READABLE}.")] = "dep",
    split: Annotated[str | None, typer.Option(help="Split of the row (default: the only split, else the first of train, dev, …, test).")] = None,
    store: StoreOpt = None,
    storage_option: StorageOptionOpt = None,
    plot: Annotated[Path | None, typer.Option(help="Also draw the heatmap to this image file (e.g. out.png).")] = None,
    feature_param: FeatureParamOpt = None,
    option: FeatureOptionOpt = None,
    entry: EntryOpt = None,
) -> None:
    """Print a pair's words and feature matrix; --plot draws the heatmap the papers show."""
    from prior.cli.pairview import format_pair, pair_view, plot_pair
    from prior.cli.split_names import stored_split
    from prior.featurestore import Request, open_store

    params = read_params(feature_param, option, feature_names(feature))
    opened = open_store(store_ref(store, storage_option), create=False)
    split = stored_split(opened, dataset, split) if split is not None else None
    view = pair_view(opened, dataset, pair, feature, split=split, request=Request(params=params, entry=entry))
    written = plot_pair(view, plot) if plot is not None else None  # first: a failure prints no matrix
    console.print(format_pair(view), markup=False, end="")
    if written is not None:
        console.print(f"heatmap written to {written}", markup=False)

"""`prior datasets`: the known datasets and where each split would be read from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cli.console import console, friendly_errors


@friendly_errors
def datasets_cmd(data_dir: Annotated[Path | None, typer.Option(help="Where full copies live (default $PRIOR_DATA_DIR).")] = None) -> None:
    """List the known datasets, their labels, and where each split resolves now."""
    from pipeline.datasets import list_datasets

    table = Table("dataset", "labels", "split", "read from", box=None)
    for info in list_datasets(data_dir=data_dir):
        labels = "score" if info.label_kind == "score" else ",".join(info.labels)
        for i, split in enumerate(info.splits):
            origin = f" ({split.origin})" if split.origin else ""
            table.add_row(info.name if i == 0 else "", labels if i == 0 else "", split.split, split.location + origin)
    console.print(table)

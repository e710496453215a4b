"""`prior datasets`: the known datasets and where each split would be read from."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from prior.cli.console import console, friendly_errors, warn_missing_data_dir


def _shown(location: str, origin: str | None, roots: dict[str, Path | None]) -> str:
    """A split's file relative to the folder it was found in (named once above the table)."""
    root = roots.get(origin or "")
    if root is not None:
        try:
            return f"{Path(location).relative_to(root)} ({origin})"
        except ValueError:
            pass
    return location + (f" ({origin})" if origin and origin != "hub" else "")


@friendly_errors
def datasets_cmd(data_dir: Annotated[Path | None, typer.Option(help="Where full copies live (default $PRIOR_DATA_DIR).")] = None) -> None:
    """List the known datasets, their labels, and where each split resolves now."""
    from prior.pipeline.datasets import list_datasets
    from prior.pipeline.datasets.resolve import bundled_dir, data_dir_from_env

    warn_missing_data_dir(data_dir)
    root = data_dir.expanduser() if data_dir is not None else data_dir_from_env()
    roots = {"data_dir": root.resolve() if root else None, "bundled": bundled_dir()}
    console.print(f"data_dir: {roots['data_dir'] or 'not set ($PRIOR_DATA_DIR or --data-dir)'}", soft_wrap=True)
    console.print(f"bundled:  {roots['bundled']} (slices shipped with prior)", soft_wrap=True)
    table = Table("dataset", "labels", "split", "read from", box=None)
    table.columns[1].overflow = table.columns[3].overflow = "fold"
    table.columns[1].max_width = 16
    for info in list_datasets(data_dir=data_dir):
        labels = "score" if info.label_kind == "score" else ", ".join(info.labels)
        for i, split in enumerate(info.splits):
            table.add_row(info.name if i == 0 else "", labels if i == 0 else "", split.split,
                          _shown(split.location, split.origin, roots))
    console.print(table)

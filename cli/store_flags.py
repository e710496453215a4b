"""The flags every command that opens a store shares: ``--store`` and ``--storage-option
KEY=VALUE`` (repeatable), the fsspec options a store at a URL is opened with, on top of
``$PRIOR_STORAGE_OPTIONS`` (`prior.featurestore.storage_options`)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from prior.featurestore import storage_options as so

StoreOpt = Annotated[str | None, typer.Option(
    help="Store directory or fsspec URL, e.g. s3://bucket/store (default $PRIOR_STORE or $PRIOR_HOME/store).")]
StorageOptionOpt = Annotated[list[str] | None, typer.Option(
    "--storage-option", metavar="KEY=VALUE",
    help="fsspec option for a store at a URL (repeatable; VALUE is JSON where it parses, else text), "
         "e.g. endpoint_url=http://127.0.0.1:9000, profile=NAME, anon=true. Replaces the key in "
         f"${so.ENV} (a JSON object).")]


def storage_options(items: list[str] | None) -> dict[str, Any]:
    """``$PRIOR_STORAGE_OPTIONS`` with each ``--storage-option`` replacing its key."""
    return so.merge_items(items or [])

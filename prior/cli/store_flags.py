"""The flags every command that opens a store shares: ``--store`` and ``--storage-option
KEY=VALUE`` (repeatable), the fsspec options a store at a URL is opened with, on top of
``$PRIOR_STORAGE_OPTIONS`` (`prior.featurestore.ref`). A command turns both into one
`StoreRef` (:func:`store_ref`) and hands that on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import typer

from prior.cli.key_value import read_value, split_item
from prior.errors import DataError
from prior.featurestore.ref import ENV, StoreRef, from_env

StoreOpt = Annotated[str | None, typer.Option(
    help="Store directory or fsspec URL, e.g. s3://bucket/store (default $PRIOR_STORE or $PRIOR_HOME/store).")]
StorageOptionOpt = Annotated[list[str] | None, typer.Option(
    "--storage-option", metavar="KEY=VALUE",
    help="fsspec option for a store at a URL (repeatable; VALUE is JSON where it parses, else text), "
         "e.g. endpoint_url=http://127.0.0.1:9000, profile=NAME, anon=true. Replaces the key in "
         f"${ENV} (a JSON object).")]


def parse_item(item: str) -> tuple[str, Any]:
    """``KEY=VALUE`` → (KEY, VALUE read as JSON where it parses, else the text); the error never
    repeats a value (it may be a secret)."""
    split = split_item(item)
    if split is None or any(c.isspace() for c in split[0]):
        name = split[0] if split else ("" if "=" in item else item.strip())
        raise DataError(f"storage option {name!r}: expected KEY=VALUE, "
                        "e.g. endpoint_url=http://127.0.0.1:9000 or anon=true")
    return split[0], read_value(split[1])


def merge_items(items: Iterable[str], base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``base`` (default: the environment's options) with each ``KEY=VALUE`` of ``items`` replacing its key."""
    options = dict(from_env() if base is None else base)
    options.update(parse_item(item) for item in items)
    return options


def store_ref(store: str | None, items: list[str] | None) -> StoreRef:
    """The store ``--store`` names (None: the default place of the command) with
    ``$PRIOR_STORAGE_OPTIONS``, each ``--storage-option`` replacing its key."""
    return StoreRef(store, merge_items(items or []))

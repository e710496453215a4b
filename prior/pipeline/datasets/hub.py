"""The optional last source: the Hugging Face hub, through the `datasets` library.

Used only for a split asked for by name (``read_split``; ``prior build --split``, or every
split with ``prior build --hub``), when no local file was found, the `datasets` library is
importable, and neither ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE`` nor ``PRIOR_NO_HUB`` is set
to a true value: a build never downloads a split to complete "all splits". Before calling the
library, one TCP connection to the hub's host (``HF_ENDPOINT``, default huggingface.co) is
tried with a 3 s timeout, so an offline machine fails in seconds with one line instead of the
library's retries. The library downloads and caches the data itself (its own cache,
``HF_HOME``). Not every dataset is there (SICK and Twitter-URL have no entry here).

What the hub gives differs from the official files in places: GLUE's MRPC "train" is the
3,668 pairs left after GLUE's dev ids are taken out of msr_paraphrase_train.txt; SNLI marks
"no gold label" as label -1 (skipped and counted as with "-"); GLUE test splits have label
-1 everywhere and are read as unlabelled. ``source_sha256`` of hub data is the sha256 of
the JSON list [text_a, text_b, raw label] of each record read, one per line, since there is
no single source file. ``row`` is the 1-based record number in the hub split.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from prior.pipeline.datasets import labels as L
from prior.pipeline.datasets.collect import Columns, collect
from prior.pipeline.datasets.registry import DatasetSpec
from prior.pipeline.datasets.tables import Record
from prior.pipeline.datasets.types import LabelKind, SplitData

_TRUE = ("1", "true", "yes", "on")


class HubUnavailable(Exception):
    """The hub could not give the split; the message says why."""


def hub_note(spec: DatasetSpec, split: str) -> str | None:
    """Why the hub will not be tried for this split, or None if it will be."""
    if spec.hub is None or split not in spec.hub.splits:
        return f"{spec.name!r} split {split!r} has no hub source in prior's registry"
    for var in ("PRIOR_NO_HUB", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return f"not tried ({var} is set)"
    if importlib.util.find_spec("datasets") is None:
        return "not tried (the `datasets` library is not installed: pip install datasets)"
    return None


def hub_location(spec: DatasetSpec, split: str) -> str:
    assert spec.hub is not None
    config = f"/{spec.hub.config}" if spec.hub.config else ""
    return f"hf://{spec.hub.path}{config}/{spec.hub.splits[split]}"


PROBE_SECONDS = 3.0


def hub_unreachable() -> str | None:
    """Why the hub's host cannot be reached now (one TCP connection, ``PROBE_SECONDS``), or None."""
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
    except OSError as exc:
        return f"{host} cannot be reached ({exc.strerror or type(exc).__name__})"
    return None


def read_hub(spec: DatasetSpec, split: str, limit: int | None) -> SplitData:
    """Load the split with ``datasets.load_dataset`` and read it like a file."""
    hub = spec.hub
    assert hub is not None
    if (why := hub_unreachable()) is not None:
        raise HubUnavailable(why)
    datasets: Any = importlib.import_module("datasets")
    try:
        ds = datasets.load_dataset(hub.path, hub.config, split=hub.splits[split])
    except Exception as e:  # offline, renamed dataset, hub error: all mean "not here"
        raise HubUnavailable(f"load_dataset({hub.path!r}, {hub.config!r}) failed: "
                             f"{type(e).__name__}: {e}") from e
    feature = ds.features[hub.label]
    names = getattr(feature, "names", None)
    raw = list(ds[hub.label])
    unlabelled = spec.scheme.kind != "none" and all(v is None or v == -1 for v in raw)
    digest = hashlib.sha256()

    def records() -> Iterator[Record]:
        for i, rec in enumerate(ds):
            value = rec[hub.label]
            digest.update(json.dumps([rec[hub.text_a], rec[hub.text_b], value],
                                     ensure_ascii=False).encode() + b"\n")
            if value is None or value == -1:
                label = "-" if spec.scheme is L.SNLI else None
            elif names is not None:
                label = names[int(value)]
            else:
                label = str(value)
            yield Record(i + 1, {"a": rec[hub.text_a], "b": rec[hub.text_b], "label": label})

    scheme = spec.scheme
    if names is not None:  # a ClassLabel: its names are our normalized names (GLUE, snli)
        scheme = L.classes({n: n for n in spec.scheme.labels}, order=spec.scheme.labels,
                           special={"-": L.SNLI_NO_GOLD})
    columns = Columns("a", "b", None if unlabelled else "label")
    got = collect(records(), hub_location(spec, split), columns,
                  None if unlabelled else scheme, limit)
    kind: LabelKind = "none" if unlabelled else spec.scheme.kind
    return SplitData(spec.name, split, None, hub_location(spec, split), "hub", kind,
                     spec.scheme.labels, got.pairs, got.skipped, digest.hexdigest())

"""Embeddings as a store resource: a vocabulary table (Parquet) and its vectors (Zarr).

Resource kind ``embeddings``: table columns ``id`` (int32, the row of the word's vector) and
``word`` (string); array ``vectors`` (V × d float32). ``meta`` records where the vectors came
from (file name and format, or the trainer and its settings). Word ids stored by the `emb`
feature index this table; -1 marks a word with no vector. Trainers read it with
``store.read_resource(key)`` alone (``.table["word"]``, ``.arrays["vectors"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from prior.errors import ResourceError
from prior.pipeline.embeddings.io import Embeddings

EMBEDDINGS_RESOURCE = "embeddings"


def store_embeddings(store: Any, emb: Embeddings, meta: Mapping[str, Any]) -> str:
    """Write ``emb`` as a content-keyed resource of ``store``; returns its key (idempotent)."""
    table = pa.table({"id": pa.array(np.arange(len(emb), dtype=np.int32)),
                      "word": pa.array(emb.words, pa.string())})
    full_meta = {"dim": emb.dim, "words": len(emb), **dict(meta)}
    return str(store.write_resource(EMBEDDINGS_RESOURCE, table, arrays={"vectors": emb.vectors},
                                    meta=full_meta))


def load_embeddings(store: Any, key: str) -> Embeddings:
    """The embeddings resource ``key`` of ``store``."""
    res = store.read_resource(key)
    if res.kind != EMBEDDINGS_RESOURCE:
        raise ResourceError(f"resource {key} of {store.location} is a {res.kind!r} table, "
                            f"not {EMBEDDINGS_RESOURCE!r}")
    return Embeddings(words=res.table.column("word").to_pylist(),
                      vectors=np.asarray(res.arrays["vectors"], dtype=np.float32),
                      fmt=str(res.meta.get("format", "")))

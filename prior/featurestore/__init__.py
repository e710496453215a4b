"""The on-disk feature store of `prior`: keys, layout, atomic commits, reads, Polars views.

    from prior.featurestore import open_store
    store = open_store("~/.cache/prior/store")   # or open_store(StoreRef("s3://bucket/store", {...}))
    df = store.frame("wup", dataset="snli", split="test")
    lazy = store.scan("wup", dataset="snli", split="test")   # the same, as a Polars LazyFrame
"""

from prior.featurestore.errors import StoreError
from prior.featurestore.rebuild import MissingDataError, ShortSplitError
from prior.featurestore.ref import StoreRef
from prior.featurestore.selection import Request
from prior.featurestore.store import EntryInfo, FeatureData, Resource, SplitRows, Store, make_entry, open_store

__all__ = ["EntryInfo", "FeatureData", "MissingDataError", "Request", "Resource", "ShortSplitError", "SplitRows",
           "Store", "StoreError", "StoreRef", "make_entry", "open_store"]

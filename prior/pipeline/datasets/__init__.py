"""Dataset readers: one per official format, labels normalized per dataset.

Public API::

    read_split("mrpc", "test")                 # a named dataset's split -> SplitData
    read_split("snli", "dev", limit=100)       # the first 100 usable pairs
    read_file("pairs.csv", text_a="s1", text_b="s2", label="y")   # any table file
    list_datasets()                            # names, splits, labels, where each split resolves

Rows that cannot be used are never dropped silently: each becomes a :class:`Skip` (file,
row, field, reason) in ``SplitData.skipped``. See docs/datasets.md.
"""

from prior.pipeline.datasets.api import dataset_splits, list_datasets, read_split
from prior.pipeline.datasets.generic import read_file
from prior.pipeline.datasets.registry import SPECS
from prior.pipeline.datasets.types import DatasetInfo, PairRow, Skip, SplitData, SplitInfo

__all__ = ["SPECS", "DatasetInfo", "PairRow", "Skip", "SplitData", "SplitInfo", "dataset_splits",
           "list_datasets", "read_file", "read_split"]

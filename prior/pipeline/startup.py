"""Start-up tuning of the processes `prior` owns: the CLI and the workers a local build starts.

Every trick here changes how fast a process starts or stops, never a result. bench/startup.py
measures each one on the default path (numbers in bench/RESULTS.md, "Start-up tricks"): so far
the bundle shows (a build without any is slower, and so is the no-op rebuild), each trick alone
is within that machine's noise. External Dask workers and a user's own Python process are left
alone. One switch,
``PRIOR_STARTUP_TUNING``: ``all`` (the default), ``none``, or a comma-separated list of the
tricks to apply (how the benchmark measures each one alone):

- ``malloc``: local workers keep glibc's malloc defaults. Dask's nanny sets
  ``MALLOC_TRIM_THRESHOLD_`` in every worker it spawns, which switches off glibc's adaptive
  mmap threshold: every large numpy buffer spaCy allocates becomes a fresh mmap with page
  faults, and spaCy parses slower.
- ``gc-freeze``: local workers exit without the interpreter's final collection, which
  otherwise walks every object of spaCy's and torch's heaps.
- ``no-pandas``: pyarrow looks for pandas the first time a process builds an array, to
  recognise pandas inputs, and imports it (0.17 s); nothing in `prior` hands pandas objects to
  pyarrow, so in the CLI and in local workers it makes that check with pandas hidden and
  records "no pandas". pandas stays importable (``Table.to_pandas`` imports it).
- ``spacy-without-torch``: with the spaCy parser and a CNN pipeline, local workers import
  spaCy with torch hidden, so thinc records "no torch" (torch's import is most of spaCy's).
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import suppress
from importlib.machinery import ModuleSpec
from typing import Any

from prior.errors import PriorError
from prior.parser_spec import ParserSpec
from prior.pipeline.parsers.spacy_models import SPACY_WITHOUT_TORCH_ENV, find_spacy_model, needs_torch

ENV = "PRIOR_STARTUP_TUNING"
TRICKS = ("malloc", "gc-freeze", "no-pandas", "spacy-without-torch")
#: set (to "1") by `prior build` in the workers of the local cluster it starts for one build
LOCAL_WORKER_ENV = "PRIOR_LOCAL_WORKER"


def enabled(trick: str) -> bool:
    """Whether ``trick`` applies (read on each call, so a test or benchmark can change it)."""
    value = os.environ.get(ENV, "all").strip().lower()
    if value in ("", "all", "on", "1"):
        return True
    if value in ("none", "off", "0"):
        return False
    return trick in {part.strip() for part in value.split(",")}


def local_cluster_config() -> dict[str, Any]:
    """Dask settings for the local cluster a build starts (``malloc``)."""
    return {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None} if enabled("malloc") else {}


def local_worker_env(parser_spec: str) -> dict[str, str]:
    """Environment of the local workers a build starts for ``parser_spec``."""
    env = {LOCAL_WORKER_ENV: "1"}
    if enabled("spacy-without-torch") and _cnn_spacy(parser_spec):
        env[SPACY_WITHOUT_TORCH_ENV] = "1"
    return env


def _cnn_spacy(parser_spec: str) -> bool:
    """The spaCy parser with a pipeline that needs no torch (not a transformer pipeline)."""
    try:
        spec = ParserSpec.parse(parser_spec)
        return spec.name == "spacy" and not needs_torch(spec.arg or find_spacy_model())
    except PriorError:
        return False  # the parse stage reports a malformed spec or the missing model


class _HidePandas:
    """A meta-path finder under which ``import pandas`` fails."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(f"{name} is hidden while pyarrow checks for it")
        return None


def skip_pandas_detection() -> bool:
    """Make pyarrow's one-time pandas check now, with pandas hidden (``no-pandas``). True when
    pyarrow will not import pandas on its own in this process."""
    if not enabled("no-pandas") or "pandas" in sys.modules:
        return False
    import pyarrow as pa

    hook = _HidePandas()
    sys.meta_path.insert(0, hook)
    try:
        pa.array([0])
    except Exception:  # noqa: BLE001 - a pyarrow that handles this differently only loses the speed-up
        return False
    finally:
        sys.meta_path.remove(hook)
    return "pandas" not in sys.modules


def set_up_local_worker() -> None:
    """Once per process, in a build's own workers only (``no-pandas``)."""
    if os.environ.get(LOCAL_WORKER_ENV) == "1":
        skip_pandas_detection()


def before_closing(client: Any) -> None:
    """Before a build closes its own local workers (``gc-freeze``)."""
    if enabled("gc-freeze"):
        with suppress(Exception):
            client.run(gc.freeze)

"""pyarrow without its pandas import, in the processes prior owns (the CLI, local build workers).

pyarrow looks for pandas the first time a process builds an array (``pa.array``,
``pa.table``), to recognise pandas inputs: importing pandas costs 0.17 s here, once per
process, before the first store write (on the critical path of every build worker and of the
CLI's ingest). Nothing in prior hands pandas objects to pyarrow. `skip_pandas_detection` lets
pyarrow make that first check while pandas cannot be found, so it records "no pandas"; pandas
itself stays importable, and pyarrow imports it when asked for it explicitly
(``Table.to_pandas``). Not applied in a user's own Python process: there pyarrow keeps
recognising pandas objects as usual.
"""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec
from typing import Any


class _HidePandas:
    """A meta-path finder under which ``import pandas`` fails."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(f"{name} is hidden while pyarrow checks for it")
        return None


def skip_pandas_detection() -> bool:
    """Make pyarrow's one-time pandas check now, with pandas hidden. True when pyarrow will not
    import pandas on its own in this process (also when it was already set up this way)."""
    if "pandas" in sys.modules:
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

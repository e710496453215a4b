"""pyarrow's pandas check skipped in prior's own processes: no pandas import, pandas still usable;
the start-up switch turns it off."""

import subprocess
import sys

PROBE = """
import sys
{before}
from prior.pipeline.startup import skip_pandas_detection
import pyarrow as pa
print(skip_pandas_detection())
pa.table({{"a": ["x", "y"]}}); pa.array([1, 2])
print("pandas" in sys.modules)
import pandas as pd
print(type(pa.table({{"a": [1]}}).to_pandas()).__name__, pa.array(pd.Series([1, 2])).type)
"""


def run(before: str = "") -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], capture_output=True, text=True,
                         check=True)
    return out.stdout.split("\n")[:3]


def test_pyarrow_builds_tables_without_importing_pandas_and_pandas_still_works() -> None:
    assert run() == ["True", "False", "DataFrame int64"]


def test_a_process_that_already_has_pandas_is_left_alone() -> None:
    assert run("import pandas") == ["False", "True", "DataFrame int64"]


def test_the_start_up_switch_turns_it_off(monkeypatch) -> None:
    from prior.pipeline import startup

    monkeypatch.setenv(startup.ENV, "none")
    assert not startup.skip_pandas_detection() and not startup.enabled("malloc")
    assert startup.local_cluster_config() == {}
    monkeypatch.setenv(startup.ENV, "malloc,gc-freeze")
    assert startup.enabled("malloc") and not startup.enabled("no-pandas")
    assert startup.local_cluster_config() == {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}

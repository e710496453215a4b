"""The one check of names that may end up in a path (prior/featurestore/names.py)."""

import pyarrow as pa
import pytest

from prior.featurestore import StoreError, open_store
from prior.featurestore.catalog import is_segment_id, new_segment_id
from prior.featurestore.names import MAX_NAME, check_name, file_problem
from prior.trainers.config import RUNS, default_output

GOOD = ["snli", "sick-r", "mnli_matched", "glue.mrpc", "v1+v2", "dev_matched", "A1", "x" * MAX_NAME, "a.b.c"]
BAD = ["", ".", "..", ".hidden", "a/b", "a\\b", "x/../y", "a..b", "a\x00b", "/abs", "with space", "tab\t", "é",
       "x" * (MAX_NAME + 1), "C:", "new\nline"]


@pytest.mark.parametrize("name", GOOD)
def test_names_allowed(name):
    assert check_name("dataset", name) == name


@pytest.mark.parametrize("name", BAD)
def test_names_refused_with_the_reason(name):
    with pytest.raises(StoreError, match=r"^split name .* (is empty|contains '\.\.'|may hold only|is longer)"):
        check_name("split", name)


def test_names_must_be_strings():
    with pytest.raises(StoreError, match="is a int, not a string"):
        check_name("dataset", 3)


def test_segment_files_are_allowed_names_joined_by_slashes():
    for ok in ("pairs.parquet", "arrays/zarr.json", "arrays/wup/c/0"):
        assert file_problem(ok) is None
    for bad in ("../x", "arrays//c", "/abs", "arrays/../../x", "a/" * 9 + "b", ""):
        assert file_problem(bad) is not None


def test_segment_ids_have_the_generators_pattern():
    assert is_segment_id(new_segment_id())
    for bad in ("../../victim", "0" * 20 + "-" + "a" * 11, "0" * 20 + "-" + "A" * 12, "0" * 20 + "-" + "a" * 12 + "/"):
        assert not is_segment_id(bad)


def test_write_pairs_refuses_names_that_could_be_paths(tmp_path):
    store = open_store(tmp_path / "s")
    table = pa.table({"row": [0], "pair_key": ["p"], "key_a": ["a"], "key_b": ["b"], "label": ["x"]})
    with pytest.raises(StoreError, match="dataset name 'x/../../y'"):
        store.write_pairs("x/../../y", "test", table, source_sha256="s")
    with pytest.raises(StoreError, match="split name '..'"):
        store.write_pairs("ok", "..", table, source_sha256="s")
    assert store.segments() == [] and store.fs.listdir("segments") == []


def test_default_checkpoint_folder_stays_inside_runs():
    assert default_output("dafa-mini", "sick-r", 3) == RUNS / "dafa-mini-sick-r-s3"
    for evil in ("x/../../../tmp/evil", "..", "/abs", "a\x00"):
        with pytest.raises(StoreError, match="dataset name"):
            default_output("bert-mini", evil, 42)

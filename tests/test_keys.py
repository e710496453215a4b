import subprocess
import sys

import pytest

from prior.errors import PriorError
from prior.featurestore import keys as K

# Pinned: a change here silently invalidates every store in the world.
PINNED_SENTENCE = "5be368721aeac636f34ddce9ef4891ee"


def test_keys_sentence_key_is_pinned_and_stable_across_processes():
    key = K.sentence_key("A man  plays\tguitar. ")
    code = "from prior.featurestore import keys as K; print(K.sentence_key('A man  plays\\tguitar. '))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.strip()
    assert out == key
    assert key == PINNED_SENTENCE


def test_keys_normalization_nfc_whitespace_case_kept():
    assert K.normalize_text(" Caf\u0065\u0301  au\n lait ") == "Caf\u00e9 au lait"
    assert K.sentence_key("Cafe\u0301") == K.sentence_key("Caf\u00e9")
    assert K.sentence_key("a  b") == K.sentence_key(" a b ")
    assert K.sentence_key("Dog") != K.sentence_key("dog")


def test_keys_pair_key_is_ordered():
    a, b = K.sentence_key("a"), K.sentence_key("b")
    assert K.pair_key(a, b) != K.pair_key(b, a)
    assert K.pair_key(a, b) == K.pair_key(a, b)


def test_keys_entry_key_depends_on_version_params_and_parse_only():
    base = K.entry_key("wup", 1, {"x": 1, "y": [1, 2]}, "p")
    assert base == K.entry_key("wup", 1, {"y": [1, 2], "x": 1}, "p")  # order of params is irrelevant
    assert base != K.entry_key("wup", 2, {"x": 1, "y": [1, 2]}, "p")
    assert base != K.entry_key("wup", 1, {"x": 2, "y": [1, 2]}, "p")
    assert base != K.entry_key("wup", 1, {"x": 1, "y": [1, 2]}, "q")
    assert base != K.entry_key("wup", 1, {"x": 1}, "p")  # a dropped default changes the key


def test_keys_reject_unhashable_params():
    with pytest.raises(PriorError, match="non-finite"):
        K.params_key({"a": float("nan")})
    with pytest.raises(PriorError, match="cannot be hashed"):
        K.params_key({"a": object()})

"""Store keys as numbers, for reads that hold many keys at once.

A store key (`prior.featurestore.keys`) is a 16-byte blake2b digest written as 32 lowercase hex
digits. Held by Polars as text, each takes 48 bytes (a 16-byte view and the 32 characters) and
every join or set over them hashes 32 bytes of text; held as the number it spells (``UInt128``,
big-endian, so numbers sort as their texts do) it takes 16 bytes. A split's index reads its
rows and its entries' keys in this form from each file as it is read, so the text of a whole
split's keys is never held at once (`prior.trainers.split_index`).

The conversion is exact and checked: a value that is not 32 lowercase hex digits is refused
(`key_numbers` names its row), so two different texts can never become one number.
"""

from __future__ import annotations

import numpy as np
import polars as pl

KEY_NUMBER = pl.UInt128
KEY_DIGITS = 32
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


class KeyTextError(ValueError):
    """A value that is not a store key's text; ``row`` is its position in the column."""

    def __init__(self, row: int, value: object) -> None:
        shown = value if value is None else str(value)[:40]
        super().__init__(f"row {row}: {shown!r} is not a key ({KEY_DIGITS} lowercase hex digits)")
        self.row = row


def key_numbers(keys: pl.Series, *, strict: bool = True) -> pl.Series:
    """The numbers ``keys`` (32-hex-digit texts) spell, as a ``UInt128`` Series of the same
    name; `KeyTextError` for the first value that is not a key (null, wrong length, a
    character outside ``0-9a-f``), or null for it where ``strict`` is False."""
    if keys.dtype == KEY_NUMBER:
        return keys
    numbers = keys.str.decode("hex", strict=False).bin.reinterpret(dtype=KEY_NUMBER, endianness="big")
    # the decoder refuses a wrong length and a character that is no hex digit (null), but reads
    # A-F as a-f: those are looked for alone (a third of the time of a full character class)
    bad = (numbers.is_null() | keys.str.contains("[A-F]")).fill_null(True)
    if bad.any():
        if not strict:
            return numbers.zip_with(~bad, pl.Series([None], dtype=KEY_NUMBER)).rename(keys.name)
        row = int(bad.arg_max() or 0)
        raise KeyTextError(row, keys[row])
    return numbers.rename(keys.name)


def key_text_bytes(numbers: pl.Series) -> np.ndarray:
    """The keys' texts as an ``(n, 32)`` array of ASCII codes (for digests over many keys
    without a Python string per key)."""
    shift = pl.lit(1 << 64).cast(KEY_NUMBER)
    frame = numbers.rename("k").to_frame().select(
        hi=(pl.col("k") // shift).cast(pl.UInt64), lo=pl.col("k").cast(pl.UInt64, wrap_numerical=True))
    words = np.empty((frame.height, 2), dtype=">u8")
    words[:, 0], words[:, 1] = frame["hi"].to_numpy(), frame["lo"].to_numpy()
    raw = words.view(np.uint8).reshape(frame.height, 16)
    out = np.empty((frame.height, KEY_DIGITS), dtype=np.uint8)
    out[:, 0::2], out[:, 1::2] = _HEX[raw >> 4], _HEX[raw & 15]
    return out


def key_texts(numbers: pl.Series) -> pl.Series:
    """The keys' texts again (`key_numbers` inverted), a String Series of the same name."""
    if numbers.dtype == pl.String:
        return numbers
    text = key_text_bytes(numbers)
    return pl.Series(numbers.name, [row.tobytes().decode("ascii") for row in text], dtype=pl.String)


__all__ = ["KEY_DIGITS", "KEY_NUMBER", "KeyTextError", "key_numbers", "key_text_bytes", "key_texts"]

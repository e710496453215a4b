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

import binascii
from collections.abc import Sequence

import numpy as np
import polars as pl
import pyarrow as pa

KEY_NUMBER = pl.UInt128
KEY_DIGITS = 32
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


class KeyTextError(ValueError):
    """A value that is not a store key's text; ``row`` is its position in the column."""

    def __init__(self, row: int, value: object, column: str | None = None) -> None:
        shown = value if value is None else str(value)[:40]
        where = f"column {column!r} row {row}" if column else f"row {row}"
        super().__init__(f"{where}: {shown!r} is not a key ({KEY_DIGITS} lowercase hex digits)")
        self.row, self.column = row, column


def key_numbers(keys: pl.Series, *, strict: bool = True) -> pl.Series:
    """The numbers ``keys`` (32-hex-digit texts) spell, as a ``UInt128`` Series of the same
    name; `KeyTextError` for the first value that is not a key (null, wrong length, a
    character outside ``0-9a-f``), or null for it where ``strict`` is False."""
    if keys.dtype == KEY_NUMBER:
        return keys
    fast = _hex_numbers(keys)
    if fast is not None:
        return fast
    numbers = keys.to_frame("k").select(
        pl.col("k").str.decode("hex", strict=False).bin.reinterpret(dtype=KEY_NUMBER, endianness="big")).to_series()
    # the decoder refuses a wrong length and a character that is no hex digit (null), but reads
    # A-F as a-f: those are looked for too
    bad = (numbers.is_null() | keys.str.contains("[A-F]")).fill_null(True)
    if bad.any():
        if not strict:
            return numbers.zip_with(~bad, pl.Series([None], dtype=KEY_NUMBER)).rename(keys.name)
        row = int(bad.arg_max() or 0)
        raise KeyTextError(row, keys[row])
    return numbers.rename(keys.name)


_DIGITS = b"0123456789abcdef"


def _hex_numbers(keys: pl.Series) -> pl.Series | None:
    """`key_numbers` of a column whose every value is a key, its text decoded at once in C
    (`binascii.unhexlify` over the column's bytes: three times as fast as a numpy table lookup,
    six times as fast as Polars' hex decoding); None when some value is not a key (null,
    another length, a character outside ``0-9a-f``: upper case too, which unhexlify would take),
    for the checked path to name it."""
    text = keys.to_arrow()
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    if text.null_count or len(text) == 0:
        return None
    text = text.cast(pa.large_string())
    _, offsets_buffer, data_buffer = text.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64, count=len(text) + 1, offset=8 * text.offset)
    if int(offsets[-1] - offsets[0]) != KEY_DIGITS * len(text) or bool((np.diff(offsets) != KEY_DIGITS).any()):
        return None
    digits = memoryview(data_buffer)[int(offsets[0]):int(offsets[-1])]
    if bytes(digits).translate(None, _DIGITS):  # some character is no lowercase hex digit
        return None
    packed = binascii.unhexlify(digits)
    raw = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(text), [None, pa.py_buffer(packed)])
    return pl.Series(keys.name, raw).cast(pl.Binary).bin.reinterpret(dtype=KEY_NUMBER, endianness="big")


def frame_key_numbers(frame: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``frame`` with its key columns ``columns`` as numbers (`key_numbers` of each);
    `KeyTextError` naming the column and row of the first value that is not a key."""
    converted = []
    for column in columns:
        try:
            converted.append(key_numbers(frame[column]))
        except KeyTextError as exc:
            raise KeyTextError(exc.row, frame[column][exc.row], column) from None
    return frame.with_columns(converted)


def key_halves(numbers: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """The high and low 64 bits of keys held as numbers, as two uint64 arrays."""
    if numbers.dtype != KEY_NUMBER:
        raise TypeError(f"keys held as numbers ({KEY_NUMBER}) expected, not {numbers.dtype}")
    frame = numbers.rename("k").to_frame().select(
        hi=(pl.col("k") // pl.lit(1 << 64).cast(KEY_NUMBER)).cast(pl.UInt64),
        lo=pl.col("k").cast(pl.UInt64, wrap_numerical=True))
    return frame["hi"].to_numpy(), frame["lo"].to_numpy()


def key_text_bytes(numbers: pl.Series) -> np.ndarray:
    """The keys' texts as an ``(n, 32)`` array of ASCII codes (for digests over many keys
    without a Python string per key)."""
    hi, lo = key_halves(numbers)
    words = np.empty((len(hi), 2), dtype=">u8")
    words[:, 0], words[:, 1] = hi, lo
    raw = words.view(np.uint8).reshape(len(hi), 16)
    out = np.empty((len(hi), KEY_DIGITS), dtype=np.uint8)
    out[:, 0::2], out[:, 1::2] = _HEX[raw >> 4], _HEX[raw & 15]
    return out


def key_texts(numbers: pl.Series) -> pl.Series:
    """The keys' texts again (`key_numbers` inverted), a String Series of the same name."""
    if numbers.dtype == pl.String:
        return numbers
    text = key_text_bytes(numbers)
    return pl.Series(numbers.name, [row.tobytes().decode("ascii") for row in text], dtype=pl.String)


__all__ = ["KEY_DIGITS", "KEY_NUMBER", "KeyTextError", "frame_key_numbers", "key_halves", "key_numbers", "key_text_bytes",
           "key_texts"]

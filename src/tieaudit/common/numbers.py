"""One strict grammar for numbers read from text, used by every reader.

Python's ``float()`` and ``int()`` accept more than a data file should mean: ``1_5`` is 15 (C's
``strtod``, and so trec_eval, reads 1), and non-ASCII digits (``١٥``, ``１５``) are numbers too.
Every reader of scores, labels, relevance, counts, ratings and timestamps (TREC runs and qrels,
candidates tables in CSV or as Parquet / DataFrame text, and the CSV files of
:mod:`tieaudit.sources.ingest`, the ``generic`` interactions among them) checks the text against this
grammar first and converts only what matches; the CLI's integer options use :func:`parse_integer`:

* a number (:data:`NUMBER`): ASCII only, an optional sign, digits with an optional decimal point
  (or a point and digits), an optional exponent ``e``/``E`` with optional sign and digits:
  ``3``, ``-0.5``, ``+.5``, ``5.``, ``1e-3``, ``2.5E+10``; no spaces, ``_``, hexadecimal or ``nan``;
* an infinity (:data:`INFINITY`): ``inf`` or ``infinity`` in any case, with an optional sign
  (what ``strtod`` reads, and what Python, numpy and pandas write); a literal beyond the float
  range (``1e400``) is an infinity too, as for ``strtod``. Scores may be infinite (a
  log-probability of ``-inf`` ranks last, and equal infinities tie); every other quantity must
  be finite, which each reader checks after the conversion;
* an integer (:data:`INTEGER`): an optional sign and ASCII digits.

Values are read as float64, which holds every integer up to ``2**53`` in magnitude exactly but
rounds most larger ones (a nanosecond timestamp, a 64-bit hash): two that differ could read as
equal and tie. :func:`inexact_integer` finds the first such integer, in text or in an integer
column, so that a reader can refuse it rather than report ties that are not in the data.

Converting matching text with Arrow's cast gives the correctly rounded double, as ``float()``.
``nan`` is no number of the grammar; the candidates reader reports it (and an empty field) as a
missing value, the others as text that is no number.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "NUMBER", "INFINITY", "INTEGER", "parse_integer", "number_text", "not_a_number_text",
    "inexact_integer", "INEXACT",
]  # fmt: skip

#: The grammar of a finite number (a regular expression; see the module docstring).
NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
#: The grammar of an infinity: ``inf`` or ``infinity`` in any case, with an optional sign.
INFINITY = r"[+-]?(?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)"
#: The grammar of an integer: an optional sign and ASCII digits.
INTEGER = r"[+-]?[0-9]+"
_NAN = r"[+-]?[nN][aA][nN]"

_INTEGER_RE = re.compile(INTEGER)
# RE2 (Arrow's regex engine) patterns, anchored: ``$`` is the end of the text in RE2.
_FLOAT_RE2 = f"^(?:{NUMBER}|{INFINITY})$"
_INTEGER_RE2 = f"^{INTEGER}$"
_NAN_OR_EMPTY_RE2 = f"^(?:{_NAN})?$"
#: Integer text long enough to be beyond 2**53 (16 digits or more); the others are exact.
_LONG_INTEGER_RE2 = "^[+-]?[0-9]{16,}$"
_EXACT = 2**53
#: What a reader says of such an integer, after its name and value.
INEXACT = (
    "is an integer beyond 2**53 that float64 rounds (values that differ would tie); subtract a "
    "common offset, or give ranks, so that every value is at most 2**53 in magnitude"
)


def parse_integer(text: str) -> int:
    """``text`` as an int if it is an integer of the grammar, else ``ValueError``."""
    if not _INTEGER_RE.fullmatch(text):
        raise ValueError(f"{text!r} is not an integer (ASCII digits with an optional sign)")
    return int(text)


def _text_array(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def number_text(
    col: pa.Array | pa.ChunkedArray, *, integer: bool = False
) -> tuple[pa.Array, np.ndarray]:
    """A text column made ready for Arrow's cast, and the positions of text the grammar refuses.

    Text that is not a number (``integer``: not an integer) becomes null, so the cast reads only
    the grammar; nulls stay null and are not reported. For integers a leading ``+`` is dropped,
    which Arrow's integer cast would refuse.
    """
    arr = _text_array(col)
    ok = pc.match_substring_regex(arr, _INTEGER_RE2 if integer else _FLOAT_RE2)
    refused = pc.invert(ok).fill_null(False).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(refused)
    if len(bad):
        arr = pc.if_else(ok, arr, pa.scalar(None, arr.type))
    if integer and len(arr) and pc.any(pc.starts_with(arr, "+")).as_py():
        arr = pc.replace_substring_regex(arr, r"^\+", "")
    return arr, bad


def not_a_number_text(col: pa.Array | pa.ChunkedArray, positions: np.ndarray) -> np.ndarray:
    """The ``positions`` whose text is neither empty nor ``nan`` (any case, optional sign).

    Readers that report empty and NaN values as "missing" use this to tell them from text that
    is no number at all.
    """
    arr = _text_array(col)
    if not len(positions):
        return positions
    missing = pc.match_substring_regex(arr.take(pa.array(positions)), _NAN_OR_EMPTY_RE2)
    return positions[~missing.fill_null(True).to_numpy(zero_copy_only=False)]


def inexact_integer(col: pa.Array | pa.ChunkedArray) -> tuple[int, str] | None:
    """The first integer of ``col`` that float64 does not hold exactly, as ``(position, its
    text)``, or ``None``: in an integer column (int64, uint64) a value beyond ``2**53`` in
    magnitude that rounds; in a text column an integer of the grammar that does (``1.5e20`` and
    other decimal notation is a float by the writer's choice, and is read as one)."""
    arr = _text_array(col)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        long = pc.match_substring_regex(arr, _LONG_INTEGER_RE2).fill_null(False)
        for pos in np.flatnonzero(long.to_numpy(zero_copy_only=False)):
            text = arr[int(pos)].as_py()
            if int(text) != float(text):  # Python compares int and float exactly
                return int(pos), text
        return None
    if not (pa.types.is_int64(arr.type) or pa.types.is_uint64(arr.type)):
        return None  # narrower integers and floats are exact as float64
    values = arr.fill_null(0).to_numpy(zero_copy_only=False)
    big = np.flatnonzero((values > _EXACT) | (values < -_EXACT))
    if not len(big):
        return None
    as_float = values[big].astype(np.float64)
    beyond = as_float >= float(np.iinfo(values.dtype).max)  # rounded up past the type
    back = np.where(beyond, 0, as_float).astype(values.dtype)
    lost = np.flatnonzero(beyond | (back != values[big]))
    if not len(lost):
        return None
    pos = int(big[lost[0]])
    return pos, str(values[pos])

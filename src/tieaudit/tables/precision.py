"""Score precision: scores cast to a narrower type, or rounded, before ranking.

A model served in float16 or bfloat16, an evaluator that casts scores to float32
(recsys_metrics), or one that rounds them to a few decimals, sees fewer distinct scores than the
model computed: scores that differ only below the precision become ties, and the tie rule
decides more rows. ``tieaudit evaluate`` and ``tieaudit audit`` take ``--score-precision P`` to
show it on your own scores: the audit's diagnostics give the share of rows whose relevant item
is tied, and ``input_order`` against ``expected`` the inflation the stored order then gives.

``P`` is one of (:data:`PRECISIONS`):

``float32``, ``float16``
    numpy's conversion from float64, rounding to nearest, ties to even (values beyond the
    type's range become ``inf``, as the cast does).
``bfloat16``
    the top 16 bits of a float32 (8 exponent bits, 7 fraction bits), rounded to nearest, ties
    to even, in numpy (no ``ml_dtypes``): the float64 score is first rounded to float32 *to
    odd* (truncated, its last bit set when inexact), so that the two roundings give the
    correctly rounded bfloat16 value.
``round:D``
    ``numpy.round(score, D)`` for ``D`` from 0 to 15 decimals (half to even on the scaled
    value, as numpy rounds), except where a float64 holds no digit below the ``D``-th decimal:
    a score with ``|score| * 10**D >= 2**53`` is a multiple of its own spacing, which is wider
    than ``10**-D``, so rounding it to ``D`` decimals gives the score itself. It is kept as it
    is; numpy's scaling would turn it into ``inf`` near the top of the range (``1e300`` at 15
    decimals) or move it by a unit in the last place, making ties the data does not have.

The result is float64 again, holding the cast values exactly. It needs every candidate's score:
a summary table (whose tie groups are counts) or a table with counts of unstored candidates is
refused.

What casting does to a whole table, several precisions at once and streamed through its rows,
is :mod:`tieaudit.analyses.casting` (the pipeline's casting table).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from .candidates import CandidateTable

__all__ = ["PRECISIONS", "cast_scores", "cast_table", "parse_precision"]

#: The precisions, as written after ``--score-precision``.
PRECISIONS = ("float32", "float16", "bfloat16", "round:D")
_ROUND = re.compile(r"round:([0-9]{1,2})")
_MAX_DECIMALS = 15


def parse_precision(text: str) -> str:
    """``text`` checked (``round:D``: ``D`` from 0 to 15); a :class:`ValueError` naming the
    choices otherwise."""
    m = _ROUND.fullmatch(text)
    if text in PRECISIONS[:3] or (m and int(m.group(1)) <= _MAX_DECIMALS):
        return text
    raise ValueError(
        f"unknown score precision {text!r}; give one of {', '.join(PRECISIONS)} (D: decimals "
        f"from 0 to {_MAX_DECIMALS})"
    )


def _bfloat16(x: np.ndarray) -> np.ndarray:
    """``x`` (float64) rounded to bfloat16, as float64 (see the module docstring)."""
    with np.errstate(over="ignore"):
        f = x.astype(np.float32)
    # to odd: toward zero, then the last bit set where the float32 is not exact
    back = f.astype(np.float64)
    toward = np.where(np.isfinite(back) & (np.abs(back) > np.abs(x)),
                      np.nextafter(f, np.float32(0)), f)  # fmt: skip
    big = np.isinf(f) & np.isfinite(x)  # beyond float32: truncated to its largest value
    toward[big] = np.copysign(np.finfo(np.float32).max, x[big])
    bits = toward.view(np.uint32).copy()
    inexact = np.isfinite(x) & (toward.astype(np.float64) != x)
    bits[inexact] |= np.uint32(1)
    # round to nearest even on the top 16 bits (an infinity stays one: its low bits are 0)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    bits = (bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(np.float64)


def _round(x: np.ndarray, decimals: int) -> np.ndarray:
    """``x`` rounded to ``decimals`` places; a score with no digit that far down kept as it is
    (see the module docstring)."""
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.round(x, decimals)
    whole = ~(np.abs(x) < 2.0**53 / 10.0**decimals)  # NaN and the infinities kept as well
    return np.where(whole, x, rounded)


def cast_scores(scores: np.ndarray, precision: str) -> np.ndarray:
    """``scores`` cast to ``precision`` (:data:`PRECISIONS`), as float64."""
    x = np.asarray(scores, dtype=np.float64)
    p = parse_precision(precision)
    if p == "bfloat16":
        return _bfloat16(x)
    if p.startswith("round:"):
        return _round(x, int(p.split(":")[1]))
    with np.errstate(over="ignore"):
        return x.astype(np.float32 if p == "float32" else np.float16).astype(np.float64)


def cast_table(table: CandidateTable, precision: str | None) -> CandidateTable:
    """``table`` with its scores cast to ``precision`` (``None``: ``table`` itself); a
    :class:`ValueError` for a table that does not hold every candidate's score."""
    if precision is None:
        return table
    p = parse_precision(precision)
    if table.is_summary or table.n_higher is not None or table.n_lower is not None:
        raise ValueError(
            f"{table.source}: --score-precision {p} casts every candidate's score, and this "
            "table counts candidates it does not store (n_higher, n_lower or n_tied): evaluate "
            "the stored candidates"
        )
    return replace(table, score=cast_scores(table.score, p))

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

:func:`cast_summary` gives the whole picture for several precisions at once, streamed through
the rows a chunk at a time (the pipeline's casting table, ``paper.score_precisions``): per
precision, the share of rows whose relevant item is tied and the means of ``input_order`` and
``expected``; :func:`cast_effect` is its one-line form for one precision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from .candidates import CandidateError, CandidateTable
from .measures import Measure, parse_measures

__all__ = [
    "CAST_COLUMNS", "PRECISIONS", "UNCAST", "cast_effect", "cast_scores", "cast_summary",
    "cast_table", "casting_table", "parse_precision",
]  # fmt: skip

#: The precisions, as written after ``--score-precision``.
PRECISIONS = ("float32", "float16", "bfloat16", "round:D")
#: The ``precision`` of :func:`cast_summary`'s lines about the scores as stored.
UNCAST = "none"
#: The columns of :func:`cast_summary`'s table.
CAST_COLUMNS = ("precision", "rows", "tied", "metric", "input_order", "expected", "inflation")
#: The rules whose means :func:`cast_summary` compares.
_CAST_RULES = ("input_order", "expected")
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


def _tied_rows(table: CandidateTable) -> int:
    """The number of rows whose best relevant item ties with another candidate."""
    from .ties import tie_structure

    ts = tie_structure(table, members=False)
    has = ts.first >= 0
    return int((ts.t[ts.first[has]] > 1).sum())


def _tables(data: Any, memory: int | str | None, chunk_rows: int | None,
            n_measures: int) -> Iterator[CandidateTable]:  # fmt: skip
    """The chunks of whole rows of ``data`` (a :class:`CandidateTable`: itself, one chunk)."""
    from .rules import parse_rules
    from .stream import Cost, chunk_table, open_chunks

    if isinstance(data, CandidateTable):
        yield data
        return
    rs = parse_rules(_CAST_RULES)
    source, chunks, _ = open_chunks(data, rs, chunk_rows, memory, Cost.of(rs, n_measures))
    for chunk, offset in chunks:
        yield chunk_table(chunk, source.name, source.where(offset), (offset, source.n_lines))


def cast_summary(data: Any, precisions: Iterable[str], measures: Iterable[str | Measure],
                 *, memory: int | str | None = "1GB",
                 chunk_rows: int | None = None) -> pd.DataFrame:  # fmt: skip
    """What casting the scores of ``data`` to each of ``precisions`` does, streamed through its
    rows a chunk at a time (``memory``, ``chunk_rows``: as :func:`tieaudit.evaluate_stream`
    takes them; ``data``: what it reads, or a :class:`CandidateTable`).

    One line per precision (the stored scores first, as :data:`UNCAST`; then ``precisions`` in
    order, each once) and measure (:data:`CAST_COLUMNS`): ``rows`` evaluated, ``tied`` the
    share of them whose best relevant item ties with another candidate, the means of the measure
    under ``input_order`` and ``expected``, and ``inflation``, the first minus the second. Each
    chunk is cast and evaluated once per precision; the means are merged from the chunks' sums
    (:class:`tieaudit.sums.Sums`), so they do not depend on the chunking beyond rounding.
    """
    from .evaluate import evaluate
    from .sums import Sums

    levels = [None, *dict.fromkeys(parse_precision(p) for p in precisions)]
    ms = parse_measures(measures)
    tied = [0] * len(levels)
    sums: list[list[Sums]] = [[] for _ in levels]
    source = getattr(data, "source", str(data))
    for table in _tables(data, memory, chunk_rows, len(ms)):
        casts = [cast_table(table, p) for p in levels]  # a table it cannot cast: refused first
        for i, cast in enumerate(casts):
            tied[i] += _tied_rows(cast)
            sums[i].append(evaluate(cast, ms, _CAST_RULES).sums())
    if not sums[0]:
        raise CandidateError(f"{source}: no candidates (the table is empty)")
    lines = []
    for p, n_tied, parts in zip(levels, tied, sums, strict=True):
        merged = Sums.merge(parts)
        value = merged.summary().set_index(["rule", "metric"])["value"]
        for m in map(str, ms):
            stored, exact = (float(value[(r, m)]) for r in _CAST_RULES)
            lines.append((p or UNCAST, merged.n_rows, n_tied / merged.n_rows, m, stored, exact,
                          stored - exact))  # fmt: skip
    return pd.DataFrame(lines, columns=list(CAST_COLUMNS))


def casting_table(parts: Iterable[tuple[str, str, pd.DataFrame]]) -> pd.DataFrame:
    """Several datasets' and scorers' :func:`cast_summary` frames in one table, in the order
    given, with the columns ``dataset`` and ``scorer`` first."""
    frames = [frame.assign(dataset=d, scorer=s) for d, s, frame in parts]
    return pd.concat(frames, ignore_index=True)[["dataset", "scorer", *CAST_COLUMNS]]


def _signed(x: float) -> str:
    return f"{round(x, 12) + 0.0:+.4f}"  # no -0.0000 from rounding noise


def cast_effect(data: Any, precision: str, measure: Measure, *,
                memory: int | str | None = "1GB", chunk_rows: int | None = None) -> str:  # fmt: skip
    """One line saying what casting the scores of ``data`` (what :func:`cast_summary` reads)
    to ``precision`` does: the share of rows whose relevant item is tied, and the inflation of
    ``input_order`` over ``expected`` on ``measure``, each cast and uncast (streamed through the
    rows as :func:`cast_summary` is)."""
    before, after = cast_summary(data, [precision], [measure], memory=memory,
                                 chunk_rows=chunk_rows).itertuples(index=False)  # fmt: skip
    return (
        f"--score-precision {precision}: the relevant item ties in "
        f"{100 * after.tied:.1f}% of the rows ({100 * before.tied:.1f}% uncast); "
        f"input_order - expected {measure}: {_signed(after.inflation)} "
        f"({_signed(before.inflation)} uncast)"
    )

"""What casting the scores of a table to a narrower type, or rounding them, does: the share of
rows whose relevant item is then tied, and the inflation of ``input_order`` over ``expected``
(the casts themselves are :mod:`tieaudit.tables.precision`).

:func:`cast_summary` gives the whole picture for several precisions at once, streamed through
the rows a chunk at a time (the pipeline's casting table, ``paper.score_precisions``): per
precision, the share of rows whose relevant item is tied and the means of ``input_order`` and
``expected``; :func:`cast_effect` is its one-line form for one precision (``tieaudit evaluate
--score-precision P`` prints it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import closing
from typing import Any

import pandas as pd

from ..evaluation.evaluate import evaluate
from ..evaluation.stream import Cost, chunk_table, open_chunks
from ..evaluation.sums import Sums
from ..tables.candidates import CandidateError, CandidateTable, as_table
from ..tables.columns import Columns
from ..tables.precision import cast_table, parse_precision
from ..ties.measures import Measure, parse_measures
from ..ties.rules import parse_rules
from ..ties.structure import tie_structure

__all__ = ["CAST_COLUMNS", "UNCAST", "cast_effect", "cast_summary", "casting_table"]

#: The ``precision`` of :func:`cast_summary`'s lines about the scores as stored.
UNCAST = "none"
#: The columns of :func:`cast_summary`'s table.
CAST_COLUMNS = ("precision", "rows", "tied", "metric", "input_order", "expected", "inflation")
#: The rules whose means :func:`cast_summary` compares.
_CAST_RULES = ("input_order", "expected")


def _tied_rows(table: CandidateTable) -> int:
    """The number of rows whose best relevant item ties with another candidate."""
    ts = tie_structure(table, members=False)
    has = ts.first >= 0
    return int((ts.t[ts.first[has]] > 1).sum())


def _tables(data: Any, memory: int | str | None, chunk_rows: int | None, n_measures: int,
            columns: Columns | None = None) -> Iterator[CandidateTable]:  # fmt: skip
    """The chunks of whole rows of ``data`` (a :class:`CandidateTable`: itself, one chunk;
    ``columns``: its own column names)."""
    if isinstance(data, CandidateTable):
        yield as_table(data, columns)
        return
    rs = parse_rules(_CAST_RULES)
    source, chunks, _ = open_chunks(data, rs, chunk_rows, memory, Cost.of(rs, n_measures),
                                    columns)  # fmt: skip
    with closing(chunks):  # its row check's files removed, also on an error
        for chunk, offset in chunks:
            yield chunk_table(chunk, source.name, source.where(offset), (offset, source.n_lines),
                              source.columns)  # fmt: skip


def cast_summary(data: Any, precisions: Iterable[str], measures: Iterable[str | Measure],
                 *, memory: int | str | None = "1GB", chunk_rows: int | None = None,
                 columns: Columns | None = None) -> pd.DataFrame:  # fmt: skip
    """What casting the scores of ``data`` to each of ``precisions`` does, streamed through its
    rows a chunk at a time (``memory``, ``chunk_rows``: as :func:`tieaudit.evaluate_stream`
    takes them; ``data``: what it reads, or a :class:`CandidateTable`; ``columns``: its own
    column names).

    One line per precision (the stored scores first, as :data:`UNCAST`; then ``precisions`` in
    order, each once) and measure (:data:`CAST_COLUMNS`): ``rows`` evaluated, ``tied`` the
    share of them whose best relevant item ties with another candidate, the means of the measure
    under ``input_order`` and ``expected``, and ``inflation``, the first minus the second. Each
    chunk is cast and evaluated once per precision; the means are merged from the chunks' sums
    (:class:`tieaudit.evaluation.sums.Sums`), so they do not depend on the chunking beyond rounding.
    """
    levels = [None, *dict.fromkeys(parse_precision(p) for p in precisions)]
    ms = parse_measures(measures)
    tied = [0] * len(levels)
    sums: list[list[Sums]] = [[] for _ in levels]
    source = getattr(data, "source", str(data))
    with closing(_tables(data, memory, chunk_rows, len(ms), columns)) as tables:
        for table in tables:
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
                memory: int | str | None = "1GB", chunk_rows: int | None = None,
                columns: Columns | None = None) -> str:  # fmt: skip
    """One line saying what casting the scores of ``data`` (what :func:`cast_summary` reads)
    to ``precision`` does: the share of rows whose relevant item is tied, and the inflation of
    ``input_order`` over ``expected`` on ``measure``, each cast and uncast (streamed through the
    rows as :func:`cast_summary` is)."""
    before, after = cast_summary(data, [precision], [measure], memory=memory,
                                 chunk_rows=chunk_rows, columns=columns).itertuples(index=False)  # fmt: skip
    return (
        f"--score-precision {precision}: the relevant item ties in "
        f"{100 * after.tied:.1f}% of the rows ({100 * before.tied:.1f}% uncast); "
        f"input_order - expected {measure}: {_signed(after.inflation)} "
        f"({_signed(before.inflation)} uncast)"
    )

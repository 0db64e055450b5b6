"""A table's rows split into consecutive parts: the pipeline's ``evaluation.row_chunks``.

The pipeline scores, reduces and evaluates the rows of a dataset in ``N`` jobs. A part is a
contiguous range of whole rows in stored order: part ``i`` of ``N`` holds rows
``np.array_split(range(n_rows), N)[i]`` (the first ``n_rows % N`` parts one row more), as the
hash seeds are split over ``evaluation.seed_chunks`` jobs. Contiguous ranges rather than a hash
of the user, because the parts concatenated in part order are the stored table itself: a merged
file is the unsplit job's file byte for byte, with no sort. The sampled rows are already in a
seeded random order, so consecutive ranges are balanced. Nothing drawn at random depends on a
row's part: candidates are sampled before the split, hash tie-breaks are keyed by (seed, user,
item), a full-catalogue row's place by its user, and a rule that depends on every line of the
stored table (``random:SEED``) is given the part's place in it (:func:`part_place`). The
evaluations of the parts merge exactly with :mod:`tieaudit.evaluation.parts`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np
import pandas as pd

from ..common.parquet import parquet_file

__all__ = ["part_bounds", "row_part", "part_place", "placed", "is_empty_part", "empty_part_note"]

T = TypeVar("T")


def part_bounds(n_rows: int, n_parts: int) -> list[tuple[int, int]]:
    """``(first, stop)`` row of each of ``n_parts`` consecutive parts of ``n_rows`` rows."""
    if n_parts < 1:
        raise ValueError(f"the number of parts must be >= 1, got {n_parts}")
    stops = np.cumsum([len(p) for p in np.array_split(np.arange(n_rows), n_parts)])
    return [(int(a), int(b)) for a, b in zip([0, *stops[:-1]], stops, strict=True)]


def row_part(frame: pd.DataFrame, part: int, n_parts: int, column: str = "row") -> pd.DataFrame:
    """The lines of ``frame`` in rows part ``part`` of ``n_parts`` (rows in first-appearance
    order of ``column``; the lines of a row must be consecutive), with a fresh index; none
    where the table has fewer rows than parts and this part is one of the empty ones."""
    if not 0 <= part < n_parts:
        raise ValueError(f"part {part} of {n_parts}: parts are numbered 0 .. {n_parts - 1}")
    rows = frame[column].to_numpy()
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else np.zeros(0, int)
    seen = pd.Index(rows[starts])
    if not seen.is_unique:
        first = seen[seen.duplicated()][0]
        raise ValueError(
            f"row {first!r} appears twice, with other rows' lines between: the lines of each "
            f"row must be consecutive to split rows into parts (sort the table by {column!r})"
        )
    first, stop = part_bounds(len(starts), n_parts)[part]
    lines = np.r_[starts, len(rows)]
    return frame.iloc[lines[first] : lines[stop]].reset_index(drop=True)


def is_empty_part(path: str | os.PathLike[str]) -> bool:
    """Whether the Parquet file of a part at ``path`` holds no lines (from its footer): a part
    beyond the rows of a dataset with fewer rows than parts."""
    return parquet_file(path).metadata.num_rows == 0


def empty_part_note(part: int, n_parts: int) -> str:
    """The log line of a step that found its part ``part`` of ``n_parts`` empty."""
    return (f"rows part {part} of {n_parts} is empty: the dataset has fewer rows than "
            "evaluation.row_chunks; its output has no lines and the merge passes it over")


def part_place(paths: Sequence[str | os.PathLike[str]], part: int) -> tuple[int, int]:
    """The first line of part ``part`` in the stored table that the Parquet files ``paths``
    (every part, in order) make together, and that table's number of lines (from the footers)."""
    lines = [parquet_file(p).metadata.num_rows for p in paths]
    return sum(lines[:part]), sum(lines)


def placed(table: T, paths: Sequence[str | os.PathLike[str]], part: int) -> T:
    """``table`` (a :class:`tieaudit.tables.candidates.CandidateTable`), part ``part`` of the stored
    table the Parquet files ``paths`` make, placed in it (``line_offset``, ``lines_total``):
    what depends on every line of the whole table (``random:SEED``, the audit's shuffles) takes
    its lines' places there."""
    offset, total = part_place(paths, part)
    return replace(table, line_offset=offset, lines_total=total)  # type: ignore[type-var]

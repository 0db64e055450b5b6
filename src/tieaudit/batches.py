"""Candidates read in chunks of whole rows, from wherever they live.

A source (:func:`open_source`) is a candidates file (CSV or Parquet), a directory of Parquet files
(a dataset, hive-partitioned as data lakes write them: ``key=value`` folders become columns), a
glob naming files, a pyarrow Table, RecordBatchReader or dataset (``pyarrow.dataset``), or a
pandas or polars DataFrame. Its records are read as Arrow record batches in stored order
(Parquet by row groups, CSV by blocks; files in name order)
and cut into chunks of whole rows (:func:`whole_rows`): a row whose lines continue in the next
batch is carried over. A row whose lines are not contiguous cannot be cut that way: a row that
comes back after other rows were read is an error naming it and how to sort the file
(:class:`RowCheck`). Errors name records counted over the whole source (CSV files: lines).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .candidates_io import (
    CandidateError,
    LineMap,
    Records,
    ShiftedLines,
    file_batches,
    file_lines,
    frame_to_arrow,
)

__all__ = [
    "Source", "open_source", "whole_rows", "RowChunks", "row_ids", "RowCheck", "RowKeys", "Span",
    "plan_spans", "read_span", "BATCH_LINES",
]  # fmt: skip

#: Lines per record batch read from a file (a chunk is one batch or more).
BATCH_LINES = 1 << 16
#: Row ids hashed at a time by :class:`RowKeys` (each a Python string while it is hashed).
_HASHED = 1 << 16
_GLOB = set("*?[")


@dataclass
class Source:
    """Where candidates come from: a name for messages, the record batches in stored order, the
    number of lines when known beforehand, and how a chunk's errors name its records."""

    def counted(self) -> Source:
        """The source with its number of lines, counted by reading it once if need be."""
        if self.n_lines is not None or not self.rereadable:
            return self
        return replace(self, n_lines=sum(b.num_rows for b in self.batches()))

    name: str
    batches: Callable[[], Iterator[pa.RecordBatch | pa.Table]]
    n_lines: int | None
    csv_path: Path | None = None
    #: Whether :attr:`batches` may be called again (a RecordBatchReader is read once).
    rereadable: bool = True
    #: The source's one file when it is a Parquet file: chunks can be read from it by row
    #: groups in any process (:func:`plan_spans`, :func:`read_span`).
    parquet_path: Path | None = None

    def where(self, offset: int) -> LineMap:
        """How the errors of a chunk starting at record ``offset`` name its records."""
        return ShiftedLines(self.csv_path, offset) if self.csv_path else Records(offset)


def _table_source(table: pa.Table, name: str) -> Source:
    return Source(name, lambda: iter(table.to_batches(max_chunksize=BATCH_LINES)), table.num_rows)


def _hive_columns(path: Path, root: Path) -> dict[str, str]:
    """The ``key=value`` folders between ``root`` and ``path``."""
    parts = path.relative_to(root).parts[:-1]
    return dict(p.split("=", 1) for p in parts if "=" in p)


def _files_source(files: list[Path], name: str, root: Path | None) -> Source:
    if not files:
        raise CandidateError(f"{name}: no candidates files (.parquet, .pq, .csv, .csv.gz) found")

    def batches() -> Iterator[pa.RecordBatch | pa.Table]:
        for f in files:
            keys = _hive_columns(f, root) if root is not None else {}
            for b in file_batches(f, BATCH_LINES):
                table = pa.Table.from_batches([b])
                for k, v in keys.items():
                    if k not in table.column_names:
                        table = table.append_column(k, pa.array([v] * len(table), pa.string()))
                yield table

    counts = [file_lines(f) for f in files]
    total = None if any(c is None for c in counts) else sum(counts)
    csv_path = files[0] if len(files) == 1 and counts[0] is None else None
    parquet_path = files[0] if len(files) == 1 and root is None and counts[0] is not None \
        else None  # fmt: skip
    return Source(name, batches, total, csv_path, parquet_path=parquet_path)


def open_source(data: Any) -> Source:
    """The :class:`Source` of a path (file, directory, glob), a pyarrow Table, RecordBatchReader
    or dataset (``pyarrow.dataset``), or a DataFrame (pandas, or any with ``to_arrow()`` such as
    polars)."""
    if isinstance(data, pa.Table):
        return _table_source(data, "<table>")
    if isinstance(data, pa.RecordBatchReader):  # read once, as it streams
        return Source("<batches>", lambda: iter(data), None, rereadable=False)
    import pyarrow.dataset as ds

    if isinstance(data, ds.Dataset):  # in order: files, then records; partition keys are columns
        return Source("<dataset>", lambda: data.to_batches(batch_size=BATCH_LINES),
                      data.count_rows())  # fmt: skip
    if isinstance(data, pd.DataFrame):
        return _table_source(frame_to_arrow(data, "<frame>"), "<frame>")
    if hasattr(data, "to_arrow") and not isinstance(data, (str, os.PathLike)):
        return _table_source(data.to_arrow(), "<frame>")
    name = str(data)
    p = Path(data)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and _is_data(f))
        return _files_source(files, name, p)
    if not p.exists() and _GLOB & set(name):
        files = sorted(Path(f) for f in glob.glob(name, recursive=True) if Path(f).is_file())
        return _files_source(files, name, None)
    return _files_source([p], name, None)


def _is_data(path: Path) -> bool:
    """A candidates file in a dataset folder (hidden and ``_``-prefixed files are metadata)."""
    if path.name.startswith((".", "_")):
        return False
    return "".join(path.suffixes[-2:]).lower().endswith((".parquet", ".pq", ".csv", ".csv.gz"))


def _row_starts(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Positions (after the first) where the row id differs from the line before."""
    if len(col) < 2:
        return np.zeros(0, dtype=np.int64)
    try:
        diff = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, len(col) - 1)), True)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # no ids (e.g. lists): one chunk,
        return np.zeros(0, dtype=np.int64)  # whose validation names the column
    return np.flatnonzero(diff.to_numpy(zero_copy_only=False)) + 1


class RowChunks:
    """Chunks of whole rows taken one at a time from record batches (:meth:`next`), each with its
    record offset: a chunk ends where a new row starts, after ``max_rows`` rows, or before
    ``max_lines`` lines are passed, each row counting ``row_lines`` lines more than it holds (a
    longer row is a chunk of its own); no limit: all the rest.
    A row is its run of consecutive lines with one row id. Several sources read side by side
    take chunks of the same number of rows from each."""

    def __init__(self, batches: Iterator[pa.RecordBatch | pa.Table]) -> None:
        self._batches = iter(batches)
        self._pending: list[pa.Table] = []
        self._starts: list[np.ndarray] = []  # row starts inside the pending lines (0 included)
        self._n_pending = 0
        self._last: Any = None  # the row id of the last pending line
        self.offset = 0

    def _read(self) -> bool:
        """Add the next non-empty batch to the pending lines; ``False`` at the end."""
        for batch in self._batches:
            table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
            if table.num_rows == 0:
                continue
            col = table.column("row") if "row" in table.column_names else None
            inner = _row_starts(col) if col is not None else np.zeros(0, dtype=np.int64)
            first = col[0].as_py() if col is not None else None
            new = inner if self._n_pending and first == self._last else np.r_[0, inner]
            self._starts.append(new + self._n_pending)
            self._pending.append(table)
            self._n_pending += table.num_rows
            self._last = col[-1].as_py() if col is not None else None
            return True
        return False

    def _take(self, cut: int) -> tuple[pa.Table, int]:
        pending = self._pending
        whole = pa.concat_tables(pending, promote_options="default") if len(pending) > 1 \
            else pending[0]  # fmt: skip
        at = np.concatenate(self._starts)
        chunk, offset = whole.slice(0, cut), self.offset
        rest = whole.slice(cut)
        self._pending, self._n_pending = ([rest], rest.num_rows) if rest.num_rows else ([], 0)
        self._starts = [at[at >= cut] - cut] if rest.num_rows else []
        self.offset += cut
        return chunk, offset

    def next(self, max_rows: int | None = None, max_lines: int | None = None,
             row_lines: float = 0.0) -> tuple[pa.Table, int] | None:  # fmt: skip
        """The next chunk and its record offset (``None`` when every line was taken)."""
        while True:
            if self._starts:
                cut = _cut(np.concatenate(self._starts), self._n_pending, max_rows, max_lines,
                           row_lines)  # fmt: skip
                if cut is not None:
                    return self._take(cut)
            if not self._read():
                return self._take(self._n_pending) if self._n_pending else None

    def done(self) -> bool:
        """Whether every line was taken."""
        return not self._n_pending and not self._read()


def row_ids(chunk: pa.Table) -> tuple[list[Any], np.ndarray]:
    """The row ids of a chunk of whole rows in stored order, and the line each starts at."""
    if "row" not in chunk.column_names or not chunk.num_rows:
        return [], np.zeros(0, dtype=np.int64)
    col = chunk.column("row")
    starts = np.r_[0, _row_starts(col)]
    return pc.take(col, pa.array(starts)).to_pylist(), starts


def whole_rows(
    batches: Iterator[pa.RecordBatch | pa.Table], max_rows: int | None = None,
    max_lines: int | None = None, row_lines: float = 0.0,
) -> Iterator[tuple[pa.Table, int]]:
    """Chunks of whole rows and the record offset of each (:class:`RowChunks`)."""
    rows = RowChunks(batches)
    while (chunk := rows.next(max_rows, max_lines, row_lines)) is not None:
        yield chunk


def _cut(starts: np.ndarray, n_lines: int, max_rows: int | None, max_lines: int | None,
         row_lines: float = 0.0) -> int | None:  # fmt: skip
    """Where to end the next chunk of ``n_lines`` pending lines whose rows start at ``starts``
    (``None``: read on); a chunk of ``j`` rows ending at ``starts[j]`` counts ``starts[j] + j *
    row_lines`` lines against ``max_lines``."""
    cuts = []
    if max_rows is not None and len(starts) > max_rows:
        cuts.append(int(starts[max_rows]))
    if max_lines is not None and n_lines + row_lines * len(starts) > max_lines:
        fits = starts[(starts > 0) & (starts + row_lines * np.arange(len(starts)) <= max_lines)]
        if len(fits):
            cuts.append(int(fits[-1]))
        elif len(starts) > 1:  # the first row alone is longer than max_lines
            cuts.append(int(starts[1]))
    return min(cuts) if cuts else None


@dataclass(frozen=True)
class RowKeys:
    """The distinct row ids of a chunk as :class:`RowCheck` needs them (small, picklable):
    ``keys`` the 64-bit hashes of their text, sorted; ``ids`` (an Arrow array: no Python object
    a row) and ``first`` (the line of the chunk each first appears on) in the same order."""

    keys: np.ndarray
    ids: pa.Array | pa.ChunkedArray
    first: np.ndarray

    @classmethod
    def of(cls, chunk: pa.Table) -> RowKeys | None:
        """The keys of ``chunk`` (``None``: no row ids to check, the chunk's validation names
        the column). One hash a row (a run of lines with one id), not a line."""
        if "row" not in chunk.column_names or not chunk.num_rows:
            return None
        col = chunk.column("row")
        starts = np.r_[0, _row_starts(col)]
        try:
            runs = pc.take(col, pa.array(starts))
            text = runs if pa.types.is_string(runs.type) else pc.cast(runs, pa.string())
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError, pa.ArrowInvalid):
            return None
        hashes = np.concatenate([  # in blocks: a Python string at a time for few rows
            pd.util.hash_array(text.slice(i, _HASHED).to_numpy(zero_copy_only=False))
            for i in range(0, len(text), _HASHED)])  # fmt: skip
        keys, at = np.unique(hashes, return_index=True)  # a row's first run
        valid = ~pc.is_null(text).to_numpy(zero_copy_only=False)[at]
        at = at[valid]
        return cls(keys[valid], pc.take(runs, pa.array(at)), starts[at])


class RowCheck:
    """Refuses a row that comes back after other rows were read (its lines not contiguous).

    Keeps a sorted array of 64-bit hashes of the row ids already read (8 bytes a row, beside any
    memory budget; a chunk's check costs a binary search of each of its rows and a merge of two
    sorted arrays, one new copy of them); two different row ids share a hash with a probability
    of about ``rows**2 / 2**65``.
    """

    def __init__(self, source: Source) -> None:
        self.source = source
        self.seen = np.zeros(0, dtype=np.uint64)

    def add(self, chunk: pa.Table, offset: int) -> None:
        """Record the rows of ``chunk``; an error if one of them was read before."""
        self.add_keys(RowKeys.of(chunk), offset)

    def add_keys(self, rows: RowKeys | None, offset: int) -> None:
        """Record the rows of a chunk starting at record ``offset`` from their keys; an error
        naming the first of them that was read before."""
        if rows is None:
            return
        where = np.searchsorted(self.seen, rows.keys)
        if len(self.seen):
            at = np.minimum(where, len(self.seen) - 1)
            again = np.flatnonzero(self.seen[at] == rows.keys)
            if len(again):
                i = int(again[np.argmin(rows.first[again])])
                self._refuse(rows.ids[i].as_py(), int(rows.first[i]), offset)
        # both sorted: merged into one new copy (a sort of the two joined made two)
        self.seen = np.insert(self.seen, where, rows.keys)

    def _refuse(self, row: Any, pos: int, offset: int) -> None:
        unit = "line" if self.source.csv_path else "record"
        (number,) = self.source.where(offset)(np.array([pos]))
        raise CandidateError(
            f"{self.source.name}: {unit} {number}: row {str(row)!r} comes back after other rows; "
            "read in chunks of whole rows, a row's lines must be contiguous: sort the lines by "
            "row with a stable sort (keeping each row's stored order, which input_order uses), "
            "e.g. pandas frame.sort_values('row', kind='stable'), or evaluate in one chunk "
            "(a --chunk-rows or --memory large enough for every row)"
        )


@dataclass(frozen=True)
class Span:
    """A chunk of a Parquet file named by its row groups ``[start, stop)``, whose first line is
    line ``line`` of the file: its rows are those whose first line is in these groups (a row
    that goes on into later groups is read from them too)."""

    start: int
    stop: int
    line: int


def plan_spans(path: Path, max_lines: int) -> list[Span] | None:
    """Consecutive row groups of the Parquet file ``path`` holding at most ``max_lines`` lines
    each (from its footer, nothing read); ``None`` when a row group alone holds more."""
    from ._parquet import parquet_file

    meta = parquet_file(path).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    if not sum(sizes) or max(sizes) > max_lines:
        return None
    spans, start, line, lines = [], 0, 0, 0
    for i, n in enumerate(sizes):
        if lines + n > max_lines:
            spans.append(Span(start, i, line))
            start, line, lines = i, line + lines, 0
        lines += n
    spans.append(Span(start, len(sizes), line))
    return spans


def _same_run(col: pa.ChunkedArray | pa.Array, row: Any) -> int:
    """How many first lines of ``col`` have the row id ``row``."""
    if not len(col) or col[0].as_py() != row:
        return 0
    inner = _row_starts(col)
    return int(inner[0]) if len(inner) else len(col)


def read_span(path: Path, span: Span) -> tuple[pa.Table | None, int]:
    """The lines of the rows of ``span`` (``None``: a row begun before it fills it) and the
    record offset of the first; row groups are read in this process, one span at a time."""
    from ._parquet import parquet_file

    try:
        pf = parquet_file(path)
        table = pf.read_row_groups(list(range(span.start, span.stop)))
        if not table.num_rows or "row" not in table.column_names:
            return table, span.line
        col = table.column("row")
        lead = 0
        if span.start:  # lines that finish the row the span before began
            before = pf.read_row_group(span.start - 1, columns=["row"]).column("row")
            lead = _same_run(col, before[-1].as_py())
        if lead == table.num_rows:
            return None, span.line
        parts, last = [table.slice(lead)], col[-1].as_py()
        for g in range(span.stop, pf.metadata.num_row_groups):  # the last row, continued
            more = _same_run(pf.read_row_group(g, columns=["row"]).column("row"), last)
            if more:
                parts.append(pf.read_row_group(g).slice(0, more))
            if more < pf.metadata.row_group(g).num_rows:
                break
        whole = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{path}: cannot read: {exc}") from None
    return whole, span.line + lead

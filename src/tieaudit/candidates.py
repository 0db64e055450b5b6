"""The candidates table: reading, validation and the integer-coded form the evaluator uses.

A candidates file has one line per (evaluation row, candidate item) with columns

* ``row``     — the evaluation row (one user and one held-out item), any id, read as a string;
* ``user_id`` — the user of the row, read as a string; constant within a row;
* ``item_id`` — the candidate item, read as a string; unique within a row;
* ``label``   — 1 for the relevant (held-out) item, 0 for a sampled negative; exactly one 1 a row;
* ``score``   — a finite float; higher is better.

The *stored order* is the order of the lines in the file: it is what ``input_order`` keeps among
equal scores. Rows may have different lengths and need not be contiguous. CSV (``.csv``,
``.csv.gz``) and Parquet (``.parquet``, ``.pq``) are chosen by extension.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CandidateTable", "CandidateError", "read_candidates", "REQUIRED_COLUMNS"]

REQUIRED_COLUMNS = ("row", "user_id", "item_id", "label", "score")
_ID_COLUMNS = ("row", "user_id", "item_id")
_SHOW = 5  # offending lines named in an error message


class CandidateError(ValueError):
    """A candidates table that cannot be evaluated; the message names the file and lines."""


LineMap = Callable[[np.ndarray], list[int]]


def _where(source: str, positions: np.ndarray, csv_lines: bool | LineMap) -> str:
    """'file.csv lines 3, 9 (and 4 more)' for 0-based record positions.

    ``csv_lines`` is False (records, 0-based), True (1-based lines below a header line) or a
    function mapping record positions to file line numbers (used when a CSV has blank lines).
    """
    shown_pos = np.asarray(positions[:_SHOW])
    if callable(csv_lines):
        numbers = csv_lines(shown_pos)
    else:
        numbers = [int(p) + (2 if csv_lines else 0) for p in shown_pos]
    shown = ", ".join(str(n) for n in numbers)
    more = f" (and {len(positions) - _SHOW} more)" if len(positions) > _SHOW else ""
    unit = "line" if csv_lines is not False else "record"
    plural = "s" if len(positions) > 1 else ""
    return f"{source}: {unit}{plural} {shown}{more}"


def _csv_line_map(path: Path) -> LineMap:
    """Record position -> 1-based file line, skipping blank lines as the CSV reader does.

    Only called to word an error message, so it may scan the file once.
    """

    def lookup(positions: np.ndarray) -> list[int]:
        wanted = {int(p) for p in positions}
        found: dict[int, int] = {}
        opener = gzip.open if path.suffix.lower() == ".gz" else open
        with opener(path, "rb") as fh:
            record = -2  # the first non-blank line is the header
            for number, line in enumerate(fh, start=1):
                if not line.strip(b"\r\n"):
                    continue
                record += 1
                if record in wanted:
                    found[record] = number
                    if len(found) == len(wanted):
                        break
        return [found.get(int(p), int(p) + 2) for p in positions]

    return lookup


def _encode(column: pa.ChunkedArray | pa.Array, sort: bool) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and the distinct values of a string column.

    Without ``sort`` codes follow first appearance; with ``sort`` they follow the values' code-point
    order, so comparing codes compares the strings.
    """
    enc = pc.dictionary_encode(column)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks() if enc.num_chunks != 1 else enc.chunk(0)
        if isinstance(enc, pa.ChunkedArray):  # pragma: no cover - older pyarrow
            enc = enc.combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    values = np.asarray(enc.dictionary.to_pylist(), dtype=object)
    if sort and len(values) > 1:
        # Arrow compares UTF-8 bytes, which is code-point order (numpy's fixed-width strings
        # would drop trailing NULs).
        order = pc.sort_indices(enc.dictionary).to_numpy()
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        codes = rank[codes]
        values = values[order]
    return codes, values


@dataclass(frozen=True, eq=False)
class CandidateTable:
    """A validated candidates table in integer-coded form (one entry per stored line).

    ``row``, ``user`` and ``item`` are codes into ``row_ids``, ``user_ids`` and ``item_ids``. Row
    codes follow first appearance in the file; item codes follow the item ids' code-point order, so
    comparing item codes compares item ids. Build one with :func:`read_candidates`,
    :meth:`from_frame` or :meth:`from_arrow`; all of them validate.
    """

    row: np.ndarray
    user: np.ndarray
    item: np.ndarray
    label: np.ndarray
    score: np.ndarray
    row_ids: np.ndarray
    user_ids: np.ndarray
    item_ids: np.ndarray
    source: str = "<table>"

    @property
    def n_rows(self) -> int:
        """Number of evaluation rows."""
        return len(self.row_ids)

    @property
    def n_candidates(self) -> int:
        """Number of stored lines."""
        return len(self.row)

    def __len__(self) -> int:
        return self.n_candidates

    @cached_property
    def row_starts(self) -> np.ndarray | None:
        """Where each row starts when every row's lines are contiguous, else ``None``.

        Row codes follow first appearance, so rows are contiguous exactly when the codes never
        decrease; the evaluator then replaces scatter-adds by faster segment sums.
        """
        if self.n_candidates == 0 or np.any(self.row[1:] < self.row[:-1]):
            return None
        return np.flatnonzero(np.r_[True, self.row[1:] != self.row[:-1]])

    def take(self, order: np.ndarray, source: str | None = None) -> CandidateTable:
        """The same candidates stored in ``order`` (a permutation of line positions)."""
        order = np.asarray(order)
        if len(order) != self.n_candidates or not np.array_equal(
            np.sort(order), np.arange(self.n_candidates)
        ):
            raise ValueError("order must be a permutation of the line positions")
        return CandidateTable(
            self.row[order], self.user[order], self.item[order], self.label[order],
            self.score[order], self.row_ids, self.user_ids, self.item_ids,
            source if source is not None else self.source,
        )  # fmt: skip

    def to_frame(self) -> pd.DataFrame:
        """The table as a DataFrame in stored order, with the original string ids."""
        return pd.DataFrame(
            {
                "row": self.row_ids[self.row],
                "user_id": self.user_ids[self.user],
                "item_id": self.item_ids[self.item],
                "label": self.label.astype(np.int8),
                "score": self.score,
            }
        )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(cls, frame: pd.DataFrame, source: str = "<frame>") -> CandidateTable:
        """Validate a DataFrame with the five columns (positions in errors are 0-based records)."""
        missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
        if missing:
            raise CandidateError(
                f"{source}: missing column(s) {', '.join(missing)}; "
                f"a candidates table needs {', '.join(REQUIRED_COLUMNS)}"
            )
        data = {}
        for c in REQUIRED_COLUMNS:
            col = frame[c]
            if c in _ID_COLUMNS:
                try:
                    arr = pa.array(col, from_pandas=True)
                except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed Python objects
                    arr = pa.array([None if pd.isna(v) else str(v) for v in col], pa.string())
            else:
                arr = pa.array(col.to_numpy(), from_pandas=True)
            data[c] = arr
        return cls.from_arrow(pa.table(data), source=source, csv_lines=False)

    @classmethod
    def from_arrow(
        cls, table: pa.Table, source: str = "<table>", csv_lines: bool | LineMap = False
    ) -> CandidateTable:
        """Validate an Arrow table; ``csv_lines`` makes errors name 1-based file lines (True:
        one line per record below a header; or a function from record positions to lines)."""
        missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
        if missing:
            raise CandidateError(
                f"{source}: missing column(s) {', '.join(missing)}; "
                f"a candidates table needs {', '.join(REQUIRED_COLUMNS)}"
            )
        if table.num_rows == 0:
            raise CandidateError(f"{source}: no candidates (the table is empty)")

        def bad(mask: np.ndarray, what: str) -> None:
            pos = np.flatnonzero(mask)
            if len(pos):
                raise CandidateError(f"{_where(source, pos, csv_lines)}: {what}")

        ids = {}
        for c in _ID_COLUMNS:
            col = table.column(c)
            if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
                col = pc.cast(col, pa.string())
            missing = pc.fill_null(pc.or_kleene(pc.is_null(col), pc.equal(col, "")), True)
            bad(missing.to_numpy(zero_copy_only=False), f"missing {c}")
            ids[c] = col

        label_col = table.column("label")
        score_col = table.column("score")
        label = _numeric(label_col, "label", source, csv_lines)
        score = _numeric(score_col, "score", source, csv_lines)
        bad(np.isnan(label), "missing label")
        bad(~np.isin(label, (0.0, 1.0)), "label must be 0 or 1")
        bad(np.isnan(score), "missing or NaN score")
        bad(~np.isfinite(score), "infinite score")

        row, row_ids = _encode(ids["row"], sort=False)
        user, user_ids = _encode(ids["user_id"], sort=False)
        item, item_ids = _encode(ids["item_id"], sort=True)
        is_pos = label == 1.0

        n_pos = np.bincount(row, weights=is_pos, minlength=len(row_ids)).astype(np.int64)
        for count, what in ((0, "no positive (label 1)"), (2, "more than one positive")):
            rows = np.flatnonzero(n_pos == count if count == 0 else n_pos >= count)
            if len(rows):
                first = np.array([np.flatnonzero(row == r)[0] for r in rows[:_SHOW]])
                names = ", ".join(repr(str(row_ids[r])) for r in rows[:_SHOW])
                more = f" (and {len(rows) - _SHOW} more rows)" if len(rows) > _SHOW else ""
                raise CandidateError(
                    f"{_where(source, first, csv_lines)}: row {names}{more} has {what}; "
                    "each row needs exactly one relevant item (label 1)"
                )

        # Duplicate (row, item_id): sort a combined key, report the later occurrence.
        key = row * np.int64(len(item_ids)) + item
        order = np.argsort(key, kind="stable")
        dup_sorted = np.flatnonzero(key[order][1:] == key[order][:-1]) + 1
        if len(dup_sorted):
            pos = np.sort(order[dup_sorted])
            raise CandidateError(
                f"{_where(source, pos, csv_lines)}: duplicate (row, item_id), e.g. row "
                f"{str(row_ids[row[pos[0]]])!r} item {str(item_ids[item[pos[0]]])!r}"
            )

        # One user per row.
        first_line = np.full(len(row_ids), len(row), dtype=np.int64)
        np.minimum.at(first_line, row, np.arange(len(row)))
        bad(user != user[first_line][row], "user_id differs from the row's first line")

        return cls(row, user, item, is_pos, score, row_ids, user_ids, item_ids, source)


def _numeric(
    col: pa.ChunkedArray, name: str, source: str, csv_lines: bool | LineMap
) -> np.ndarray:
    """A numeric column as float64 with NaN for nulls; text that is no number is an error."""
    if pa.types.is_boolean(col.type):
        col = pc.cast(col, pa.int8())
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        text = col.to_pandas()
        values = pd.to_numeric(text, errors="coerce")
        stripped = text.str.strip().str.lower()
        bad = (values.isna() & text.notna() & ~stripped.isin(["", "nan", "-nan", "+nan"]))
        bad = bad.to_numpy(dtype=bool)
        pos = np.flatnonzero(bad)
        if len(pos):
            raise CandidateError(
                f"{_where(source, pos, csv_lines)}: {name} {text.iloc[pos[0]]!r} is not a number"
            )
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        raise CandidateError(f"{source}: column {name} has type {col.type}, expected numbers")
    return col.to_numpy().astype(np.float64) if col.null_count == 0 else np.asarray(
        pc.fill_null(pc.cast(col, pa.float64()), np.nan).to_numpy(), dtype=np.float64
    )


def _csv_table(path: Path) -> pa.Table:
    import pyarrow.csv as pacsv

    head = pacsv.open_csv(path).schema.names if path.stat().st_size else []
    types = {c: pa.string() for c in head if c in _ID_COLUMNS}
    # label and score stay text when they are not clean numbers, so errors can name the line.
    for c in ("label", "score"):
        if c in head:
            types[c] = pa.string()
    return pacsv.read_csv(
        path,
        convert_options=pacsv.ConvertOptions(
            column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False
        ),
    )


def read_candidates(path: str | os.PathLike[str]) -> CandidateTable:
    """Read and validate a candidates file (CSV or Parquet, by extension).

    Raises :class:`CandidateError` naming the file and the offending lines for: a missing file or
    column, an empty file, NaN, infinite or non-numeric scores, labels other than 0/1, a row without
    a positive or with several, a duplicate (row, item_id), a missing id, or a row whose lines
    name different users.
    """
    p = Path(path)
    name = str(path)
    if not p.is_file():
        raise CandidateError(f"{name}: no such file")
    suffixes = "".join(p.suffixes[-2:]).lower()
    try:
        if suffixes.endswith((".parquet", ".pq")):
            import pyarrow.parquet as pq

            table = pq.read_table(p)
            csv_lines = False
        elif suffixes.endswith((".csv", ".csv.gz")):
            if p.stat().st_size == 0:
                raise CandidateError(f"{name}: empty file (expected a header and candidates)")
            table = _csv_table(p)
            csv_lines = _csv_line_map(p)
        else:
            raise CandidateError(
                f"{name}: unknown file type; use .csv, .csv.gz, .parquet or .pq"
            )
    except CandidateError:
        raise
    except (pa.ArrowInvalid, OSError) as exc:
        raise CandidateError(f"{name}: cannot read: {exc}") from None
    return CandidateTable.from_arrow(table, source=name, csv_lines=csv_lines)


def as_table(data: CandidateTable | pd.DataFrame | str | os.PathLike[str]) -> CandidateTable:
    """Accept a table, a DataFrame or a path."""
    if isinstance(data, CandidateTable):
        return data
    if isinstance(data, pd.DataFrame):
        return CandidateTable.from_frame(data)
    return read_candidates(data)

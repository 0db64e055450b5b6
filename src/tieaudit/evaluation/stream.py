"""Evaluation in chunks of whole rows: memory bounded by the chunk, not by the input.

The audit and the comparison read their input the same way (:func:`tieaudit.analyses.audit.audit`,
:func:`tieaudit.analyses.compare.compare`), through the pieces here: :func:`open_chunks`,
:func:`chunk_table` and :func:`map_chunks`, the one runner of chunks in this process or a pool.

:func:`evaluate_stream` reads its input a chunk of whole rows at a time (:mod:`tieaudit.tables.inputs`:
files, Parquet datasets, globs, Arrow tables, DataFrames), evaluates each chunk with
:func:`tieaudit.evaluate` and keeps only its :class:`tieaudit.evaluation.sums.Sums`, merged in row order.
One chunk gives exactly the in-memory summary (:meth:`tieaudit.Evaluation.summary` is that
case); several chunks agree with it to a relative ``1e-12`` (:mod:`tieaudit.evaluation.sums`).

The chunk size comes from a memory budget per process (``memory``, default
:data:`DEFAULT_MEMORY`) and a cost model of a chunk (:class:`Cost`): a chunk of ``L`` lines
holding ``R`` rows takes ``a * L + b * R`` bytes while it is evaluated, on top of the
:data:`BASELINE` of the interpreter and its libraries (and of what a rule keeps of the whole
input, :attr:`tieaudit.ties.rules.RuleKind.table_bytes`), so a chunk ends before ``a * L + b * R``
passes what is left of the budget (:class:`Budget`):

``a``, bytes a line
    :data:`BYTES_PER_LINE`: the line's columns read, its candidates table and its place in the
    tie structure, whatever the rules (measured on tie-heavy Parquet with
    ``benchmarks/bench_memory.py``).
``b``, bytes a row
    :data:`ROW_BYTES` (the row's entries in the tie structure), plus, for every rule evaluated
    (those asked for, ``expected`` beside a rule drawn per seed for its ``z``, and the rules
    bounding a distribution), what its result keeps of each row (8-byte numbers): a ranking its
    rank, ``b`` and a value per measure, ``8 * (M + 3)`` for ``M`` measures; a rule drawn per
    seed (``hash_mean``) its ranks and counts per seed and a mean and sum per measure, ``20 *
    S + 16 * M`` for ``S`` seeds; a distribution (``expected``) a mean and a variance per
    measure, ``16 * M``; and with per-row values asked for, :data:`PER_ROW_BYTES` for each rule
    and measure (their long table).

With one line a row ``b`` dominates (``hash_mean`` over 100 seeds and 12 measures: about 3 KB a
row against 0.2 KB a line), with a hundred ``a`` does: the peak follows the budget whatever the
length of the rows (a full-catalogue summary table is one line a row by design). The audit and
the comparison take ``share`` times a chunk's cost (their evaluations of a chunk held at once:
:data:`tieaudit.analyses.audit.AUDIT_SHARE`, one per model). A Parquet file is read in spans of
consecutive row groups that fit the budget, each group's rows counted from its ``row`` column
beforehand; a group that does not fit alone is evaluated in pieces that fit beside it
(:meth:`Budget.split`). Chunks' partial results are merged as they come (:class:`Merging`).
``chunk_rows`` sets the number of rows per chunk instead.

The check that no row comes back after other rows (:class:`tieaudit.tables.inputs.RowCheck`)
keeps a key of every row read: of what is left of the budget beside the :data:`BASELINE` (and
what a rule keeps of the whole input), :data:`CHECK_SHARE` is reserved for the keys it holds in
memory (at least :data:`MIN_CHECK`; :func:`check_memory`) and the rest is the chunks'. Past its
share it spills the keys to temporary files (``TMPDIR``, 16 bytes a row of the input, removed
afterwards) and merges them within the same share at the end of the input, before any result
is returned, so memory follows the budget whatever the number of rows. Outside the model:
per-row values asked for (``per_row``) are kept until they are written, one number a row, rule
and measure of the whole input.

With ``jobs > 1`` chunks are evaluated by ``jobs`` processes, this one and a pool of
``jobs - 1`` (each holding one chunk at a time), and merged in row order, so the result does
not depend on ``jobs``. A rule whose outcome for a row depends on the other rows of a stored
table (:attr:`tieaudit.ties.rules.RuleKind.whole_table`, e.g. ``random:SEED``) is given each chunk's
place in the whole input (its first line and the input's number of lines: a CSV file is then
read once more to count them; a stream of record batches must fit one chunk).
"""

from __future__ import annotations

import itertools
import multiprocessing
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..common.memory import keep_freed_memory
from ..tables.inputs import (
    RowCheck,
    RowChunks,
    RowKeys,
    Source,
    Span,
    open_source,
    plan_spans,
    read_span,
    whole_rows,
)
from ..tables.candidates import CandidateError, CandidateTable, as_table
from ..tables.columns import FORMAT, Columns
from ..tables.read import Records, validate_arrow
from ..tables.precision import cast_table, parse_precision
from .evaluate import DEFAULT_SEEDS, evaluate
from ..ties.measures import DEFAULT_MEASURES, Measure, parse_measures
from ..ties.rules import DEFAULT_RULES, Result, TieRule, parse_rule, parse_rules
from .sums import EXACT_RULE, Sums

__all__ = [
    "Streamed", "evaluate_stream", "parse_memory", "chunk_lines", "DEFAULT_MEMORY",
    "BYTES_PER_LINE", "ROW_BYTES", "PER_ROW_BYTES", "BASELINE", "READ_SHARE", "MIN_LINES",
    "CHECK_SHARE", "MIN_CHECK", "check_memory", "Progress", "map_chunks", "check_options",
    "open_chunks", "chunk_table", "check_size", "Cost", "Budget", "chunk_budget", "Merging",
]  # fmt: skip

#: The default memory budget of a process, in bytes.
DEFAULT_MEMORY = 10**9
#: Bytes a chunk takes per line while it is evaluated (measured on tie-heavy Parquet, see
#: benchmarks/bench_memory.py).
BYTES_PER_LINE = 200
#: Bytes a chunk takes per row besides its rules' results (the tie structure's per-row arrays).
ROW_BYTES = 160
#: Bytes a per-row value takes while a chunk's long table of them is made (one a row, rule and
#: measure).
PER_ROW_BYTES = 128
#: What a process takes besides its chunks: the interpreter and its libraries (numpy, pandas,
#: pyarrow: about 175 MB) and a file reader's buffers (measured with benchmarks/bench_memory.py).
BASELINE = 250 * 10**6
#: What a process holds after reading a table of Parquet row groups, against the table's size:
#: its columns, the column chunks they were decoded from, and the allocator's slack (measured
#: with benchmarks/bench_memory.py).
READ_SHARE = 3
#: The smallest chunk, in lines (each row counting as many more as its cost asks), whatever the
#: budget: a budget below the baseline gives chunks of this size.
MIN_LINES = 1000
#: The share of a budget, beside the :data:`BASELINE`, that the row check's keys in memory take
#: (:class:`tieaudit.tables.inputs.RowCheck`; past it they are spilled to temporary files).
CHECK_SHARE = 0.1
#: The least memory of the row check's keys, whatever the budget (as :data:`MIN_LINES` for the
#: chunks): 1 MB, about 25,000 rows.
MIN_CHECK = 10**6
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
          "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
          "tib": 2**40}  # fmt: skip


def parse_memory(text: str | int) -> int:
    """Bytes from ``"1GB"``, ``"500MB"``, ``"2GiB"``, ``"1.5G"`` or a number of bytes."""
    if isinstance(text, int):
        value, unit = float(text), ""
    else:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"memory {text!r}: give a size such as 1GB, 500MB or 2GiB")
        value, unit = float(m.group(1)), m.group(2).lower()
    size = int(value * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"memory {text!r} must be positive")
    return size


def chunk_lines(memory: int, line_bytes: float = BYTES_PER_LINE) -> int:
    """Lines of ``line_bytes`` bytes per chunk that fit a memory budget of ``memory`` bytes (at
    least :data:`MIN_LINES`)."""
    return max(MIN_LINES, int((memory - BASELINE) // line_bytes))


def check_memory(memory: int | str | None, kept: int = 0) -> int:
    """The bytes of a ``memory`` budget (``None``: :data:`DEFAULT_MEMORY`) the row check's keys
    take in memory, once ``kept`` bytes of a rule are taken from it: :data:`CHECK_SHARE` of
    what is left beside the :data:`BASELINE`, at least :data:`MIN_CHECK`."""
    size = parse_memory(memory) if memory is not None else DEFAULT_MEMORY
    return max(MIN_CHECK, int(CHECK_SHARE * (size - kept - BASELINE)))


@dataclass(frozen=True)
class Cost:
    """What evaluating a chunk takes: ``line`` bytes a line and ``row`` bytes a row (see the
    module docstring); :meth:`of` counts it for the rules, measures and seeds asked for."""

    line: float
    row: float

    @classmethod
    def of(cls, rules: Iterable[str | TieRule], n_measures: int = len(DEFAULT_MEASURES),
           n_seeds: int = DEFAULT_SEEDS, per_row: bool = False,
           share: int = 1) -> Cost:  # fmt: skip
        """The cost of evaluating ``rules`` with ``n_measures`` measures and ``n_seeds`` seeds
        (``per_row``: keeping every row's values), ``share`` evaluations at once."""
        rs = parse_rules(rules)
        row = ROW_BYTES + sum(_result_bytes(r, n_measures, n_seeds) for r in _evaluated(rs))
        if per_row:
            row += PER_ROW_BYTES * len(rs) * n_measures
        return cls(float(BYTES_PER_LINE * share), float(row * share))


def _evaluated(rs: list[TieRule]) -> list[TieRule]:
    """The rules an evaluation of ``rs`` computes: ``rs``, ``expected`` beside a rule drawn per
    seed (its ``z``), and the rules bounding a distribution
    (:meth:`tieaudit.evaluation.sums.Sums.from_evaluation`)."""
    out = list(rs)
    if any(r.spec.result is Result.SEEDS for r in out):
        out.append(EXACT_RULE)
    for r in list(out):
        if r.spec.result is Result.DISTRIBUTION:
            out += [parse_rule(name) for name in r.spec.support or ()]
    return list(dict.fromkeys(out))


def _result_bytes(rule: TieRule, n_measures: int, n_seeds: int) -> int:
    """Bytes a row of ``rule``'s result takes (see the module docstring)."""
    kind = rule.spec
    if kind.result is Result.SEEDS:
        return 20 * len(kind.draws(rule, n_seeds)) + 16 * n_measures
    if kind.result is Result.DISTRIBUTION:
        return 16 * n_measures
    return 8 * (n_measures + 3)


@dataclass(frozen=True)
class Budget:
    """The size of a chunk: its lines, and ``row_lines`` more for each of its rows, at most
    ``lines`` (:func:`tieaudit.tables.inputs.whole_rows` cuts chunks so); a line takes ``line_bytes``.
    ``check``: the bytes the row check's keys take in memory beside the chunks
    (:func:`check_memory`)."""

    lines: int
    row_lines: float = 0.0
    line_bytes: float = BYTES_PER_LINE
    check: int = MIN_CHECK

    def split(self, chunk: pa.Table) -> Iterator[tuple[pa.Table, int]]:
        """``chunk`` (whole rows, read) in pieces that fit the budget, each with its first line
        in ``chunk``: itself when it fits, else pieces that fit beside it (what reading it took,
        :data:`READ_SHARE` times its size)."""
        first = RowChunks(iter([chunk])).next(None, self.lines, self.row_lines)
        if first is None or first[0].num_rows == chunk.num_rows:
            yield chunk, 0
            return
        room = max(1, int(self.lines - READ_SHARE * chunk.nbytes / self.line_bytes))
        yield from whole_rows(iter([chunk]), None, room, self.row_lines)


@dataclass(eq=False)
class Streamed:
    """The result of :func:`evaluate_stream`: the merged sums, the number of chunks and, when
    asked for, every row's values (:meth:`tieaudit.Evaluation.per_row`, rows in stored order)."""

    sums: Sums
    n_chunks: int
    max_lines: int | None
    per_row_parts: list[pd.DataFrame] | None = None

    @property
    def n_rows(self) -> int:
        return self.sums.n_rows

    def summary(self) -> pd.DataFrame:
        """The summary table (:meth:`tieaudit.Evaluation.summary`)."""
        return self.sums.summary()

    def per_row(self) -> pd.DataFrame:
        """Long table ``row, user_id, rule, metric, value`` as :meth:`tieaudit.Evaluation.per_row`
        gives it for the whole input (asked for with ``per_row=True``)."""
        if self.per_row_parts is None:
            raise ValueError("per-row values were not kept: evaluate_stream(..., per_row=True)")
        blocks = len(self.sums.rules) * len(self.sums.measures)
        split = [_blocks(p, blocks) for p in self.per_row_parts]
        return pd.concat([part[b] for b in range(blocks) for part in split], ignore_index=True)


def _blocks(frame: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    """A chunk's per-row table cut into its ``n`` (rule, measure) blocks of equal length."""
    size = len(frame) // n
    return [frame.iloc[i * size : (i + 1) * size] for i in range(n)]


@dataclass(frozen=True)
class _Task:
    """What a process needs to evaluate a chunk (picklable)."""

    measures: tuple[str, ...]
    rules: tuple[str, ...]
    n_seeds: int
    rank_cap: int | None
    per_row: bool
    score_precision: str | None = None
    budget: Budget | None = None  # a Parquet span's: the pieces it is evaluated in
    columns: Columns = FORMAT  # the input's own names, resolved (its errors use them)


def chunk_table(chunk: pa.Table | CandidateTable, name: str, where: Any,
                place: tuple[int, int | None],
                columns: Columns | None = None) -> CandidateTable:  # fmt: skip
    """The candidates of a chunk (under the format's names: a source's batches,
    :func:`tieaudit.tables.inputs.open_source`); ``place``: its first line and the number of
    lines of the whole input, when known; ``columns``: the input's own names (resolved), which
    errors use."""
    if isinstance(chunk, CandidateTable):
        return chunk
    table = CandidateTable(**validate_arrow(chunk, name, where, columns))
    return replace(table, line_offset=place[0], lines_total=place[1])


def _evaluate_chunk(task: _Task, chunk: pa.Table | CandidateTable, name: str, where: Any,
                    place: tuple[int, int | None] = (0, None)) -> tuple[Sums, list[pd.DataFrame]]:
    """The sums of one chunk (and its per-row values if asked for)."""
    table = cast_table(chunk_table(chunk, name, where, place, task.columns), task.score_precision)
    ev = evaluate(table, task.measures, task.rules, n_seeds=task.n_seeds, rank_cap=task.rank_cap)
    return ev.sums(), [ev.per_row()] if task.per_row else []


def _evaluate_span(task: _Task, path: Path, name: str, span: Span, n_lines: int | None
                   ) -> tuple[tuple[Sums, list[pd.DataFrame], int] | CandidateError,
                              RowKeys | None, int] | None:  # fmt: skip
    """:func:`_evaluate_chunk` of the rows of ``span``, read here from the Parquet file ``path``
    (only the path and the span cross to a worker, only sums come back), in pieces that fit
    ``task.budget`` (a row group over the budget alone is such a span), or the chunk's error
    (else the sums, per-row values and number of pieces); with the keys that check its rows
    against the earlier spans' (first: a row out of place explains the errors it causes) and
    its record offset. ``None``: no row starts in it."""
    chunk, offset = read_span(path, span, task.columns)
    if chunk is None:
        return None
    pieces = task.budget.split(chunk) if task.budget is not None else iter([(chunk, 0)])
    try:
        sums, rows = [], []
        for piece, at in pieces:
            place = (offset + at, n_lines)
            part, part_rows = _evaluate_chunk(task, piece, name, Records(offset + at), place)
            sums.append(part)
            rows += part_rows
        result: Any = (Sums.merge(sums), rows, len(sums))
    except CandidateError as exc:
        result = exc
    keys = RowKeys.of(chunk)
    del chunk, pieces
    # the span's columns go back to the system: Arrow's allocator would keep them beside what
    # the next span's evaluation asks of the system's (measured: benchmarks/bench_memory.py)
    pa.default_memory_pool().release_unused()
    return result, keys, offset


def _spans(path: Path, budget: Budget, key: str = "row") -> Iterator[tuple[Span, int]]:
    """Spans of consecutive row groups of the Parquet file ``path`` within ``budget`` and their
    lines: each group's rows counted from its row column ``key`` alone (read here, one group at
    a time), at least one group a span (a group over the budget alone is evaluated in pieces,
    :meth:`Budget.split`). The plan depends on the file only, never on ``jobs``."""
    from ..common.parquet import parquet_file

    pf = parquet_file(path)
    sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
    start = line = 0
    cost = _group_cost(pf, 0, sizes[0], budget, key) if sizes else 0.0
    while start < len(sizes):
        stop, lines, total = start + 1, sizes[start], cost
        while stop < len(sizes):
            cost = _group_cost(pf, stop, sizes[stop], budget, key)
            if total + cost > budget.lines:
                break
            total += cost
            lines += sizes[stop]
            stop += 1
        yield Span(start, stop, line), lines
        start, line = stop, line + lines


def _group_cost(pf: Any, group: int, lines: int, budget: Budget, key: str = "row") -> float:
    """Row group ``group`` of ``lines`` lines against ``budget``: its lines and ``row_lines``
    for each row starting in it (its row ids: column ``key``; every line, when they cannot be
    read)."""
    if not budget.row_lines or lines < 2:
        return lines + budget.row_lines * lines
    try:
        col = pf.read_row_group(group, columns=[key]).column(key)
        new = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, lines - 1)), True)
        rows = 1 + int(pc.sum(new).as_py() or 0)
    except (KeyError, pa.ArrowException, OSError):
        rows = lines
    return lines + budget.row_lines * rows


def _chunks(source: Source, max_rows: int | None, budget: Budget | None,
            whole: list[TieRule], check_bytes: int) -> Generator[tuple[pa.Table, int], None, None]:  # fmt: skip
    """The chunks of ``source``, each checked for rows read before (the check's keys within
    ``check_bytes``, every row checked before the last chunk is handed out). A rule that needs
    the whole table takes each chunk's place in it: an input whose size is not known beforehand
    (CSV) is refused as soon as a second chunk of a stored table appears."""
    lines, row_lines = (budget.lines, budget.row_lines) if budget is not None else (None, 0.0)
    with RowCheck(source, check_bytes) as check:
        chunks = whole_rows(source.batches(), max_rows, lines, row_lines)
        for i, (chunk, offset) in enumerate(chunks):
            if i == 1:
                check_size(source, chunk, whole)
            check.add(chunk, offset)
            yield chunk, offset
        check.finish()


def check_size(source: Source, chunk: pa.Table, whole: list[TieRule]) -> None:
    """A second chunk of a stored table whose number of lines is not known (a stream of record
    batches) cannot be placed in the whole shuffle of a rule that needs the whole table."""
    if whole and source.n_lines is None and "n_tied" not in chunk.column_names:
        raise ValueError(
            f"{source.name}: {whole[0]} shuffles the stored positions of the whole table, and "
            "the number of lines of this input is not known before it is read (a stream of "
            "record batches): give a chunk_rows (or memory) large enough for every row, or "
            f"leave {whole[0]} out"
        )


def evaluate_stream(
    data: Any,
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_seeds: int = DEFAULT_SEEDS,
    rank_cap: int | None = -1,
    chunk_rows: int | None = None,
    memory: int | str = DEFAULT_MEMORY,
    jobs: int = 1,
    progress: bool = False,
    per_row: bool = False,
    score_precision: str | None = None,
    row_col: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    label_col: str | None = None,
    score_col: str | None = None,
    columns: Columns | None = None,
) -> Streamed:
    """Evaluate ``data`` chunk by chunk; the summary equals :func:`tieaudit.evaluate`'s.

    ``data`` is a path (a CSV or Parquet file, a directory of Parquet files, a glob), a pyarrow
    Table, a pandas or polars DataFrame, or a :class:`CandidateTable` (one chunk). Chunks hold
    ``chunk_rows`` rows, or else as many lines as the ``memory`` budget (bytes, or text such as
    ``"1GB"``) allows; ``jobs`` processes evaluate them. ``progress`` shows a bar on standard
    error (lines done / total) when it is a terminal. ``measures``, ``rules``, ``n_seeds`` and
    ``rank_cap`` are those of :func:`tieaudit.evaluate`. ``score_precision`` (e.g. ``float16``,
    ``round:5``: :mod:`tieaudit.tables.precision`) casts every chunk's scores before ranking.
    ``row_col`` .. ``score_col`` name the input's own columns, as :func:`tieaudit.evaluate`'s
    (or ``columns``, a :class:`tieaudit.tables.columns.Columns`).
    """
    ms, rs = check_options(measures, rules, n_seeds, chunk_rows, jobs)
    columns = Columns.of(row_col, user_col, item_col, label_col, score_col,
                         columns=columns)  # fmt: skip
    if score_precision is not None:
        parse_precision(score_precision)
    task = _Task(tuple(map(str, ms)), tuple(map(str, rs)), n_seeds, rank_cap, per_row,
                 score_precision)  # fmt: skip
    if isinstance(data, CandidateTable):
        sums, rows = _evaluate_chunk(task, as_table(data, columns), data.source, None)
        return Streamed(sums, 1, None, rows if per_row else None)
    cost = Cost.of(rs, len(ms), n_seeds, per_row)
    source, chunks, budget = open_chunks(data, rs, chunk_rows, memory, cost, columns)
    task = replace(task, columns=source.columns)
    max_lines = None if budget is None else budget.lines
    parts = Merging(lambda a, b: Sums.merge([a, b]))
    rows_parts: list[pd.DataFrame] = []
    n_chunks = [0]  # a span evaluated in pieces counts them
    bar = Progress(source.n_lines, "evaluate", enabled=progress)

    def keep(result: tuple | None, lines: int) -> None:
        if result is not None:
            parts.add(result[0])
            rows_parts.extend(result[1])
            n_chunks[0] += result[2] if len(result) > 2 else 1
        bar.update(lines)

    path = source.parquet_path
    # a Parquet file whose row groups each hold at most a chunk's lines is read by row groups
    by_groups = bool(path and budget and plan_spans(path, budget.lines))
    if by_groups:
        task = replace(task, budget=budget)
    try:
        if not by_groups:
            items = (((chunk, source.name, source.where(offset), (offset, source.n_lines)),
                      chunk.num_rows) for chunk, offset in chunks)  # fmt: skip
            map_chunks(_evaluate_chunk, task, items, jobs, keep)
        else:  # each process reads its own row groups
            check = RowCheck(source, budget.check)

            def checked(result: Any, lines: int) -> None:
                if result is not None:
                    check.add_keys(result[1], result[2])
                    if isinstance(result[0], CandidateError):
                        check.finish()  # a row out of place explains the errors it causes
                        raise result[0]
                keep(None if result is None else result[0], lines)

            items = (((path, source.name, s, source.n_lines), lines)
                     for s, lines in _spans(path, budget, source.columns.name("row")))  # fmt: skip
            with check:
                map_chunks(_evaluate_span, task, items, jobs, checked)
                check.finish()
    finally:
        chunks.close()  # its row check's files removed, also on an error
        bar.close()
    if parts.total is None:
        raise CandidateError(f"{source.name}: no candidates (the table is empty)")
    return Streamed(parts.total, n_chunks[0], max_lines, rows_parts if per_row else None)


def check_options(measures: Iterable[str | Measure] | None, rules: Iterable[str | TieRule] | None,
             n_seeds: int, chunk_rows: int | None,
             jobs: int) -> tuple[list[Measure], list[TieRule]]:  # fmt: skip
    """The measures and rules (defaults when ``None``), the other options checked."""
    ms = parse_measures(measures if measures is not None else DEFAULT_MEASURES)
    rs = parse_rules(rules if rules is not None else DEFAULT_RULES)
    if n_seeds < 1:
        raise ValueError("n_seeds must be >= 1")
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    return ms, rs


def open_chunks(data: Any, rs: list[TieRule], chunk_rows: int | None, memory: int | str | None,
                cost: Cost | None = None, columns: Columns | None = None
                ) -> tuple[Source, Generator[tuple[pa.Table, int], None, None], Budget | None]:  # fmt: skip
    """The source of ``data`` (``columns``: its own column names), its chunks (under the
    format's names) and their size (``None``: ``chunk_rows`` rows, or one chunk when neither
    ``chunk_rows`` nor ``memory`` is given); ``cost``: what a chunk's lines and rows take
    (default: :meth:`Cost.of` ``rs`` with the default measures and seeds)."""
    source = open_source(data, columns)
    whole = [r for r in rs if r.spec.whole_table]
    if whole:  # each chunk's place in the whole shuffle needs the number of lines
        source = source.counted()
    cost = cost if cost is not None else Cost.of(rs)
    budget = None if chunk_rows is not None else chunk_budget(memory, rs, source.n_lines, cost)
    keys = budget.check if budget is not None else check_memory(memory)
    return source, _chunks(source, chunk_rows, budget, whole, keys), budget


def chunk_budget(memory: int | str | None, rs: list[TieRule], n_lines: int | None,
                 cost: Cost) -> Budget | None:  # fmt: skip
    """The size of a chunk within the ``memory`` budget (``None``: no budget, one chunk) at
    ``cost``, once what a rule keeps of the whole input of ``n_lines`` lines
    (:attr:`tieaudit.ties.rules.RuleKind.table_bytes`) is taken from it (an error when that leaves
    nothing) and the row check's share (:func:`check_memory`)."""
    if memory is None:
        return None
    size = parse_memory(memory)
    keeps = max(rs, key=lambda r: r.spec.table_bytes, default=None)
    kept = keeps.spec.table_bytes * (n_lines or 0) if keeps is not None else 0
    if kept and size - kept - BASELINE < MIN_LINES * cost.line:
        raise ValueError(
            f"a memory budget of {size / 1e9:g} GB is too small: {keeps} keeps "
            f"{keeps.spec.table_bytes} bytes a line of the whole input ({n_lines} lines: "
            f"{kept / 1e9:g} GB) besides {BASELINE / 1e9:g} GB for the process and its chunks; "
            f"give a larger memory budget, or leave {keeps} out"
        )
    check = check_memory(size, kept)
    return Budget(chunk_lines(size - kept - check, cost.line), cost.row / cost.line, cost.line,
                  check)  # fmt: skip


class Merging:
    """Partial results merged as they come, in order, with ``merge(a, b)``: the left fold a
    merge of the list of them all at the end would do, bit for bit, without keeping every
    chunk's (a chunk's sums of ``hash_mean`` hold a number per seed and measure)."""

    def __init__(self, merge: Callable[[Any, Any], Any]) -> None:
        self.merge = merge
        self.total: Any = None
        self.n = 0

    def add(self, part: Any) -> None:
        self.total = part if self.total is None else self.merge(self.total, part)
        self.n += 1


class Progress:
    """A one-line progress bar on standard error, drawn only when it is a terminal: lines done of
    the total (when known), redrawn at most every half second. (The evaluator needs only the core
    dependencies, so this is not tqdm.)"""

    def __init__(self, total: int | None, label: str, enabled: bool = True) -> None:
        self.total, self.label, self.done = total, label, 0
        self.enabled = enabled and sys.stderr.isatty()
        self.shown = 0.0

    def update(self, n: int) -> None:
        self.done += n
        if self.enabled and (time.monotonic() - self.shown > 0.5 or self.done == self.total):
            self.shown = time.monotonic()
            of = f" of {self.total / 1e6:.1f}M ({100 * self.done / self.total:.0f}%)" \
                if self.total else ""  # fmt: skip
            sys.stderr.write(f"\r{self.label}: {self.done / 1e6:.1f}M lines{of}")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            sys.stderr.write("\n")


def _lookahead(items: Iterator[Any]) -> Iterator[Any]:
    """The items, each handed out once the next one is read (so a problem with the second chunk
    is found before the first is evaluated)."""
    prev = None
    for i, item in enumerate(items):
        if i:
            yield prev
        prev = item
    if prev is not None:
        yield prev


def _done(value: Any) -> Future:
    """A chunk this process worked on itself: a finished future, waiting beside the pool's for its
    turn."""
    future: Future = Future()
    future.set_result(value)
    return future


def map_chunks(work: Callable[..., Any], task: Any, items: Iterator[tuple[tuple, int]],
               jobs: int, keep: Callable[[Any, int], None]) -> None:  # fmt: skip
    """``keep(work(task, *args), lines)`` for each ``(args, lines)`` of ``items``, in their order.

    With ``jobs`` 1 (or a single item) this process works on each item once the next one is read.
    With more, ``jobs`` processes work side by side: this one and a pool of ``jobs - 1`` (``work``,
    ``task`` and ``args`` are pickled for them). Each pool process is kept one item ahead; this
    process takes the next item itself whenever the pool is that far ahead, so it is busy while the
    pool's processes start (they import the library afresh). At most ``jobs + 2`` items are in
    flight."""
    items = iter(items)
    first = list(itertools.islice(items, 2))
    if jobs == 1 or len(first) < 2:
        for args, lines in _lookahead(itertools.chain(first, items)):
            keep(work(task, *args), lines)
        return
    workers = jobs - 1
    pending: deque[tuple[Future, int]] = deque()
    context = multiprocessing.get_context("spawn")  # no fork of a process running Arrow threads
    with ProcessPoolExecutor(workers, mp_context=context, initializer=keep_freed_memory) as pool:
        try:
            for args, lines in itertools.chain(first, items):
                queued = sum(1 for f, _ in pending if not f.done())  # the pool's, unfinished
                if queued < 2 * workers:
                    pending.append((pool.submit(work, task, *args), lines))
                else:
                    pending.append((_done(work(task, *args)), lines))
                del args
                while len(pending) >= jobs + 2 or (pending and pending[0][0].done()):
                    future, n = pending.popleft()
                    keep(future.result(), n)
            while pending:
                future, n = pending.popleft()
                keep(future.result(), n)
        except BaseException:
            for future, _ in pending:
                future.cancel()
            raise

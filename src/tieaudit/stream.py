"""Evaluation in chunks of whole rows: memory bounded by the chunk, not by the input.

The audit and the comparison read their input the same way (:func:`tieaudit.audit.audit`,
:func:`tieaudit.compare.compare`), through the pieces here: :func:`open_chunks`,
:func:`chunk_table` and :func:`map_chunks`, the one runner of chunks in this process or a pool.

:func:`evaluate_stream` reads its input a chunk of whole rows at a time (:mod:`tieaudit.batches`:
files, Parquet datasets, globs, Arrow tables, DataFrames), evaluates each chunk with
:func:`tieaudit.evaluate` and keeps only its :class:`tieaudit.sums.Sums`, merged in row order.
One chunk gives exactly the in-memory summary (:meth:`tieaudit.Evaluation.summary` is that
case); several chunks agree with it to a relative ``1e-12`` (:mod:`tieaudit.sums`).

The chunk size comes from a memory budget per process (``memory``, default
:data:`DEFAULT_MEMORY`): evaluating a chunk takes about :data:`BYTES_PER_LINE` bytes per line
on top of the :data:`BASELINE` of the interpreter and its libraries. ``chunk_rows`` sets the
number of rows per chunk instead. With ``jobs > 1`` chunks are evaluated by ``jobs`` processes,
this one and a pool of ``jobs - 1`` (each holding one chunk at a time), and merged in row order,
so the result does not depend on ``jobs``. A rule whose outcome for a row depends on the other rows of a stored table
(:attr:`tieaudit.rules.RuleKind.whole_table`, e.g. ``random:SEED``) is given each chunk's place
in the whole input (its first line and the input's number of lines: a CSV file is then read once
more to count them; a stream of record batches must fit one chunk).
"""

from __future__ import annotations

import itertools
import multiprocessing
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from ._memory import keep_freed_memory
from .batches import RowCheck, RowKeys, Source, Span, open_source, plan_spans, read_span, whole_rows
from .candidates import CandidateError, CandidateTable
from .candidates_io import Records
from .precision import cast_table, parse_precision
from .evaluate import DEFAULT_SEEDS, evaluate
from .measures import DEFAULT_MEASURES, Measure, parse_measures
from .rules import DEFAULT_RULES, TieRule, parse_rules
from .sums import Sums

__all__ = [
    "Streamed", "evaluate_stream", "parse_memory", "chunk_lines", "DEFAULT_MEMORY",
    "BYTES_PER_LINE", "BASELINE", "Progress", "map_chunks", "check_options", "open_chunks",
    "chunk_table", "check_size", "budget_lines",
]  # fmt: skip

#: The default memory budget of a process, in bytes.
DEFAULT_MEMORY = 10**9
#: Bytes a chunk takes per line while it is evaluated (measured on tie-heavy Parquet, see
#: benchmarks/bench_stream.py).
BYTES_PER_LINE = 200
#: What a process takes before it reads any candidates (interpreter, numpy, pandas, pyarrow).
BASELINE = 200 * 10**6
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


def chunk_lines(memory: int) -> int:
    """Lines per chunk that fit a memory budget of ``memory`` bytes (at least 1000)."""
    return max(1000, (memory - BASELINE) // BYTES_PER_LINE)


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


def chunk_table(chunk: pa.Table | CandidateTable, name: str, where: Any,
                 place: tuple[int, int | None]) -> CandidateTable:  # fmt: skip
    """The candidates of a chunk; ``place``: its first line and the number of lines of the
    whole input, when known."""
    if isinstance(chunk, CandidateTable):
        return chunk
    table = CandidateTable.from_arrow(chunk, source=name, csv_lines=where)
    return replace(table, line_offset=place[0], lines_total=place[1])


def _evaluate_chunk(task: _Task, chunk: pa.Table | CandidateTable, name: str, where: Any,
                    place: tuple[int, int | None] = (0, None)) -> tuple[Sums, pd.DataFrame | None]:
    """The sums of one chunk (and its per-row values if asked for)."""
    table = cast_table(chunk_table(chunk, name, where, place), task.score_precision)
    ev = evaluate(table, task.measures, task.rules, n_seeds=task.n_seeds, rank_cap=task.rank_cap)
    return ev.sums(), ev.per_row() if task.per_row else None


def _evaluate_span(task: _Task, path: Path, name: str, span: Span, n_lines: int | None
                   ) -> tuple[tuple[Sums, pd.DataFrame | None] | CandidateError, RowKeys | None,
                              int] | None:  # fmt: skip
    """:func:`_evaluate_chunk` of the rows of ``span``, read here from the Parquet file ``path``
    (only the path and the span cross to a worker, only sums come back), or the chunk's error;
    with the keys that check its rows against the earlier spans' (first: a row out of place
    explains the errors it causes) and its record offset. ``None``: no row starts in it."""
    chunk, offset = read_span(path, span)
    if chunk is None:
        return None
    try:
        result: Any = _evaluate_chunk(task, chunk, name, Records(offset), (offset, n_lines))
    except CandidateError as exc:
        result = exc
    return result, RowKeys.of(chunk), offset


def _chunks(source: Source, max_rows: int | None, max_lines: int | None,
            whole: list[TieRule]) -> Iterator[tuple[pa.Table, int]]:  # fmt: skip
    """The chunks of ``source``, each checked for rows read before. A rule that needs the whole
    table takes each chunk's place in it: an input whose size is not known beforehand (CSV) is
    refused as soon as a second chunk of a stored table appears."""
    check = RowCheck(source)
    for i, (chunk, offset) in enumerate(whole_rows(source.batches(), max_rows, max_lines)):
        if i == 1:
            check_size(source, chunk, whole)
        check.add(chunk, offset)
        yield chunk, offset


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
) -> Streamed:
    """Evaluate ``data`` chunk by chunk; the summary equals :func:`tieaudit.evaluate`'s.

    ``data`` is a path (a CSV or Parquet file, a directory of Parquet files, a glob), a pyarrow
    Table, a pandas or polars DataFrame, or a :class:`CandidateTable` (one chunk). Chunks hold
    ``chunk_rows`` rows, or else as many lines as the ``memory`` budget (bytes, or text such as
    ``"1GB"``) allows; ``jobs`` processes evaluate them. ``progress`` shows a bar on standard
    error (lines done / total) when it is a terminal. ``measures``, ``rules``, ``n_seeds`` and
    ``rank_cap`` are those of :func:`tieaudit.evaluate`. ``score_precision`` (e.g. ``float16``,
    ``round:5``: :mod:`tieaudit.precision`) casts every chunk's scores before ranking.
    """
    ms, rs = check_options(measures, rules, n_seeds, chunk_rows, jobs)
    if score_precision is not None:
        parse_precision(score_precision)
    task = _Task(tuple(map(str, ms)), tuple(map(str, rs)), n_seeds, rank_cap, per_row,
                 score_precision)  # fmt: skip
    if isinstance(data, CandidateTable):
        sums, rows = _evaluate_chunk(task, data, data.source, None)
        return Streamed(sums, 1, None, None if rows is None else [rows])
    source, chunks, max_lines = open_chunks(data, rs, chunk_rows, memory)
    parts: list[Sums] = []
    rows_parts: list[pd.DataFrame] = []
    bar = Progress(source.n_lines, "evaluate", enabled=progress)

    def keep(result: tuple[Sums, pd.DataFrame | None] | None, lines: int) -> None:
        if result is not None:
            parts.append(result[0])
            if result[1] is not None:
                rows_parts.append(result[1])
        bar.update(lines)

    path = source.parquet_path
    spans = plan_spans(path, max_lines) if path is not None and max_lines else None
    try:
        if spans is None:
            items = (((chunk, source.name, source.where(offset), (offset, source.n_lines)),
                      chunk.num_rows) for chunk, offset in chunks)  # fmt: skip
            map_chunks(_evaluate_chunk, task, items, jobs, keep)
        else:  # each process reads its own row groups
            check = RowCheck(source)

            def checked(result: Any, lines: int) -> None:
                if result is not None:
                    check.add_keys(result[1], result[2])
                    if isinstance(result[0], CandidateError):
                        raise result[0]
                keep(None if result is None else result[0], lines)

            ends = [*(s.line for s in spans[1:]), source.n_lines]
            items = (((path, source.name, s, source.n_lines), end - s.line)
                     for s, end in zip(spans, ends, strict=True))  # fmt: skip
            map_chunks(_evaluate_span, task, items, jobs, checked)
    finally:
        bar.close()
    if not parts:
        raise CandidateError(f"{source.name}: no candidates (the table is empty)")
    return Streamed(Sums.merge(parts), len(parts), max_lines, rows_parts if per_row else None)


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
                share: int = 1) -> tuple[Source, Iterator[tuple[pa.Table, int]], int | None]:  # fmt: skip
    """The source of ``data``, its chunks and their size in lines (``None``: ``chunk_rows``
    rows, or one chunk when neither ``chunk_rows`` nor ``memory`` is given); ``share``: how
    many lines a chunk's line costs against the memory budget."""
    source = open_source(data)
    whole = [r for r in rs if r.spec.whole_table]
    if whole:  # each chunk's place in the whole shuffle needs the number of lines
        source = source.counted()
    max_lines = None if chunk_rows is not None else budget_lines(memory, rs, source.n_lines, share)
    return source, _chunks(source, chunk_rows, max_lines, whole), max_lines


def budget_lines(memory: int | str | None, rs: list[TieRule], n_lines: int | None,
                 share: int = 1) -> int | None:  # fmt: skip
    """Lines per chunk within the ``memory`` budget (``None``: no budget, one chunk), once what
    a rule keeps of the whole input of ``n_lines`` lines (:attr:`tieaudit.rules.RuleKind.table_bytes`) is taken
    from it; ``share``: how many lines a chunk's line costs."""
    if memory is None:
        return None
    kept = max((r.spec.table_bytes for r in rs), default=0) * (n_lines or 0)
    return max(1, chunk_lines(parse_memory(memory) - kept) // share)


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

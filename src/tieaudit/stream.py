"""Evaluation in chunks of whole rows: memory bounded by the chunk, not by the input.

:func:`evaluate_stream` reads its input a chunk of whole rows at a time (:mod:`tieaudit.batches`:
files, Parquet datasets, globs, Arrow tables, DataFrames), evaluates each chunk with
:func:`tieaudit.evaluate` and keeps only its :class:`tieaudit.sums.Sums`, merged in row order.
One chunk gives exactly the in-memory summary (:meth:`tieaudit.Evaluation.summary` is that
case); several chunks agree with it to a relative ``1e-12`` (:mod:`tieaudit.sums`).

The chunk size comes from a memory budget per process (``memory``, default
:data:`DEFAULT_MEMORY`): evaluating a chunk takes about :data:`BYTES_PER_LINE` bytes per line
on top of the :data:`BASELINE` of the interpreter and its libraries. ``chunk_rows`` sets the
number of rows per chunk instead. With ``jobs > 1`` chunks are evaluated by a pool of processes
(each holding one chunk at a time) and merged in row order, so the result does not depend on
``jobs``. A rule whose outcome for a row depends on the other rows of a stored table
(:attr:`tieaudit.rules.RuleKind.whole_table`, e.g. ``random:SEED``) is given each chunk's place
in the whole input (its first line and the input's number of lines: a CSV file is then read once
more to count them; a stream of record batches must fit one chunk).
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing
import re
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pyarrow as pa

from .audit import DEFAULT_PERMUTATIONS, AuditResult, AuditSums
from .batches import RowCheck, RowChunks, Source, open_source, row_ids, whole_rows
from .candidates import CandidateError, CandidateTable
from .compare import CompareSums, orderings
from .evaluate import DEFAULT_SEEDS, evaluate
from .measures import DEFAULT_MEASURES, Measure, parse_measures
from .rules import DEFAULT_RULES, TieRule, parse_rules
from .sums import Sums

__all__ = [
    "Streamed", "evaluate_stream", "audit_stream", "compare_stream", "Compared", "parse_memory", "chunk_lines",
    "DEFAULT_MEMORY", "BYTES_PER_LINE", "BASELINE", "AUDIT_SHARE", "Progress", "map_chunks",
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


def _chunk_table(chunk: pa.Table | CandidateTable, name: str, where: Any,
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
    table = _chunk_table(chunk, name, where, place)
    ev = evaluate(table, task.measures, task.rules, n_seeds=task.n_seeds, rank_cap=task.rank_cap)
    return ev.sums(), ev.per_row() if task.per_row else None


def _chunks(source: Source, max_rows: int | None, max_lines: int | None,
            whole: list[TieRule]) -> Iterator[tuple[pa.Table, int]]:  # fmt: skip
    """The chunks of ``source``, each checked for rows read before. A rule that needs the whole
    table takes each chunk's place in it: an input whose size is not known beforehand (CSV) is
    refused as soon as a second chunk of a stored table appears."""
    check = RowCheck(source)
    for i, (chunk, offset) in enumerate(whole_rows(source.batches(), max_rows, max_lines)):
        if i == 1 and whole and source.n_lines is None and "n_tied" not in chunk.column_names:
            raise ValueError(
                f"{source.name}: {whole[0]} shuffles the stored positions of the whole table, and "
                "the number of lines of this input is not known before it is read (a stream of "
                "record batches): give a chunk_rows (or memory) large enough for every row, or "
                f"leave {whole[0]} out"
            )
        check.add(chunk, offset)
        yield chunk, offset


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
) -> Streamed:
    """Evaluate ``data`` chunk by chunk; the summary equals :func:`tieaudit.evaluate`'s.

    ``data`` is a path (a CSV or Parquet file, a directory of Parquet files, a glob), a pyarrow
    Table, a pandas or polars DataFrame, or a :class:`CandidateTable` (one chunk). Chunks hold
    ``chunk_rows`` rows, or else as many lines as the ``memory`` budget (bytes, or text such as
    ``"1GB"``) allows; ``jobs`` processes evaluate them. ``progress`` shows a bar on standard
    error (lines done / total) when it is a terminal. ``measures``, ``rules``, ``n_seeds`` and
    ``rank_cap`` are those of :func:`tieaudit.evaluate`.
    """
    ms, rs = _checked(measures, rules, n_seeds, chunk_rows, jobs)
    task = _Task(tuple(map(str, ms)), tuple(map(str, rs)), n_seeds, rank_cap, per_row)
    if isinstance(data, CandidateTable):
        sums, rows = _evaluate_chunk(task, data, data.source, None)
        return Streamed(sums, 1, None, None if rows is None else [rows])
    source, chunks, max_lines = _chunked(data, rs, chunk_rows, memory)
    parts: list[Sums] = []
    rows_parts: list[pd.DataFrame] = []
    bar = Progress(source.n_lines, "evaluate", enabled=progress)

    def keep(result: tuple[Sums, pd.DataFrame | None], lines: int) -> None:
        parts.append(result[0])
        if result[1] is not None:
            rows_parts.append(result[1])
        bar.update(lines)

    items = (((chunk, source.name, source.where(offset), (offset, source.n_lines)), chunk.num_rows)
             for chunk, offset in chunks)  # fmt: skip
    try:
        map_chunks(_evaluate_chunk, task, items, jobs, keep)
    finally:
        bar.close()
    if not parts:
        raise CandidateError(f"{source.name}: no candidates (the table is empty)")
    return Streamed(Sums.merge(parts), len(parts), max_lines, rows_parts if per_row else None)


def _checked(measures: Iterable[str | Measure] | None, rules: Iterable[str | TieRule] | None,
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


def _chunked(data: Any, rs: list[TieRule], chunk_rows: int | None, memory: int | str,
             share: int = 1) -> tuple[Source, Iterator[tuple[pa.Table, int]], int | None]:  # fmt: skip
    """The source of ``data``, its chunks and their size in lines (``None``: ``chunk_rows``
    rows); ``share``: how many lines a chunk's line costs against the memory budget."""
    source = open_source(data)
    max_lines = None if chunk_rows is not None else chunk_lines(parse_memory(memory)) // share
    whole = [r for r in rs if r.spec.whole_table]
    if whole:  # each chunk's place in the whole shuffle needs the number of lines
        source = source.counted()
    return source, _chunks(source, chunk_rows, max_lines, whole), max_lines


#: What auditing a chunk takes against evaluating it, per line: the evaluation of the stored
#: order and that of one permutation at a time, with their tables (see benchmarks/bench_stream.py).
AUDIT_SHARE = 3


@dataclass(frozen=True)
class _AuditTask:
    """What a process needs to audit a chunk (picklable)."""

    measures: tuple[str, ...]
    rules: tuple[str, ...]
    n_seeds: int
    n_permutations: int
    seed: int
    users: tuple[str, ...] | None


def _audit_chunk(task: _AuditTask, chunk: pa.Table | CandidateTable, name: str, where: Any,
                 place: tuple[int, int | None] = (0, None),
                 chain: dict[int, Any] | None = None) -> AuditSums:  # fmt: skip
    """The audit sums of one chunk; ``chain``: the shuffles' generators carried from chunk to
    chunk in this process (:meth:`tieaudit.audit.InvarianceSums.of`)."""
    table = _chunk_table(chunk, name, where, place)
    ev = evaluate(table, task.measures, task.rules, n_seeds=task.n_seeds, rank_cap=None)
    return AuditSums.of(ev, task.n_permutations, task.seed, task.users, place[0], chain)


def audit_stream(
    data: Any,
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_seeds: int = DEFAULT_SEEDS,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    seed: int = 0,
    headline: Sequence[str | Measure] = ("nDCG@10", "HR@10"),
    reported_rule: str = "expected",
    title: str | None = None,
    users_with_history: Iterable[str] | None = None,
    requested_rows: int | None = None,
    chunk_rows: int | None = None,
    memory: int | str = DEFAULT_MEMORY,
    jobs: int = 1,
    progress: bool = False,
) -> AuditResult:
    """Audit ``data`` chunk by chunk: :func:`tieaudit.audit.audit`'s result (but no in-memory
    ``evaluation``), from the chunks' :class:`tieaudit.audit.AuditSums` merged in row order.

    ``data``, ``chunk_rows``, ``memory``, ``jobs`` and ``progress`` as :func:`evaluate_stream`
    takes them (an audit takes :data:`AUDIT_SHARE` times the memory of an evaluation per line);
    the other arguments are :func:`tieaudit.audit.audit`'s. The shuffles draw one number per
    stored line, placed by the chunk's first line, so a chunk is permuted exactly as in the
    whole table; a summary table draws a varying number per row, so its chunks are audited one
    after another in this process whatever ``jobs``. One chunk gives the in-memory audit bit
    for bit; several agree with it to a relative ``1e-12`` (sums merged in another order).
    """
    ms, rs = _checked(measures, rules, n_seeds, chunk_rows, jobs)
    users = None if users_with_history is None else tuple(users_with_history)
    task = _AuditTask(tuple(map(str, ms)), tuple(map(str, rs)), n_seeds, n_permutations, seed,
                      users)  # fmt: skip
    chain: dict[int, Any] = {}
    finish = {"headline": headline, "reported_rule": reported_rule, "permutation_seed": seed,
              "title": title, "requested_rows": requested_rows}  # fmt: skip
    if isinstance(data, CandidateTable):
        return _audit_chunk(task, data, data.source, None).result(**finish)
    source, chunks, _ = _chunked(data, rs, chunk_rows, memory, AUDIT_SHARE)
    first = next(chunks, None)
    if first is None:
        raise CandidateError(f"{source.name}: no candidates (the table is empty)")
    if "n_tied" in first[0].column_names:  # a summary table: the shuffles are drawn in turn
        jobs = 1
    parts: list[AuditSums] = []
    bar = Progress(source.n_lines, "audit", enabled=progress)

    def keep(part: AuditSums, lines: int) -> None:
        parts.append(part)
        bar.update(lines)

    items = (((chunk, source.name, source.where(offset), (offset, source.n_lines),
               *((chain,) if jobs == 1 else ())), chunk.num_rows)
             for chunk, offset in itertools.chain([first], chunks))  # fmt: skip
    try:
        map_chunks(_audit_chunk, task, items, jobs, keep)
    finally:
        bar.close()
    merged = functools.reduce(AuditSums.merge, parts)
    return merged.result(**finish, n_chunks=len(parts))


@dataclass(frozen=True)
class _CompareTask:
    """What a process needs to compare a chunk of rows of every model (picklable)."""

    names: tuple[str, ...]
    measures: tuple[str, ...]
    rules: tuple[str, ...]
    n_seeds: int


def _compare_chunk(task: _CompareTask, chunks: list[pa.Table | CandidateTable],
                   sources: list[str], wheres: list[Any], offsets: list[int]) -> CompareSums:  # fmt: skip
    """The comparison sums of one chunk of rows of every model."""
    evs = {}
    for name, chunk, source, where, offset in zip(task.names, chunks, sources, wheres, offsets,
                                                  strict=True):  # fmt: skip
        table = _chunk_table(chunk, source, where, (offset, None))
        evs[name] = evaluate(table, task.measures, task.rules, n_seeds=task.n_seeds)
    return CompareSums.of(evs, task.measures)


@dataclass(eq=False)
class Compared:
    """The result of :func:`compare_stream`: :func:`tieaudit.compare.ranking_flips`'s table,
    :func:`tieaudit.compare.orderings`' table and :func:`tieaudit.compare.negatives_note`'s
    sentence for all the rows, and the number of chunks."""

    sums: CompareSums
    flips: pd.DataFrame
    orderings: pd.DataFrame
    note: str | None
    n_chunks: int


def _misplaced(sources: list[Source], parts: list[tuple[pa.Table, int]],
               names: Sequence[str]) -> None:  # fmt: skip
    """Chunks taken side by side must hold the same rows: else name the first row out of place
    and say how to sort."""
    ids = [row_ids(chunk)[0] for chunk, _ in parts]
    named = [name if name == src.name else f"{name} ({src.name})"
             for name, src in zip(names, sources, strict=True)]  # fmt: skip
    for src, label, other, (chunk, offset) in zip(sources[1:], named[1:], ids[1:], parts[1:],
                                                   strict=True):  # fmt: skip
        if sorted(map(str, other)) == sorted(map(str, ids[0])):
            continue
        at = next((i for i, (a, b) in enumerate(zip(ids[0], other, strict=False)) if a != b),
                  min(len(ids[0]), len(other)))  # fmt: skip
        if at < len(other):
            unit = "line" if src.csv_path else "record"
            (number,) = src.where(offset)(row_ids(chunk)[1][at : at + 1])
            where = f"{unit} {number} of {label} holds row {str(other[at])!r}"
        else:
            where = f"{label} has no more rows"
        what = f"row {str(ids[0][at])!r}" if at < len(ids[0]) else "no row"
        raise CandidateError(
            f"{where} where {named[0]} holds {what}: compared in chunks of whole rows, "
            "the files are read side by side and must hold the same rows in the same order: "
            "sort every file by row with a stable sort (keeping each row's stored order, which "
            "input_order uses), e.g. pandas frame.sort_values('row', kind='stable'), or compare "
            "in one chunk (a --chunk-rows or --memory large enough for every row)"
        )


def compare_stream(
    data: Sequence[Any],
    names: Sequence[str],
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_seeds: int = DEFAULT_SEEDS,
    chunk_rows: int | None = None,
    memory: int | str = DEFAULT_MEMORY,
    jobs: int = 1,
    progress: bool = False,
) -> Compared:
    """Compare models chunk by chunk (:mod:`tieaudit.compare`): ``data`` holds each model's
    candidates (anything :func:`evaluate_stream` reads), ``names`` their names.

    The inputs are read side by side: a chunk of whole rows of the first (``chunk_rows`` rows,
    or the lines the ``memory`` budget allows, shared among the models) and as many rows of each
    other one, which must be the same rows. In one chunk they may be stored in any order (rows
    pair by id, as in memory); across chunks every input must hold its rows in the same order,
    else the first row out of place is named. Each chunk's :class:`tieaudit.compare.CompareSums`
    are merged in row order: one chunk gives the in-memory comparison bit for bit, several agree
    with it to a relative ``1e-12``. ``rules`` are set against ``expected`` as
    :func:`tieaudit.compare.ranking_flips` sets them; ``jobs`` and ``progress`` as
    :func:`evaluate_stream` takes them.
    """
    ms, rs = _checked(measures, rules, n_seeds, chunk_rows, jobs)
    if len(data) != len(names):
        raise ValueError(f"{len(names)} name(s) for {len(data)} inputs")
    if any(r.spec.whole_table for r in rs):
        raise ValueError(f"{next(r for r in rs if r.spec.whole_table)}: a rule that shuffles the "
                         "stored positions of a whole table cannot be compared in chunks")  # fmt: skip
    task = _CompareTask(tuple(names), tuple(map(str, ms)), tuple(map(str, rs)), n_seeds)
    sources = [open_source(d) for d in data]
    max_lines = None
    if chunk_rows is None:
        max_lines = max(1, chunk_lines(parse_memory(memory)) // max(1, len(sources)))
    readers = [RowChunks(src.batches()) for src in sources]
    checks = [RowCheck(src) for src in sources]
    parts: list[CompareSums] = []
    bar = Progress(sources[0].n_lines, "compare", enabled=progress)

    def items() -> Iterator[tuple[tuple, int]]:
        n = 0
        while (first := readers[0].next(chunk_rows, max_lines)) is not None:
            n += 1
            # all of the first input in one chunk: all of the others too, paired as in memory
            rows = None if n == 1 and readers[0].done() else len(row_ids(first[0])[0]) or None
            taken = [first] + [r.next(max_rows=rows) or (first[0].slice(0, 0), r.offset)
                               for r in readers[1:]]  # fmt: skip
            if rows is not None:
                _misplaced(sources, taken, names)
            for check, (chunk, offset) in zip(checks, taken, strict=True):
                check.add(chunk, offset)
            yield (([c for c, _ in taken], [s.name for s in sources],
                    [s.where(o) for s, (_, o) in zip(sources, taken, strict=True)],
                    [o for _, o in taken]), first[0].num_rows)  # fmt: skip
        for src, r, name in zip(sources[1:], readers[1:], names[1:], strict=True):
            if not r.done():
                extra = r.next(max_rows=1)
                _misplaced([sources[0], src], [(extra[0].slice(0, 0), 0), extra],
                           [names[0], name])  # fmt: skip

    def keep(part: CompareSums, lines: int) -> None:
        parts.append(part)
        bar.update(lines)

    try:
        map_chunks(_compare_chunk, task, items(), jobs, keep)
    finally:
        bar.close()
    if not parts:
        raise CandidateError(f"{sources[0].name}: no candidates (the table is empty)")
    sums = functools.reduce(CompareSums.merge, parts)
    rule_names = [str(r) for r in rs]
    flips = sums.flips(rule_names)
    order = orderings(sums.models(), list(dict.fromkeys(flips["metric"])),
                      [*dict.fromkeys([*rule_names, "expected"])])  # fmt: skip
    return Compared(sums, flips, order, sums.note(), len(parts))


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


def map_chunks(work: Callable[..., Any], task: Any, items: Iterator[tuple[tuple, int]],
               jobs: int, keep: Callable[[Any, int], None]) -> None:  # fmt: skip
    """``keep(work(task, *args), lines)`` for each ``(args, lines)`` of ``items``, in their order:
    in this process (``jobs`` 1; each item once the next one is read), or by ``jobs`` processes
    with at most ``jobs + 1`` items in flight (``work``, ``task`` and ``args`` are pickled)."""
    if jobs == 1:
        for args, lines in _lookahead(items):
            keep(work(task, *args), lines)
        return
    pending: deque[tuple[Future, int]] = deque()
    context = multiprocessing.get_context("spawn")  # no fork of a process running Arrow threads
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        try:
            for args, lines in items:
                pending.append((pool.submit(work, task, *args), lines))
                del args
                while len(pending) >= jobs + 1 or (pending and pending[0][0].done()):
                    future, n = pending.popleft()
                    keep(future.result(), n)
            while pending:
                future, n = pending.popleft()
                keep(future.result(), n)
        except BaseException:
            for future, _ in pending:
                future.cancel()
            raise

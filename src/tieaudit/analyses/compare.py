"""Does the tie rule change which model wins? Ranking flips between models on the same rows.

Given two or more models evaluated on the same evaluation rows (scored candidates tables of the
same users and held-out items), :func:`ranking_flips` compares every pair ``(A, B)`` under every
tie rule and against the exact expectation. Rows pair by their ``row`` id, and only when they
are the same case: the same user, the same number ``R`` of relevant items and the same relevant
items (those that are stored, when every one is); else the comparison is refused, naming the
first row that differs. Rows of the same user and relevant items may hold other negatives:
:func:`negatives_note` says so.

Paired difference under ``expected``
    Per row ``w``: ``d_w = E_A,w - E_B,w``, each model's exact expectation under a uniform random
    order within its tie groups. Reported: the mean ``D = (1/W) sum_w d_w``; its standard error
    over rows ``se = sd_w(d) / sqrt(W)`` (sd with n-1: the sampling of users); and the exact
    standard deviation of the mean difference that tie-breaking alone causes,
    ``sd_ties = sqrt(sum_w Var_A,w + sum_w Var_B,w) / W``. That formula assumes A's and B's ties
    are broken independently of each other (and rows independently of one another), as two
    independent uniform shuffles would do; a rule that orders both models' ties by one shared key
    (``hash:SEED`` over the same user and item ids, ``item_id``) correlates them, and the
    variance of their difference may then be smaller or larger.

Flips
    Under a rule ``R`` the pair is ordered by the sign of ``mean_R(A) - mean_R(B)`` (a
    difference within ``1e-12`` is a tie). A pair *flips* under ``R`` when that sign differs from
    its sign under ``expected``. Pairs are oriented so that A is ahead of (or level with) B under
    ``expected``.

Outputs are tidy frames (:func:`ranking_flips`, :func:`orderings`) and Markdown
(:func:`flips_markdown`); ``tieaudit compare A.parquet B.parquet ...`` runs them on files.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..tables.inputs import RowCheck, RowChunks, Source, open_source, row_ids
from ..tables.candidates import CandidateError, CandidateTable
from ..tables.columns import Columns
from ..evaluation.evaluate import DEFAULT_SEEDS, Evaluation, evaluate
from ..common.io import frame_to_markdown
from ..ties.measures import Measure, parse_measure, parse_measures
from ..ties.rules import TieRule
from ..evaluation.stream import (
    Cost,
    Merging,
    Progress,
    check_memory,
    check_options,
    check_size,
    chunk_budget,
    chunk_table,
    map_chunks,
)
from ..evaluation.sums import Moments

__all__ = [
    "FLIP_COLUMNS",
    "Compared",
    "CompareSums",
    "compare",
    "ModelRows",
    "RowContent",
    "negatives_note",
    "ranking_flips",
    "orderings",
    "flips_markdown",
]

#: A mean difference within this distance of 0 is a tie.
TIE_TOLERANCE = 1e-12

#: Columns of :func:`ranking_flips`, one line per (measure, pair, rule).
FLIP_COLUMNS = ("metric", "scorer_a", "scorer_b", "rule", "mean_a", "mean_b", "diff",
                "expected_diff", "se_rows", "sd_ties", "n_rows", "flip")  # fmt: skip


@dataclass(frozen=True, eq=False)
class RowContent:
    """What each row holds, in a model's sorted row order, so that two models' rows pair only
    when they are the same evaluation case: the user, ``R`` (relevant items, stored or not), the
    row's length (stored candidates and the counted ones), and the stored relevant items and the
    stored candidates as ``(row position, item id)`` pairs sorted by row, then item id."""

    users: np.ndarray  # object (str), per row
    n_relevant: np.ndarray  # int64, per row
    length: np.ndarray  # int64, per row
    relevant: tuple[np.ndarray, np.ndarray]  # (row positions, item ids), the label-1 lines
    candidates: tuple[np.ndarray, np.ndarray]  # (row positions, item ids), every line

    @classmethod
    def of(cls, table: CandidateTable, order: np.ndarray) -> RowContent:
        """The content of ``table``'s rows, taken in ``order`` (row codes)."""
        place = np.empty(len(order), dtype=np.int64)
        place[order] = np.arange(len(order))
        pos = place[table.row]
        # item codes follow the ids' code-point order (one int64 key sorts faster than lexsort)
        by_item = np.argsort(pos * np.int64(len(table.item_ids)) + table.item, kind="stable")
        pos, item, label = pos[by_item], table.item_ids[table.item[by_item]], table.label[by_item]
        length = np.bincount(table.row, minlength=table.n_rows).astype(np.int64)
        for extra in (table.n_higher, table.n_lower, table.n_tied):
            if extra is not None:
                length = length + extra
        return cls(
            np.asarray(table.user_ids[table.row_user], dtype=object)[order],
            np.asarray(table.relevant_total, dtype=np.int64)[order], length[order],
            (pos[label], item[label]), (pos, item),
        )  # fmt: skip


def _differing_rows(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray],
                    n_rows: int) -> np.ndarray:  # fmt: skip
    """Row positions whose sorted ``(row position, item id)`` pairs differ between ``a`` and
    ``b``: another number of items, or another item at some place."""
    count_a = np.bincount(a[0], minlength=n_rows)
    count_b = np.bincount(b[0], minlength=n_rows)
    same_count = count_a == count_b
    keep_a, keep_b = same_count[a[0]], same_count[b[0]]
    other = a[1][keep_a] != b[1][keep_b]  # equal counts: the lines of those rows align
    return np.union1d(np.flatnonzero(~same_count), a[0][keep_a][other])


def _items(pairs: tuple[np.ndarray, np.ndarray], at: int) -> list[str]:
    return [str(i) for i in pairs[1][pairs[0] == at]]


@dataclass(frozen=True)
class ModelRows:
    """What a comparison needs of one model: its rows (sorted ids), each rule's mean over rows,
    and per row the exact expectation and variance under uniform random tie-breaking; with
    ``content`` (:meth:`from_evaluation` fills it in) a comparison checks that the rows it pairs
    hold the same user and relevant items."""

    name: str
    row_ids: np.ndarray
    means: dict[str, dict[str, float]]  # rule -> measure -> mean over rows
    expected: dict[str, np.ndarray]  # measure -> per-row expectation, in row_ids order
    variance: dict[str, np.ndarray]  # measure -> per-row variance, in row_ids order
    content: RowContent | None = None

    @classmethod
    def from_evaluation(
        cls, name: str, ev: Evaluation, measures: Iterable[str | Measure] | None = None
    ) -> ModelRows:
        """The rows of ``ev`` for ``measures`` (default: all of ``ev``'s), under all its rules
        and ``expected`` (computed when it was not among the rules)."""
        ms = parse_measures(measures) if measures is not None else list(ev.measures)
        missing = [str(m) for m in ms if m not in ev.measures]
        if missing:
            raise ValueError(f"{name}: not evaluated for {', '.join(missing)}")
        ids = np.asarray(ev.table.row_ids).astype(str)
        order = np.argsort(ids, kind="stable")
        exp = ev.expected
        means = {str(r): {str(m): float(ev[r].values[m].mean()) for m in ms} for r in ev.rules}
        means.setdefault("expected", {str(m): float(exp.values[m].mean()) for m in ms})
        return cls(
            name,
            ids[order],
            means,
            {str(m): exp.values[m][order] for m in ms},
            {str(m): exp.variances[m][order] for m in ms},
            RowContent.of(ev.table, order),
        )


def _check_rows(models: Sequence[ModelRows]) -> None:
    """Every model holds exactly the rows of the first; else name the first row that differs."""
    first = models[0]
    for other in models[1:]:
        if np.array_equal(first.row_ids, other.row_ids):
            continue
        for a, b in ((first, other), (other, first)):
            extra = np.setdiff1d(a.row_ids, b.row_ids)
            if len(extra):
                raise ValueError(
                    f"{a.name} and {b.name} are not evaluated on the same rows: {len(extra)} "
                    f"row(s) of {a.name} are not in {b.name} (first: {str(extra[0])!r})"
                )
        raise ValueError(f"{first.name} and {other.name}: the same rows, repeated differently")
    for other in models[1:]:
        _check_pairing(first, other)


def _check_pairing(a: ModelRows, b: ModelRows) -> None:
    """Rows of the same id pair only when they hold the same user and relevant items (and ``R``);
    else name the first row (in row id order) that differs."""
    if a.content is None or b.content is None:
        return
    ca, cb, n = a.content, b.content, len(a.row_ids)
    relevant = np.zeros(n, dtype=bool)
    relevant[_differing_rows(ca.relevant, cb.relevant, n)] = True
    # relevant items left unstored (n_relevant above the relevant lines) cannot be compared: R can
    relevant &= (ca.n_relevant == np.bincount(ca.relevant[0], minlength=n)) & (
        cb.n_relevant == np.bincount(cb.relevant[0], minlength=n))  # fmt: skip
    user = ca.users != cb.users
    count = ca.n_relevant != cb.n_relevant
    bad = np.flatnonzero(user | count | relevant)
    if not len(bad):
        return
    at = int(bad[0])
    if user[at]:
        what = f"user {str(ca.users[at])!r} in {a.name}, {str(cb.users[at])!r} in {b.name}"
    elif count[at]:
        what = (f"{ca.n_relevant[at]} relevant item(s) in {a.name}, {cb.n_relevant[at]} in "
                f"{b.name}")  # fmt: skip
    else:
        what = (f"relevant items {_items(ca.relevant, at)} in {a.name}, "
                f"{_items(cb.relevant, at)} in {b.name}")  # fmt: skip
    more = f" ({len(bad)} rows differ)" if len(bad) > 1 else ""
    raise ValueError(
        f"{a.name} and {b.name} do not hold the same evaluation rows: row {str(a.row_ids[at])!r} "
        f"has {what}{more}; rows pair by their id only when user and relevant items agree"
    )


def _negative_rows(first: ModelRows, other: ModelRows) -> tuple[int, str | None]:
    """How many rows' candidates differ between two models whose users and relevant items agree,
    and the first of them in row id order (``None``: none, or the content is not known)."""
    if first.content is None or other.content is None:
        return 0, None
    ca, co = first.content, other.content
    n = len(first.row_ids)
    rows = np.union1d(_differing_rows(ca.candidates, co.candidates, n),
                      np.flatnonzero(ca.length != co.length))  # fmt: skip
    return (len(rows), str(first.row_ids[rows[0]])) if len(rows) else (0, None)


def negatives_note(models: Sequence[ModelRows]) -> str | None:
    """A sentence for the rows whose candidates differ between models though their user and
    relevant items agree (other negatives, or another row length), or ``None``."""
    first = models[0]
    counts = [_negative_rows(first, other) for other in models[1:]]
    return _negatives_text([m.name for m in models], counts, len(first.row_ids))


def _negatives_text(names: Sequence[str], counts: Sequence[tuple[int, str | None]],
                    n: int) -> str | None:  # fmt: skip
    parts = [f"{name} in {c} of {n} rows (first: {row!r})"
             for name, (c, row) in zip(names[1:], counts, strict=True) if c]  # fmt: skip
    if not parts:
        return None
    return (f"**Candidates differ:** same users and relevant items, other negatives than "
            f"{names[0]}'s: {'; '.join(parts)}. The differences mix the models with their "
            "candidate sets.")


@dataclass(frozen=True)
class CompareSums:
    """What a comparison of some rows keeps, as sums over rows: per model the sum of each
    rule's per-row values (``totals``, ``expected`` included) and of the per-row variances
    under ``expected`` (``variances``); per pair of models ``(i, j)`` (``i < j``) and measure
    the :class:`tieaudit.evaluation.sums.Moments` of the per-row difference of expectations ``E_i - E_j``;
    and per model after the first, the rows whose candidates differ from the first's (count,
    first row id). Consecutive chunks of rows merge with :meth:`merge`; :func:`ranking_flips`
    is the one-chunk case."""

    names: tuple[str, ...]
    measures: tuple[str, ...]
    rules: tuple[str, ...]
    n_rows: int
    totals: tuple[dict[tuple[str, str], float], ...]
    variances: tuple[dict[str, float], ...]
    pairs: dict[tuple[int, int, str], Moments]
    negatives: tuple[tuple[int, str | None], ...]

    @classmethod
    def of(cls, evaluations: Mapping[str, Evaluation],
           measures: Iterable[str | Measure] | None = None) -> CompareSums:  # fmt: skip
        """The sums of models evaluated on the same rows (checked as :func:`ranking_flips`
        checks them)."""
        names = list(evaluations)
        models = [ModelRows.from_evaluation(n, ev, measures) for n, ev in evaluations.items()]
        _check_models(models)
        ms = list(models[0].expected)
        rules = list(models[0].means)
        totals = []
        for ev in evaluations.values():
            totals.append({(r, m): float(ev.result(r).values[parse_measure(m)].sum())
                           for r in rules for m in ms})  # fmt: skip
        return cls(
            tuple(names), tuple(ms), tuple(rules), len(models[0].row_ids), tuple(totals),
            tuple({m: float(x.variance[m].sum()) for m in ms} for x in models),
            _pair_moments(models, ms),
            tuple(_negative_rows(models[0], other) for other in models[1:]),
        )  # fmt: skip

    def merge(self, other: CompareSums) -> CompareSums:
        """The sums of these rows followed by ``other``'s (the same models)."""

        def add(a: dict, b: dict) -> dict:
            return {k: v + b[k] for k, v in a.items()}

        def first(a: str | None, b: str | None) -> str | None:
            return min((x for x in (a, b) if x is not None), default=None)

        return CompareSums(
            self.names, self.measures, self.rules, self.n_rows + other.n_rows,
            tuple(add(a, b) for a, b in zip(self.totals, other.totals, strict=True)),
            tuple(add(a, b) for a, b in zip(self.variances, other.variances, strict=True)),
            {k: v.merge(other.pairs[k]) for k, v in self.pairs.items()},
            tuple((a[0] + b[0], first(a[1], b[1]))
                  for a, b in zip(self.negatives, other.negatives, strict=True)),
        )  # fmt: skip

    def models(self) -> list[ModelRows]:
        """Each model's means over rows (no per-row arrays: :func:`orderings` reads the means)."""
        w, none = self.n_rows, np.zeros(0)
        return [ModelRows(name, none.astype(str),
                          {r: {m: t[(r, m)] / w for m in self.measures} for r in self.rules},
                          dict.fromkeys(self.measures, none), dict.fromkeys(self.measures, none))
                for name, t in zip(self.names, self.totals, strict=True)]  # fmt: skip

    def flips(self, rules: Iterable[str] | None = None) -> pd.DataFrame:
        """:func:`ranking_flips` of the rows summed."""
        models = self.models()
        rs = _flip_rules(models, rules)
        return _flip_lines(models, self.variances, self.pairs, list(self.measures), rs, self.n_rows)

    def note(self) -> str | None:
        """:func:`negatives_note` of the rows summed."""
        return _negatives_text(self.names, self.negatives, self.n_rows)


def _pair_moments(models: Sequence[ModelRows], ms: Sequence[str]
                  ) -> dict[tuple[int, int, str], Moments]:  # fmt: skip
    """Per pair ``(i, j)`` and measure, the moments of ``E_i - E_j`` over rows."""
    return {(i, j, m): Moments.of(a.expected[m] - b.expected[m])
            for m in ms for (i, a), (j, b) in itertools.combinations(enumerate(models), 2)}  # fmt: skip


@dataclass(frozen=True)
class _CompareTask:
    """What a process needs to compare a chunk of rows of every model (picklable)."""

    names: tuple[str, ...]
    measures: tuple[str, ...]
    rules: tuple[str, ...]
    n_seeds: int


def _compare_chunk(task: _CompareTask, chunks: list[pa.Table | CandidateTable],
                   sources: list[str], wheres: list[Any], places: list[tuple[int, int | None]],
                   columns: list[Columns]) -> CompareSums:  # fmt: skip
    """The comparison sums of one chunk of rows of every model (``places``: each chunk's
    first line and the number of lines of its whole input, when known; ``columns``: each
    input's own column names, resolved)."""
    evs = {}
    for name, chunk, source, where, place, own in zip(task.names, chunks, sources, wheres, places,
                                                      columns, strict=True):  # fmt: skip
        table = chunk_table(chunk, source, where, place, own)
        evs[name] = evaluate(table, task.measures, task.rules, n_seeds=task.n_seeds)
    return CompareSums.of(evs, task.measures)


@dataclass(eq=False)
class Compared:
    """The result of :func:`compare`: :func:`ranking_flips`' table, :func:`orderings`' table
    and :func:`negatives_note`'s sentence for all the rows, their sums and the number of
    chunks."""

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
            record = src.record(offset, int(row_ids(chunk)[1][at]))
            where = f"{record} of {label} holds row {str(other[at])!r}"
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


def compare(
    models: Mapping[str, Any],
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str | TieRule] | None = None,
    *,
    n_seeds: int = DEFAULT_SEEDS,
    chunk_rows: int | None = None,
    memory: int | str | None = None,
    jobs: int = 1,
    progress: bool = False,
    row_col: str | None = None,
    user_col: str | None = None,
    item_col: str | None = None,
    label_col: str | None = None,
    score_col: str | None = None,
    columns: Columns | None = None,
) -> Compared:
    """Compare models evaluated on the same rows: ``models`` maps each name to its candidates
    (anything :func:`tieaudit.evaluate` reads: a path to a file, a folder of candidates files or
    a glob, a pandas or polars DataFrame, a pyarrow Table or dataset, a :class:`CandidateTable`).

    Without ``chunk_rows`` or ``memory`` each input is read whole, its rows stored in any order
    (they pair by id). Else the inputs are read side by side in chunks of whole rows
    (:func:`tieaudit.evaluation.stream.evaluate_stream` reads them so): a chunk of the first (``chunk_rows``
    rows, or the lines the ``memory`` budget allows, shared among the models) and as many rows
    of each other one, which must be the same rows: across chunks every input must hold its rows
    in the same order, else the first row out of place is named. ``jobs`` processes evaluate the
    chunks. Each chunk's :class:`CompareSums` are merged in row order: one chunk gives
    :func:`ranking_flips` bit for bit, several agree with it to a relative ``1e-12``. ``rules``
    are set against ``expected`` as :func:`ranking_flips` sets them. ``row_col`` ..
    ``score_col`` name the inputs' own columns (the same in each), as :func:`tieaudit.evaluate`'s
    (or ``columns``, a :class:`tieaudit.tables.columns.Columns`).
    """
    names = list(models)
    data = list(models.values())
    ms, rs = check_options(measures, rules, n_seeds, chunk_rows, jobs)
    task = _CompareTask(tuple(names), tuple(map(str, ms)), tuple(map(str, rs)), n_seeds)
    whole = [r for r in rs if r.spec.whole_table]
    columns = Columns.of(row_col, user_col, item_col, label_col, score_col,
                         columns=columns)  # fmt: skip
    sources = [open_source(d, columns) for d in data]
    if whole:  # each chunk's place in the whole shuffle needs the number of lines
        sources = [src.counted() for src in sources]
    cost = Cost.of(rs, len(ms), n_seeds, share=max(1, len(sources)))  # every model's chunk at once
    budget = None if chunk_rows is not None else chunk_budget(memory, rs, sources[0].n_lines, cost)
    max_lines, row_lines = (budget.lines, budget.row_lines) if budget else (None, 0.0)
    readers = [RowChunks(src.batches()) for src in sources]
    keys = budget.check if budget is not None else check_memory(memory)
    checks = [RowCheck(src, keys // len(sources)) for src in sources]
    parts = Merging(CompareSums.merge)
    bar = Progress(sources[0].n_lines, "compare", enabled=progress)

    def items() -> Iterator[tuple[tuple, int]]:
        n = 0
        while (first := readers[0].next(chunk_rows, max_lines, row_lines)) is not None:
            n += 1
            # all of the first input in one chunk: all of the others too, paired as in memory
            rows = None if n == 1 and readers[0].done() else len(row_ids(first[0])[0]) or None
            taken = [first] + [r.next(max_rows=rows) or (first[0].slice(0, 0), r.offset)
                               for r in readers[1:]]  # fmt: skip
            if rows is not None:
                _misplaced(sources, taken, names)
            for src, check, (chunk, offset) in zip(sources, checks, taken, strict=True):
                if n == 2:
                    check_size(src, chunk, whole)
                check.add(chunk, offset)
            yield (([c for c, _ in taken], [s.name for s in sources],
                    [s.where(o) for s, (_, o) in zip(sources, taken, strict=True)],
                    [(o, s.n_lines) for s, (_, o) in zip(sources, taken, strict=True)],
                    [s.columns for s in sources]), first[0].num_rows)  # fmt: skip
        for check in checks:  # rows whose first lines were spilled, before any result
            check.finish()
        for src, r, name in zip(sources[1:], readers[1:], names[1:], strict=True):
            if not r.done():
                extra = r.next(max_rows=1)
                _misplaced([sources[0], src], [(extra[0].slice(0, 0), 0), extra],
                           [names[0], name])  # fmt: skip

    def keep(part: CompareSums, lines: int) -> None:
        parts.add(part)
        bar.update(lines)

    try:
        map_chunks(_compare_chunk, task, items(), jobs, keep)
    finally:
        for check in checks:  # their files removed, also on an error
            check.close()
        bar.close()
    if parts.total is None:
        raise CandidateError(f"{sources[0].name}: no candidates (the table is empty)")
    sums = parts.total
    rule_names = [str(r) for r in rs]
    flips = sums.flips(rule_names)
    order = orderings(sums.models(), list(dict.fromkeys(flips["metric"])),
                      [*dict.fromkeys([*rule_names, "expected"])])  # fmt: skip
    return Compared(sums, flips, order, sums.note(), parts.n)


def _sign(x: float) -> int:
    return 0 if abs(x) <= TIE_TOLERANCE else (1 if x > 0 else -1)


def ranking_flips(
    models: Sequence[ModelRows] | Mapping[str, Evaluation],
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str] | None = None,
) -> pd.DataFrame:
    """One line per measure, pair of models and rule (:data:`FLIP_COLUMNS`; see module doc).

    ``models`` are :class:`ModelRows` or a mapping name -> :class:`Evaluation` (two or more, on
    the same rows); ``rules`` are the rules whose order is set against ``expected`` (default:
    every rule the models share but ``expected``). ``flip`` is ``yes`` where the pair's order
    under the rule differs from its order under ``expected``. With no rule but ``expected``, one
    line per measure and pair under ``expected`` (never a flip) carries the paired difference.
    """
    if isinstance(models, Mapping):
        models = [ModelRows.from_evaluation(n, ev, measures) for n, ev in models.items()]
    models = list(models)
    _check_models(models)
    ms = [str(m) for m in parse_measures(measures)] if measures is not None else list(
        models[0].expected)
    for m in models:
        missing = [x for x in ms if x not in m.expected]
        if missing:
            raise ValueError(f"{m.name}: not evaluated for {', '.join(missing)}")
    rs = _flip_rules(models, rules)
    variances = [{x: float(m.variance[x].sum()) for x in ms} for m in models]
    return _flip_lines(models, variances, _pair_moments(models, ms), ms, rs, len(models[0].row_ids))


def _check_models(models: Sequence[ModelRows]) -> None:
    """Two or more models, named apart, on the same rows (:func:`_check_rows`)."""
    if len(models) < 2:
        raise ValueError(f"a comparison needs two or more models, got {len(models)}")
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"model names repeat: {', '.join(names)}")
    _check_rows(models)


def _flip_rules(models: Sequence[ModelRows], rules: Iterable[str] | None) -> list[str]:
    """The rules set against ``expected`` (see :func:`ranking_flips`), each one evaluated."""
    shared = [r for r in models[0].means if all(r in m.means for m in models)]
    # with no rule but expected, one line per pair under expected carries the paired difference
    rs = [r for r in (list(rules) if rules is not None else shared) if r != "expected"] or [
        "expected"]  # fmt: skip
    for r in rs:
        for m in models:
            if r not in m.means:
                raise ValueError(f"{m.name}: not evaluated under rule {r}")
    return rs


def _flip_lines(models: Sequence[ModelRows], variances: Sequence[dict[str, float]],
                pairs: Mapping[tuple[int, int, str], Moments], ms: Sequence[str],
                rs: Sequence[str], w: int) -> pd.DataFrame:  # fmt: skip
    """The lines of :func:`ranking_flips` from the models' means, the sums of their per-row
    variances and the moments of each pair's per-row differences."""
    lines = []
    for metric in ms:
        for (i, a), (j, b) in itertools.combinations(enumerate(models), 2):
            d = pairs[(i, j, metric)]
            if _sign(d.total / d.n) < 0:
                a, b, d = b, a, replace(d, total=-d.total)
            diff = d.total / d.n
            se = math.sqrt(d.m2 / (w - 1)) / math.sqrt(w) if w > 1 else math.nan
            ties = math.sqrt(variances[i][metric] + variances[j][metric]) / w
            for r in rs:
                ra, rb = a.means[r][metric], b.means[r][metric]
                lines.append({
                    "metric": metric, "scorer_a": a.name, "scorer_b": b.name, "rule": r,
                    "mean_a": ra, "mean_b": rb, "diff": ra - rb, "expected_diff": diff,
                    "se_rows": se, "sd_ties": ties, "n_rows": w,
                    "flip": "yes" if r != "expected" and _sign(ra - rb) != _sign(diff) else "no",
                })  # fmt: skip
    return pd.DataFrame(lines, columns=list(FLIP_COLUMNS))


def orderings(
    models: Sequence[ModelRows], measures: Iterable[str] | None = None,
    rules: Iterable[str] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """``metric, rule, order``: the models from best to worst under each rule, e.g.
    ``A > B = C`` (``=`` for means within :data:`TIE_TOLERANCE`)."""
    models = list(models)
    ms = list(measures) if measures is not None else list(models[0].expected)
    rs = list(rules) if rules is not None else list(models[0].means)
    out = []
    for metric in ms:
        for r in rs:
            ranked = sorted(models, key=lambda m: -m.means[r][metric])  # stable: given order
            text = ranked[0].name
            for prev, cur in itertools.pairwise(ranked):
                gap = _sign(prev.means[r][metric] - cur.means[r][metric])
                text += f" {'>' if gap else '='} {cur.name}"
            out.append({"metric": metric, "rule": r, "order": text})
    return pd.DataFrame(out, columns=["metric", "rule", "order"])


def _pair_lines(flips: pd.DataFrame) -> pd.DataFrame:
    """One line per measure and pair: the expected difference and the rules that flip it."""
    rows = []
    for (metric, a, b), g in flips.groupby(["metric", "scorer_a", "scorer_b"], sort=False):
        one = g.iloc[0]
        flipped = [r for r, f in zip(g["rule"], g["flip"], strict=True) if f == "yes"]
        rows.append({
            "metric": metric, "A": a, "B": b, "expected A - B": one["expected_diff"],
            "se (rows)": one["se_rows"], "sd (ties)": one["sd_ties"],
            "order differs under": ", ".join(flipped) or "none",
        })  # fmt: skip
    return pd.DataFrame(rows)


FLIPS_LEGEND = (
    "A is ahead of B (or level) under `expected`. *expected A - B*: mean over rows of the "
    "per-row difference of exact expectations; *se (rows)*: its standard error over rows "
    "(sd/sqrt(W)); *sd (ties)*: the exact sd of that mean from tie-breaking alone, A's and B's "
    "ties broken independently; *order differs under*: the rules under which B is ahead of A, "
    "or level where expected separates them, or apart where expected has them level."
)


def _verdict(flips: pd.DataFrame) -> str:
    """The line saying how many pairs flip (or that none does, or why none can)."""
    if not len(flips):
        return "**Ranking flips: none.** Fewer than two scorers: no pair to compare."
    pairs = flips.groupby(["metric", "scorer_a", "scorer_b"])["flip"]
    total, n = pairs.ngroups, int(pairs.agg(lambda f: (f == "yes").any()).sum())
    if set(flips["rule"]) == {"expected"}:
        return (f"**Ranking flips: none.** No rule besides `expected` was evaluated: the paired "
                f"differences of {total} pairs under `expected` only.")  # fmt: skip
    if n == 0:
        return (f"**Ranking flips: none.** Every rule orders every pair of scorers as `expected` "
                f"does ({total} pairs).")  # fmt: skip
    return f"**Ranking flips: {n} of {total} pairs** change order under at least one rule."


def flips_markdown(
    flips: pd.DataFrame, order: pd.DataFrame, title: str = "", level: int = 2,
    note: str | None = None,
) -> str:  # fmt: skip
    """A block per measure: the order of the models under each rule, and the pairs with their
    paired difference under ``expected`` and the rules that flip them; a line saying how many
    pairs flip (or that none does), and ``note`` (e.g. :func:`negatives_note`) below it."""
    h = "#" * level
    out = [f"{h} {title}", ""] if title else []
    out += [_verdict(flips), ""]
    if note:
        out += [note, ""]
    pairs = _pair_lines(flips)
    for metric in dict.fromkeys(order["metric"]):
        out += [f"{h}# {metric}", ""]
        out += [f"- `{r}`: {o}" for r, o in zip(*order[order["metric"] == metric][["rule", "order"]]
                                                .to_numpy().T, strict=True)]  # fmt: skip
        out.append("")
        sel = pairs[pairs["metric"] == metric].drop(columns="metric") if len(pairs) else pairs
        if len(sel):
            out.append(frame_to_markdown(sel.reset_index(drop=True)))
    out += [FLIPS_LEGEND, ""]
    return "\n".join(out)

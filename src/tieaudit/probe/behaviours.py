"""Reference behaviours the probe names that are no tie rule: they depend on the evaluator's
internals (a heap's size and layout, a noise it draws), not on the candidates alone.

A tie rule (:mod:`tieaudit.ties.rules`) defines each relevant item's rank, or the measure's value,
from a row's candidates, so it can be evaluated on stored and summary tables and in the
pipeline. The behaviours here cannot: their ranks depend on a parameter of the evaluator (the
number ``K`` of candidates a bounded heap keeps, which need not be the measure's cutoff), on the
layout of a heap after a given sequence of pushes, or on random draws and the magnitude of the
scores. The probe identifies each exactly, with its parameters, when no registered rule gives the
values (:func:`identify`), and says what it cannot tell apart. Each behaviour is one object
registered once here; :func:`markdown_table` (the documentation's table) and the probe read the
registry.

``heap_first_k``
    implicit's ``select`` (``ranking_metrics_at_k``; RecTools' ``ImplicitRanker``): candidates
    scanned in stored order enter a min-heap of ``(score, position)`` pairs holding ``K``; once
    it is full a candidate enters only if its score is strictly above the smallest score kept,
    and replaces the smallest pair. The heap is emitted sorted by ``(score, position)``
    descending, so among equal scores the later stored comes first: with 101 candidates tied
    and the relevant item stored first, ``K = 10`` keeps the first ten and ranks it 10th.
``score_id_heap``
    BEIR's exact search (also sentence-transformers' ``InformationRetrievalEvaluator`` and
    MTEB's search wrappers): Python's ``heapq`` with ``(score, id)`` pairs, ``heappush`` until it
    holds ``K``, then ``heappushpop``; the ``K`` largest pairs stay (at the boundary the larger
    id), and the result lists them in the heap's array order, then sorts them by score with a
    stable sort: inside the top ``K`` ties keep the heap's layout.
``epsilon_noise``
    Merlin's ranking metrics: ``U[0, 1) * eps`` added to float32 scores before a stable sort. Where
    a score is small the noise shuffles its tie group afresh on every call; from the magnitude
    where it is below half a float32 unit in the last place it is absorbed and the order falls
    back to the sort's (stored order for a stable sort). The probe feeds the crafted cases of
    plain scores (a tie group at zero never absorbs a noise) with scores multiplied by powers
    of two and finds the smallest magnitude where the calls agree and follow a registered rule:
    ``eps`` lies in the binade that magnitude gives.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from ..tables.candidates import CandidateTable
from ..ties.measures import Measure

__all__ = ["Behaviour", "Context", "Found", "behaviours", "identify", "markdown_table"]


@dataclass
class Context:
    """What the probe saw: the crafted tables (``stored`` first) and the evaluator's runs on
    each, every registered rule's values there, whether the runs agreed, the table its mean was
    measured on with its values, ``call(table, k, where, tag)`` for further calls, and the
    crafted rows of plain scores (``plain``: no numeric edge values)."""

    measure: Measure
    tables: dict[str, CandidateTable]
    runs: dict[str, list[np.ndarray]]
    predicted: dict[str, dict[str, np.ndarray]]
    close: Callable[[np.ndarray, np.ndarray], np.ndarray]
    deterministic: bool
    inflation: CandidateTable
    inflation_values: np.ndarray
    call: Callable[..., np.ndarray]
    plain: np.ndarray


@dataclass
class Found:
    """A behaviour identified: its name, its parameters (as shown) and the evidence."""

    name: str
    parameters: dict[str, str]
    evidence: list[str] = field(default_factory=list)


class Behaviour:
    """One reference behaviour (see the module docstring)."""

    name: ClassVar[str]
    what: ClassVar[str]  #: the behaviour in one line
    seen_in: ClassVar[str]  #: where it comes from
    why: ClassVar[str]  #: why it is no tie rule
    cannot_tell: ClassVar[str]  #: what the probe cannot tell apart

    def identify(self, ctx: Context) -> Found | None:
        raise NotImplementedError


_REGISTRY: dict[str, Behaviour] = {}


def register(b: Behaviour) -> Behaviour:
    if b.name in _REGISTRY:
        raise ValueError(f"behaviour {b.name!r} is registered already")
    _REGISTRY[b.name] = b
    return b


def behaviours() -> tuple[Behaviour, ...]:
    """Every registered behaviour, in registration order."""
    return tuple(_REGISTRY.values())


def identify(ctx: Context) -> Found | None:
    """The first registered behaviour that gives the evaluator's values, or ``None``."""
    for b in behaviours():
        found = b.identify(ctx)
        if found is not None:
            return found
    return None


def markdown_table() -> str:
    """The documentation's table of the probe-only behaviours, one line each."""
    lines = ["| behaviour | what it does | seen in | why no tie rule | the probe cannot tell apart |",
             "|---|---|---|---|---|"]  # fmt: skip
    lines += [f"| `{b.name}` | {b.what} | {b.seen_in} | {b.why} | {b.cannot_tell} |"
              for b in behaviours()]  # fmt: skip
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- bounded heaps
def _rows(table: CandidateTable) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(labels, scores, ids) of every row, lines in stored order, rows in first appearance."""
    from .adapters._common import rows  # the adapters' row split (imported late: no cycle)

    frame: pd.DataFrame = table.to_frame()
    for row in rows(frame):
        yield row.label, row.score, row.item


class _Heap(Behaviour):
    """A bounded heap of ``K``: :meth:`emitted` gives the stored positions it emits, in order."""

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int) -> list[int]:
        raise NotImplementedError

    def _value(self, measure: Measure, row: tuple, size: int) -> float:
        labels, score, ids = row
        n_relevant = int((labels > 0).sum())
        if n_relevant == 0:
            return 0.0
        out = self.emitted(score, ids, size)
        ranks = [j + 1 for j, p in enumerate(out) if labels[p] > 0]
        return measure.of_ranks(ranks, n_relevant)

    def _matches(self, ctx: Context, rows: list[tuple], runs: list[np.ndarray],
                 size: int) -> bool:  # fmt: skip
        """Whether every run gives this heap's value on every row (stops at the first that
        does not)."""
        for i, row in enumerate(rows):
            want = np.array([self._value(ctx.measure, row, size)])
            if not all(ctx.close(v[i : i + 1], want).all() for v in runs):
                return False
        return True

    def identify(self, ctx: Context) -> Found | None:
        if not ctx.deterministic:
            return None
        tables = [(t, ctx.runs[n]) for n, t in ctx.tables.items()]
        tables.append((ctx.inflation, [ctx.inflation_values]))
        split: dict[int, list[tuple]] = {}  # a table's rows, split when first needed

        def rows_of(i: int) -> list[tuple]:
            if i not in split:
                split[i] = list(_rows(tables[i][0]))
            return split[i]

        longest = int(np.bincount(ctx.tables["stored"].row).max())  # the copies hold the same
        sizes = [s for s in range(1, longest + 1)
                 if all(self._matches(ctx, rows_of(i), runs, s)
                        for i, (_, runs) in enumerate(tables))]  # fmt: skip
        if not sizes:
            return None
        shown = _sizes(sizes, longest)
        evidence = [
            f"every value of every run is that of {self.name} with K {shown} ({self.what}), on "
            f"the crafted cases and on the {ctx.inflation.source}"
        ]
        if len(sizes) > 1:
            evidence.append(f"the cases cannot tell K {shown} apart ({self.cannot_tell})")
        return Found(self.name, {"K": shown}, evidence)


def _sizes(sizes: list[int], longest: int) -> str:
    if sizes[-1] == longest and sizes == list(range(sizes[0], longest + 1)):
        return f">= {sizes[0]}"
    if len(sizes) == 1:
        return f"= {sizes[0]}"
    return "in " + ", ".join(str(s) for s in sizes)


class HeapFirstK(_Heap):
    name = "heap_first_k"
    what = ("a min-heap of (score, stored position) holding K, scanned in stored order, a "
            "candidate entering a full heap only above its smallest score; emitted by (score, "
            "position) descending")  # fmt: skip
    seen_in = "implicit's `ranking_metrics_at_k` (`cpu/select.h`), RecTools' `ImplicitRanker`"
    why = "the rank depends on K, the evaluator's heap size, which need not be the cutoff"
    cannot_tell = ("heap sizes that keep the same candidates on every row; from the longest row "
                   "on it is `reversed_input`")  # fmt: skip

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int) -> list[int]:
        heap: list[tuple[float, int]] = []
        for p, s in enumerate(score.tolist()):
            if len(heap) < size:
                heapq.heappush(heap, (s, p))
            elif s > heap[0][0]:
                heapq.heapreplace(heap, (s, p))
        return [p for _, p in sorted(heap, reverse=True)]


class ScoreIdHeap(_Heap):
    name = "score_id_heap"
    what = ("Python's heapq of (score, id) holding K (heappush, then heappushpop), listed in the "
            "heap's array order and sorted by score with a stable sort")  # fmt: skip
    seen_in = ("BEIR's exact search, sentence-transformers' `InformationRetrievalEvaluator`, "
               "MTEB's search wrappers")  # fmt: skip
    why = ("inside the top K the order is the heap's layout after the pushes in stored order, "
           "and which candidates stay depends on K")  # fmt: skip
    cannot_tell = "heap sizes that keep the same candidates on every row"

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int) -> list[int]:
        heap: list[tuple[float, str, int]] = []
        for p, (s, i) in enumerate(zip(score.tolist(), ids.tolist(), strict=True)):
            if len(heap) < size:
                heapq.heappush(heap, (s, str(i), p))
            else:
                heapq.heappushpop(heap, (s, str(i), p))
        return [p for s, _, p in sorted(heap, key=lambda x: -x[0])]  # stable: the layout


# ---------------------------------------------------------------------- noise
_MAX_EXPONENT = 64  # scores up to 2**64 times the crafted ones (float32 holds them exactly)


def _scaled(table: CandidateTable, exponent: int, rows: np.ndarray) -> CandidateTable:
    """The ``rows`` (a mask) of ``table``, scores times ``2**exponent``."""
    frame = table.to_frame()
    frame = frame[frame["row"].isin(table.row_ids[rows])].copy()
    frame["score"] = frame["score"] * 2.0**exponent  # a power of two: exact, order kept
    return CandidateTable.from_frame(
        frame, source=f"crafted tie cases with scores times 2^{exponent}"
    )


class EpsilonNoise(Behaviour):
    name = "epsilon_noise"
    what = ("U[0,1)*eps added to float32 scores, then a sort: a fresh shuffle of small tied "
            "scores, absorbed from the magnitude where eps is half a unit in the last place")  # fmt: skip
    seen_in = "Merlin's ranking metrics (eps = 1e-6)"
    why = ("its order depends on the evaluator's random draws, which no seed given reproduces, "
           "and on the scores' magnitude")  # fmt: skip
    cannot_tell = ("eps within one binade (a factor of two), and the noise's distribution; eps "
                   "assumes float32 scores (float64: 2^-29 times it)")  # fmt: skip

    def identify(self, ctx: Context) -> Found | None:
        if ctx.deterministic:
            return None
        base = ctx.tables["stored"]
        seen: dict[int, str | None] = {}

        def fallback(e: int) -> str | None:
            """The registered rule the evaluator follows with scores times ``2**e`` (``None``:
            its calls disagree, or no rule gives its values)."""
            if e not in seen:
                table = _scaled(base, e, ctx.plain)
                runs = [ctx.call(table, ctx.measure.k, table.source, f".{ctx.measure}.e{e}.{j}")
                        for j in range(2)]  # fmt: skip
                seen[e] = None
                if ctx.close(runs[0], runs[1]).all():
                    pred = ctx.predicted["stored"]  # the scaled table ranks alike
                    seen[e] = next((r for r, v in pred.items()
                                    if ctx.close(runs[0], v[ctx.plain]).all()), None)  # fmt: skip
            return seen[e]

        high = next((e for e in (8, 16, 32, _MAX_EXPONENT) if fallback(e) is not None), None)
        if high is None:
            return None
        low = 0  # the crafted scores themselves: the calls disagree there
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (low, mid) if fallback(mid) is not None else (mid, high)
        rule = fallback(high)
        lo, hi = 2.0 ** (high - 25), 2.0 ** (high - 24)  # half an ulp of 2**(high-1), 2**high
        shown = f"({lo:.3g}, {hi:.3g}]"
        evidence = [
            f"the calls disagree while the tied score is below 2^{high} and all follow {rule} "
            f"from 2^{high} on: a noise below half a float32 unit in the last place there, "
            f"eps in {shown}",
            f"the probe cannot tell {self.cannot_tell}",
        ]
        return Found(self.name, {"epsilon": shown, "falls back to": str(rule)}, evidence)


for _b in (HeapFirstK(), ScoreIdHeap(), EpsilonNoise()):
    register(_b)

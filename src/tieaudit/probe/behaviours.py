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
    BEIR's exact search (also MTEB's search wrappers, and sentence-transformers'
    ``InformationRetrievalEvaluator`` before 6.0, which since ranks by ``(-score, corpus_id)``:
    ``item_id``): Python's ``heapq`` with ``(score, id)`` pairs, ``heappush`` until it
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
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from ..tables.candidates import CandidateTable
from ..ties.measures import Measure

__all__ = ["Behaviour", "Context", "Found", "behaviours", "get_behaviour", "identify",
           "markdown_table"]  # fmt: skip


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
    #: per table, per row, the values some order of its tie group gives (``None``: not known)
    possible: dict[str, list[np.ndarray]] | None = None


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
    #: Whether its order reads the scores (else a cast of the scores cannot show)
    reads_scores: ClassVar[bool] = True

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


def get_behaviour(name: str) -> Behaviour | None:
    """The registered behaviour ``name``, or ``None``."""
    return _REGISTRY.get(name)


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


def _list_value(measure: Measure, labels: np.ndarray, out: Sequence[int]) -> float:
    """``measure`` of a row whose evaluator emits the stored positions ``out``, best first; the
    relevant items it leaves out are ranked below every cutoff."""
    n_relevant = int((labels > 0).sum())
    if n_relevant == 0:
        return 0.0
    ranks = [j + 1 for j, p in enumerate(out) if labels[p] > 0]
    return measure.of_ranks(ranks, n_relevant)


class _Selection(Behaviour):
    """A list an evaluator emits, computed from a row's scores (and ids) by one of its
    :attr:`forms` (name -> whether it takes a size ``K``): :meth:`emitted` gives the stored
    positions emitted, best first. :meth:`identify` names the first form that gives every value
    of every run on the crafted cases and the inflation table, with the sizes that do."""

    forms: ClassVar[dict[str, bool]] = {"": True}

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str) -> Sequence[int]:  # fmt: skip
        raise NotImplementedError

    def _value(self, measure: Measure, row: tuple, size: int | None, form: str = "") -> float:
        labels, score, ids = row
        if not (labels > 0).any():
            return 0.0
        return _list_value(measure, labels, self.emitted(score, ids, size, form))

    def _matches(self, ctx: Context, rows: list[tuple], runs: list[np.ndarray],
                 size: int | None, form: str = "",
                 seen: dict | None = None) -> bool:  # fmt: skip
        """Whether every run gives this selection's value on every row (stops at the first that
        does not). ``seen``: the rows' values by row, size and form, kept between calls (every
        form keeps a whole row from a size at its length on, so larger sizes reuse that)."""
        seen = {} if seen is None else seen
        for i, row in enumerate(rows):
            eff = None if size is None else min(size, len(row[1]))
            key = (id(rows), i, eff, form)
            if key not in seen:
                seen[key] = self._value(ctx.measure, row, eff, form)
            want = np.array([seen[key]])
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
        seen: dict = {}
        for form, sized in self.forms.items():
            tried: list[int | None] = list(range(1, longest + 1)) if sized else [None]
            sizes = [s for s in tried
                     if all(self._matches(ctx, rows_of(i), runs, s, form, seen)
                            for i, (_, runs) in enumerate(tables))]  # fmt: skip
            confirmed = self._confirm(ctx, form, sizes, seen) if sizes else None
            if confirmed is not None:
                found = self._found(ctx, form, confirmed[0], longest)
                found.evidence[0] += confirmed[1]
                return found
        return None

    def _confirm(self, ctx: Context, form: str, sizes: list[int | None],
                 seen: dict) -> tuple[list[int | None], str] | None:  # fmt: skip
        """The ``sizes`` that give every value on the crafted cases which name this selection,
        with what more was seen (said after the evidence), or ``None``: by default all of them."""
        return sizes, ""

    def _found(self, ctx: Context, form: str, sizes: list[int | None], longest: int) -> Found:
        params = {"form": form} if form else {}
        how = f" ({form})" if form else f" ({self.what})"
        if sizes[0] is None:
            evidence = [f"every value of every run is that of {self.name}{how}, on the crafted "
                        f"cases and on the {ctx.inflation.source}"]  # fmt: skip
            return Found(self.name, params, evidence)
        shown = _sizes([int(x) for x in sizes if x is not None], longest)
        evidence = [
            f"every value of every run is that of {self.name} with K {shown}{how}, on "
            f"the crafted cases and on the {ctx.inflation.source}"
        ]
        if len(sizes) > 1:
            evidence.append(f"the cases cannot tell K {shown} apart ({self.cannot_tell})")
        return Found(self.name, {"K": shown, **params}, evidence)


class _Heap(_Selection):
    """A bounded heap of ``K`` (one form)."""

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str = "") -> list[int]:  # fmt: skip
        raise NotImplementedError


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

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str = "") -> list[int]:  # fmt: skip
        assert size is not None
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
    seen_in = ("BEIR's exact search, MTEB's search wrappers, sentence-transformers' "
               "`InformationRetrievalEvaluator` up to 5.x (from 6.0 it sorts by (-score, "
               "corpus_id): `item_id`)")  # fmt: skip
    why = ("inside the top K the order is the heap's layout after the pushes in stored order, "
           "and which candidates stay depends on K")  # fmt: skip
    cannot_tell = "heap sizes that keep the same candidates on every row"

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str = "") -> list[int]:  # fmt: skip
        assert size is not None
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

# ---------------------------------------------------------------------- more selections
class ScoreOnlyHeap(_Heap):
    name = "score_only_heap"
    what = ("a min-heap of stored positions keyed by the score alone, holding K, scanned in "
            "stored order, a candidate entering a full heap only above its smallest score; "
            "emitted by a heapsort of that heap")  # fmt: skip
    seen_in = ("LensKit 2026's `ItemList.top_n` (`argtopn`, `src/accel/indirect/heap.rs`: "
               "`IndirectMinHeap`)")  # fmt: skip
    why = ("which tied candidates stay depends on K (the first stored at the boundary), and "
           "their order on the heap's layout")  # fmt: skip
    cannot_tell = "heap sizes that keep the same candidates on every row"

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str = "") -> list[int]:  # fmt: skip
        assert size is not None
        v = score.tolist()
        keys: list[int] = []

        def down(pos: int, lim: int) -> None:
            while True:
                low, mv = pos, v[keys[pos]]
                left, right = 2 * pos + 1, 2 * pos + 2
                if left < lim and v[keys[left]] < mv:
                    low, mv = left, v[keys[left]]
                if right < lim and v[keys[right]] < mv:
                    low = right
                if low == pos:
                    return
                keys[pos], keys[low] = keys[low], keys[pos]
                pos = low

        for p, x in enumerate(v):
            if len(keys) < size:
                keys.append(p)
                j = len(keys) - 1
                while j > 0 and v[keys[(j - 1) // 2]] > v[keys[j]]:  # up-heap
                    keys[j], keys[(j - 1) // 2] = keys[(j - 1) // 2], keys[j]
                    j = (j - 1) // 2
            elif x > v[keys[0]]:
                keys[0] = p
                down(0, size)
        for n in range(len(keys) - 1, 0, -1):  # heapsort: the smallest to the end
            keys[0], keys[n] = keys[n], keys[0]
            down(0, n)
        return keys


#: The two-stage selections :class:`TwoStage` knows, each numpy's own calls as a library makes
#: them (so the same numpy gives the same partition here and there).
_TWO_STAGE = {
    "np.argpartition(-s, K)[:K], then np.argsort(-s[top])": True,
    "np.argpartition(s, -K)[-K:], then np.argsort(s[top])[::-1]": True,
    "np.argpartition(s, range(-K, 0))[-K:][::-1]": True,
}


def _two_stage(score: np.ndarray, size: int, form: str) -> list[int]:
    n = len(score)
    if form.startswith("np.argpartition(-s, K)"):  # LensKit 2025 argtopn
        if size >= n:
            return np.argsort(-score).tolist()
        parts = np.argpartition(-score, size)[:size]
        return parts[np.argsort(-score[parts])].tolist()
    k = min(size, n)
    if form.startswith("np.argpartition(s, -K)"):  # Cornac Recommender.rank
        parts = np.argpartition(score, -k)
        top = parts[-k:]
        parts[-k:] = top[np.argsort(score[top])]
        return parts[::-1].tolist()
    top = np.argpartition(score, list(range(-k, 0)))[-k:]  # RecPack get_top_K_ranks
    return top[::-1].tolist()


class TwoStage(_Selection):
    name = "two_stage"
    what = ("the top K picked by numpy's partition (introselect; at one place, then a sort of "
            "those K, or at each of the K places): which tied candidates cross the boundary, "
            "and their order, follow the partition, not a whole sort")  # fmt: skip
    seen_in = ("LensKit 2025's `argtopn` (`lenskit/stats.py`), Cornac's `Recommender.rank`, "
               "RecPack's `get_top_K_ranks` (`recpack/util.py`)")  # fmt: skip
    why = ("the order depends on K and on the partition's pivots, which depend on the stored "
           "layout and the numpy build (SIMD kernels)")  # fmt: skip
    cannot_tell = ("sizes that keep the same candidates on every row; a partition whose ties "
                   "come out as a whole sort's (numpy's one-place partition and its sort agree "
                   "on AVX-512 builds): then it is `unstable`, as that sort is")  # fmt: skip
    forms = _TWO_STAGE

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str) -> list[int]:  # fmt: skip
        assert size is not None
        return _two_stage(score, size, form)

    def _confirm(self, ctx: Context, form: str, sizes: list[int | None],
                 seen: dict) -> tuple[list[int | None], str] | None:  # fmt: skip
        # On short rows numpy's partition and then sort often order ties as its whole default
        # sort does (an unstable sort, which the probe names as such): long rows of a large tie
        # group across the cutoff tell them apart. Named where some size gives every value there
        # and the whole sort does not.
        table = _wide_table(ctx.measure.k)
        if "wide" not in seen:
            seen["wide"] = (list(_rows(table)), ctx.call(table, ctx.measure.k, table.source,
                                                         f".{ctx.measure}.wide"))  # fmt: skip
        rows, got = seen["wide"]
        whole = max(len(r[1]) for r in rows)
        keep = [s for s in sizes if self._matches(ctx, rows, [got], s, form, seen)]
        if not keep or self._matches(ctx, rows, [got], whole, form, seen):
            return None
        return keep, (f", and on the {table.source}, where a whole sort gives other values")


_WIDE_ROWS = 40
_WIDE_T = 120


def _wide_table(k: int) -> CandidateTable:
    """Rows of ``k // 2`` higher candidates, a tie group of :data:`_WIDE_T` across the cutoff,
    about half of it relevant (which members: seeded, so the measure sees which of them a
    selection keeps, and in which order) and 60 lower candidates, stored in a seeded order."""
    from ..common.seeds import make_rng

    rng = make_rng(0, "probe-wide")
    lines = []
    for r in range(_WIDE_ROWS):
        high = k // 2
        scores = [2.0 + j for j in range(high)] + [1.0] * _WIDE_T
        scores += [0.5 - j / 128 for j in range(60)]
        labels = np.zeros(len(scores), dtype=int)
        labels[high : high + _WIDE_T] = rng.random(_WIDE_T) < 0.5
        labels[high + r % _WIDE_T] = 1
        order = rng.permutation(len(scores))
        lines += [(f"v{r:03d}", f"uv{r:03d}", f"{p:04d}", int(labels[p]), scores[p])
                  for p in order.tolist()]  # fmt: skip
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    return CandidateTable.from_frame(frame, source="long rows of a large tie group at the cutoff")


#: The orders :class:`ScoresIgnored` knows: a row ranked without reading its scores.
_IGNORING = {"stored order": False, "stored order reversed": False, "item id": False,
             "item id descending": False}  # fmt: skip


class ScoresIgnored(_Selection):
    name = "scores_ignored"
    what = "a row ranked without its scores: in stored order, its reverse, or by item id"
    seen_in = ("trectools' `TrecEval.get_ndcg` on a run it did not sort itself "
               "(`TrecRun.load_run_from_dataframe`)")  # fmt: skip
    why = "the scores play no part: every candidate is as good as its place or id"
    cannot_tell = "nothing: each order is told by the crafted rows"
    forms = _IGNORING
    reads_scores = False

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str) -> list[int]:  # fmt: skip
        n = len(score)
        if form == "stored order":
            return list(range(n))
        if form == "stored order reversed":
            return list(range(n - 1, -1, -1))
        order = sorted(range(n), key=lambda p: ids[p])
        return order if form == "item id" else order[::-1]


#: The orders of the candidates scoring other than 0 that :class:`ZeroUnranked` knows.
_AFTER_ZEROS = {"then a stable sort by score": False,
                "then np.argpartition(s, range(-K, 0))[-K:][::-1]": True}  # fmt: skip


class ZeroUnranked(_Selection):
    name = "zero_unranked"
    what = ("a candidate scoring exactly 0 (or -0.0) is never ranked (a sparse matrix drops "
            "it); the others are ranked")  # fmt: skip
    seen_in = "RecPack's metrics (`recpack/metrics/base.py`, a `csr_matrix` of the scores)"
    why = "a relevant item scoring 0 counts as missed whatever the other scores"
    cannot_tell = "the order of the others, beyond the forms named"
    forms = _AFTER_ZEROS

    def emitted(self, score: np.ndarray, ids: np.ndarray, size: int | None,
                form: str) -> list[int]:  # fmt: skip
        kept = np.flatnonzero(score != 0.0)
        if form.startswith("then a stable"):
            return kept[np.argsort(-score[kept], kind="stable")].tolist()
        assert size is not None
        if not len(kept):
            return []
        return kept[_two_stage(score[kept], size, "np.argpartition(s, range(-K, 0))")].tolist()

    def identify(self, ctx: Context) -> Found | None:
        found = super().identify(ctx)
        if found is None:
            return None
        # the crafted rows hold no relevant item scoring just off 0: rows that tell exactly 0
        # from "not above 0" or "below a threshold"
        table = _near_zero_table()
        got = ctx.call(table, ctx.measure.k, table.source, f".{ctx.measure}.zero")
        size = int(re.findall(r"\d+", found.parameters.get("K", "= 1"))[0])  # the smallest
        form = found.parameters["form"]
        want = [self._value(ctx.measure, row, size, form) for row in _rows(table)]
        if not ctx.close(got, np.array(want)).all():
            return None
        found.evidence[0] += (f", and on the {table.source} (relevant items scoring -1, "
                              "1e-12 and the smallest subnormal beside others at 0)")  # fmt: skip
        return found


def _near_zero_table() -> CandidateTable:
    """Rows whose relevant item scores just off 0, beside others scoring 0 or -0.0."""
    tiny = float(np.nextafter(0.0, 1.0))
    rows = [(-1.0, [0.0, -0.0, 0.0, -2.0]), (1e-12, [0.0, 0.0, -0.0]), (tiny, [0.0, -1.0, 0.0]),
            (-tiny, [0.0, -0.0, -1.0]), (-1e-12, [-0.0, -2.0, 0.0, 0.0])]  # fmt: skip
    lines = []
    for r, (mine, others) in enumerate(rows, start=1):
        lines.append((f"z{r}", f"uz{r}", "900", 1, mine))
        lines += [(f"z{r}", f"uz{r}", str(1000 + j), 0, x) for j, x in enumerate(others)]
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    return CandidateTable.from_frame(frame, source="rows of relevant items scoring just off 0")


# ---------------------------------------------------------------------- cutoffs
def _grown(score: np.ndarray, k: int) -> int:
    """The cutoff grown to hold every candidate scoring at least the ``k``-th highest score
    (``k`` when the row holds at most ``k``)."""
    if len(score) <= k:
        return k
    return int((score >= np.sort(score)[::-1][k - 1]).sum())


class GrowingCutoff(Behaviour):
    name = "growing_cutoff"
    what = ("the cutoff grows to hold the whole tie group at the k-th place: the measure at k', "
            "the number of candidates scoring at least the k-th highest score, of a stable "
            "sort (ties in stored order); a row whose candidates all tie as found (NaN, or "
            "measured at its length)")  # fmt: skip
    seen_in = ("a filter on a min rank (pandas `rank(method=\"min\") <= k`, SQL `RANK() <= k`) "
               "keeps every candidate tied at the k-th place; recometrics "
               "(`src/recometrics.hpp`) gives NaN for a row whose candidates all tie")  # fmt: skip
    why = ("each row is measured at its own cutoff, as deep as the tie group at the k-th place "
           "reaches: rows are not measured alike")  # fmt: skip
    cannot_tell = "the order inside the grown list beyond stored order"

    def _value(self, measure: Measure, row: tuple) -> float:
        labels, score, _ = row
        order = np.argsort(-score, kind="stable")
        return _list_value(Measure(measure.name, _grown(score, measure.k)), labels, order)

    def identify(self, ctx: Context) -> Found | None:
        if not ctx.deterministic:
            return None
        tables = [(t, ctx.runs[n]) for n, t in ctx.tables.items()]
        tables.append((ctx.inflation, [ctx.inflation_values]))
        for table, runs in tables:
            want = np.array([self._value(ctx.measure, row) for row in _rows(table)])
            if not all(ctx.close(v, want).all() for v in runs):
                return None
        table = _all_tied_table(ctx.measure.k)
        got = ctx.call(table, ctx.measure.k, table.source, f".{ctx.measure}.tied", nan=True)
        whole = np.array([self._value(ctx.measure, row) for row in _rows(table)])
        if np.isnan(got).all():
            tied = "NaN"
        elif ctx.close(got, whole).all():
            tied = "measured at its length"
        else:
            return None
        return Found(self.name, {"every candidate tied": tied}, [
            f"every value of every run is that of {self.name} (the measure at the cutoff grown "
            "to the end of the tie group at the k-th place, ties in stored order), on the "
            f"crafted cases and on the {ctx.inflation.source}; on the {table.source} it gives "
            f"{tied}",
            f"the probe cannot tell {self.cannot_tell}",
        ])  # fmt: skip


def _all_tied_table(k: int) -> CandidateTable:
    """Rows whose candidates all tie (2, ``k`` and ``k + 3`` of them), the relevant item first,
    in the middle or last."""
    lines = []
    shapes = [(max(n, 2), w) for n in (2, k, k + 3) for w in (0, n // 2, n - 1)]
    for r, (size, where) in enumerate(shapes):
        lines += [(f"a{r:02d}", f"ua{r:02d}", f"{j:03d}", int(j == where), 0.5)
                  for j in range(size)]  # fmt: skip
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    return CandidateTable.from_frame(frame, source="rows whose candidates all tie")


# ---------------------------------------------------------------------- randomness
#: Calls of the evaluator on the crafted cases by :class:`ShuffledPerCall` (besides the two
#: runs the probe made), and how many standard errors its mean may be from the expectation.
SHUFFLE_CALLS = 30
SHUFFLE_Z = 4.5


class ShuffledPerCall(Behaviour):
    name = "shuffled_per_call"
    what = ("the ties in a fresh uniformly random order on every call (random keys drawn per "
            "call, then a sort): its mean converges to `expected`")  # fmt: skip
    seen_in = ("TF-Ranking's metrics (`utils.sort_by_scores(..., shuffle_ties=True)`), "
               "keras-rs' ranking metrics (`sort_by_scores`, `shuffle_ties=True`)")  # fmt: skip
    why = ("each call draws another order, which no seed given reproduces: unbiased on "
           "average, but one call's number is one draw")  # fmt: skip
    cannot_tell = ("a bias below the standard error of the calls made; the shuffle's "
                   "distribution beyond its mean")  # fmt: skip

    def identify(self, ctx: Context) -> Found | None:
        if ctx.deterministic or ctx.possible is None:
            return None
        for n, runs in ctx.runs.items():  # every value one that some order gives
            for v in runs:
                if not all(ctx.close(ctx.possible[n][i], x).any() for i, x in enumerate(v)):
                    return None
        table = ctx.tables["stored"]
        want = ctx.predicted["stored"]["expected"]
        calls = list(ctx.runs["stored"])
        calls += [ctx.call(table, ctx.measure.k, f"{table.source} (called again)",
                           f".{ctx.measure}.s{j:02d}") for j in range(SHUFFLE_CALLS)]  # fmt: skip
        d = np.array([float(np.mean(v - want)) for v in calls])  # one mean per call
        bias, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))
        shown = f"{bias:+.2g} ± {se:.2g}"
        if _z(bias, se) > SHUFFLE_Z:
            return None
        # a large tie group straddling the cutoff, the relevant item stored first or last:
        # an unbiased shuffle ranks it first of the group 1 / t of the time either way
        wide = _straddle_table(ctx.measure.k)
        first = np.zeros(2)
        for j in range(SHUFFLE_CALLS):
            v = ctx.call(wide, ctx.measure.k, wide.source, f".{ctx.measure}.w{j:02d}")
            first += [(v[0::2] > 1e-12).sum(), (v[1::2] > 1e-12).sum()]
        trials = SHUFFLE_CALLS * _STRADDLE_ROWS / 2
        p = 1.0 / _STRADDLE_T
        rates = first / trials
        z = [_z(r - p, np.sqrt(p * (1 - p) / trials)) for r in rates]
        if max(z) > SHUFFLE_Z:
            return None
        return Found(self.name, {"calls": str(len(d)), "mean - expected": shown}, [
            f"two runs on the same table disagree, every value is one that some order of the "
            f"tie group gives, and over {len(d)} calls on the crafted cases the mean minus "
            f"expected is {shown} (within {SHUFFLE_Z:g} standard errors of 0); in a group of "
            f"{_STRADDLE_T} straddling the cutoff the relevant item comes first "
            f"{100 * rates[0]:.1f}% of the time stored first, {100 * rates[1]:.1f}% stored "
            f"last ({100 * p:.1f}% for a uniform order): a fresh, unbiased shuffle of the ties "
            "on every call",
            f"the probe cannot tell {self.cannot_tell}",
        ])  # fmt: skip


def _z(diff: float, se: float) -> float:
    """``|diff|`` in standard errors ``se`` (0 when both are 0)."""
    if se > 0:
        return abs(diff) / se
    return 0.0 if diff == 0 else float("inf")


_STRADDLE_T = 40
_STRADDLE_ROWS = 60


def _straddle_table(k: int) -> CandidateTable:
    """Rows of a tie group of :data:`_STRADDLE_T` below ``k - 1`` higher candidates (its first
    member at the cutoff), the relevant item stored first in even rows and last in odd ones."""
    lines = []
    for r in range(_STRADDLE_ROWS):
        row, user = f"w{r:03d}", f"uw{r:03d}"
        lines += [(row, user, f"7{j}", 0, 2.0 + j) for j in range(max(k - 1, 0))]
        where = 0 if r % 2 == 0 else _STRADDLE_T - 1
        lines += [(row, user, str(1000 + j), int(j == where), 1.0) for j in range(_STRADDLE_T)]
        lines += [(row, user, f"5{j}", 0, 0.5 - 0.25 * j) for j in range(2)]
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    return CandidateTable.from_frame(frame, source="rows of a large tie group at the cutoff")


#: Tie-group sizes of the rows :class:`PositionKeyed` feeds, each straddling the cutoff.
_KEYED_SIZES = (2, 3, 5)
_KEYED_ROWS = 30


def _keyed_rows(k: int) -> list[tuple[int, int, list[float], list[int]]]:
    """Rows of a tie group of ``t`` at 1.0 straddling the cutoff (``k - 1`` higher candidates,
    two lower): per row ``(row, t, scores, group positions)``, lines interleaved at seeded
    places."""
    from ..common.seeds import make_rng

    rng = make_rng(0, "probe-keyed")
    out = []
    for r in range(_KEYED_ROWS):
        t = _KEYED_SIZES[r % len(_KEYED_SIZES)]
        rest = [2.0 + j for j in range(max(k - 1, 0))] + [0.5, 0.25]
        n = t + len(rest)
        group = np.sort(rng.choice(n, size=t, replace=False)).tolist()
        others = iter(rng.permutation(rest).tolist())
        scores = [1.0 if p in group else next(others) for p in range(n)]
        out.append((r, t, scores, group))
    return out


def _keyed_table(rows: list, relevant: int, *, ids: str = "plain", shuffle_others: bool = False,
                 extra_lower: int = 0, lead: bool = False) -> CandidateTable:  # fmt: skip
    """The rows of :func:`_keyed_rows`, the relevant item the ``relevant``-th member (modulo
    ``t``) of each group; ``ids``: ``"plain"`` or ``"renamed"`` (other ids, in another
    order); ``shuffle_others``: the other candidates' scores permuted among their places;
    ``extra_lower``: that many lower candidates appended to each row; ``lead``: a row first."""
    from ..common.seeds import make_rng

    rng = make_rng(0, "probe-keyed-others")
    lines = []
    if lead:
        lines += [("k000", "uk000", f"9{j}", int(j == 0), 1.0) for j in range(3)]
    for r, t, scores, group in rows:
        sc = list(scores)
        if shuffle_others:
            places = [p for p in range(len(sc)) if p not in group]
            vals = rng.permutation([sc[p] for p in places]).tolist()
            for p, x in zip(places, vals, strict=True):
                sc[p] = x
        sc += [0.125 / (j + 1) for j in range(extra_lower)]
        mine = group[relevant % t]
        for p, x in enumerate(sc):
            item = f"{p:04d}" if ids == "plain" else f"z{len(sc) - p:04d}"
            lines.append((f"k{r + 1:03d}", f"uk{r + 1:03d}", item, int(p == mine), x))
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    return CandidateTable.from_frame(frame, source="rows of one tie group straddling the cutoff")


class PositionKeyed(Behaviour):
    name = "position_keyed"
    what = ("ties ordered by a fixed key of each line's position (noise from a generator "
            "seeded on every call, per row or per table), not by ids or scores")  # fmt: skip
    seen_in = ("recometrics' `calc_reco_metrics` (`break_ties_with_noise`: U(-1e-12, 1e-12) "
               "from `std::mt19937(seed + user)`, `src/recometrics.hpp`)")  # fmt: skip
    why = ("the order is a function of where the lines are stored (and of the row's place in "
           "the call), which a reordered table changes")  # fmt: skip
    cannot_tell = "the key itself (which generator and seed), beyond the position it follows"

    def identify(self, ctx: Context) -> Found | None:
        if not ctx.deterministic:
            return None
        k = ctx.measure.k
        if k > 64:  # the rows straddle the cutoff: k - 1 higher candidates each
            return None
        rows = _keyed_rows(k)
        top = max(_KEYED_SIZES)

        def inside(table: CandidateTable, tag: str) -> np.ndarray:
            v = ctx.call(table, k, table.source, f".{ctx.measure}.{tag}")
            return v > 1e-12  # the relevant item inside the cutoff: first of its group

        hits = np.array([inside(_keyed_table(rows, j), f"p{j}") for j in range(top)])
        t = np.array([r[1] for r in rows])
        counts = np.array([hits[: t[i], i].sum() for i in range(len(rows))])
        if not (counts == 1).all():  # exactly one member of each group is ranked first
            return None
        winner = np.array([int(np.flatnonzero(hits[: t[i], i])[0]) for i in range(len(rows))])
        if (winner == 0).all() or (winner == t - 1).all():  # stored order, or its reverse
            return None
        base = hits[0]
        checks = {"item ids renamed": _keyed_table(rows, 0, ids="renamed"),
                  "the other candidates' scores moved among their places":
                      _keyed_table(rows, 0, shuffle_others=True),
                  "lower candidates appended to each row": _keyed_table(rows, 0, extra_lower=3)}  # fmt: skip
        for j, table in enumerate(checks.values()):
            if not (inside(table, f"q{j}") == base).all():
                return None
        led = inside(_keyed_table(rows, 0, lead=True), "lead")[1:]
        keyed = ("the position in the row alone" if (led == base).all()
                 else "the row's place in the call and the position in it")  # fmt: skip
        first = int((winner == 0).sum())
        return Found(self.name, {"keyed by": keyed, "seeded": "per call"}, [
            f"deterministic; in {len(rows)} rows of one tie group straddling the cutoff, with "
            "the relevant item moved through the group, exactly one member of each group is "
            f"ranked first, the first stored in {first} rows: ties follow a fixed key of the "
            "lines' positions, unchanged when the ids are renamed, the other candidates' "
            f"scores moved or lower candidates appended, and keyed by {keyed}",
            f"the probe cannot tell {self.cannot_tell}",
        ])  # fmt: skip


for _b in (HeapFirstK(), ScoreIdHeap(), ScoreOnlyHeap(), TwoStage(), ZeroUnranked(),
           ScoresIgnored(), GrowingCutoff(), EpsilonNoise(), ShuffledPerCall(),
           PositionKeyed()):  # fmt: skip
    register(_b)

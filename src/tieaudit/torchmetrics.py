"""Tie-aware drop-ins for torchmetrics' retrieval metrics, whose state is a few sums.

Swap the import and keep the code::

    # from torchmetrics.retrieval import RetrievalNormalizedDCG
    from tieaudit.torchmetrics import RetrievalNormalizedDCG

    ndcg = RetrievalNormalizedDCG(top_k=10)              # ties="expected"
    ndcg.update(preds, target, indexes=indexes)          # or 2-D preds and target, no indexes
    ndcg.compute(), ndcg.std()                           # the mean and its exact sd under ties

:class:`RetrievalNormalizedDCG`, :class:`RetrievalHitRate`, :class:`RetrievalMRR`,
:class:`RetrievalPrecision` and :class:`RetrievalRecall` take torchmetrics' arguments
(``top_k``, ``empty_target_action``, ``ignore_index``, ``aggregation``, ``adaptive_k`` for
precision, and the keyword arguments of every ``torchmetrics.Metric``) and one more, ``ties``:
any rule of the registry (:mod:`tieaudit.ties.rules`; default ``"expected"``, the exact
expectation under a uniform random order within tie groups).

What an update holds
    ``update(preds, target, indexes)`` as torchmetrics takes it: tensors of one shape, flattened,
    ``indexes`` naming each prediction's query. A query's candidates come in one update (a query
    index seen in an earlier update is refused, naming it: torchmetrics regroups a query across
    updates, which needs every prediction kept until ``compute``; here each update is evaluated
    when it comes; the indexes seen are kept as runs of consecutive indexes, a few numbers when
    batches hold consecutive indexes, up to 16 bytes a query when they are scattered). Without ``indexes``, ``preds`` and ``target`` are 2-D, one query a row.
    Each update is a candidates table evaluated by :func:`tieaudit.evaluate`: the query's index
    is the row, a candidate's position within its query (0, 1, ..., in the order given) its item
    id, ``target`` the label and ``preds`` the score; rules that read the stored order
    (``input_order``) or the item ids (``item_id``, ``hash:SEED``) read those positions, and
    ``random:SEED`` shuffles the lines of one update (each update is its own table). Predictions
    are compared as float64 after the cast from their own type, so the ties are those of the
    tensor given: float16 and bfloat16 predictions tie wherever the half-precision values are
    equal, even when the float32 values they were cast from differ (cast before the update to
    keep a finer order). Targets equal to ``ignore_index`` are dropped first.

What the state holds
    Sums over queries, float64, reduced across processes by summing (``dist_reduce_fx="sum"``):
    the number of queries, the sum of their values, the sum of their exact variances under
    ``expected``, and the lowest and highest value (reduced by ``min`` and ``max``). Its size
    does not grow with the updates, and the value does not depend on how queries are split
    across updates or processes (up to the last bits of a float64 sum). ``aggregation`` is
    ``"mean"``, ``"min"`` or ``"max"``; a median or a callable needs every query's value and is
    refused.

Queries without a relevant candidate (no target above 0) count as torchmetrics counts them
(``empty_target_action``: ``"neg"`` 0, ``"pos"`` 1, ``"skip"`` left out, ``"error"`` refused).
Targets are relevance labels >= 0 in bool, integer or float tensors, as
:func:`tieaudit.evaluate` reads a table's labels: a candidate is relevant when its target is
above 0 (``HR``, ``MRR``, ``P`` and ``Recall`` read only that), and nDCG's gain is the target
itself (linear, as torchmetrics' ``RetrievalNormalizedDCG``, trec_eval and scikit-learn take
it), its ideal DCG made of the query's own targets; every rule stays exact with grades, the
variance of ``expected`` too. A negative, NaN or infinite target is refused, naming the first
(its position in the update's flattened tensors, counted from 1); other refusals of the
evaluator name the record the same way (the position after ``ignore_index``).

Where the values differ from torchmetrics' when nothing ties: torchmetrics' ``RetrievalMRR``,
``RetrievalPrecision`` and ``RetrievalRecall`` count a relevant candidate only when its
prediction is above 0; here a relevant candidate counts whatever its score. Every value is
computed in float64 (torchmetrics' in float32).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from .evaluation.evaluate import EXACT_RULE, evaluate
from .tables.candidates import CandidateTable
from .tables.read import Records
from .ties.measures import MAX_CUTOFF, Measure
from .ties.rules import TieRule, parse_rule

try:
    import torch
    from torchmetrics import Metric
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "tieaudit.torchmetrics needs torch and torchmetrics: pip install 'tieaudit[torch]'"
    ) from exc

__all__ = [
    "RetrievalHitRate",
    "RetrievalMRR",
    "RetrievalNormalizedDCG",
    "RetrievalPrecision",
    "RetrievalRecall",
    "TieAwareRetrievalMetric",
]

EMPTY_TARGET_ACTIONS = ("error", "skip", "neg", "pos")
#: What ``torchmetrics.Metric.forward`` changes around a batch and restores only when the batch
#: is accepted.
_FORWARD_FLAGS = ("_update_count", "_is_synced", "_should_unsync", "_to_sync", "_enable_grad",
                  "compute_on_cpu", "_forward_cache")  # fmt: skip
AGGREGATIONS = ("mean", "min", "max")


class _Seen:
    """The query indexes of the updates so far, as sorted disjoint runs of consecutive
    indexes ``start[i] .. end[i]``: a few numbers when queries come in ranges, as batches of a
    loader give them."""

    def __init__(self) -> None:
        self.start = np.empty(0, dtype=np.int64)
        self.end = np.empty(0, dtype=np.int64)

    def copy(self) -> _Seen:
        out = _Seen()
        out.start, out.end = self.start.copy(), self.end.copy()
        return out

    def first_seen(self, queries: np.ndarray) -> int | None:
        """The first of ``queries`` (sorted, distinct) seen before, or ``None``."""
        if not len(self.start) or not len(queries):
            return None
        at = np.searchsorted(self.start, queries, side="right") - 1
        hit = (at >= 0) & (queries <= self.end[np.maximum(at, 0)])
        return int(queries[np.argmax(hit)]) if hit.any() else None

    def add(self, queries: np.ndarray) -> None:
        """Record ``queries`` (sorted, distinct, none seen before)."""
        if not len(queries):
            return
        cut = np.flatnonzero(np.diff(queries) != 1) + 1
        start = np.concatenate([self.start, queries[np.r_[0, cut]]])
        end = np.concatenate([self.end, queries[np.r_[cut - 1, len(queries) - 1]]])
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
        new = np.r_[True, start[1:] - 1 > end[:-1]]  # a gap before it: a new run
        self.start, self.end = start[new], np.maximum.reduceat(end, np.flatnonzero(new))


class _Kept(Records):
    """Positions in the update's flattened tensors (counted from 1) of the lines kept after
    ``ignore_index``: the evaluator's errors name them as records."""

    def __init__(self, kept: np.ndarray) -> None:
        super().__init__(0)
        self.kept = kept

    def __call__(self, positions: np.ndarray) -> list[int]:
        return [int(self.kept[p]) + 1 for p in positions]


def _numpy(tensor: torch.Tensor, dtype: torch.dtype) -> np.ndarray:
    """A flat float64 or int64 numpy copy of ``tensor``, cast from its own dtype (exact for
    float16 and bfloat16 predictions, whose values float64 holds)."""
    return tensor.detach().to(device="cpu", dtype=dtype).reshape(-1).numpy()


class TieAwareRetrievalMetric(Metric):
    """The common part of the drop-ins (see the module docstring): one measure of
    :mod:`tieaudit.ties.measures` under one tie rule, kept as sums over queries.

    Subclasses name the measure (:attr:`measure_name`) and may change the cutoff of a row
    (:meth:`_row_values`).
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    #: The measure's name in :mod:`tieaudit.ties.measures`.
    measure_name: str = ""

    n_queries: torch.Tensor
    total: torch.Tensor
    var_total: torch.Tensor
    low: torch.Tensor
    high: torch.Tensor

    def __init__(
        self,
        empty_target_action: str = "neg",
        ignore_index: int | None = None,
        top_k: int | None = None,
        aggregation: str | Callable = "mean",
        *,
        ties: str | TieRule = "expected",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if empty_target_action not in EMPTY_TARGET_ACTIONS:
            raise ValueError(f"Argument `empty_target_action` received a wrong value "
                             f"`{empty_target_action}`; one of {', '.join(EMPTY_TARGET_ACTIONS)}")  # fmt: skip
        if ignore_index is not None and (isinstance(ignore_index, bool)
                                         or not isinstance(ignore_index, int)):  # fmt: skip
            raise ValueError("Argument `ignore_index` must be an integer or None.")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)
                                  or top_k <= 0):  # fmt: skip
            raise ValueError("`top_k` has to be a positive integer or None")
        if top_k is not None and top_k > MAX_CUTOFF:
            raise ValueError(f"`top_k` {top_k} is above 2**53 = {MAX_CUTOFF}; to count every "
                             "candidate, pass top_k=None")  # fmt: skip
        if aggregation not in AGGREGATIONS:
            raise ValueError(
                f"Argument `aggregation` must be one of {', '.join(AGGREGATIONS)}, got "
                f"{aggregation!r}: tieaudit keeps sums over queries, not every query's value "
                "(a median or a function of all values would need them all)"
            )
        self.empty_target_action = empty_target_action
        self.ignore_index = ignore_index
        self.top_k = top_k
        self.aggregation = aggregation
        self.ties = parse_rule(ties)
        for name, default, reduce in (("n_queries", 0.0, "sum"), ("total", 0.0, "sum"),
                                      ("var_total", 0.0, "sum"), ("low", math.inf, "min"),
                                      ("high", -math.inf, "max")):  # fmt: skip
            self.add_state(name, torch.tensor(default, dtype=torch.float64),
                           dist_reduce_fx=reduce)  # fmt: skip
        self._seen = _Seen()
        self._seen_before_forward: _Seen | None = None

    # ------------------------------------------------------------------ torchmetrics' protocol
    def update(self, preds: torch.Tensor, target: torch.Tensor,
               indexes: torch.Tensor | None = None) -> None:  # fmt: skip
        """Add the queries of one batch (see the module docstring)."""
        score, label, query, flat = self._inputs(preds, target, indexes)
        if self.ignore_index is not None:
            kept = np.flatnonzero(label != self.ignore_index)
            score, label, query = score[kept], label[kept], query[kept]
        else:
            kept = np.arange(len(label))
        if not len(label):
            raise ValueError("`indexes`, `preds` and `target` must be non-empty and non-scalar "
                             "tensors (every target is ignore_index)")  # fmt: skip
        bad = np.flatnonzero(~(label >= 0) | ~np.isfinite(label))  # NaN too
        if len(bad):
            raise ValueError(f"{self._name()}: target {label[bad[0]].item()!r} at position "
                             f"{int(kept[bad[0]]) + 1} of the flattened tensors is not a "
                             "relevance label (a finite number >= 0: 0 not relevant, above 0 "
                             "relevant and nDCG's gain)")  # fmt: skip
        ids, code = np.unique(query, return_inverse=True)
        if flat:
            again = self._seen.first_seen(ids)
            if again is not None:
                raise ValueError(
                    f"{self._name()}: query index {again} was in an earlier update; a query's "
                    "candidates must all come in one update (tieaudit keeps sums over "
                    "queries, not the predictions, so it cannot add candidates to a query "
                    "evaluated already)"
                )
        relevant = np.bincount(code, weights=label > 0, minlength=len(ids)) > 0
        empty = ids[~relevant]
        if len(empty) and self.empty_target_action == "error":
            raise ValueError(f"{self._name()}: query {'index ' if flat else 'row '}"
                             f"{int(empty[0])} has no positive target "
                             "(empty_target_action='error')")  # fmt: skip
        values = variances = np.empty(0)
        if relevant.any():
            keep = relevant[code]
            values, variances = self._row_values(score[keep], label[keep], query[keep],
                                                 code[keep], kept[keep])  # fmt: skip
        if self.empty_target_action in ("neg", "pos"):
            fill = 1.0 if self.empty_target_action == "pos" else 0.0
            values = np.concatenate([values, np.full(len(empty), fill)])
        if flat:
            self._seen.add(ids)
        self._add(values, variances)

    def compute(self) -> torch.Tensor:
        """The mean over queries (or the lowest or highest value: ``aggregation``); 0.0 when
        no query was counted, as torchmetrics gives."""
        if self.aggregation == "min":
            value = self.low
        elif self.aggregation == "max":
            value = self.high
        else:
            value = self.total / self.n_queries
        return torch.where(self.n_queries > 0, value, torch.zeros_like(value))

    def std(self) -> torch.Tensor:
        """The exact standard deviation of the mean over queries under uniform random tie
        breaking within each query (``ties="expected"``, ``aggregation="mean"``): ``sqrt(sum_q
        Var_q) / n``, queries breaking their ties independently (the ``sd`` column of
        :meth:`tieaudit.Evaluation.summary`). Synchronised across processes as ``compute`` is."""
        if self.ties != EXACT_RULE or self.aggregation != "mean":
            raise ValueError(f"{self._name()}: std() is the exact standard deviation under "
                             f"ties='expected' with aggregation='mean', not ties='{self.ties}' "
                             f"with aggregation='{self.aggregation}'")  # fmt: skip
        with self.sync_context(dist_sync_fn=self.dist_sync_fn, should_sync=self._to_sync,
                               should_unsync=self._should_unsync):  # fmt: skip
            sd = torch.sqrt(self.var_total) / self.n_queries
            return torch.where(self.n_queries > 0, sd, torch.zeros_like(sd)).clone()

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The batch's value, its queries added to the state (torchmetrics' ``forward``, which
        resets the state around the batch: the queries seen before are kept). A batch that is
        refused leaves the state as it was (torchmetrics' own ``forward`` would lose it)."""
        self._seen_before_forward = self._seen.copy()
        saved = self._copy_state_dict()
        flags = {name: getattr(self, name) for name in _FORWARD_FLAGS}
        try:
            return super().forward(*args, **kwargs)
        except BaseException:
            for name, value in {**saved, **flags}.items():
                setattr(self, name, value)
            self._seen, self._computed = self._seen_before_forward, None
            raise
        finally:
            self._seen_before_forward = None

    def reset(self) -> None:
        """Clear the sums and the query indexes seen (inside ``forward``, only the sums)."""
        super().reset()
        before = self._seen_before_forward
        self._seen = before.copy() if before is not None else _Seen()

    # ------------------------------------------------------------------ the evaluation
    def _name(self) -> str:
        return type(self).__name__

    def _measure(self, longest: int) -> Measure:
        """The measure at ``top_k`` (every candidate of the update's longest query without)."""
        return Measure(self.measure_name, self.top_k if self.top_k is not None else longest)

    def _table(self, score: np.ndarray, label: np.ndarray, query: np.ndarray,
               code: np.ndarray, kept: np.ndarray) -> CandidateTable:  # fmt: skip
        """The candidates table of the update's queries that hold a relevant candidate."""
        order = np.argsort(code, kind="stable")
        counts = np.bincount(code)
        starts = np.cumsum(counts) - counts
        position = np.empty(len(code), dtype=np.int64)
        position[order] = np.arange(len(code)) - starts[code[order]]
        table = pa.table({"row": query, "user_id": query, "item_id": position,
                          "label": label, "score": score})  # fmt: skip
        source = f"{self._name()} update {self._update_count} (flattened preds and target)"
        return CandidateTable.from_arrow(table, source=source, csv_lines=_Kept(kept))

    def _evaluate(self, table: CandidateTable, measure: Measure
                  ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Each row's value under the rule (and its variance under ``expected``, else 0)."""
        result = evaluate(table, [measure], [self.ties])[self.ties]
        values = result.values[measure]
        if result.variances is not None:
            return values, result.variances[measure]
        return values, np.zeros(len(values))

    def _row_values(self, score: np.ndarray, label: np.ndarray, query: np.ndarray,
                    code: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Each query's value and variance (queries holding a relevant candidate)."""
        table = self._table(score, label, query, code, kept)
        return self._evaluate(table, self._measure(int(np.bincount(table.row).max())))

    def _add(self, values: np.ndarray, variances: np.ndarray) -> None:
        if not len(values):
            return
        like = self.total
        add = {"n_queries": float(len(values)), "total": float(values.sum()),
               "var_total": float(variances.sum())}  # fmt: skip
        for name, x in add.items():
            setattr(self, name, getattr(self, name) + torch.tensor(x, dtype=like.dtype,
                                                                   device=like.device))  # fmt: skip
        self.low = torch.minimum(self.low, torch.tensor(float(values.min()), dtype=like.dtype,
                                                        device=like.device))  # fmt: skip
        self.high = torch.maximum(self.high, torch.tensor(float(values.max()),
                                                          dtype=like.dtype, device=like.device))  # fmt: skip

    def _inputs(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:  # fmt: skip
        """``score`` (float64), ``label`` (int64, or float64 for float targets), ``query``
        (int64) of every flattened prediction, and whether queries are named by ``indexes``."""
        for name, t in (("preds", preds), ("target", target), ("indexes", indexes)):
            if t is not None and not isinstance(t, torch.Tensor):
                raise ValueError(f"`{name}` must be a tensor, got {type(t).__name__}")
        if not preds.is_floating_point():
            raise ValueError("`preds` must be a tensor of floats")
        if target.is_complex():
            raise ValueError("`target` must be a tensor of booleans, integers or floats")
        if indexes is None:
            if preds.dim() != 2 or target.shape != preds.shape:
                raise ValueError(
                    "without `indexes`, `preds` and `target` must be 2-D of one shape (one query "
                    f"a row), got {tuple(preds.shape)} and {tuple(target.shape)}"
                )
            query = np.repeat(np.arange(preds.shape[0], dtype=np.int64), preds.shape[1])
        else:
            if indexes.shape != preds.shape or preds.shape != target.shape:
                raise ValueError("`indexes`, `preds` and `target` must be of the same shape")
            if indexes.is_floating_point() or indexes.is_complex() or indexes.dtype == torch.bool:
                raise ValueError("`indexes` must be a tensor of long integers")
            query = _numpy(indexes, torch.int64)
        score = _numpy(preds, torch.float64)
        label = _numpy(target, torch.float64 if target.is_floating_point() else torch.int64)
        return score, label, query, indexes is not None


class RetrievalNormalizedDCG(TieAwareRetrievalMetric):
    """nDCG at ``top_k`` (every candidate without), averaged over queries, under ``ties``
    (:mod:`tieaudit.ties.measures`: the target as the gain, the ``log2(rank + 1)`` discount, the
    ideal DCG of the query's own targets); torchmetrics' ``RetrievalNormalizedDCG`` averages
    ties too (McSherry & Najork 2008), which is ``ties="expected"``."""

    measure_name = "nDCG"


class RetrievalHitRate(TieAwareRetrievalMetric):
    """Hit rate at ``top_k``: 1 when a relevant candidate is in the top ``top_k``."""

    measure_name = "HR"


class RetrievalMRR(TieAwareRetrievalMetric):
    """Reciprocal rank of the first relevant candidate (0 beyond ``top_k``)."""

    measure_name = "MRR"


class RetrievalRecall(TieAwareRetrievalMetric):
    """Relevant candidates in the top ``top_k`` over the query's relevant candidates."""

    measure_name = "Recall"


class RetrievalPrecision(TieAwareRetrievalMetric):
    """Relevant candidates in the top ``top_k`` over ``top_k`` (a query shorter than ``top_k``
    padded with non-relevant ones); with ``adaptive_k`` the cutoff of a query shorter than
    ``top_k`` is its length, and without ``top_k`` every query's cutoff is its length. A
    query's whole length holds every relevant candidate, whatever the ties: there the value is
    its relevant candidates over its length."""

    measure_name = "P"

    def __init__(
        self,
        empty_target_action: str = "neg",
        ignore_index: int | None = None,
        top_k: int | None = None,
        adaptive_k: bool = False,
        aggregation: str | Callable = "mean",
        *,
        ties: str | TieRule = "expected",
        **kwargs: Any,
    ) -> None:
        super().__init__(empty_target_action, ignore_index, top_k, aggregation, ties=ties,
                         **kwargs)  # fmt: skip
        if not isinstance(adaptive_k, bool):
            raise ValueError("`adaptive_k` has to be a boolean")
        self.adaptive_k = adaptive_k

    def _row_values(self, score: np.ndarray, label: np.ndarray, query: np.ndarray,
                    code: np.ndarray, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        table = self._table(score, label, query, code, kept)
        length = np.bincount(table.row, minlength=table.n_rows)
        whole = (np.ones(table.n_rows, dtype=bool) if self.top_k is None
                 else (length <= self.top_k) if self.adaptive_k
                 else np.zeros(table.n_rows, dtype=bool))  # fmt: skip
        values = table.n_positive / np.maximum(length, 1)
        variances = np.zeros(table.n_rows)
        if not whole.all():
            at_k, var_k = self._evaluate(table, Measure("P", int(self.top_k)))
            values = np.where(whole, values, at_k)
            variances = np.where(whole, variances, var_k)
        return values, variances

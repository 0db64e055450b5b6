"""What the adapters share: a table split into rows, and a measure from the relevant ranks."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from ...ties.measures import Measure

__all__ = [
    "Row", "rows", "row_codes", "at_ranks", "per_row", "trec_dicts", "padded", "lists",
    "per_list", "one_target", "TOPK_CAVEAT", "TREC_EVAL_CAVEAT", "TREC_EVAL_DECIDES",
]  # fmt: skip

#: torch.topk's paths, which the probe's short rows on the CPU do not all take.
TOPK_CAVEAT = (
    "torch.topk on the CPU (aten/src/ATen/native/TopKImpl.h) takes std::partial_sort where "
    "k * 64 <= n (rows of 640 candidates or more at k = 10) and nth_element, then a sort, on "
    "shorter rows; CUDA has kernels of its own: the verdict holds for the rows and device probed"
)
#: trec_eval's score type (pytrec_eval, ir_measures' default provider).
TREC_EVAL_CAVEAT = (
    "trec_eval stores every score as a C float (TEXT_RESULTS.sim, trec_format.h): scores equal "
    "in float32 are ties, ordered by docno"
)

#: trec_eval's sort (compiled into pytrec_eval's extension module) and its Python face.
TREC_EVAL_DECIDES = (
    "pytrec_eval:RelevanceEvaluator", "pytrec_eval_ext:RelevanceEvaluator.evaluate",
)  # fmt: skip


class Row:
    """One row's lines in stored order: ``label``, ``score``, ``item`` (ids as text)."""

    __slots__ = ("label", "score", "item")

    def __init__(self, label: np.ndarray, score: np.ndarray, item: np.ndarray) -> None:
        self.label, self.score, self.item = label, score, item


def row_codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Row codes of every line (first appearance order) and the row ids."""
    codes, ids = pd.factorize(frame["row"])
    return codes, np.asarray(ids)


def rows(frame: pd.DataFrame) -> Iterator[Row]:
    """Every row of ``frame`` (rows in order of first appearance, lines in stored order)."""
    codes, _ = row_codes(frame)
    order = np.argsort(codes, kind="stable")
    cuts = np.flatnonzero(np.diff(codes[order])) + 1
    label = frame["label"].to_numpy(np.int64)
    score = frame["score"].to_numpy(np.float64)
    item = frame["item_id"].astype(str).to_numpy()
    for idx in np.split(order, cuts) if len(order) else []:
        yield Row(label[idx], score[idx], item[idx])


@functools.lru_cache(maxsize=1024)
def _norm(measure: Measure, n_relevant: int) -> float:
    return float(measure.norm(n_relevant))


def at_ranks(measure: Measure, ranks: np.ndarray, n_relevant: int) -> float:
    """``measure`` of a row whose relevant items sit at (possibly fractional) ``ranks``."""
    r = np.asarray(ranks, dtype=np.float64)
    if measure.kind == "first":  # HR, MRR: the best rank's gain
        return float(measure.item_gain_at(r.min())) if r.size else 0.0
    return float(np.sum(measure.item_gain_at(r)) / _norm(measure, n_relevant))


def per_row(
    measure: Measure, ranks_of: Callable[[Row], np.ndarray]
) -> Callable[[pd.DataFrame, int], list[float]]:
    """An evaluator from a function giving the ranks (1-based) of a row's relevant items."""

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        m = Measure(measure.name, k)
        return [at_ranks(m, ranks_of(row), int(row.label.sum())) for row in rows(frame)]

    return fn


def trec_dicts(
    frame: pd.DataFrame,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]], list[str]]:
    """``qrels`` (``{query: {doc: 1}}``, relevant items only), ``run`` (``{query: {doc: score}}``,
    docs in stored order) and the query ids in order of first appearance: rows are queries."""
    codes, ids = row_codes(frame)
    queries = [str(q) for q in ids]
    qrels: dict[str, dict[str, int]] = {q: {} for q in queries}
    run: dict[str, dict[str, float]] = {q: {} for q in queries}
    items = frame["item_id"].astype(str).to_numpy()
    labels = frame["label"].to_numpy(np.int64)
    scores = frame["score"].to_numpy(np.float64)
    for c, item, label, score in zip(codes, items, labels, scores, strict=True):
        q = queries[c]
        run[q][item] = float(score)
        if label > 0:
            qrels[q][item] = int(label)
    return qrels, run, queries


def padded(frame: pd.DataFrame, extra: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """Every row's scores in one matrix (rows padded to the longest plus ``extra`` places, each
    pad scoring below every candidate of its row), and each row's relevant places."""
    got = list(rows(frame))
    width = max(len(r.score) for r in got) + extra
    scores = np.empty((len(got), width), dtype=np.float64)
    relevant = []
    for i, r in enumerate(got):
        scores[i] = r.score.min() - 1.0
        scores[i, : len(r.score)] = r.score
        relevant.append(np.flatnonzero(r.label > 0))
    return scores, relevant


def lists(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Every row's labels and scores as one batch of lists (float32 labels, float64 scores),
    rows padded to the longest with the label -1 (the pad of ranking metrics that leave such
    items out: keras-rs, TF-Ranking) and the row's smallest score."""
    got = list(rows(frame))
    width = max(len(r.score) for r in got)
    labels = np.full((len(got), width), -1.0, dtype=np.float32)
    scores = np.empty((len(got), width), dtype=np.float64)
    for i, r in enumerate(got):
        labels[i, : len(r.label)] = r.label
        scores[i] = r.score.min()
        scores[i, : len(r.score)] = r.score
    return labels, scores


def per_list(metric: type, mean: type, to_numpy: Callable, cutoff: str) -> Callable:
    """An evaluator from a Keras ranking metric class whose ``update_state`` hands its per-list
    values to its ``mean`` base (a ``Mean`` metric: keras-rs, TF-Ranking): with a ``Mean``
    between them in the method order that keeps those values, one ``update_state(labels,
    scores)`` on every row at once (:func:`lists`) gives each row's value, the library's own.
    ``to_numpy`` turns the values into an array; ``cutoff`` is the metric's keyword for k."""

    class Kept(mean):  # type: ignore[misc, valid-type]
        def update_state(self, values, sample_weight=None):
            self.kept = to_numpy(values)
            return super().update_state(values, sample_weight=sample_weight)

    cls = type(metric.__name__, (metric, Kept), {})

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        labels, scores = lists(frame)
        evaluator = cls(**{cutoff: k})
        evaluator.update_state(labels, scores)
        return [float(v) for v in evaluator.kept.reshape(-1)]

    return fn


def one_target(relevant: list[np.ndarray], library: str) -> np.ndarray:
    """The one relevant place of every row; ``ValueError`` naming a row with more or fewer."""
    for i, places in enumerate(relevant):
        if len(places) != 1:
            raise ValueError(f"{library} takes one relevant item a row; row {i + 1} has "
                             f"{len(places)}")  # fmt: skip
    return np.asarray([p[0] for p in relevant])

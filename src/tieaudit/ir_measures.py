"""Tie-aware measures for ir_measures (and so for PyTerrier's ``pt.Experiment``).

:func:`measure` returns an ir_measures measure object that joins every ``calc_aggregate``,
``iter_calc`` or ``evaluator`` call beside ir_measures' own measures::

    import ir_measures
    from tieaudit.ir_measures import measure

    ir_measures.calc_aggregate([ir_measures.nDCG@10, measure("nDCG@10", ties="expected")],
                               qrels, run)

Each call turns the qrels and the run into a candidates table as ``tieaudit evaluate --run
--qrels`` does (:func:`tieaudit.tables.trec.trec_input`: a query is a row, a document relevant
when its relevance is above 0, relevant documents the run did not retrieve counted in recall and,
with their grades, in the ideal DCG) and evaluates it under the tie rule ``ties`` (any rule of
the registry; default ``expected``). ``ties="docno_desc"`` is trec_eval's order (ties broken by document id,
descending), so it gives the numbers of ir_measures' own providers built on trec_eval
(pytrec_eval). The measure is defined with ``support_cutoff=False``: ir_measures' runtime
provider would otherwise cut each query's run at the cutoff itself, after a sort by score that
breaks the ties before the measure sees them; the cutoff is the measure's own (``nDCG@10``).
The run reaches the measure sorted by query and score (ir_measures sorts it), so
``input_order`` keeps that order among equal scores, not the run's own.

Graded qrels keep their grades, as trec_eval reads them: a document is relevant when its
relevance is above 0 (what ``P``, ``R``, ``RR`` and ``Success`` count), and nDCG's gain is its
relevance (linear), the ideal DCG made of the relevance of every relevant document of the query,
those the run did not retrieve too; so ``nDCG`` under ``docno_desc`` is ir_measures' own
``nDCG`` (trec_eval's ``ndcg_cut``) with graded qrels too.

Queries as ir_measures counts them: a query of the run with no relevant document in the qrels
is 0; a query of the qrels the run does not hold is 0 too (ir_measures adds it); a query of the
run that the qrels do not hold is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd

from .evaluation.evaluate import evaluate
from .tables.trec import TrecError, TrecRecords, trec_input
from .ties.measures import MAX_CUTOFF, Measure, parse_measure
from .ties.rules import TieRule, parse_rule

__all__ = ["measure", "IR_MEASURES_NAMES"]

#: ir_measures' names of tieaudit's measures where they differ (``R@10`` is ``Recall@10``).
IR_MEASURES_NAMES = {"R": "Recall", "Success": "HR", "RR": "MRR"}
_BARE = re.compile(r"^\s*([A-Za-z]+)\s*$")


def _parse(name: str | Measure) -> Measure:
    """A tieaudit measure from its name or ir_measures' (``R@10``, ``Success@10``); without a
    cutoff (``nDCG``, ``RR``) every document of a query counts."""
    if isinstance(name, Measure):
        return name
    text = str(name)
    bare = _BARE.match(text)
    if bare:
        text = f"{bare.group(1)}@{MAX_CUTOFF}"
    head, at, k = text.partition("@")
    return parse_measure(IR_MEASURES_NAMES.get(head.strip(), head) + at + k)


def _where(frame: pd.DataFrame, j: int) -> str:
    """Line ``j`` (from 0) of ir_measures' DataFrame, with its query and document: ir_measures
    may hand a measure the run or qrels in another order than they were read, so the ids say
    which line it is."""
    return (f"line {j + 1} (query {str(frame['query_id'].iloc[j])!r}, document "
            f"{str(frame['doc_id'].iloc[j])!r})")


def _records(frame: pd.DataFrame, column: str, what: str) -> TrecRecords:
    """A run's or qrels' records from ir_measures' DataFrame (lines counted from 1)."""
    missing = [c for c in ("query_id", "doc_id", column) if c not in frame.columns]
    if missing:
        raise TrecError(f"{what}: no column {', '.join(missing)} (columns: "
                        f"{', '.join(map(str, frame.columns))})")  # fmt: skip
    value = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(np.isnan(value))  # text, a missing value or NaN
    if len(bad):
        shown = frame[column].iloc[bad[0]]
        shown = repr(shown) if isinstance(shown, str) else str(shown)
        raise TrecError(f"{what}: {_where(frame, bad[0])}: {column} {shown} is not a number")
    return TrecRecords(frame["query_id"].astype(str).to_numpy(dtype=object),
                       frame["doc_id"].astype(str).to_numpy(dtype=object), value,
                       np.arange(1, len(frame) + 1, dtype=np.int64))  # fmt: skip


def _qrels(frame: pd.DataFrame) -> TrecRecords:
    rel = _records(frame, "relevance", "qrels")
    whole = np.flatnonzero(~np.isfinite(rel.value) | (rel.value != np.floor(rel.value)))
    if len(whole):
        raise TrecError(f"qrels: {_where(frame, whole[0])}: relevance {rel.value[whole[0]]} is "
                        "not a whole number")  # fmt: skip
    twice = pd.DataFrame({"q": rel.qid, "d": rel.docno}).duplicated().to_numpy()
    if twice.any():
        j = int(np.argmax(twice))
        raise TrecError(f"qrels: {_where(frame, j)}: a second judgement of the document for "
                        "the query")  # fmt: skip
    return rel


def values(qrels: pd.DataFrame, run: pd.DataFrame, metric: str | Measure,
           ties: str | TieRule = "expected") -> Iterator[tuple[str, float]]:  # fmt: skip
    """``(query_id, value)`` of every query ir_measures gives a value of its own (see the
    module docstring): what :func:`measure`'s object computes."""
    m, rule = _parse(metric), parse_rule(ties)
    res, rel = _records(run, "score", "run"), _qrels(qrels)
    judged = set(rel.qid.tolist())
    relevant = set(rel.qid[rel.value > 0].tolist())
    run_qids = list(dict.fromkeys(res.qid.tolist()))
    if not relevant.intersection(run_qids):  # nothing to evaluate: every judged query is 0
        yield from ((q, 0.0) for q in run_qids if q in judged)
        return
    found = trec_input(res, rel, "run", "qrels")
    got = evaluate(found.table, [m], [rule])[rule].values[m]
    yield from zip(found.table.row_ids.tolist(), got.tolist(), strict=True)
    yield from ((q, 0.0) for q in found.no_relevant)


def measure(metric: str | Measure, ties: str | TieRule = "expected") -> Any:
    """An ir_measures measure: ``metric`` (``nDCG@10``, ``P@10``, ``R@100``, ``RR@10``,
    ``Success@10``, ``HR@10``, ``MRR@10``, ...; see :func:`tieaudit.parse_measure`) under the
    tie rule ``ties``, named ``"nDCG@10[expected]"`` in ir_measures' results (see the module
    docstring). Needs ir_measures (``pip install 'tieaudit[ir_measures]'``)."""
    try:
        import ir_measures
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("tieaudit.ir_measures needs ir_measures: pip install "
                          "'tieaudit[ir_measures]'") from exc  # fmt: skip
    m, rule = _parse(metric), parse_rule(ties)
    shown = str(m) if m.k < MAX_CUTOFF else m.name

    def impl(qrels: pd.DataFrame, run: pd.DataFrame) -> Iterator[tuple[str, float]]:
        return values(qrels, run, m, rule)

    return ir_measures.define(
        impl, name=f"{shown}[{rule}]", support_cutoff=False,
        pretty_name=f"{shown} under the tie rule {rule} (tieaudit)",
        short_desc=f"{shown} with equal scores ordered by the tie rule {rule}",
    )  # fmt: skip

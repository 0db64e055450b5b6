"""trectools: ``TrecEval(run, qrels).get_ndcg(depth=k, per_query=True)`` (and ``get_precision``,
``get_recall``, ``get_reciprocal_rank``), with the run loaded the two ways trectools offers, one
adapter each:

* ``trectools``: ``TrecRun.load_run_from_dataframe(df)``, the lines in stored order (the run's
  ``rank`` column their stored place). trectools 0.0.50 keeps that order: ``get_ndcg`` takes each
  query's first ``depth`` lines as they stand and never sorts (``trectools/trec_eval.py``,
  ``TrecEval.get_ndcg``), so nDCG ranks the stored lines and ignores the scores; ``get_precision``,
  ``get_recall`` and ``get_reciprocal_rank`` sort by ``["query", "score", "docid"]`` descending
  first (``trec_eval=True``, their default): docid descending among equal scores.
* ``trectools-read_run``: the run written as a TREC run file and read back with
  ``TrecRun(filename)`` (``TrecRun.read_run``), which sorts the lines by query, score descending
  and docid ascending (``trectools/trec_run.py``): nDCG then ranks ties by docid ascending, the
  other measures re-sort as above. The qrels are read from a file too (``TrecQrel(filename)``).
  ``pandas.read_csv`` reads docids that look like numbers (``00069``) as integers, turned back
  into text (``69``) before the sort: ties follow the text of those numbers, not the ids written
  (``item_id`` on ids that are not numbers).

A query without a relevant document in the top k is missing from trectools' per-query table (or
NaN there); its value is 0, as in trectools' own mean (the sum of the per-query values over all
queries)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ...ties.measures import Measure
from .base import Adapter, register
from ._common import row_codes

_CALLS = {"nDCG": ("get_ndcg", "NDCG@{k}"), "P": ("get_precision", "P@{k}"),
          "Recall": ("get_recall", "R@{k}"), "MRR": ("get_reciprocal_rank", "recip_rank@{k}")}  # fmt: skip

#: the measures' own sorts (or none: get_ndcg)
_EVALUATES = tuple(f"trectools:TrecEval.{method}" for method, _ in _CALLS.values())


def _frames(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The run (lines in stored order, ``rank`` the stored place in the query), the qrels (the
    relevant lines) and the query ids in order of first appearance."""
    codes, ids = row_codes(frame)
    query = np.asarray([str(q) for q in ids])[codes]
    docid = frame["item_id"].astype(str).to_numpy()
    rank = pd.Series(codes).groupby(codes).cumcount().to_numpy() + 1
    run = pd.DataFrame({"query": query, "q0": "Q0", "docid": docid, "rank": rank,
                        "score": frame["score"].to_numpy(np.float64), "system": "probe"})  # fmt: skip
    relevant = frame["label"].to_numpy() > 0
    qrels = pd.DataFrame({"query": query[relevant], "q0": "0", "docid": docid[relevant],
                          "rel": frame["label"].to_numpy()[relevant]})  # fmt: skip
    return run, qrels, ids


def _values(per_query: pd.DataFrame, label: str, ids: np.ndarray) -> list[float]:
    values = per_query[label].fillna(0.0)
    return [float(values.get(str(q), 0.0)) for q in ids]


def build(measure: Measure):
    from trectools import TrecEval, TrecQrel, TrecRun

    method, label = _CALLS[measure.name]

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        run_frame, qrels_frame, ids = _frames(frame)
        run, qrels = TrecRun(), TrecQrel()
        run.load_run_from_dataframe(run_frame)
        qrels.qrels_data = qrels_frame
        per_query = getattr(TrecEval(run, qrels), method)(depth=k, per_query=True)
        return _values(per_query, label.format(k=k), ids)

    return fn


def build_read_run(measure: Measure):
    from trectools import TrecEval, TrecQrel, TrecRun

    method, label = _CALLS[measure.name]

    def fn(frame: pd.DataFrame, k: int) -> list[float]:
        run_frame, qrels_frame, ids = _frames(frame)
        with tempfile.TemporaryDirectory(prefix="tieaudit-trectools-") as folder:
            run_path, qrels_path = Path(folder) / "run.txt", Path(folder) / "qrels.txt"
            # repr: the shortest text that reads back as the same float
            lines = [f"{q} Q0 {d} {r} {float(s)!r} probe" for q, d, r, s in
                     zip(run_frame["query"], run_frame["docid"], run_frame["rank"],
                         run_frame["score"], strict=True)]  # fmt: skip
            run_path.write_text("\n".join(lines) + "\n")
            qrels_path.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in
                                          zip(qrels_frame["query"], qrels_frame["docid"],
                                              qrels_frame["rel"], strict=True)))  # fmt: skip
            run, qrels = TrecRun(str(run_path)), TrecQrel(str(qrels_path))
            per_query = getattr(TrecEval(run, qrels), method)(depth=k, per_query=True)
        return _values(per_query, label.format(k=k), ids)

    return fn


register(
    Adapter(
        "trectools", "trectools", "trectools", "trectools",
        "trectools.TrecRun.load_run_from_dataframe(run); TrecEval(run, qrels).get_ndcg(depth=k, "
        "per_query=True)", tuple(_CALLS), build,
        decides=("trectools:TrecRun.load_run_from_dataframe", *_EVALUATES),
    )
)  # fmt: skip
register(
    Adapter(
        "trectools-read_run", "trectools", "trectools", "trectools",
        "trectools.TrecRun(run_file) (read_run); TrecEval(run, qrels).get_ndcg(depth=k, "
        "per_query=True)", tuple(_CALLS), build_read_run,
        decides=("trectools:TrecRun.read_run", *_EVALUATES),
    )
)  # fmt: skip

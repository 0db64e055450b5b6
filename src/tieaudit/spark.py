"""Evaluate a Spark DataFrame of candidates under the exact tie rules, where it lives.

:func:`evaluate` runs the query of :mod:`tieaudit.evaluation.sql` in Spark and returns the
summary :func:`tieaudit.evaluate` gives for the same table (its columns ``rule, metric, value,
sd, min, max, se, n_rows, n_seeds, z``), for the rules SQL computes
(:data:`tieaudit.evaluation.sql.SQL_RULES`). A Spark table has no stored order, so
``input_order`` and ``reversed_input`` need ``position_col``: a column giving each line's place
in the order an evaluator stored it (refused without one). The rules SQL does not compute
(``hash``, ``hash_mean``, ``random``) are refused by name.

pyspark is an optional extra: ``pip install 'tieaudit[spark]'`` (and a Java runtime).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .evaluation.sql import POSITION_RULES, SPARK, SQL_RULES, evaluation_sql, sql_rules, sums_of
from .tables.candidates import CandidateError
from .ties.measures import DEFAULT_MEASURES, parse_measures
from .ties.rules import DEFAULT_RULES

__all__ = ["evaluate"]

_VIEW = "tieaudit_cand"


def _first(spark: Any, query: str) -> tuple | None:
    rows = spark.sql(query).limit(1).collect()
    return tuple(rows[0]) if rows else None


def _check(spark: Any, n_relevant: bool) -> bool:
    """The table as :func:`tieaudit.evaluate` requires it; the first problem, naming its row,
    as a :class:`CandidateError`."""
    v = _VIEW
    for c in ("row", "item_id", "label", "score"):
        hit = _first(spark, f"SELECT row FROM {v} WHERE {c} IS NULL")
        if hit:
            raise CandidateError(f"row {hit[0]!r}: a line with no {c}")
    hit = _first(spark, f"SELECT row FROM {v} WHERE isnan(score)")
    if hit:
        raise CandidateError(f"row {hit[0]!r}: a score is NaN")
    hit = _first(spark, f"SELECT row, label FROM {v} WHERE label < 0 OR isnan(label) OR "
                        "label = double('inf')")  # fmt: skip
    if hit:
        raise CandidateError(f"row {hit[0]!r}: label {hit[1]!r} is not 0, 1 or a grade (a finite "
                             "number >= 0)")  # fmt: skip
    graded = _first(spark, f"SELECT row FROM {v} WHERE label <> 0 AND label <> 1") is not None
    hit = _first(spark, f"SELECT row, item_id FROM {v} GROUP BY row, item_id HAVING COUNT(*) > 1 "
                        "ORDER BY row, item_id")  # fmt: skip
    if hit:
        raise CandidateError(f"row {hit[0]!r}: item {hit[1]!r} appears twice")
    if n_relevant:
        hit = _first(spark, f"SELECT row FROM {v} GROUP BY row HAVING COUNT(DISTINCT n_relevant) "
                            "> 1 OR MAX(n_relevant) < SUM(CASE WHEN label > 0 THEN 1 ELSE 0 END) "
                            "OR MAX(n_relevant) < 1 ORDER BY row")  # fmt: skip
        if hit:
            raise CandidateError(f"row {hit[0]!r}: n_relevant is not one number of at least the "
                                 "row's relevant lines and 1")  # fmt: skip
        if graded:
            hit = _first(spark, f"SELECT row FROM {v} GROUP BY row HAVING MAX(n_relevant) > "
                                "SUM(CASE WHEN label > 0 THEN 1 ELSE 0 END) ORDER BY row")  # fmt: skip
            if hit:
                raise CandidateError(f"row {hit[0]!r}: n_relevant above its relevant lines and "
                                     "graded labels: the ideal DCG needs every relevant item's "
                                     "grade")  # fmt: skip
    else:
        hit = _first(spark, f"SELECT row FROM {v} GROUP BY row HAVING SUM(CASE WHEN label > 0 "
                            "THEN 1 ELSE 0 END) = 0 ORDER BY row")  # fmt: skip
        if hit:
            raise CandidateError(f"row {hit[0]!r}: no relevant item (a row needs one)")
    return graded


def evaluate(
    df: Any, measures: Sequence[str] = DEFAULT_MEASURES, rules: Sequence[str] | None = None, *,
    position_col: str | None = None, row_col: str = "row", item_col: str = "item_id",
    label_col: str = "label", score_col: str = "score", n_relevant_col: str | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The summary of :meth:`tieaudit.Evaluation.summary` for the Spark DataFrame ``df`` (one
    line per row and candidate), computed by Spark.

    ``rules`` default to the default rules that SQL computes, less ``input_order`` without
    ``position_col``. ``row_col`` .. ``score_col`` name the table's columns (the row is one
    user's evaluation, or the user itself); ``n_relevant_col`` a per-row count of relevant
    items including those not stored. Labels are 0 and 1 or grades (numbers ``>= 0``: nDCG's
    gain is the label, the ideal DCG from the row's own labels), as :func:`tieaudit.evaluate`
    reads them.
    """
    ms = parse_measures(measures)
    has_pos = position_col is not None
    if rules is None:
        rules = [r for r in DEFAULT_RULES if r.kind in SQL_RULES
                 and (has_pos or r.kind not in POSITION_RULES)]  # fmt: skip
    rs = sql_rules(rules, has_position=has_pos)
    names = {row_col: "row", item_col: "item_id", label_col: "label", score_col: "score"}
    if position_col is not None:
        names[position_col] = "pos"
    if n_relevant_col is not None:
        names[n_relevant_col] = "n_relevant"
    missing = [c for c in names if c not in df.columns]
    if missing:
        flag = {"row": "row_col", "item_id": "item_col", "label": "label_col",
                "score": "score_col", "pos": "position_col", "n_relevant": "n_relevant_col"}
        raise CandidateError(
            f"the DataFrame has no column {', '.join(missing)}; found {', '.join(df.columns)}; "
            "name its columns with " + ", ".join(flag[names[c]] for c in missing))
    spark = df.sparkSession
    casts = {"row": "STRING", "item_id": "STRING", "label": "DOUBLE", "score": "DOUBLE",
             "pos": "DOUBLE", "n_relevant": "BIGINT"}  # fmt: skip
    cols = [f"CAST(`{src.replace('`', '``')}` AS {casts[dst]}) AS {dst}"
            for src, dst in names.items()]  # fmt: skip
    df.selectExpr(*cols).createOrReplaceTempView(_VIEW)
    try:
        n = spark.sql(f"SELECT COUNT(*) FROM {_VIEW}").collect()[0][0]
        if n == 0:
            raise CandidateError("the DataFrame has no lines")
        graded = _check(spark, n_relevant_col is not None)
        if has_pos:
            hit = _first(spark, f"SELECT row FROM {_VIEW} WHERE pos IS NULL OR isnan(pos)")
            if hit:
                raise CandidateError(f"row {hit[0]!r}: a line with no position ({position_col})")
        most = "MAX(n_relevant)" if n_relevant_col is not None else "0"
        longest = spark.sql(f"SELECT MAX(GREATEST(c, r)) FROM (SELECT COUNT(*) AS c, {most} AS r "
                            f"FROM {_VIEW} GROUP BY row) l_").collect()[0][0]  # fmt: skip
        query = evaluation_sql(ms, rs, longest=int(longest), dialect=SPARK, has_position=has_pos,
                               n_relevant=n_relevant_col is not None, graded=graded)  # fmt: skip
        query = query.replace("WITH rows_ AS", f"WITH cand AS (SELECT * FROM {_VIEW}),\nrows_ AS", 1)
        record = spark.sql(query).collect()[0].asDict()
    finally:
        spark.catalog.dropTempView(_VIEW)
    return sums_of(record, ms, rs).summary()

"""tieaudit.spark on a local Spark (``local[2]``): the summary of tieaudit.evaluate for the
rules SQL computes, on a generated tie-heavy table (several relevant items a row, unstored
relevant items, non-contiguous rows) and with graded labels; a position column for the stored
order; refusals by name. Run by ``make test-spark`` (pyspark and a Java runtime)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import tieaudit
from tieaudit.tables.candidates import CandidateError
from tests.test_sql_engine import same_summary

pytestmark = pytest.mark.spark

RULES = ["input_order", "reversed_input", "optimistic", "pessimistic", "expected", "item_id",
         "docno_desc"]  # fmt: skip
MEASURES = ["nDCG@1", "nDCG@3", "HR@2", "MRR@3", "Recall@2", "P@3", "nDCG@50", "MRR@50", "HR@50"]


@pytest.fixture(scope="module")
def spark():
    pyspark = pytest.importorskip("pyspark", reason="make test-spark installs pyspark")
    session = (pyspark.sql.SparkSession.builder.master("local[2]")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC").getOrCreate())  # fmt: skip
    yield session
    session.stop()


def tie_heavy(seed: int, n_rows: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    parts = []
    for r in range(n_rows):
        n = int(rng.integers(1, 12))
        label = (rng.random(n) < 0.3).astype(np.int64)
        label[rng.integers(n)] = 1
        parts.append(pd.DataFrame({
            "row": f"r{r}", "user_id": f"u{r % 17}", "item_id": [f"i{j}" for j in rng.permutation(40)[:n]],
            "label": label, "score": rng.integers(0, 3, n).astype(float),
            "n_relevant": int(label.sum() + rng.integers(0, 2)),
        }))  # fmt: skip
    frame = pd.concat(parts, ignore_index=True)
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # rows interleaved


def test_spark_equals_the_default_engine(spark):
    import tieaudit.spark as ts

    frame = tie_heavy(1)
    want = tieaudit.evaluate(frame, MEASURES, RULES).summary()
    df = spark.createDataFrame(frame.assign(stored=np.arange(len(frame))))
    got = ts.evaluate(df, MEASURES, RULES, position_col="stored", n_relevant_col="n_relevant")
    same_summary(got, want)


def test_spark_with_graded_labels_and_own_column_names(spark):
    import tieaudit.spark as ts

    frame = tie_heavy(2, 200).drop(columns="n_relevant")
    frame["label"] = frame["label"] * np.random.default_rng(3).integers(1, 4, len(frame))
    rules = ["optimistic", "pessimistic", "expected", "item_id"]
    want = tieaudit.evaluate(frame, ["nDCG@3", "nDCG@10", "HR@2"], rules).summary()
    df = spark.createDataFrame(frame.rename(columns={"row": "request", "item_id": "item",
                                                     "label": "grade", "score": "s"}))  # fmt: skip
    got = ts.evaluate(df, ["nDCG@3", "nDCG@10", "HR@2"], rules, row_col="request",
                      item_col="item", label_col="grade", score_col="s")  # fmt: skip
    same_summary(got, want)


def test_spark_refusals(spark):
    import tieaudit.spark as ts

    df = spark.createDataFrame(tie_heavy(4, 5).drop(columns="n_relevant"))
    with pytest.raises(ValueError, match="input_order need.*stored order"):
        ts.evaluate(df, ["nDCG@10"], ["input_order"])
    with pytest.raises(ValueError, match="tie rule hash_mean cannot be computed in SQL"):
        ts.evaluate(df, ["nDCG@10"], ["hash_mean"])
    with pytest.raises(CandidateError, match="no column user; .*name its columns with row_col"):
        ts.evaluate(df, ["nDCG@10"], ["expected"], row_col="user")
    got = ts.evaluate(df, ["nDCG@10"])  # without a position: the default rules SQL computes
    assert "input_order" not in set(got["rule"]) and "expected" in set(got["rule"])
    dup = spark.createDataFrame(pd.DataFrame({"row": ["a", "a"], "item_id": ["x", "x"],
                                              "label": [1, 0], "score": [1.0, 0.0]}))  # fmt: skip
    with pytest.raises(CandidateError, match="row 'a': item 'x' appears twice"):
        ts.evaluate(dup, ["nDCG@10"], ["expected"])

"""Paper tables (tieaudit.report): the full-catalog block of columns beside the sampled one."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tieaudit.report import collect, dataset_table, ties_invariance_table

RULES = ["input_order", "expected"]
SCORERS = ["s1"]


def write_results(root, dataset: str, full: bool) -> None:
    for folder, base in [("", 0.5)] + ([("full/", 0.1)] if full else []):
        d = root / "results" / dataset / f"{folder}s1"
        (d / "audit").mkdir(parents=True)
        pd.DataFrame({
            "rule": RULES, "metric": "nDCG@10", "value": [2 * base, base], "sd": [None, 0.01],
            "min": [None, base / 2], "max": [None, 2 * base], "se": 0.0, "n_rows": 10,
            "n_seeds": None, "z": None,
        }).to_csv(d / "metrics.csv", index=False)  # fmt: skip
        pd.DataFrame({
            "diagnostic": ["share_positive_tied", "mean_tie_size_at_positive",
                           "share_tie_group_straddles_k"],
            "key": ["", "", "k=10"], "value": [base, 10 * base, base / 4],
        }).to_csv(d / "audit" / "diagnostics.csv", index=False)  # fmt: skip
        pd.DataFrame({"rule": RULES, "metric": "nDCG@10", "max_abs_change": 0.0,
                      "share_rows_moved": 0.0, "invariant": ["no", "yes"],
                      "n_permutations": 7}).to_csv(d / "audit" / "invariance.csv", index=False)


def test_full_catalog_columns_beside_the_sampled_ones(tmp_path) -> None:
    write_results(tmp_path, "A", full=True)
    write_results(tmp_path, "B", full=False)
    metrics = collect(sorted(tmp_path.glob("results/**/metrics.csv")))
    a = dataset_table(metrics, "A", SCORERS, RULES, ["nDCG@10"])
    block = ["nDCG@10", "nDCG@10_sd", "nDCG@10_min", "nDCG@10_max", "nDCG@10_z"]
    assert list(a.columns) == ["scorer", "rule"] + block + ["full:" + c for c in block]
    assert a["nDCG@10"].tolist() == [1.0, 0.5] and a["full:nDCG@10"].tolist() == [0.2, 0.1]
    assert a["full:nDCG@10_min"].tolist()[1] == pytest.approx(0.05)
    b = dataset_table(metrics, "B", SCORERS, RULES, ["nDCG@10"])
    assert list(b.columns) == ["scorer", "rule"] + block  # no full results: the sampled table

    diag = collect(sorted(tmp_path.glob("results/**/diagnostics.csv")))
    inv = collect(sorted(tmp_path.glob("results/**/invariance.csv")))
    t = ties_invariance_table(diag, inv, ["A", "B"], SCORERS, RULES, ["nDCG@10"])
    own = ["share_tied", "mean_t", "straddle@10", "invariant:input_order", "invariant:expected"]
    assert list(t.columns) == ["dataset", "scorer"] + own + ["full:" + c for c in own]
    a_row, b_row = t.iloc[0], t.iloc[1]
    assert (a_row["share_tied"], a_row["full:share_tied"]) == (0.5, 0.1)
    assert a_row["full:invariant:input_order"] == "no"
    assert math.isnan(b_row["full:share_tied"]) and b_row["full:invariant:expected"] == ""
    only_b = ties_invariance_table(diag[diag["dataset"] == "B"], inv[inv["dataset"] == "B"],
                                   ["B"], SCORERS, RULES, ["nDCG@10"])  # fmt: skip
    assert list(only_b.columns) == ["dataset", "scorer"] + own

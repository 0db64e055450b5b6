"""tieaudit.testing.check_evaluator: quiet for evaluators that follow the rule they declare
(tieaudit's own under every rule, library adapters under the rule the probe finds); an
AssertionError naming the check and the smallest row for those that do not."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import tieaudit
from tieaudit.probe import get_adapter
from tieaudit.testing import check_evaluator
from tieaudit.testing.evaluators import CHECKS
from tieaudit.ties.rules import TieRule, rule_kinds

RULES = [TieRule(k.name, 3 if k.seeded else None) for k in rule_kinds()]


def follows(rule: str, name: str = "nDCG"):
    """An evaluator that is tieaudit's evaluation under ``rule``."""

    def fn(candidates: pd.DataFrame, k: int):
        m = tieaudit.parse_measure(f"{name}@{k}")
        return tieaudit.evaluate(candidates, [m], [rule]).result(rule).values[m]

    fn.__name__ = f"{name}_{rule}"
    return fn


def stable_ndcg(candidates: pd.DataFrame, k: int) -> list[float]:
    """nDCG with the ties left to a stable sort: the stored order breaks them (input_order)."""
    out = []
    for _, row in candidates.groupby("row", sort=False):
        label = row["label"].to_numpy()
        order = np.argsort(-row["score"].to_numpy(), kind="stable")
        discount = 1 / np.log2(np.arange(2, len(row) + 2))
        dcg = float((label[order][:k] * discount[:k]).sum())
        out.append(dcg / float(discount[: min(k, int(label.sum()))].sum()))
    return out


@pytest.mark.parametrize("rule", RULES, ids=str)
def test_tieaudit_itself_passes_under_every_rule(rule: TieRule) -> None:
    for name, k in (("nDCG", 10), ("HR", 5)):
        check_evaluator(follows(str(rule), name), f"{name}@{k}", rule, rows=300)


@pytest.mark.parametrize("measure", ["MRR@3", "Recall@10", "P@5"])
def test_every_measure_can_be_checked(measure: str) -> None:
    name = measure.split("@")[0]
    check_evaluator(follows("expected", name), measure, rows=300)
    with pytest.raises(AssertionError, match="row order"):
        check_evaluator(follows("input_order", name), measure, rows=300)


@pytest.mark.parametrize(("adapter", "measure", "rule", "options"), [
    ("numpy-stable", "nDCG@10", "input_order", {}),
    ("numpy-reversed-stable", "nDCG@10", "reversed_input", {}),
    ("pandas-rank-min", "nDCG@10", "shared_first", {}),
    ("pandas-rank-max", "HR@10", "shared_last", {}),
    ("pandas-rank-average", "nDCG@10", "mean_rank", {"one_relevant": True}),
    ("trec_eval", "nDCG@10", "docno_desc", {}),
    ("ir_measures", "HR@10", "docno_desc", {}),
    # torchmetrics casts the scores to float32 and computes in float32
    ("torchmetrics", "nDCG@10", "expected", {"casts": "float32", "tolerance": 1e-6}),
])  # fmt: skip
def test_library_evaluators_pass_under_the_rule_they_follow(adapter: str, measure: str,
                                                            rule: str, options: dict) -> None:  # fmt: skip
    check_evaluator(get_adapter(adapter).evaluator(measure), measure, rule, name=adapter,
                    rows=300, **options)  # fmt: skip


def test_a_stable_input_order_evaluator_declared_expected_fails_on_row_order() -> None:
    with pytest.raises(AssertionError) as err:
        check_evaluator(stable_ndcg, "nDCG@10", "expected")
    text = str(err.value)
    assert text.startswith("stable_ndcg fails check_evaluator(nDCG@10, rule=expected): row order:")
    # the smallest row: a relevant item tied with one other, two lower, in both orders
    assert "The smallest row that shows it, 'r0001' (4 candidates; alone in a table it shows it" in text
    assert "as stored:" in text and "in the copy positive_last:" in text
    assert re.search(r"returned 1 as stored and 0\.63\d+ in the copy positive_last, expected "
                     r"gives 0\.815", text)  # fmt: skip
    assert "The probe finds it follows: input_order (row-order invariant: no)" in text
    # declared as what it is, it passes
    check_evaluator(stable_ndcg, "nDCG@10", "input_order")


def test_each_check_names_itself() -> None:
    assert CHECKS == ("row order", "the rule on crafted ties", "id rename", "casting",
                      "random tie-heavy tables")  # fmt: skip

    def optimistic_hr(c, k):  # invariant, but not the rule declared
        return follows("optimistic", "HR")(c, k)

    cache: dict[str, float] = {}

    def cached(c, k):  # the first value of a row id, kept
        rows = pd.unique(c["row"])
        return [cache.setdefault(r, v) for r, v in zip(rows, follows("expected")(c, k),
                                                       strict=True)]  # fmt: skip

    def float32(c, k):  # casts the scores
        return follows("expected")(c.assign(score=c["score"].astype(np.float32)), k)

    def three(c, k):  # wrong on rows of three relevant items, which no crafted row holds
        v = np.array(follows("expected")(c, k))
        n = c.groupby("row", sort=False)["label"].sum().to_numpy()
        return np.where(n >= 3, v * 0.99, v)

    cases = [(optimistic_hr, "HR@10", {}, "the rule on crafted ties", 13),  # k - 1 above
             (cached, "nDCG@10", {}, "id rename", 4),
             (float32, "nDCG@10", {}, "casting", 4),
             (three, "nDCG@10", {}, "random tie-heavy tables", 3)]  # fmt: skip
    for fn, measure, options, check, smallest in cases:
        with pytest.raises(AssertionError) as err:
            check_evaluator(fn, measure, "expected", **options)
        head = str(err.value).splitlines()[0]
        assert head.startswith(f"{fn.__name__} fails check_evaluator({measure}, rule=expected): "
                               f"{check}:"), str(err.value)  # fmt: skip
        assert f"({smallest} candidates;" in str(err.value), str(err.value)
    check_evaluator(float32, "nDCG@10", casts="float32")  # declared: it passes
    check_evaluator(three, "nDCG@10", one_relevant=True)  # never three relevant items


def test_what_the_evaluator_returns_is_checked() -> None:
    with pytest.raises(AssertionError, match="returned 3 values for 242 rows on the crafted"):
        check_evaluator(lambda c, k: [0.0, 0.0, 0.0], name="short")
    with pytest.raises(AssertionError, match="raised ZeroDivisionError on the crafted"):
        check_evaluator(lambda c, k: 1 / 0, name="broken")
    with pytest.raises(ValueError, match="unknown tie rule"):
        check_evaluator(stable_ndcg, "nDCG@10", "stable")
    with pytest.raises(ValueError, match="unknown score precision"):
        check_evaluator(stable_ndcg, "nDCG@10", "input_order", casts="float8")

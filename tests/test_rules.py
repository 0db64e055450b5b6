"""tieaudit.ties.rules: parsing tie rules, seeds required or forbidden, and the str round trip; the
numeric-id orders and the mean-rank plug-in against hand-computed values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings

from tieaudit.evaluation.evaluate import evaluate
from tieaudit.ties.measures import parse_measures
from tieaudit.ties.rules import DEFAULT_RULES, RULE_KINDS, TieRule, parse_rule, parse_rules
from tieaudit.testing import tie_rules
from tests.conftest import examples

PLAIN = ["input_order", "reversed_input", "optimistic", "pessimistic", "expected", "hash_mean",
         "item_id", "docno_desc", "item_id_numeric", "item_id_numeric_desc", "mean_rank",
         "shared_first", "shared_last", "shared_mean"]  # fmt: skip


def test_rule_kinds() -> None:
    assert set(RULE_KINDS) == set(PLAIN) | {"hash", "random"}


@pytest.mark.parametrize("kind", PLAIN)
def test_parse_plain_rules(kind: str) -> None:
    r = parse_rule(kind)
    assert r == TieRule(kind)
    assert r.seed is None
    assert str(r) == kind


@pytest.mark.parametrize(
    ("text", "kind", "seed"),
    [
        ("hash:0", "hash", 0),
        ("hash:7", "hash", 7),
        ("HASH:7", "hash", 7),
        (" hash : 42 ", "hash", 42),
        ("random:0", "random", 0),
        ("Random:123", "random", 123),
        ("hash:007", "hash", 7),
        ("hash:18446744073709551615", "hash", 2**64 - 1),
        ("random:18446744073709551615", "random", 2**64 - 1),
    ],
)
def test_parse_seeded_rules(text: str, kind: str, seed: int) -> None:
    assert parse_rule(text) == TieRule(kind, seed)


def test_case_insensitive_plain() -> None:
    assert parse_rule("Input_Order") == TieRule("input_order")
    assert parse_rule(" EXPECTED ") == TieRule("expected")


@pytest.mark.parametrize("text", ["hash", "random", "hash:", "random: "])
def test_seed_required(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_rule(text)
    msg = str(info.value)
    if text.strip().endswith(":"):
        assert "cannot parse" in msg
    else:
        assert "needs a seed" in msg and f"{text}:0" in msg


@pytest.mark.parametrize("kind", PLAIN)
def test_seed_forbidden(kind: str) -> None:
    with pytest.raises(ValueError, match="takes no seed"):
        parse_rule(f"{kind}:3")
    with pytest.raises(ValueError, match="takes no seed"):
        TieRule(kind, 0)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("hash:-1", "seed must be from 0 to 2**64 - 1"),
        ("random:-5", "seed must be from 0 to 2**64 - 1"),
        # 64-bit seeds: hash:2**64 would wrap to hash:0
        ("hash:18446744073709551616", "seed must be from 0 to 2**64 - 1"),
        ("random:18446744073709551616", "seed must be from 0 to 2**64 - 1"),
        # ASCII digits and spaces only (int() and \d take other scripts' digits)
        ("hash:\u0661\u0665", "cannot parse"),
        ("hash:\uff11\uff15", "cannot parse"),
        ("hash:1_5", "cannot parse"),
        ("hash:\u00a01", "cannot parse"),
        ("\u3000expected", "cannot parse"),
        ("hash:abc", "cannot parse"),
        ("hash:1.5", "cannot parse"),
        ("hash:1:2", "cannot parse"),
        ("", "cannot parse"),
        ("input order", "cannot parse"),
        ("stable", "unknown tie rule 'stable'"),
        ("hashmean", "unknown tie rule"),
        ("shuffle:3", "unknown tie rule"),
    ],
)
def test_parse_rule_errors(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_rule(text)
    assert fragment in str(info.value)


def test_errors_list_known_rules() -> None:
    with pytest.raises(ValueError) as info:
        parse_rule("stable")
    msg = str(info.value)
    for kind in PLAIN:
        assert kind in msg
    assert "hash:SEED" in msg and "random:SEED" in msg


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="unknown tie rule"):
        TieRule("Hash", 1)  # the constructor takes canonical (lower-case) kinds only
    with pytest.raises(ValueError, match="needs a seed"):
        TieRule("random")
    with pytest.raises(ValueError, match="seed must be from 0 to"):
        TieRule("hash", -1)
    with pytest.raises(ValueError, match="seed must be from 0 to"):
        TieRule("hash", 2**64)


def test_str_of_seeded() -> None:
    assert str(TieRule("hash", 3)) == "hash:3"
    assert str(TieRule("random", 0)) == "random:0"


@settings(max_examples=examples(200), deadline=None)
@given(tie_rules())
def test_str_round_trip(rule: TieRule) -> None:
    assert parse_rule(str(rule)) == rule
    assert parse_rule(str(rule).upper()) == rule
    assert parse_rule(rule) is rule


def test_invariant_by_design() -> None:
    assert not TieRule("input_order").invariant_by_design
    assert not TieRule("random", 0).invariant_by_design
    assert not TieRule("reversed_input").invariant_by_design
    for kind in ["optimistic", "pessimistic", "expected", "hash_mean", "item_id"]:
        assert TieRule(kind).invariant_by_design
    assert TieRule("hash", 5).invariant_by_design


def test_parse_rules_dedups_keeping_order() -> None:
    got = parse_rules(["hash:1", "expected", "HASH:1", "hash:2", "Expected", "input_order"])
    assert got == [TieRule("hash", 1), TieRule("expected"), TieRule("hash", 2),
                   TieRule("input_order")]  # fmt: skip


def test_parse_rules_empty_is_an_error() -> None:
    with pytest.raises(ValueError, match="no tie rules"):
        parse_rules([])


def test_default_rules_cover_every_kind_once() -> None:
    assert [r.kind for r in DEFAULT_RULES] == [
        "input_order", "optimistic", "pessimistic", "expected", "hash", "hash_mean", "random",
        "item_id",
    ]  # fmt: skip
    assert len({str(r) for r in DEFAULT_RULES}) == len(DEFAULT_RULES)
    assert [parse_rule(str(r)) for r in DEFAULT_RULES] == list(DEFAULT_RULES)


def test_rules_are_hashable() -> None:
    assert len({TieRule("hash", 1), parse_rule("hash:1"), TieRule("hash", 2)}) == 2


def _tie_heavy(rng: np.random.Generator, rows: int) -> pd.DataFrame:
    lines = []
    for r in range(rows):
        n = int(rng.integers(1, 30))
        scores = rng.integers(0, 4, n).astype(float)
        rel = int(rng.integers(n))
        lines += [(f"r{r}", f"u{r}", str(j), int(j == rel), scores[j]) for j in range(n)]
    return pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])


def test_mean_rank_is_the_measure_at_the_average_rank() -> None:
    frame = _tie_heavy(np.random.default_rng(5), 60)
    measures = parse_measures(["nDCG@5", "HR@3", "MRR@10", "Recall@4", "P@2"])
    ev = evaluate(frame, measures, ["mean_rank", "expected"])
    want: dict[str, list[float]] = {str(m): [] for m in measures}
    for _, part in frame.groupby("row", sort=False):
        r = part["score"].rank(ascending=False, method="average")[part["label"] == 1].iloc[0]
        want["nDCG@5"].append(1 / np.log2(r + 1) if r <= 5 else 0.0)
        want["HR@3"].append(float(r <= 3))
        want["MRR@10"].append(1 / r if r <= 10 else 0.0)
        want["Recall@4"].append(float(r <= 4))
        want["P@2"].append((r <= 2) / 2)
    for m in measures:
        assert np.allclose(ev["mean_rank"].values[m], want[str(m)], rtol=0, atol=1e-15), m
        assert not np.all(ev["mean_rank"].values[m] == ev["expected"].values[m])
    assert all(not np.any(v) for v in ev["mean_rank"].variances.values())


def test_mean_rank_of_several_relevant_items_in_one_group() -> None:
    # g = 1, t = 4, r = 2: mean ranks 1 + 5/3 and 1 + 10/3; a wholly relevant group: exact ranks
    frame = pd.DataFrame({"row": ["a"] * 5 + ["b"] * 3, "user_id": ["u"] * 8,
                          "item_id": list("pqrst") + list("xyz"),
                          "label": [0, 1, 0, 1, 0, 1, 1, 0],
                          "score": [2.0, 1, 1, 1, 1, 1, 1, 0]})  # fmt: skip
    ev = evaluate(frame, parse_measures(["nDCG@10", "MRR@10"]), ["mean_rank", "input_order"])
    ndcg, mrr = (ev["mean_rank"].values[parse_measures([m])[0]] for m in ("nDCG@10", "MRR@10"))
    ideal = 1 + 1 / np.log2(3)
    assert ndcg[0] == pytest.approx((1 / np.log2(1 + 5 / 3 + 1) + 1 / np.log2(1 + 10 / 3 + 1)) / ideal)
    assert mrr[0] == pytest.approx(1 / (1 + 5 / 3))
    assert ndcg[1] == pytest.approx(1.0) and mrr[1] == pytest.approx(1.0)


def _several_relevant(seed: int) -> pd.DataFrame:
    """80 rows of 2 to 11 candidates scoring 0, 1 or 2, several relevant items a row, often in
    one tie group."""
    rng = np.random.default_rng(seed)
    lines = []
    for r in range(80):
        n = int(rng.integers(2, 12))
        scores = rng.integers(0, 3, n).astype(float)
        labels = (rng.random(n) < 0.4).astype(int)
        labels[int(rng.integers(n))] = 1
        lines += [(f"r{r}", f"u{r}", str(j), int(labels[j]), scores[j]) for j in range(n)]
    return pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])


@pytest.mark.parametrize(("rule", "method"), [("shared_first", "min"), ("shared_last", "max")])
def test_shared_places_are_the_min_and_max_ranks(rule: str, method: str) -> None:
    frame = _several_relevant(11)
    measures = parse_measures(["nDCG@3", "HR@2", "MRR@4", "Recall@3", "P@2"])
    ev = evaluate(frame, measures, [rule])
    for i, (_, part) in enumerate(frame.groupby("row", sort=False)):
        ranks = part["score"].rank(ascending=False, method=method)[part["label"] == 1].to_numpy()
        for m in measures:
            want = m.of_ranks([int(x) for x in ranks])
            assert ev[rule].values[m][i] == pytest.approx(want, abs=1e-15), (m, i)
    summary = ev.summary().set_index("metric")
    assert (summary["sd"] == 0).all() and (summary["min"] == summary["value"]).all()
    assert (summary["max"] == summary["value"]).all()


def test_shared_mean_is_pandas_average_rank_with_several_relevant_items_tied() -> None:
    frame = _several_relevant(12)
    measures = parse_measures(["nDCG@3", "MRR@4", "P@2"])
    ev = evaluate(frame, measures, ["shared_mean", "mean_rank"])
    differ = 0
    for i, (_, part) in enumerate(frame.groupby("row", sort=False)):
        ranks = part["score"].rank(ascending=False, method="average")[part["label"] == 1]
        ranks = np.sort(ranks.to_numpy())
        ideal = sum(1 / np.log2(j + 2) for j in range(min(len(ranks), 3)))
        want = {"nDCG@3": sum(1 / np.log2(x + 1) for x in ranks if x <= 3) / ideal,
                "MRR@4": 1 / ranks[0] if ranks[0] <= 4 else 0.0,
                "P@2": sum(x <= 2 for x in ranks) / 2}  # fmt: skip
        for m in measures:
            assert ev["shared_mean"].values[m][i] == pytest.approx(want[str(m)], abs=1e-12)
        differ += ev["shared_mean"].values[measures[0]][i] != ev["mean_rank"].values[measures[0]][i]
    assert differ > 0  # two relevant items in one group: not mean_rank


def test_shared_first_of_two_relevant_items_tied_at_the_top_exceeds_the_bounds() -> None:
    frame = pd.DataFrame({"row": "a", "user_id": "u", "item_id": list("xyz"),
                          "label": [1, 1, 0], "score": 1.0})  # fmt: skip
    ev = evaluate(frame, parse_measures(["P@1", "nDCG@1"]), ["shared_first", "optimistic",
                                                             "shared_last"])  # fmt: skip
    p1, ndcg1 = parse_measures(["P@1", "nDCG@1"])
    assert ev["shared_first"].values[p1][0] == 2.0 and ev["optimistic"].values[p1][0] == 1.0
    assert ev["shared_first"].values[ndcg1][0] == 2.0 and ev["shared_last"].values[ndcg1][0] == 0


@pytest.mark.parametrize(
    ("rule", "order"),
    [("item_id_numeric", ["9", "10", "011", "100"]), ("item_id_numeric_desc", ["100", "011", "10", "9"]),
     ("item_id", ["011", "10", "100", "9"]), ("docno_desc", ["9", "100", "10", "011"])],
)  # fmt: skip
def test_numeric_id_orders_against_text_orders(rule: str, order: list[str]) -> None:
    ids = ["100", "9", "011", "10"]
    for rel in ids:
        frame = pd.DataFrame({"row": "a", "user_id": "u", "item_id": ids,
                              "label": [int(i == rel) for i in ids], "score": 1.0})  # fmt: skip
        ev = evaluate(frame, parse_measures(["HR@1"]), [rule], rank_cap=None)
        rank = int(ev[rule].ranks[0, 0])
        assert rank == order.index(rel) + 1, (rule, rel)


def test_numeric_id_orders_refuse_other_ids_and_summary_tables() -> None:
    frame = pd.DataFrame({"row": ["a", "a", "b", "b"], "user_id": "u", "item_id": ["1", "2", "3", "x7"],
                          "label": [1, 0, 1, 0], "score": 1.0})  # fmt: skip
    with pytest.raises(ValueError, match=r"item id 'x7' \(row 'b'\) is not a whole number"):
        evaluate(frame, parse_measures(["HR@1"]), ["item_id_numeric"])
    summary = pd.DataFrame({"row": ["a"], "user_id": ["u"], "item_id": ["1"], "label": [1],
                            "score": [1.0], "n_higher": [0], "n_tied": [3], "n_lower": [0]})  # fmt: skip
    with pytest.raises(ValueError, match="a summary table does not keep"):
        evaluate(summary, parse_measures(["HR@1"]), ["item_id_numeric_desc"])

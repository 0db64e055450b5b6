"""The probe names the behaviour of hand-written evaluators (tests/probe/evaluators.py) from
their values alone, says how it decided, and refuses evaluators that return no usable values."""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import numpy as np
import pandas as pd
import pytest

from tieaudit.evaluation.evaluate import evaluate
from tieaudit.ties.measures import parse_measure
from tieaudit.probe import ProbeError, candidate_rules, probe
from tieaudit.probe.calls import Caller, call_evaluator
from tieaudit.tables.candidates import CandidateTable
from tieaudit.probe.cases import (
    MAX_HEIGHT,
    crafted_table,
    one_relevant_table,
    probe_tables,
    shared_table,
    standard_table,
)
from tieaudit.probe.report import summary, to_json, to_markdown
from tieaudit.ties.rules import RuleKind, TieRule, get_kind, rule_kinds
from tieaudit.ties.rules import base as rules_base

from . import evaluators as E


@pytest.mark.parametrize("behaviour", list(E.PROBE_ONLY))
def test_each_probe_only_behaviour_is_named_and_a_one_detail_variant_is_not(
    behaviour: str,
) -> None:
    exact, variant = E.PROBE_ONLY[behaviour]
    res = probe(exact, "nDCG@10", name=behaviour)
    assert res.rule == behaviour, res.evidence
    assert res.matches == [behaviour] and not res.invariant
    off = probe(variant, "nDCG@10", name=f"{behaviour} variant")
    assert off.rule != behaviour and "parameters" not in off.extra, off.evidence
    if behaviour == "heap_first_k":  # entering at or above the smallest keeps the last stored
        assert off.rule == "reversed_input"


@pytest.mark.parametrize(("metric", "size"), [("nDCG@10", "= 10"), ("nDCG@3", "= 3")])
def test_heaps_are_named_with_their_size(metric: str, size: str) -> None:
    for behaviour in ("heap_first_k", "score_id_heap"):
        res = probe(E.PROBE_ONLY[behaviour][0], metric)
        assert (res.rule, res.extra["parameters"]) == (behaviour, {"K": size}), res.evidence
        assert res.deterministic
        assert f"{behaviour} (K {size}; a behaviour of the evaluator's internals" in summary(res)


def test_a_heap_larger_than_the_cutoff_is_named_with_its_size() -> None:
    keep_20 = E._emitted(lambda s, ids, k: E._first_k(strict=True)(s, ids, 20))
    res = probe(keep_20, "nDCG@10")
    assert (res.rule, res.extra["parameters"]) == ("heap_first_k", {"K": "= 20"}), res.evidence


def test_epsilon_noise_is_named_with_its_binade_and_fallback() -> None:
    res = probe(E.epsilon_noise, "nDCG@10")
    assert res.rule == "epsilon_noise" and not res.deterministic
    params = res.extra["parameters"]
    assert params == {"epsilon": "(9.54e-07, 1.91e-06]", "falls back to": "input_order"}
    assert "below 2^5" in res.evidence[0]
    assert json.loads(to_json(res))["parameters"] == params


def test_a_plain_shuffle_is_no_noise() -> None:
    res = probe(E.shuffled_per_call, "nDCG@10")
    assert res.rule == "shuffled_per_call" and "epsilon" not in res.extra["parameters"]


def test_an_unstable_sort_in_float32_is_unstable_at_single_precision() -> None:
    # values computed in float32 are no order's values within 1e-9: at 1e-6 they all are, and
    # that tolerance gives the verdict (not "unknown" from the strict one)
    res = probe(E.quicksort_float32, "nDCG@10")
    assert res.rule == "unstable" and res.extra["tolerance"] == 1e-6, res.evidence
    assert res.deterministic and not res.invariant
    assert "single precision (float32)" in res.evidence[-1]


def test_a_shuffle_per_call_converges_to_expected_and_a_biased_one_does_not() -> None:
    res = probe(E.shuffled_per_call, "nDCG@10")
    assert res.rule == "shuffled_per_call" and not res.deterministic
    assert res.extra["parameters"]["calls"] == "32"
    assert "unbiased shuffle" in res.evidence[0]
    biased = probe(E.coin_flip_per_call, "nDCG@10")
    assert biased.rule == "unstable" and "parameters" not in biased.extra


def test_a_position_keyed_noise_says_what_it_is_keyed_by() -> None:
    res = probe(E.position_keyed, "nDCG@10")
    assert res.rule == "position_keyed" and res.deterministic and not res.invariant
    assert res.extra["parameters"] == {
        "keyed by": "the row's place in the call and the position in it", "seeded": "per call"}

    def per_row_seed(frame: pd.DataFrame, k: int) -> list[float]:  # the same noise every row
        return [E._ndcg(lab[np.argsort(-(s + np.random.default_rng(7).uniform(-1e-12, 1e-12,
                                                                             len(s))),
                                       kind="stable")], k)
                for lab, s, _ in E._rows(frame)]  # fmt: skip

    res = probe(per_row_seed, "nDCG@10")
    assert res.extra["parameters"]["keyed by"] == "the position in the row alone", res.evidence


def test_a_growing_cutoff_says_what_a_row_of_ties_gives() -> None:
    res = probe(E.growing_cutoff, "nDCG@10")
    assert res.extra["parameters"] == {"every candidate tied": "NaN"}, res.evidence
    assert res.deterministic and not res.invariant  # ties in stored order
    # measured at the row's length where every candidate ties (the grown cutoff holds it all)

    def no_nan(frame: pd.DataFrame, k: int) -> list[float]:
        out = []
        for lab, s, _ in E._rows(frame):
            grown = k if len(s) <= k else int((s >= np.sort(s)[::-1][k - 1]).sum())
            out.append(E._ndcg(lab[np.argsort(-s, kind="stable")], grown))
        return out

    res = probe(no_nan, "nDCG@10")
    assert res.rule == "growing_cutoff", res.evidence
    assert res.extra["parameters"] == {"every candidate tied": "measured at its length"}


def test_an_order_that_reads_no_scores_is_not_said_to_cast_them() -> None:
    # stored order ignores a perturbation of the scores: "a cast to round:0 or coarser" would be
    # read from values the scores play no part in (trectools' nDCG on a run it did not sort)
    res = probe(E.scores_ignored, "nDCG@10")
    assert res.rule == "scores_ignored" and res.extra["parameters"] == {"form": "stored order"}
    assert "score_casting" not in res.extra and not any("cast" in e for e in res.evidence)


def test_pandas_average_rank_is_the_shared_mean_not_mean_rank() -> None:
    res = probe(E.BEHAVIOURS["shared_mean"], "nDCG@10")
    assert res.rule == "shared_mean" and "which tell it from mean_rank" in res.evidence[0]
    # the same rank read for one relevant item a row is mean_rank
    res = probe(E.mean_rank, "nDCG@10")
    assert res.rule == "mean_rank" and res.extra["reads_one_relevant"] == "first"


def test_shared_places_are_told_from_the_bounds_by_two_relevant_items() -> None:
    for behaviour, bound in (("shared_first", "optimistic"), ("shared_last", "pessimistic")):
        res = probe(E.BEHAVIOURS[behaviour], "nDCG@10")
        assert res.rule == behaviour and f"which tell it from {bound}" in res.evidence[0]
        assert probe(E.BEHAVIOURS[bound], "nDCG@10").rule == bound

    def hit_shared_first(frame: pd.DataFrame, k: int) -> list[float]:
        return [float(any(1 + (s > x).sum() <= k for x in s[lab == 1]))
                for lab, s, _ in E._rows(frame)]  # fmt: skip

    # HR reads the best relevant item alone: shared_first is optimistic there
    res = probe(hit_shared_first, "HR@10")
    assert res.rule == "optimistic" and res.matches == ["optimistic"], res.evidence


@pytest.mark.parametrize("behaviour", list(E.BEHAVIOURS))
def test_each_named_behaviour_is_identified(behaviour: str) -> None:
    res = probe(E.BEHAVIOURS[behaviour], "nDCG@10", name=behaviour)
    assert res.rule == behaviour, res.evidence
    if behaviour == "unstable":
        assert not res.deterministic and not res.invariant
    else:
        assert res.deterministic
        # the verdict from the permuted copies agrees with what the rule declares
        assert res.invariant == get_kind(behaviour).invariant


@pytest.mark.parametrize("metric", ["nDCG@1", "nDCG@20"])
@pytest.mark.parametrize("behaviour", ["input_order", "reversed_input", "item_id", "docno_desc"])
def test_identified_at_other_cutoffs(behaviour: str, metric: str) -> None:
    assert probe(E.BEHAVIOURS[behaviour], metric).rule == behaviour


def test_candidates_are_the_registered_unseeded_single_ranking_rules() -> None:
    names = [str(r) for r in candidate_rules()]
    assert names == ["input_order", "reversed_input", "optimistic", "pessimistic", "expected",
                     "item_id", "docno_desc", "item_id_numeric", "item_id_numeric_desc",
                     "mean_rank", "shared_first", "shared_last", "shared_mean"]  # fmt: skip
    assert names == [k.name for k in rule_kinds() if k.name in names]  # registry order
    # for measures of the best relevant item alone, shared_first gives optimistic's values
    for metric in ("HR@10", "MRR@5"):
        assert [str(r) for r in candidate_rules(metric)] == [n for n in names
                                                              if n != "shared_first"]  # fmt: skip
    assert [str(r) for r in candidate_rules("nDCG@10")] == names


@pytest.mark.parametrize("metric", ["nDCG@10", "HR@10", "HR@1", "nDCG@1", "MRR@10", "HR@3"])
def test_crafted_cases_tell_every_candidate_apart(metric: str) -> None:
    measure = parse_measure(metric)
    rules = candidate_rules(measure)
    tables = list(probe_tables(crafted_table(measure)[0]).values()) + [shared_table(measure)]
    values = {str(r): [] for r in rules}
    for table in tables:
        ev = evaluate(table, [measure], rules, n_seeds=1, rank_cap=None)
        for r in rules:
            values[str(r)].append(ev[r].values[measure])
    stacked = {r: np.concatenate(v) for r, v in values.items()}
    names = list(stacked)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            # at k = 1 the mean rank g + (t+1)/2 and the last place g + t are inside the cutoff
            # together (g = 0, t = 1): one function of the ranks, which no case can tell apart;
            # so are the shared mean and last places of every tied relevant item
            same = measure.k == 1 and {a, b} in ({"pessimistic", "mean_rank"},
                                                 {"shared_last", "shared_mean"})  # fmt: skip
            assert np.allclose(stacked[a], stacked[b], atol=1e-6) == same, (a, b)


def test_crafted_cases_have_groups_larger_than_insertion_sort() -> None:
    table, lays = crafted_table(parse_measure("nDCG@10"))
    assert max(lay.m for lay in lays) > 16 and table.n_rows == len(lays)


def test_numpy_quicksort_is_unstable_with_evidence() -> None:
    res = probe(E.quicksort, "nDCG@10")
    assert res.rule == "unstable" and res.deterministic and not res.invariant
    assert "stored order" in res.evidence[0]
    assert any(e.startswith("closest rule:") for e in res.evidence)


@pytest.mark.parametrize("metric", ["nDCG@10", "nDCG@2", "nDCG@20"])
def test_mean_rank_plugged_in_is_named_and_a_half_place_off_is_not(metric: str) -> None:
    res = probe(E.mean_rank, metric)
    assert res.rule == "mean_rank" and res.invariant and res.deterministic, res.evidence
    off = probe(E.mean_rank_half_off, metric)
    assert off.rule == "unknown" and off.invariant
    assert any("none that an order of the tie group gives" in e for e in off.evidence)


def test_at_cutoff_1_the_mean_rank_is_not_told_from_the_last_place() -> None:
    res = probe(E.mean_rank, "nDCG@1")
    assert "with nDCG@1 the crafted cases cannot tell pessimistic from mean_rank" in res.evidence
    # written for one relevant item a row, it reads the first stored: with it alone the last
    # place and the mean rank give the same values at k = 1 (and the shared last place does
    # not, where a relevant item alone at the top is stored after another)
    assert res.rule == "unknown" and res.matches == ["pessimistic", "mean_rank"], res.evidence
    assert res.extra["reads_one_relevant"] == "first"


def test_inflation_of_stored_order_on_the_standard_table() -> None:
    res = probe(E.input_order, "nDCG@10")
    # relevant item stored first: the stored order is the optimistic bound there
    assert res.mean == pytest.approx(res.optimistic, abs=1e-12)
    assert res.pessimistic < res.expected < res.optimistic
    assert res.inflation == pytest.approx(res.mean - res.expected)
    exp = probe(E.expected, "nDCG@10")
    assert exp.inflation == pytest.approx(0.0, abs=1e-12)


def test_single_precision_evaluator_is_identified_and_flagged() -> None:
    def float32(frame: pd.DataFrame, k: int) -> np.ndarray:
        return np.asarray(E.expected(frame, k), dtype=np.float32)

    res = probe(float32, "nDCG@10")
    assert res.rule == "expected"
    assert any("single precision" in e for e in res.evidence)


def test_a_rule_right_on_crafted_cases_only_is_unknown() -> None:
    def two_faced(frame: pd.DataFrame, k: int) -> list[float]:
        crafted = str(frame["row"].iloc[0]).startswith("r")
        return (E.input_order if crafted else E.pessimistic)(frame, k)

    res = probe(two_faced, "nDCG@10")
    assert res.rule == "unknown"
    assert "standard tie-heavy table it differs from input_order" in res.evidence[-1]


class _EvenLinesFirst(RuleKind):
    """A toy rule: among equal scores, lines at even positions of the table first."""

    name = "even_lines_first"
    order = "even stored positions first, then stored order"
    invariant = False

    def line_key(self, ties, seed):
        n = ties.table.n_candidates
        idx = np.arange(n)
        return (idx % 2) * n + idx


def _even_lines_first(frame: pd.DataFrame, k: int) -> list[float]:
    idx = np.arange(len(frame))
    key = pd.Series((idx % 2) * len(frame) + idx, index=frame.index)
    out = []
    for _, part in frame.assign(key=key).groupby("row", sort=False):
        ranked = part.sort_values(["score", "key"], ascending=[False, True])
        top = ranked["label"].to_numpy()[:k]
        out.append(float((top / np.log2(np.arange(2, len(top) + 2))).sum()))
    return out


def test_a_newly_registered_rule_is_identified(monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe(_even_lines_first, "nDCG@10").rule == "unstable"  # unknown to the registry
    monkeypatch.setitem(rules_base._REGISTRY, "even_lines_first", _EvenLinesFirst())
    assert "even_lines_first" in [str(r) for r in candidate_rules()]
    res = probe(_even_lines_first, "nDCG@10")
    assert res.rule == "even_lines_first", res.evidence
    assert probe(E.input_order, "nDCG@10").rule == "input_order"  # still told apart


def test_seeded_rules_are_no_candidates() -> None:
    assert TieRule("hash", 0) not in candidate_rules()
    assert all(not r.spec.seeded for r in candidate_rules())


# ---------------------------------------------------------------------- bad evaluators
def _raises(frame, k):
    raise RuntimeError("index out of range")


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_raises, "raised RuntimeError on the crafted tie cases: index out of range"),
        (lambda f, k: [0.5] * 3, "returned 3 values for"),
        (lambda f, k: None, "returned None"),
        (lambda f, k: "0.5", "returned '0.5'"),
        (lambda f, k: [np.nan] * f["row"].nunique(), "returned nan for row 'r0001' (row 1 of"),
        (lambda f, k: ["x"] * f["row"].nunique(), "values that are not numbers"),
        (lambda f, k: np.zeros((f["row"].nunique(), 2)), "an array of shape"),
    ],
)
def test_bad_evaluators_get_a_clear_error(fn, message: str) -> None:
    with pytest.raises(ProbeError, match=None) as info:
        probe(fn, "nDCG@10", name="mine")
    assert message in str(info.value) and str(info.value).startswith("mine ")


def test_reports_hold_the_verdict() -> None:
    res = probe(E.reversed_input, "nDCG@10", name="rev")
    data = json.loads(to_json(res))
    assert {"rule", "invariant", "mean", "expected"} <= set(data)
    assert data["rule"] == "reversed_input" and data["invariant"] is False
    assert data["mean"] == pytest.approx(res.mean)
    md = to_markdown(res)
    assert "| tie rule | reversed_input |" in md and "## Evidence" in md
    text = summary(res)
    assert "tie rule:            reversed_input" in text and len(text.splitlines()) <= 24


# ---------------------------------------------------------------------- evaluators that fool a naive probe
@pytest.mark.parametrize("timeout", [None, 60.0])
def test_a_reused_buffer_is_copied(timeout: float | None) -> None:
    res = probe(E.reused_buffer, "nDCG@10", timeout=timeout)
    assert res.rule == "input_order" and not res.invariant, res.evidence
    assert res.mean == pytest.approx(probe(E.input_order, "nDCG@10").mean, abs=0)


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_a_cache_by_user_id_does_not_read_as_invariant(timeout: float | None) -> None:
    res = probe(E.cached_by_user, "nDCG@10", timeout=timeout)
    assert res.rule == "input_order" and not res.invariant, res.evidence
    again = probe(E.cached_by_user, "nDCG@10", timeout=timeout)  # its cache is warm now
    assert again.rule == "input_order" and again.as_dict() == res.as_dict()


def test_every_call_sees_row_and_user_ids_no_other_call_saw() -> None:
    seen: list[tuple[list[str], list[str], list[str]]] = []

    def spy(frame: pd.DataFrame, k: int) -> list[float]:
        seen.append((list(frame["row"].unique()), list(frame["user_id"].unique()),
                     list(frame["item_id"])))  # fmt: skip
        return E.input_order(frame, k)

    probe(spy, "nDCG@10", timeout=None)
    crafted = seen[:-1]  # the last call is the standard table
    rows = [r for s in crafted for r in s[0]]
    users = [u for s in crafted for u in s[1]]
    assert len(set(rows)) == len(rows) and len(set(users)) == len(users)
    assert all(s[0] == sorted(s[0]) for s in crafted)  # first appearance is still id order
    assert all(i.isdigit() for s in seen for i in s[2])  # item ids are whole numbers


def test_ids_tell_numeric_from_code_point_order() -> None:
    table, lays = crafted_table(parse_measure("nDCG@10"))
    assert any(lay.numeric_place not in (lay.id_place, lay.m - lay.id_place) for lay in lays)
    for lay in lays:
        ids = lay.group_ids()
        assert ids == sorted(ids)  # code-point order
        assert sorted(ids, key=int).index(ids[lay.id_place]) == lay.numeric_place
    assert probe(E.item_id, "nDCG@10").rule == "item_id"


def test_values_come_back_from_the_child_bit_for_bit() -> None:
    table = crafted_table(parse_measure("nDCG@10"))[0]
    with Caller(E.expected, "exp", timeout=60) as call:
        there = call(table, 10, "crafted tie cases", ".x")
    assert np.array_equal(there, call_evaluator(E.expected, table, 10, tag=".x"))
    assert there.dtype == np.float64


# ---------------------------------------------------------------------- stuck, exiting evaluators
def _stuck(frame: pd.DataFrame, k: int) -> list[float]:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as outside a terminal
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(0.05)


def _late(frame: pd.DataFrame, k: int) -> list[float]:
    if len(frame) >= 20_000:  # fast on the crafted cases, stuck on the standard table
        _stuck(frame, k)
    return E.input_order(frame, k)


class _Custom(BaseException):
    pass


def _exit0(frame, k):
    sys.exit(0)


def _exit3(frame, k):
    sys.exit(3)


def _custom(frame, k):
    raise _Custom("out of band")


def _dies(frame, k):
    os._exit(0)


def test_a_stuck_evaluator_is_stopped_and_named() -> None:
    start = time.monotonic()
    with pytest.raises(ProbeError) as info:
        probe(_stuck, "nDCG@10", name="stuck", timeout=0.5)
    assert time.monotonic() - start < 30
    assert str(info.value) == (
        "stuck did not return within 0.5 s on the crafted tie cases and was stopped "
        "(--timeout sets the limit)"
    )
    with pytest.raises(ProbeError, match="late did not return within 0.5 s on the standard"):
        probe(_late, "nDCG@10", name="late", timeout=0.5)


@pytest.mark.parametrize("timeout", [None, 60.0])
@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (_exit0, "mine called sys.exit(0) on the crafted tie cases"),
        (_exit3, "mine called sys.exit(3) on the crafted tie cases"),
        (_custom, "mine raised _Custom (a BaseException) on the crafted tie cases: out of band"),
    ],
)
def test_exits_and_base_exceptions_are_errors(fn, message: str, timeout: float | None) -> None:
    with pytest.raises(ProbeError) as info:
        probe(fn, "nDCG@10", name="mine", timeout=timeout)
    assert str(info.value) == message


def test_an_evaluator_ending_its_process_is_named() -> None:
    with pytest.raises(ProbeError, match=r"^mine ended the process running it \(exit status 0\)"):
        probe(_dies, "nDCG@10", name="mine")


@pytest.mark.parametrize("metric", ["nDCG@10", "nDCG@1", "nDCG@3"])
def test_numeric_id_orders_are_named_and_near_misses_are_not(metric: str) -> None:
    for fn, rule in ((E.item_number, "item_id_numeric"),
                     (E.item_number_desc, "item_id_numeric_desc")):  # fmt: skip
        res = probe(fn, metric)
        assert res.rule == rule and res.invariant, res.evidence
    # the same sorts on the ids' text, and ties by the ids' length then stored order
    assert probe(E.item_id, metric).rule == "item_id"
    assert probe(E.docno_desc, metric).rule == "docno_desc"
    assert probe(E.by_id_length, metric).rule not in ("item_id_numeric", "item_id_numeric_desc")


def test_a_numeric_rule_is_not_checked_on_a_table_whose_ids_are_no_numbers() -> None:
    def numbers_if_any(frame: pd.DataFrame, k: int) -> list[float]:
        numeric = frame["item_id"].str.fullmatch("[0-9]+").all()
        return (E.item_number if numeric else E.item_id)(frame, k)

    table = standard_table(rows=30).to_frame()
    table["item_id"] = "i" + table["item_id"]
    res = probe(numbers_if_any, "nDCG@10", inflation_table=table)
    assert res.rule == "item_id_numeric"
    assert "item id 'i00099' (row 's00001') is not a whole number" in res.evidence[-1]


def test_calls_run_in_a_child_unless_there_is_no_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    pids: set[int] = set()

    def where(frame: pd.DataFrame, k: int) -> list[float]:
        pids.add(os.getpid())
        return E.input_order(frame, k)

    table = crafted_table(parse_measure("nDCG@10"))[0]
    with Caller(where, "w", timeout=60) as call:
        child = call(table, 10, "crafted tie cases")
    assert not pids  # the calls ran in another process
    monkeypatch.setattr("multiprocessing.get_all_start_methods", lambda: ["spawn"])
    with Caller(where, "w", timeout=60) as call:
        assert np.array_equal(call(table, 10, "crafted tie cases"), child)
    assert pids == {os.getpid()}


@pytest.mark.parametrize("digits", [5, 3])
def test_rounded_values_are_compared_with_a_matching_tolerance(digits: int) -> None:
    def rounded(frame: pd.DataFrame, k: int) -> np.ndarray:
        return np.round(np.asarray(E.expected(frame, k)), digits)

    res = probe(rounded, "nDCG@10")
    assert res.rule == "expected", res.evidence
    assert res.extra["tolerance"] == pytest.approx(0.5 * 10.0**-digits, rel=1e-6)
    assert any(f"every value is rounded to {digits} decimals" in e for e in res.evidence)


def test_rounding_does_not_hide_a_wrong_rule() -> None:
    def rounded_off(frame: pd.DataFrame, k: int) -> np.ndarray:  # a mean rank half a place off
        return np.round(np.asarray(E.mean_rank_half_off(frame, k)), 5)

    assert probe(rounded_off, "nDCG@10").rule == "unknown"


def _bf16(s: np.ndarray) -> np.ndarray:
    bits = s.astype(np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


_CASTS = {
    "float32": lambda s: s.astype(np.float32),
    "float16": lambda s: s.astype(np.float16),
    "bfloat16": _bf16,
    "round:5": lambda s: np.round(s, 5),
}


@pytest.mark.parametrize("cast", list(_CASTS))
def test_a_cast_of_the_scores_is_detected(cast: str) -> None:
    def casting(frame: pd.DataFrame, k: int) -> list[float]:
        return E.input_order(frame.assign(score=_CASTS[cast](frame["score"].to_numpy())), k)

    res = probe(casting, "nDCG@10")
    assert res.rule == "input_order", res.evidence
    # float16 and round:3, bfloat16 and round:2 have last places within a factor of two at 1.0
    twins = {"float16": ["float16", "round:3"], "bfloat16": ["bfloat16", "round:2"]}
    assert sorted(res.extra["score_casting"]) == sorted(twins.get(cast, [cast]))
    assert "give the values of exact ties" in res.evidence[-1]
    shown = " or ".join(res.extra["score_casting"])
    assert f"score casting:       {shown}" in summary(res)
    assert f"| score casting | {shown} |" in to_markdown(res)


def test_no_cast_is_detected_as_none_and_a_pessimistic_order_says_nothing() -> None:
    res = probe(E.input_order, "nDCG@10")
    assert res.extra["score_casting"] == ["none"] and "score casting" not in summary(res)
    assert "| score casting | none |" in to_markdown(res)
    assert "score_casting" not in probe(E.pessimistic, "nDCG@10").extra
    assert "score_casting" not in probe(E.input_order, "nDCG@10", casting=False).extra


# ---------------------------------------------------------------------- numeric edge values
@pytest.mark.parametrize("metric", ["nDCG@10", "nDCG@1", "nDCG@20"])
@pytest.mark.parametrize(
    ("fn", "invariant", "shows"),
    [
        (E.signed_zero_apart, False, "it orders -0.0 and 0.0 apart"),
        (E.signed_zero_optimistic, True, "it orders -0.0 and 0.0 apart"),
        (E.scores_as_text, False, "as text ('9.0' above '10.0')"),
    ],
)
def test_signed_zeros_and_scores_as_text_are_no_rule(fn, invariant: bool, shows: str,
                                                      metric: str) -> None:  # fmt: skip
    res = probe(fn, metric)
    assert res.rule == "unknown" and res.matches == [], res.evidence
    assert res.deterministic and res.invariant == invariant
    assert "every value on the rows of plain scores matches" in res.evidence[0]
    assert shows in res.evidence[0]
    assert "score_casting" not in res.extra  # no order named to read a perturbation against


def test_the_crafted_cases_hold_signed_zeros_and_text_ordered_otherwise() -> None:
    table, lays = crafted_table(parse_measure("nDCG@10"))
    frame = table.to_frame()
    edge = [lay.values for lay in lays if not lay.plain]
    assert {"minus_zero", "plus_zero", "text"} == set(edge)
    scores = frame["score"].to_numpy()
    assert (scores == 0).any() and np.signbit(scores[scores == 0]).any()
    assert not np.signbit(scores[scores == 0]).all()
    text = frame["score"].map(repr)
    assert (text == "9.0").any() and (text == "10.0").any()  # '9.0' > '10.0' as text


# ---------------------------------------------------------------------- coarse casts
@pytest.mark.parametrize(
    ("fn", "found"),
    [
        (E.rounds_to_1, ["round:1"]),
        (E.rounds_to_0, ["round:0", "coarser"]),
        (E.truncates, ["round:0", "coarser"]),
    ],
)
def test_a_coarse_rounding_is_named_as_found(fn, found: list[str]) -> None:
    res = probe(fn, "nDCG@10")
    assert res.rule == "input_order", res.evidence
    assert res.extra["score_casting"] == found
    shown = " or ".join(found)
    assert f"it casts or rounds its scores to {shown}" in res.evidence[-1]
    assert f"score casting:       {shown}\n" in summary(res)


# ---------------------------------------------------------------------- one relevant item a row
@pytest.mark.parametrize("metric", ["nDCG@10", "nDCG@1", "nDCG@3"])
@pytest.mark.parametrize(
    ("fn", "rule", "which"),
    [
        (E.one_relevant_optimistic, "optimistic", "first"),
        (E.one_relevant_pessimistic, "pessimistic", "first"),
        (E.last_relevant_pessimistic, "pessimistic", "last"),
        (E.one_relevant_input_order, "input_order", "first"),
    ],
)
def test_an_evaluator_reading_one_relevant_item_a_row_is_named_and_says_so(
    fn, rule: str, which: str, metric: str
) -> None:
    res = probe(fn, metric)
    if metric == "nDCG@1" and rule == "pessimistic":  # the mean rank is the last place there
        assert res.rule == "unknown" and res.matches == ["pessimistic", "mean_rank"]
        assert res.extra["reads_one_relevant"] == which
        return
    assert (res.rule, res.matches) == (rule, [rule]), res.evidence
    assert res.extra["reads_one_relevant"] == which
    assert f"only with the {which} stored relevant item of a row counted: it reads one " \
        "relevant item a row" in res.evidence[0]
    told = f"{rule} (reads one relevant item a row, the {which} stored)"
    assert f"tie rule:            {told}\n" in summary(res)
    assert f"| tie rule | {told} |" in to_markdown(res)
    assert json.loads(to_json(res))["reads_one_relevant"] == which


def test_a_hit_rate_reading_one_relevant_item_a_row_is_named() -> None:
    res = probe(E.one_relevant_hit_pessimistic, "HR@10")
    assert (res.rule, res.extra["reads_one_relevant"]) == ("pessimistic", "first"), res.evidence


@pytest.mark.parametrize("behaviour", [b for b in E.BEHAVIOURS if b != "unstable"])
def test_an_evaluator_reading_every_relevant_item_is_named_as_before(behaviour: str) -> None:
    res = probe(E.BEHAVIOURS[behaviour], "nDCG@10")
    assert res.rule == behaviour
    # the hand-written mean rank reads the row's first relevant item alone, as OGB does
    assert ("reads_one_relevant" in res.extra) == (behaviour == "mean_rank"), res.evidence


def test_one_relevant_item_a_row_does_not_name_an_unknown_evaluator() -> None:
    res = probe(E.one_relevant_dcg_all_ideal, "nDCG@10")
    assert res.rule == "unknown" and res.matches == [], res.evidence
    assert "none of them, counting every relevant item or one a row" in res.evidence[0]
    assert "reads_one_relevant" not in res.extra


def test_one_rule_right_on_one_relevant_item_a_row_only_is_named_with_the_evidence() -> None:
    # (a rule without a one-item twin: a shared place and its twin give the same crafted
    # values, and the probe names neither of two)
    def stable_one_ideal(frame: pd.DataFrame, k: int) -> list[float]:
        """A stable sort, every relevant item counted, the ideal DCG that of one item."""
        out = []
        for lab, s, _ in E._rows(frame):
            ranked = lab[np.argsort(-s, kind="stable")][:k]
            out.append(float((ranked / np.log2(np.arange(2, len(ranked) + 2))).sum()))
        return out

    res = probe(stable_one_ideal, "nDCG@10")
    assert res.rule == "input_order" and "reads_one_relevant" not in res.extra, res.evidence
    assert "it is input_order with one relevant item a row only" in res.evidence[1]


def test_the_one_relevant_table_keeps_the_first_or_last_stored_relevant_item() -> None:
    shared = shared_table(parse_measure("nDCG@10")).to_frame()
    for which, pick in (("first", "first"), ("last", "last")):
        one = one_relevant_table(CandidateTable.from_frame(shared), which).to_frame()
        assert (one.groupby("row")["label"].sum() == 1).all()
        kept = one[one["label"] > 0].set_index("row")["item_id"]
        want = shared[shared["label"] > 0].groupby("row")["item_id"].agg(pick)
        assert kept.sort_index().tolist() == want.sort_index().tolist()


# ---------------------------------------------------------------------- cutoffs and timeouts
def test_the_crafted_rows_do_not_grow_with_the_cutoff() -> None:
    at_most = parse_measure(f"nDCG@{MAX_HEIGHT}")
    huge = parse_measure("nDCG@100000000")
    assert crafted_table(huge)[0].n_candidates == crafted_table(at_most)[0].n_candidates
    assert shared_table(huge).n_candidates == shared_table(at_most).n_candidates
    assert crafted_table(at_most)[0].n_candidates < 400_000


@pytest.mark.parametrize("timeout", [1e10, float("inf")])
def test_a_timeout_longer_than_the_system_waits_is_waited(timeout: float) -> None:
    table = crafted_table(parse_measure("nDCG@10"))[0]
    with Caller(E.input_order, "w", timeout=timeout) as call:
        assert np.array_equal(call(table, 10, "crafted tie cases"),
                              call_evaluator(E.input_order, table, 10))  # fmt: skip


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_an_evaluator_refusing_rows_with_two_relevant_items_is_named_from_the_others(
    timeout: float | None,
) -> None:
    def one_target(frame: pd.DataFrame, k: int) -> list[float]:  # as OGB's, torcheval's, Keras'
        if (frame.groupby("row")["label"].sum() != 1).any():
            raise ValueError("takes one relevant item a row")
        return E.one_relevant_optimistic(frame, k)

    res = probe(one_target, "nDCG@10", timeout=timeout)
    assert (res.rule, res.matches) == ("optimistic", ["optimistic"]), res.evidence
    assert res.extra["reads_one_relevant"] == "only"
    assert "raised ValueError on the crafted cases with two relevant items a row: takes one " \
        "relevant item a row): it takes one relevant item a row" in res.evidence[0]
    assert "optimistic (takes one relevant item a row, refuses rows with more)" in summary(res)


def test_a_one_item_twin_gives_the_kind_s_values_with_one_relevant_item_a_row() -> None:
    twins = {k.name: k.one_item_twin for k in rule_kinds() if k.one_item_twin}
    assert twins == {"shared_first": "optimistic", "shared_last": "pessimistic",
                     "shared_mean": "mean_rank"}
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"row": np.repeat(np.arange(300), 10).astype(str),
                          "user_id": np.repeat(np.arange(300), 10).astype(str),
                          "item_id": np.tile(np.arange(10), 300).astype(str),
                          "label": np.tile(np.r_[1, np.zeros(9, dtype=int)], 300),
                          "score": rng.integers(0, 3, n).astype(float)})  # fmt: skip
    measures = [parse_measure(m) for m in ("nDCG@1", "nDCG@3", "HR@2", "MRR@5", "P@3")]
    shared = shared_table(parse_measure("nDCG@10"))
    for table in (CandidateTable.from_frame(frame), one_relevant_table(shared, "first")):
        for kind, twin in twins.items():
            ev = evaluate(table, measures, [TieRule(kind), TieRule(twin)], n_seeds=1)
            for m in measures:
                assert np.allclose(ev[kind].values[m], ev[twin].values[m]), (kind, m)
    # with two relevant items in one group they differ: no twin there
    for kind, twin in twins.items():
        ev = evaluate(shared, measures[1:2], [TieRule(kind), TieRule(twin)], n_seeds=1)
        assert not np.allclose(ev[kind].values[measures[1]], ev[twin].values[measures[1]]), kind

"""tieaudit.torchmetrics: each drop-in equals tieaudit.evaluate under every rule (flat and 2-D
updates, several updates), equals torchmetrics' own metric when nothing ties, keeps a state of a
few sums whatever the number of updates, and gives on two processes the value of one."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torchmetrics.retrieval as tmr
from hypothesis import given, settings
from hypothesis import strategies as st

import tieaudit
from tieaudit import torchmetrics as ta
from tieaudit.tables.candidates import CandidateError
from tieaudit.ties.measures import Measure
from tieaudit.ties.rules import TieRule, rule_kinds
from tests.conftest import examples

ROOT = Path(__file__).resolve().parents[1]
NAMES = ["RetrievalNormalizedDCG", "RetrievalHitRate", "RetrievalMRR", "RetrievalPrecision",
         "RetrievalRecall"]  # fmt: skip
MEASURE = {"RetrievalNormalizedDCG": "nDCG", "RetrievalHitRate": "HR", "RetrievalMRR": "MRR",
           "RetrievalPrecision": "P", "RetrievalRecall": "Recall"}  # fmt: skip
RULES = [TieRule(k.name, 0 if k.seeded else None) for k in rule_kinds()]
BIG = 2**40  # a cutoff beyond every row: every candidate counts


# ---------------------------------------------------------------------------- the oracle
def _lines(preds, target, indexes, ignore_index):
    """The update's lines as tieaudit reads them: query, position within it, label, score."""
    p = preds.detach().to(torch.float64).reshape(-1).numpy()
    t = target.detach().reshape(-1).numpy()
    q = (indexes.reshape(-1).numpy() if indexes is not None
         else np.repeat(np.arange(preds.shape[0]), preds.shape[1]))  # fmt: skip
    keep = t != ignore_index if ignore_index is not None else np.ones(len(t), bool)
    frame = pd.DataFrame({"row": q[keep], "label": t[keep].astype(np.float64), "score": p[keep]})
    frame["item_id"] = frame.groupby("row", sort=False).cumcount()
    frame["user_id"] = frame["row"]
    return frame


def oracle(name, updates, rule, top_k=None, empty="neg", ignore_index=None, adaptive=False,
           aggregation="mean"):  # fmt: skip
    """The value from tieaudit.evaluate on each update's table (with every query's own cutoff
    for precision), empty queries as torchmetrics counts them."""
    values = []
    for preds, target, indexes in updates:
        frame = _lines(preds, target, indexes, ignore_index)
        has = frame.groupby("row", sort=False)["label"].transform("max") > 0
        n_empty = frame.loc[~has, "row"].nunique()
        values += [{"neg": 0.0, "pos": 1.0}[empty]] * n_empty if empty in ("neg", "pos") else []
        full = frame[has].reset_index(drop=True)
        if not len(full):
            continue
        length = full.groupby("row", sort=False).size().to_numpy()
        if MEASURE[name] == "P":
            k = (length if top_k is None else np.minimum(top_k, length) if adaptive
                 else np.full(len(length), top_k))  # fmt: skip
        else:
            k = np.full(len(length), BIG if top_k is None else top_k)
        ms = [Measure(MEASURE[name], int(x)) for x in np.unique(k)]
        ev = tieaudit.evaluate(full, ms, [rule])
        values += [ev[rule].values[Measure(MEASURE[name], int(x))][i] for i, x in enumerate(k)]
    if not values:
        return 0.0
    return float({"mean": np.mean, "min": np.min, "max": np.max}[aggregation](values))


def metric(name, **kwargs):
    return getattr(ta, name)(**kwargs)


def fed(m, updates):
    for preds, target, indexes in updates:
        if indexes is None:
            m.update(preds, target)
        else:
            m.update(preds, target, indexes=indexes)
    return m


def tie_heavy(seed, n_updates=3, queries=6, flat=True, empty=True, ignore=None, graded=False):
    """Updates of tie-heavy queries: scores on three levels, 1 to 12 candidates (2-D: 7), up
    to three relevant, some queries with none; disjoint query indexes, not in order. ``graded``:
    relevant targets are grades (integer 1 to 3, or float 0.5 to 3 in every other update), so a
    tie group holds several grades."""
    rng = np.random.default_rng(seed)
    out = []
    next_query = 0
    for _ in range(n_updates):
        if flat:
            lengths = rng.integers(1, 13, queries)
            q = np.repeat(rng.permutation(queries) + next_query, lengths)
            next_query += queries
            order = rng.permutation(len(q)) if rng.random() < 0.5 else np.arange(len(q))
            q = q[order]
            shape = (len(q),)
        else:
            shape = (queries, 7)
            q = None
        preds = torch.tensor(rng.integers(0, 3, shape) / 2.0, dtype=torch.float32)
        target = torch.tensor((rng.random(shape) < (0.3 if empty else 0.6)).astype(np.int64))
        if graded and len(out) % 2:
            target = target * torch.tensor(rng.choice([0.5, 1.0, 2.0, 3.0], shape),
                                           dtype=torch.float32)  # fmt: skip
        elif graded:
            target = target * torch.tensor(rng.integers(1, 4, shape))
        if not empty:  # every query a relevant candidate
            if flat:
                for query in np.unique(q):
                    target[np.flatnonzero(q == query)[0]] = 1
            else:
                target[:, 0] = 2 if graded else 1
        if ignore is not None:
            target[torch.tensor(rng.random(shape) < 0.15)] = ignore
        out.append((preds, target, None if q is None else torch.tensor(q)))
    return out


# ---------------------------------------------------------------------------- every rule
@pytest.mark.parametrize("rule", RULES, ids=str)
@pytest.mark.parametrize("flat", [True, False], ids=["flat", "2-D"])
@pytest.mark.parametrize("graded", [False, True], ids=["binary", "graded"])
def test_each_metric_equals_evaluate_for_every_rule(rule: TieRule, flat: bool,
                                                    graded: bool) -> None:  # fmt: skip
    # graded: the targets as tieaudit.evaluate reads a table's labels (nDCG's gain the grade,
    # the others reading target > 0), several grades in one tie group, integer and float targets
    updates = tie_heavy(8 if graded else 1, flat=flat, ignore=-100, graded=graded)
    plain = tie_heavy(8 if graded else 1, flat=flat, graded=graded)
    if graded:
        assert any(((u[1] > 1) & (u[1] != -100)).any() for u in updates)
        assert any(u[1].is_floating_point() for u in updates)
    for name in NAMES:
        for top_k in (None, 3):
            kw = {"top_k": top_k, "ties": str(rule), "ignore_index": -100}
            got = float(fed(metric(name, **kw), updates).compute())
            want = oracle(name, updates, rule, top_k=top_k, ignore_index=-100)
            assert got == pytest.approx(want, abs=1e-12), (name, top_k)
    for empty in ("pos", "skip"):
        got = float(fed(metric("RetrievalNormalizedDCG", top_k=4, ties=str(rule),
                               empty_target_action=empty), plain).compute())  # fmt: skip
        want = oracle("RetrievalNormalizedDCG", plain, rule, top_k=4, empty=empty)
        assert got == pytest.approx(want, abs=1e-12), empty
    for adaptive in (False, True):
        got = float(fed(metric("RetrievalPrecision", top_k=5, adaptive_k=adaptive,
                               ties=str(rule)), plain).compute())  # fmt: skip
        want = oracle("RetrievalPrecision", plain, rule, top_k=5, adaptive=adaptive)
        assert got == pytest.approx(want, abs=1e-12), adaptive


def test_graded_targets_keep_the_exact_sd_and_differ_from_binary_gains() -> None:
    # integer grades, then float grades (0.5 to 3)
    for preds, target, indexes in tie_heavy(9, n_updates=2, queries=40, empty=False, graded=True):
        frame = _lines(preds, target, indexes, None)
        summary = tieaudit.evaluate(frame, ["nDCG@5"], ["expected"]).summary()
        m = metric("RetrievalNormalizedDCG", top_k=5)
        m.update(preds, target, indexes)
        assert float(m.compute()) == pytest.approx(summary["value"].item(), abs=1e-12)
        assert float(m.std()) == pytest.approx(summary["sd"].item(), rel=1e-12)
        assert float(m.std()) > 0
        binary = metric("RetrievalNormalizedDCG", top_k=5)
        binary.update(preds, target > 0, indexes)
        assert float(binary.compute()) != pytest.approx(float(m.compute()), abs=1e-6)
        # the state is the same five float64 scalars
        assert {k: (v.shape, v.dtype) for k, v in m.metric_state.items()} == {
            k: (torch.Size([]), torch.float64) for k in ("n_queries", "total", "var_total",
                                                         "low", "high")}  # fmt: skip


def test_one_update_of_a_tie_heavy_table_is_that_table_evaluated() -> None:
    # a table in one update: the metric is tieaudit.evaluate's summary value of it, for the
    # rules that depend on the whole table's stored order too (random:SEED)
    (preds, target, indexes), = tie_heavy(2, n_updates=1, queries=40, empty=False)
    frame = _lines(preds, target, indexes, None)
    for rule in ("expected", "random:3", "input_order", "hash_mean", "item_id"):
        want = tieaudit.evaluate(frame, ["nDCG@5", "MRR@3"], [rule]).summary()
        for name, m in (("RetrievalNormalizedDCG", "nDCG@5"), ("RetrievalMRR", "MRR@3")):
            got = metric(name, top_k=int(m[-1]), ties=rule)
            got.update(preds, target, indexes)
            value = want.loc[want["metric"] == m, "value"].item()
            assert float(got.compute()) == pytest.approx(value, abs=1e-12), (rule, m)


@pytest.mark.parametrize("aggregation", ["min", "max"])
def test_min_and_max_aggregate_over_queries(aggregation: str) -> None:
    updates = tie_heavy(3)
    for name in ("RetrievalNormalizedDCG", "RetrievalRecall"):
        got = fed(metric(name, top_k=3, aggregation=aggregation), updates).compute()
        want = oracle(name, updates, TieRule("expected"), top_k=3, aggregation=aggregation)
        assert float(got) == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------------------- torchmetrics
@pytest.mark.parametrize("name", NAMES)
def test_equals_torchmetrics_when_no_score_ties(name: str) -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 30, 80)
    q = np.repeat(np.arange(80), lengths)
    preds = torch.tensor(rng.random(len(q)) + 0.01, dtype=torch.float32)  # above 0: see docs
    assert len(torch.unique(preds)) == len(preds)
    target = torch.tensor((rng.random(len(q)) < 0.15).astype(np.int64))
    target[torch.tensor(rng.random(len(q)) < 0.05)] = -1
    cases = [{}, {"top_k": 1}, {"top_k": 5}, {"top_k": 50}, {"empty_target_action": "pos"},
             {"empty_target_action": "skip", "top_k": 3}, {"aggregation": "max", "top_k": 2},
             {"aggregation": "min"}, {"ignore_index": -1, "top_k": 4}]  # fmt: skip
    if name == "RetrievalPrecision":
        cases += [{"top_k": 5, "adaptive_k": True}, {"adaptive_k": True}]
    for kw in cases:
        clean = kw.get("ignore_index") is not None
        t = target if clean else target.clamp(min=0)
        ours, theirs = metric(name, **kw), getattr(tmr, name)(**kw)
        for lo in range(0, 80, 20):  # four updates of 20 queries
            sel = torch.tensor((q >= lo) & (q < lo + 20))
            ours.update(preds[sel], t[sel], indexes=torch.tensor(q)[sel])
            theirs.update(preds[sel], t[sel], indexes=torch.tensor(q)[sel])
        assert float(ours.compute()) == pytest.approx(float(theirs.compute()), abs=1e-6), kw
    # the 2-D form: rows x candidates
    p2, t2 = preds[:600].reshape(30, 20), target[:600].clamp(min=0).reshape(30, 20)
    ours, theirs = metric(name, top_k=7), getattr(tmr, name)(top_k=7)
    ours.update(p2, t2)
    theirs.update(p2, t2, indexes=torch.arange(30).repeat_interleave(20).reshape(30, 20))
    assert float(ours.compute()) == pytest.approx(float(theirs.compute()), abs=1e-6)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_graded_ndcg_equals_torchmetrics_when_no_score_ties(dtype: torch.dtype) -> None:
    # torchmetrics' nDCG takes the target as a linear gain, its ideal DCG from the query's own
    # targets: the same as tieaudit's with grades
    rng = np.random.default_rng(17)
    lengths = rng.integers(1, 30, 80)
    q = torch.tensor(np.repeat(np.arange(80), lengths))
    preds = torch.tensor(rng.random(len(q)), dtype=torch.float32)
    assert len(torch.unique(preds)) == len(preds)
    grades = [0, 0, 0, 0, 1, 2, 3] + ([0.5, 2.5] if dtype.is_floating_point else [7])
    target = torch.tensor(rng.choice(grades, len(q)), dtype=dtype)
    for kw in ({}, {"top_k": 1}, {"top_k": 5}, {"empty_target_action": "skip", "top_k": 3},
               {"aggregation": "min", "top_k": 10}):  # fmt: skip
        ours, theirs = metric("RetrievalNormalizedDCG", **kw), tmr.RetrievalNormalizedDCG(**kw)
        for lo in range(0, 80, 20):
            sel = (q >= lo) & (q < lo + 20)
            ours.update(preds[sel], target[sel], indexes=q[sel])
            theirs.update(preds[sel], target[sel], indexes=q[sel])
        assert float(ours.compute()) == pytest.approx(float(theirs.compute()), abs=1e-6), kw
    p2, t2 = preds[:600].reshape(30, 20), target[:600].reshape(30, 20)
    ours, theirs = metric("RetrievalNormalizedDCG", top_k=7), tmr.RetrievalNormalizedDCG(top_k=7)
    ours.update(p2, t2)
    theirs.update(p2, t2, indexes=torch.arange(30).repeat_interleave(20).reshape(30, 20))
    assert float(ours.compute()) == pytest.approx(float(theirs.compute()), abs=1e-6)
    # and with ties, torchmetrics' tie-averaged nDCG is ties="expected" on grades too
    tied = torch.round(preds * 3) / 3
    ours, theirs = metric("RetrievalNormalizedDCG", top_k=4), tmr.RetrievalNormalizedDCG(top_k=4)
    ours.update(tied, target, q)
    theirs.update(tied, target, q)
    assert float(ours.compute()) == pytest.approx(float(theirs.compute()), abs=1e-6)


def test_ndcg_averages_ties_as_torchmetrics_does() -> None:
    # torchmetrics' nDCG averages the gains of a tie group (McSherry & Najork): ties="expected"
    for seed in range(5):
        (preds, target, indexes), = tie_heavy(seed, n_updates=1, queries=30, empty=False)
        for top_k in (None, 1, 3):
            ours = metric("RetrievalNormalizedDCG", top_k=top_k)
            theirs = tmr.RetrievalNormalizedDCG(top_k=top_k)
            ours.update(preds, target, indexes)
            theirs.update(preds, target, indexes)
            assert float(ours.compute()) == pytest.approx(float(theirs.compute()), abs=1e-6)


# ---------------------------------------------------------------------------- the state
def test_the_state_is_the_same_size_after_1_and_200_updates() -> None:
    rng = np.random.default_rng(0)

    def batch(i):
        preds = torch.tensor(rng.integers(0, 4, (50, 20)) / 4.0, dtype=torch.float32)
        target = torch.tensor((rng.random((50, 20)) < 0.1).astype(np.int64))
        return preds.reshape(-1), target.reshape(-1), torch.arange(50 * i, 50 * (i + 1)).repeat_interleave(20)

    for name in NAMES:
        m = metric(name, top_k=10)
        m.update(*batch(0))
        one = {k: (v.shape, v.dtype) for k, v in m.metric_state.items()}
        size = sum(v.numel() * v.element_size() for v in m.metric_state.values())
        for i in range(1, 200):
            m.update(*batch(i))
        assert {k: (v.shape, v.dtype) for k, v in m.metric_state.items()} == one
        assert sum(v.numel() * v.element_size() for v in m.metric_state.values()) == size
        assert all(v.dtype == torch.float64 for v in m.metric_state.values())
        assert float(m.n_queries) == 200 * 50
        # the query indexes seen: one run of consecutive indexes, however many updates
        assert len(m._seen.start) == 1 and int(m._seen.end[0]) == 200 * 50 - 1
    torch_state = tmr.RetrievalNormalizedDCG(top_k=10)
    torch_state.update(*batch(0))
    assert len(torch_state.preds) == 1  # torchmetrics keeps every prediction, list states


@pytest.mark.filterwarnings("ignore:The ``compute`` method of metric:UserWarning")
@settings(max_examples=examples(40), deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(1, 11), max_size=4, unique=True))
def test_the_value_does_not_depend_on_how_queries_are_split(seed: int, cuts: list[int]) -> None:
    (preds, target, indexes), = tie_heavy(seed, n_updates=1, queries=12)
    queries = np.unique(indexes.numpy())
    bounds = [0, *sorted(cuts), len(queries)]
    one = metric("RetrievalNormalizedDCG", top_k=3)
    one.update(preds, target, indexes)
    parts = metric("RetrievalNormalizedDCG", top_k=3)
    merged = metric("RetrievalNormalizedDCG", top_k=3)
    for a, b in zip(bounds, bounds[1:], strict=False):
        sel = torch.tensor(np.isin(indexes.numpy(), queries[a:b]))
        parts.update(preds[sel], target[sel], indexes[sel])
        other = metric("RetrievalNormalizedDCG", top_k=3)
        other.update(preds[sel], target[sel], indexes[sel])
        merged.merge_state(other)  # another process's sums, as a sync adds them
    for m in (parts, merged):
        assert float(m.compute()) == pytest.approx(float(one.compute()), rel=1e-12, abs=1e-15)
        assert float(m.std()) == pytest.approx(float(one.std()), rel=1e-12, abs=1e-15)


def test_std_is_the_exact_sd_of_expected() -> None:
    (preds, target, indexes), = tie_heavy(4, n_updates=1, queries=40, empty=False)
    frame = _lines(preds, target, indexes, None)
    summary = tieaudit.evaluate(frame, ["nDCG@5"], ["expected"]).summary()
    m = metric("RetrievalNormalizedDCG", top_k=5)
    m.update(preds, target, indexes)
    assert float(m.std()) == pytest.approx(summary["sd"].item(), rel=1e-12)
    assert float(m.std()) > 0
    with pytest.raises(ValueError, match="ties='expected'"):
        metric("RetrievalNormalizedDCG", ties="input_order").std()
    with pytest.raises(ValueError, match="aggregation='mean'"):
        metric("RetrievalNormalizedDCG", aggregation="max").std()


def test_a_query_seen_again_is_refused_by_name() -> None:
    m = metric("RetrievalHitRate", top_k=2)
    p, t = torch.tensor([0.5, 0.5, 0.1]), torch.tensor([1, 0, 0])
    m.update(p, t, torch.tensor([3, 3, 4]))
    with pytest.raises(ValueError, match="query index 4 was in an earlier update"):
        m.update(p, t, torch.tensor([5, 5, 4]))
    assert float(m.n_queries) == 2  # the refused update added nothing
    m.update(p, t, torch.tensor([5, 5, 6]))  # new queries are welcome
    # forward gives the batch's value and keeps what was seen
    assert float(m(p, t, torch.tensor([7, 7, 8]))) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="query index 8"):
        m(p, t, torch.tensor([8, 8, 9]))
    assert float(m.n_queries) == 6  # the refused batch left the state as it was
    assert m.update_count == 4
    with pytest.raises(CandidateError, match="NaN score"):  # refused by the table
        m(torch.tensor([0.5, float("nan"), 0.1]), t, torch.tensor([9, 9, 10]))
    with pytest.raises(ValueError, match="not a relevance label"):  # refused before the table
        m(p, torch.tensor([-2, 0, 0]), torch.tensor([9, 9, 10]))
    assert float(m.n_queries) == 6 and m.update_count == 4
    assert float(m.compute()) == pytest.approx(0.5)
    m.reset()
    m.update(p, t, torch.tensor([3, 3, 4]))  # a new epoch
    assert float(m.compute()) == pytest.approx(0.5)


def test_forward_gives_the_batch_value_with_sync_on_step_too() -> None:
    updates = tie_heavy(5, n_updates=2)
    for kw in ({}, {"dist_sync_on_step": True}):
        m = metric("RetrievalNormalizedDCG", top_k=3, **kw)
        batch = [float(m(*u)) for u in updates]
        for u, value in zip(updates, batch, strict=True):
            assert value == pytest.approx(oracle("RetrievalNormalizedDCG", [u],
                                                 TieRule("expected"), top_k=3), abs=1e-12)  # fmt: skip
        assert float(m.compute()) == pytest.approx(
            oracle("RetrievalNormalizedDCG", updates, TieRule("expected"), top_k=3), abs=1e-12)


# ---------------------------------------------------------------------------- half precision
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_ties_are_counted_after_the_cast(dtype: torch.dtype) -> None:
    # float32 scores that differ below half precision tie once cast; the metric sees the ties
    base = torch.tensor([1.0, 1.0 + 2**-14, 1.0 + 2**-13, 0.5, 0.25, 1.0 + 2**-15],
                        dtype=torch.float32)  # fmt: skip
    target = torch.tensor([1, 0, 0, 0, 0, 0])
    idx = torch.zeros(6, dtype=torch.long)
    full, half = metric("RetrievalMRR"), metric("RetrievalMRR")
    full.update(base, target, idx)
    half.update(base.to(dtype), target, idx)
    assert float(full.compute()) == pytest.approx(1 / 4)  # three score above it
    cast = base.to(dtype).to(torch.float64).numpy()
    frame = pd.DataFrame({"row": 0, "user_id": 0, "item_id": range(6), "label": target.numpy(),
                          "score": cast})  # fmt: skip
    want = tieaudit.evaluate(frame, ["MRR@6"], ["expected"]).mean("expected", "MRR@6")
    assert float(half.compute()) == pytest.approx(want, abs=1e-15)
    assert float(half.compute()) > 1 / 4


# ---------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_clearly() -> None:
    m = metric("RetrievalNormalizedDCG")
    idx = torch.tensor([0, 0, 1])
    for bad, at in ((-0.5, 2), (float("nan"), 3), (float("inf"), 2), (-float("inf"), 3)):
        target = torch.tensor([2.0, 0.0, 1.0])
        target[at - 1] = bad
        with pytest.raises(ValueError, match=rf"target {bad!r} at position {at} .* not a "
                           r"relevance label \(a finite number >= 0"):  # fmt: skip
            m.update(torch.tensor([0.1, 0.2, 0.3]), target, idx)
    with pytest.raises(ValueError, match=r"target -2 at position 3 .* not a relevance label"):
        metric("RetrievalNormalizedDCG", ignore_index=-1).update(
            torch.tensor([0.1, 0.2, 0.3, 0.4]), torch.tensor([1, -1, -2, 3]),
            torch.tensor([0, 0, 1, 1]))  # counted in the tensors given, not after ignore_index
    with pytest.raises(CandidateError, match=r"record 3: missing or NaN score"):
        m.update(torch.tensor([0.1, 0.2, float("nan")]), torch.tensor([1, 0, 1]), idx)
    with pytest.raises(ValueError, match=r"target -1 at position 2 .* not a relevance label"):
        m.update(torch.tensor([0.1, 0.2, 0.3]), torch.tensor([1, -1, 1]), idx)
    with pytest.raises(ValueError, match="preds` must be a tensor of floats"):
        m.update(torch.tensor([1, 2, 3]), torch.tensor([1, 0, 1]), idx)
    with pytest.raises(ValueError, match="same shape"):
        m.update(torch.tensor([0.1, 0.2]), torch.tensor([1, 0, 1]), idx)
    with pytest.raises(ValueError, match="without `indexes`.*2-D"):
        m.update(torch.tensor([0.1, 0.2]), torch.tensor([1, 0]))
    with pytest.raises(ValueError, match="long integers"):
        m.update(torch.tensor([0.1, 0.2]), torch.tensor([1, 0]), torch.tensor([0.0, 0.0]))
    with pytest.raises(ValueError, match="non-empty"):
        metric("RetrievalHitRate", ignore_index=0).update(
            torch.tensor([0.1, 0.2]), torch.tensor([0, 0]), torch.tensor([0, 0]))
    with pytest.raises(ValueError, match="query index 1 has no positive target"):
        metric("RetrievalHitRate", empty_target_action="error").update(
            torch.tensor([0.1, 0.2, 0.3]), torch.tensor([1, 0, 0]), idx)
    with pytest.raises(ValueError, match="median.*every query's value|not every query's value"):
        metric("RetrievalHitRate", aggregation="median")
    with pytest.raises(ValueError, match="unknown tie rule"):
        metric("RetrievalHitRate", ties="stable")
    with pytest.raises(ValueError, match="top_k"):
        metric("RetrievalHitRate", top_k=0)
    with pytest.raises(ValueError, match=r"`top_k` 4611686018427387904 is above 2\*\*53"):
        metric("RetrievalPrecision", top_k=2**62)  # refused when made, not at the first update
    at_most = metric("RetrievalPrecision", top_k=2**53)
    at_most.update(torch.tensor([0.1, 0.2, 0.3]), torch.tensor([1, 0, 1]), idx)
    assert float(at_most.compute()) == pytest.approx(2**-53, rel=1e-12, abs=0)  # 1 relevant a row
    with pytest.raises(ValueError, match="empty_target_action"):
        metric("RetrievalHitRate", empty_target_action="zero")
    assert float(m.n_queries) == 0  # nothing refused was added
    # no query counted: 0.0, as torchmetrics gives
    skip = metric("RetrievalHitRate", empty_target_action="skip")
    skip.update(torch.tensor([0.1, 0.2]), torch.tensor([0, 0]), torch.tensor([0, 0]))
    assert float(skip.compute()) == 0.0


def test_importing_tieaudit_imports_no_torch() -> None:
    code = ("import sys, tieaudit; tieaudit.evaluate; import tieaudit.testing, tieaudit.probe; "
            "import tieaudit.ir_measures; print(sorted(m for m in ('torch', 'torchmetrics', "
            "'ir_measures') if m in sys.modules))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------- two processes
WORKER = """
import json, sys
import numpy as np, torch, torch.distributed as dist
from tieaudit.torchmetrics import RetrievalNormalizedDCG, RetrievalRecall


def run(rank, world):
    rng = np.random.default_rng(11)
    preds = torch.tensor(rng.integers(0, 3, (60, 15)) / 2.0, dtype=torch.float32)
    target = torch.tensor((rng.random((60, 15)) < 0.2).astype(np.int64))
    idx = torch.arange(60).repeat_interleave(15).reshape(60, 15)
    metrics = [RetrievalNormalizedDCG(top_k=5), RetrievalRecall(top_k=3, ties="hash:1")]
    for start in range(rank * 10, 60, world * 10):  # batches of 10 queries, round robin
        for m in metrics:
            m.update(preds[start:start + 10], target[start:start + 10], idx[start:start + 10])
    values = [float(m.compute()) for m in metrics] + [float(metrics[0].std())]
    return values + [float(metrics[0].n_queries)]  # the local state is restored after the sync


if __name__ == "__main__":
    rank, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    json.dump(run(rank, 2), open(out, "w"))
    dist.destroy_process_group()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two processes importing torch: half a minute on a busy machine
def test_two_processes_give_the_value_of_one(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = _free_port()
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(port),
                               str(tmp_path / f"rank{r}.json")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(2)]  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    namespace: dict = {"__name__": "worker"}
    exec(compile(WORKER, str(script), "exec"), namespace)
    one = namespace["run"](0, 1)  # one process, every batch
    for r in range(2):
        got = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert got[:3] == pytest.approx(one[:3], rel=1e-12)
        assert got[3] == 30  # its own queries: the sync's sums were for compute only
    assert one[3] == 60 and one[0] != pytest.approx(0.0)

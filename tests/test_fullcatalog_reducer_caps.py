"""Capped hash counts of the full-catalog reduction (``full_catalog_candidates(k_max=...)``):
brute force and properties against the exact counts and the stored full table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle import COLS, summarise
from tieaudit import evaluate, hash_key, read_candidates
from tieaudit.analyses.audit import audit
from tieaudit.ties.blocks import TieBlock
from tieaudit.tables.candidates import CandidateError, CandidateTable
from tieaudit.analyses.fullcatalog import full_catalog_candidates, summary_columns
from tieaudit.common.io import write_table
from tieaudit.testing import full_catalog_cases
from tests.conftest import examples

SEEDS = range(12)
RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash:5",
         "hash_mean", "item_id", "docno_desc", "random:0"]  # fmt: skip


def measures_up_to(k_max: int) -> list[str]:
    ks = sorted({1, max(1, k_max // 2), k_max})
    return [f"{m}@{k}" for k in ks for m in ("HR", "nDCG", "MRR")]


def reduce_both(case, k_max: int, chunk_rows: int = 3):
    scorer = case.scorer()
    exact = full_catalog_candidates(case.rows, case.history, case.catalog, scorer,
                                    seeds=SEEDS, chunk_rows=chunk_rows)  # fmt: skip
    capped = full_catalog_candidates(case.rows, case.history, case.catalog, scorer,
                                     seeds=SEEDS, chunk_rows=chunk_rows, k_max=k_max)  # fmt: skip
    return exact, capped


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(full_catalog_cases(), st.integers(1, 40), st.integers(1, 5))
def test_capped_counts_agree_with_exact_ones_below_the_cap(case, k_max, chunk_rows) -> None:
    exact, capped = reduce_both(case, k_max, chunk_rows)
    assert list(capped.columns) == summary_columns(SEEDS, k_max)
    assert (capped["k_max"] == k_max).all()
    cap = np.maximum(k_max - exact["n_higher"].to_numpy(), 0)
    for s in SEEDS:
        full = exact[f"before:hash:{s}"].to_numpy()
        got = capped[f"before:hash:{s}"].to_numpy()
        below = full < cap
        assert np.array_equal(got[below], full[below])  # exact whenever below the cap
        assert np.array_equal(got[~below], cap[~below])  # else the cap itself
    # every other column is the exact one
    rest = [c for c in exact.columns if not c.startswith("before:hash:")]
    pdt.assert_frame_equal(capped[rest], exact[rest], check_exact=True)
    # and every measure up to k_max, under every rule, is the exact table's
    ms = measures_up_to(k_max)
    want = evaluate(exact, ms, RULES, n_seeds=len(SEEDS)).summary()
    got = evaluate(capped, ms, RULES, n_seeds=len(SEEDS)).summary()
    pdt.assert_frame_equal(got, want, check_exact=True)


def stored_full_table(case) -> pd.DataFrame:
    """Every candidate of every row stored: the held-out item first, then catalogue order."""
    seen = case.history.groupby("user_id")["item_id"].agg(set).to_dict()
    col = {it: j for j, it in enumerate(case.catalog)}
    lines = []
    for u, (user, held) in enumerate(zip(case.rows["user_id"], case.rows["item_id"], strict=True)):
        others = [it for it in case.catalog if it != held and it not in seen.get(user, ())]
        for j, it in enumerate([held, *others]):
            lines.append((f"r{u}", user, it, int(j == 0), case.scores[u, col[it]]))
    return pd.DataFrame(lines, columns=COLS)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(full_catalog_cases(max_users=4, max_items=300), st.integers(1, 25))
def test_capped_table_gives_the_stored_full_tables_metrics(case, k_max) -> None:
    capped = full_catalog_candidates(case.rows, case.history, case.catalog, case.scorer(),
                                     seeds=SEEDS, k_max=k_max)  # fmt: skip
    rules = [r for r in RULES if r != "random:0"]  # random: drawn per row on a summary table
    ms = measures_up_to(k_max)
    want = evaluate(stored_full_table(case), ms, rules, n_seeds=len(SEEDS)).summary()
    got = evaluate(capped, ms, rules, n_seeds=len(SEEDS)).summary()
    pdt.assert_frame_equal(got, want, check_exact=False, rtol=1e-12, atol=1e-12)


def test_capped_counts_by_brute_force() -> None:
    # one row tied with 400 items, every cap from 0 to past the group: min(b, cap) per seed
    # from the pure-Python key
    catalog = np.array([f"i{j:03d}" for j in range(401)], dtype=object)
    scores = np.zeros((1, 401))
    rows = pd.DataFrame({"user_id": ["u"], "item_id": ["i200"]})
    history = pd.DataFrame({"user_id": ["v"], "item_id": ["i000"]})
    from tieaudit.scorers import MatrixScorer

    scorer = MatrixScorer(scores, ["u"], catalog)
    key = {s: hash_key(s, "u", "i200") for s in SEEDS}
    b = {s: sum(hash_key(s, "u", it) < key[s] for it in catalog if it != "i200") for s in SEEDS}
    for k_max in (1, 2, 7, 30, 200, 400, 401, 1000):
        out = full_catalog_candidates(rows, history, catalog, scorer, seeds=SEEDS, k_max=k_max)
        assert [int(out[f"before:hash:{s}"].iloc[0]) for s in SEEDS] == [
            min(b[s], k_max) for s in SEEDS
        ]


def test_a_huge_tie_group_is_scanned_only_until_the_cap(monkeypatch) -> None:
    # every candidate tied (the whole catalogue): the counts stop early, exactly
    n = 200_000
    catalog = np.array([f"x{j:06d}" for j in range(n)], dtype=object)
    rows = pd.DataFrame({"user_id": ["a", "b"], "item_id": [catalog[7], catalog[n - 3]]})
    history = pd.DataFrame({"user_id": ["a"], "item_id": [catalog[9]]})
    scanned = []
    members = TieBlock.members

    def counting(self, rows_, start, stop):
        scanned.append(int((stop - start).sum()))
        return members(self, rows_, start, stop)

    class Tied:
        def score(self, users, items):
            return np.zeros(len(users))

        def score_matrix(self, users, items):
            return np.zeros((len(users), len(items)))

    monkeypatch.setattr(TieBlock, "members", counting)
    seeds = range(100)
    out = full_catalog_candidates(rows, history, catalog, Tied(), seeds=seeds, k_max=20)
    assert sum(scanned) < 0.2 * 2 * n  # a fraction of the two groups, for all 100 seeds
    before = out[[f"before:hash:{s}" for s in seeds]].to_numpy()
    assert before.max() == 20 and (before <= 20).all()
    # the uncapped counts, where below 20, are the same (checked on row "a" by the reference)
    low = np.flatnonzero(before[0] < 20)
    key = {s: hash_key(s, "a", catalog[7]) for s in low}
    for s in low:
        exact = sum(hash_key(int(s), "a", it) < key[s] for it in catalog if it not in
                    (catalog[7], catalog[9]))  # fmt: skip
        assert before[0, s] == exact


def test_a_cutoff_above_k_max_is_refused_naming_the_file(tmp_path) -> None:
    case = _small_case()
    capped = full_catalog_candidates(case.rows, case.history, case.catalog, case.scorer(),
                                     seeds=[0], k_max=10)  # fmt: skip
    path = tmp_path / "scores.parquet"
    write_table(capped, path)
    table = read_candidates(path)
    assert table.k_max is not None and (table.k_max == 10).all()
    evaluate(table, ["HR@10", "nDCG@5"], ["hash:0", "expected"])  # fine
    with pytest.raises(CandidateError, match=r"scores\.parquet.*k_max = 10.*HR@20"):
        evaluate(table, ["HR@10", "HR@20"], ["hash:0"])
    with pytest.raises(CandidateError, match="k_max = 10"):
        evaluate(table, ["nDCG@11"], ["expected"])
    # the uncapped table answers any cutoff
    exact = full_catalog_candidates(case.rows, case.history, case.catalog, case.scorer(),
                                    seeds=[0])  # fmt: skip
    evaluate(exact, ["HR@50"], ["hash:0"])


def test_a_capped_table_is_validated() -> None:
    case = _small_case()
    capped = full_catalog_candidates(case.rows, case.history, case.catalog, case.scorer(),
                                     seeds=[0], k_max=3)  # fmt: skip
    CandidateTable.from_frame(capped)
    bad = capped.copy()
    cap = np.maximum(3 - bad["n_higher"].to_numpy(), 0)
    row = int(np.flatnonzero((cap > 0) & (bad["n_tied"].to_numpy() > cap))[0])
    bad.loc[row, "before:hash:0"] = cap[row] + 1
    with pytest.raises(CandidateError, match=f"record {row + 1}.*before:hash:0 above its cap"):
        CandidateTable.from_frame(bad)
    zero = capped.assign(k_max=0)
    with pytest.raises(CandidateError, match="k_max 0"):
        CandidateTable.from_frame(zero)
    stored = capped[["row", "user_id", "item_id", "label", "score", "k_max"]]
    with pytest.raises(CandidateError, match="k_max belong to a summary table"):
        CandidateTable.from_frame(stored)


def test_the_audit_of_a_capped_table_is_the_exact_tables() -> None:
    case = _small_case()
    scorer = case.scorer()
    exact = full_catalog_candidates(case.rows, case.history, case.catalog, scorer, seeds=SEEDS)
    capped = full_catalog_candidates(case.rows, case.history, case.catalog, scorer, seeds=SEEDS,
                                     k_max=10)  # fmt: skip
    ms = ["HR@10", "nDCG@10", "MRR@5"]
    a = audit(exact, ms, RULES, n_seeds=len(SEEDS), n_permutations=2)
    b = audit(capped, ms, RULES, n_seeds=len(SEEDS), n_permutations=2)
    pdt.assert_frame_equal(a.invariance, b.invariance, check_exact=True)
    pdt.assert_frame_equal(a.diagnostics, b.diagnostics, check_exact=True)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_k_max_must_be_a_positive_whole_number(bad) -> None:
    case = _small_case()
    with pytest.raises((ValueError, TypeError), match="k_max"):
        full_catalog_candidates(case.rows, case.history, case.catalog, case.scorer(), k_max=bad)


def _small_case():
    """Six users over 500 items, half the scores 0: big tie groups at 0, small ones above."""
    from tieaudit.testing import FullCatalogCase

    rng = np.random.default_rng(4)
    scores = rng.integers(0, 4, (6, 500)).astype(np.float64)
    scores[rng.random((6, 500)) < 0.5] = 0.0
    users = np.array([f"u{u}" for u in range(6)], dtype=object)
    catalog = np.array([f"i{i:04d}" for i in range(500)], dtype=object)
    held = catalog[np.argsort(scores, axis=1)[:, 0]]  # a 0-scored item: in the big group
    held[3] = catalog[int(np.argmax(scores[3]))]  # one at the top
    history = pd.DataFrame({"user_id": np.repeat(users, 5), "item_id": catalog[:30]})
    rows = pd.DataFrame({"user_id": users, "item_id": held})
    return FullCatalogCase(rows, history, catalog, users, scores)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(full_catalog_cases(max_items=2500, max_levels=6))
def test_row_counts_by_brute_force(case) -> None:
    # n_higher / n_tied / n_lower / n_modal / before:item_id of the reduction (counts over the
    # block, history taken off afterwards, n_modal from a majority score or a sort) against
    # counting each row's candidates directly
    out = full_catalog_candidates(case.rows, case.history, case.catalog, case.scorer(), seeds=[],
                                  chunk_rows=3)  # fmt: skip
    # against the oracle's counts on the stored full table
    want = summarise(stored_full_table(case), rules=["item_id"])
    cols = ["n_higher", "n_tied", "n_lower", "n_modal", "before:item_id"]
    assert out[cols].to_numpy().tolist() == want[cols].to_numpy().tolist()


def test_n_modal_when_the_sampled_score_is_not_the_largest_group() -> None:
    # every 4th item scores 1 (what an evenly spaced sample of the row sees), plus a few more:
    # 35% of the row; 45% score 2 on the items the sample skips; the rest 0, the held-out's
    # score. The sampled score holds no majority, so the row is sorted: n_modal is the 2-group.
    from tieaudit.scorers import MatrixScorer

    n = 4096
    j = np.arange(n)
    row = np.where(j % 4 == 0, 1.0, np.where(j % 4 == 1, 2.0, 0.0))
    row[(j % 4 == 2) & (j < 0.8 * n)] = 2.0
    row[(j % 4 == 3) & (j < 0.4 * n)] = 1.0
    catalog = np.array([f"i{k:05d}" for k in range(n)], dtype=object)
    rows = pd.DataFrame({"user_id": ["u"], "item_id": [catalog[3 + 4 * 1000]]})  # scores 0
    history = pd.DataFrame({"user_id": ["u"], "item_id": [catalog[1]]})
    out = full_catalog_candidates(rows, history, catalog, MatrixScorer(row[None, :], ["u"], catalog),
                                  seeds=[])  # fmt: skip
    values, counts = np.unique(np.delete(row, 1), return_counts=True)
    assert values[np.argmax(counts)] == 2.0 and counts.max() < n / 2
    assert int(out["n_modal"].iloc[0]) == counts.max()


@pytest.mark.parametrize("chunk_rows", [1, 3, 10])
def test_n_modal_of_rows_with_the_same_scores(chunk_rows) -> None:
    # a scorer that ignores the user (as popularity): every row has the same scores, none with
    # a majority, so n_modal is counted once by a sort and reused with each row's history taken
    # off; rows 4 and 7 differ (their own sort), and -0.0 is the same score as 0.0
    from tieaudit.scorers import MatrixScorer
    from tieaudit.testing import FullCatalogCase

    rng = np.random.default_rng(8)
    n, users = 600, np.array([f"u{u}" for u in range(10)], dtype=object)
    base = rng.integers(0, 9, n).astype(np.float64)
    base[base == 0] = np.where(rng.random(int((base == 0).sum())) < 0.5, -0.0, 0.0)
    scores = np.tile(base, (10, 1))
    scores[4] = rng.normal(size=n).round(1)
    scores[7, :300] = 3.0
    catalog = np.array([f"i{i:04d}" for i in range(n)], dtype=object)
    # history: the most common score's items for some users, so the largest group changes
    common = catalog[base == 3.0]
    hist = [(u, it) for k, u in enumerate(users) for it in
            (common[: 40 * (k % 3)] if k % 2 else catalog[rng.choice(n, 5, replace=False)])]
    history = pd.DataFrame(hist, columns=["user_id", "item_id"]).drop_duplicates()
    held = [catalog[int(np.flatnonzero(base == 5.0)[k])] for k in range(10)]
    rows = pd.DataFrame({"user_id": users, "item_id": held})
    history = history[~history.set_index(["user_id", "item_id"]).index.isin(
        list(zip(users, held, strict=True)))]  # fmt: skip
    case = FullCatalogCase(rows, history, catalog, users, scores)
    out = full_catalog_candidates(rows, history, catalog, MatrixScorer(scores, users, catalog),
                                  seeds=[], chunk_rows=chunk_rows)  # fmt: skip
    want = summarise(stored_full_table(case), rules=["item_id"])
    assert out["n_modal"].tolist() == want["n_modal"].tolist()
    assert len(set(out["n_modal"])) > 2  # the history changed the largest group

"""Full-catalog reduction (tieaudit.fullcatalog) against materialising every (row, item) pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from tieaudit import evaluate, read_candidates
from tieaudit.fullcatalog import (
    FULL_COLUMNS,
    chunk_rows_for,
    full_catalog_candidates,
    pair_scorer,
)
from tieaudit.io import write_table
from tieaudit.scorers import get_scorer

METRICS = ["HR@1", "HR@5", "nDCG@5", "MRR@5", "HR@10", "nDCG@10", "MRR@10"]
RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash:7",
         "hash_mean", "item_id"]  # fmt: skip


def tiny(seed: int = 3, n_users: int = 40, n_items: int = 60):
    """A tie-heavy toy dataset: few attribute values, so many exact ties."""
    rng = np.random.default_rng(seed)
    items = [f"i{j:03d}" for j in range(n_items)]
    attrs = pd.DataFrame(
        [(it, f"{kind}={rng.integers(0, 3)}") for it in items[:-3] for kind in ("a", "b")]
        + [(items[0], "c=1")],
        columns=["item_id", "attribute"],
    )  # the last three items carry no attribute
    hist, held = [], []
    for u in range(n_users):
        seen = rng.choice(n_items, size=int(rng.integers(2, 12)), replace=False)
        for j in seen[:-1]:
            hist.append((f"u{u:02d}", items[j], float(rng.integers(1, 6)), 0))
        held.append((f"u{u:02d}", items[seen[-1]]))
        if u % 7 == 0:  # the held-out item seen before too: still the relevant candidate
            hist.append((f"u{u:02d}", items[seen[-1]], 3.0, 0))
    history = pd.DataFrame(hist, columns=["user_id", "item_id", "rating", "timestamp"])
    rows = pd.DataFrame(held, columns=["user_id", "item_id"])
    catalog = np.array(items + ["i999"], dtype=object)  # an item nobody interacted with
    return history, rows, catalog, attrs


def materialised(rows, history, catalog, score) -> pd.DataFrame:
    """Every candidate pair stored: relevant first, then the others in catalogue order."""
    cat = np.unique(catalog.astype(str))
    seen = history.groupby("user_id")["item_id"].agg(set).to_dict()
    lines = []
    for u, pos in zip(rows["user_id"], rows["item_id"], strict=True):
        lines.append((f"u{u}", u, pos, 1))
        lines += [(f"u{u}", u, it, 0) for it in cat if it != pos and it not in seen.get(u, ())]
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label"])
    frame["score"] = score(frame["user_id"].to_numpy(object), frame["item_id"].to_numpy(object))
    return frame


def summary(table, rules=RULES) -> pd.DataFrame:
    ev = evaluate(table, METRICS, rules, n_seeds=20)
    return ev.summary().sort_values(["rule", "metric"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def data():
    return tiny()


@pytest.mark.parametrize(
    "name,options",
    [("attribute_overlap", {"weight": "rating"}), ("attribute_overlap", {"weight": "binary"}),
     ("popularity", {}), ("residualized_attribute", {"weight": "rating"})],
)  # fmt: skip
def test_reduced_table_gives_the_full_tables_metrics(data, name, options) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer(name, **options).fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=7)
    assert list(reduced.columns) == list(FULL_COLUMNS)
    full = materialised(rows, history, catalog, pair_scorer(scorer, rows=rows, catalog=catalog))
    assert len(reduced) < len(full)
    a, b = summary(full), summary(reduced)
    pdt.assert_frame_equal(a, b, check_exact=False, rtol=1e-12, atol=1e-12)
    # the reduced rows: same candidate counts, relevant first, all stored lines tied with it
    per_row = reduced.groupby("row", sort=False).agg(
        n=("item_id", "size"), h=("n_higher", "first"), lo=("n_lower", "first"),
        first_label=("label", "first"), smin=("score", "min"), smax=("score", "max"),
    )  # fmt: skip
    sizes = full.groupby("row", sort=False).size()
    assert (per_row["n"] + per_row["h"] + per_row["lo"] == sizes.loc[per_row.index]).all()
    assert (per_row["first_label"] == 1).all() and (per_row["smin"] == per_row["smax"]).all()
    # tied lines in catalogue order
    for _, grp in reduced.groupby("row", sort=False):
        assert list(grp["item_id"].iloc[1:]) == sorted(grp["item_id"].iloc[1:])


def test_random_rule_is_the_documented_exception(data) -> None:
    # random:SEED permutes stored positions, so it is not promised equal; it must still run
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer)
    out = summary(reduced, ["random:0", "expected"])
    assert set(out["rule"]) == {"random:0", "expected"}


@pytest.mark.parametrize("name", ["attribute_overlap", "residualized_attribute", "popularity"])
def test_chunk_size_does_not_change_the_result(data, name) -> None:
    history, rows, catalog, attrs = data
    outs = []
    for chunk in (1, 3, 16, 1000):
        scorer = get_scorer(name).fit(history, attrs)
        outs.append(full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=chunk))
    for other in outs[1:]:
        pdt.assert_frame_equal(outs[0], other, check_exact=True)


def test_residualization_is_fitted_once_on_the_given_pairs(data) -> None:
    history, rows, catalog, attrs = data
    fit_pairs = materialised(rows.iloc[:10], history, catalog, lambda u, i: np.zeros(len(u)))
    ref = get_scorer("residualized_attribute").fit(history, attrs)
    expected = ref.score(fit_pairs["user_id"].to_numpy(object), fit_pairs["item_id"].to_numpy(object))
    scorer = get_scorer("residualized_attribute").fit(history, attrs)
    f = pair_scorer(scorer, fit_pairs)
    # applied to the fitting pairs, the frozen scorer is the scorer itself, bit for bit
    got = f(fit_pairs["user_id"].to_numpy(object), fit_pairs["item_id"].to_numpy(object))
    assert np.array_equal(got, expected)
    assert np.allclose(f.coef, ref.coef_, rtol=0, atol=0)
    # and a batch of other pairs is scored with the same coefficients
    one = f(np.array(["u01"], dtype=object), np.array(["i005"], dtype=object))
    two = f(np.array(["u01", "u02"], dtype=object), np.array(["i005", "i006"], dtype=object))
    assert one[0] == two[0]


class _Recording:
    """A pairwise scorer that records the largest batch it was given."""

    def __init__(self, inner):
        self.inner, self.largest = inner, 0

    def fit(self, history, attrs):
        return self

    def score(self, users, items):
        self.largest = max(self.largest, len(users))
        return self.inner.score(users, items)


def test_memory_is_bounded_by_the_chunk(data) -> None:
    history, rows, catalog, attrs = data
    n_items = len(np.unique(catalog))
    for pairs in (1, 100, 5 * n_items, 10**9):
        rec = _Recording(get_scorer("popularity").fit(history, attrs))
        chunk = chunk_rows_for(n_items, pairs)
        full_catalog_candidates(rows, history, catalog, rec, chunk_pairs=pairs)
        assert rec.largest <= max(chunk * n_items, 4096)  # (the first-chunk batch check)
        assert rec.largest <= max(pairs, n_items) or chunk * n_items >= len(rows) * n_items


class _BatchDependent:
    def fit(self, history, attrs):
        return self

    def score(self, users, items):
        return np.full(len(users), float(len(users)))


def test_batch_dependent_scorer_is_refused(data) -> None:
    history, rows, catalog, _ = data
    with pytest.raises(ValueError, match="depend on the batch"):
        full_catalog_candidates(rows, history, catalog, _BatchDependent())


def test_output_is_read_by_the_evaluator(data, tmp_path) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer)
    write_table(reduced, tmp_path / "scores.parquet")
    table = read_candidates(tmp_path / "scores.parquet")
    assert table.n_rows == len(rows) and table.n_higher is not None
    pdt.assert_frame_equal(summary(table), summary(reduced))


def test_errors(data) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer("popularity").fit(history, attrs)
    with pytest.raises(ValueError, match="not in the catalog"):
        full_catalog_candidates(rows, history, catalog[:5], scorer)
    with pytest.raises(ValueError, match="one line per user"):
        full_catalog_candidates(pd.concat([rows, rows]), history, catalog, scorer)
    with pytest.raises(ValueError, match="chunk_rows"):
        full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=0)


def test_stored_lines_are_bounded(data) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    full = full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=2)
    # exactly at the bound is fine; one line less stops with a message that says what to do
    same = full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=2,
                                   max_lines=len(full))  # fmt: skip
    pdt.assert_frame_equal(full, same, check_exact=True)
    with pytest.raises(ValueError, match=r"full catalogue: .* lines \(limit .*full_rows"):
        full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=2,
                                max_lines=len(full) - 1)  # fmt: skip

"""Full-catalog reduction (tieaudit.analyses.fullcatalog) against materialising every (row, item) pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from tests.oracle import summarise
from tieaudit import evaluate, read_candidates
from tieaudit.analyses.audit import audit
from tieaudit.analyses.fullcatalog import (
    FULL_COLUMNS,
    calibration_sample,
    chunk_rows_for,
    full_catalog_candidates,
    summary_columns,
)
from tieaudit.common.io import write_table
from tieaudit.scorers import get_scorer

METRICS = ["HR@1", "HR@5", "nDCG@5", "MRR@5", "HR@10", "nDCG@10", "MRR@10"]
RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash:7",
         "hash_mean", "item_id", "docno_desc"]  # fmt: skip
SEEDS = range(20)


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


def materialised(rows, history, catalog, score, last: bool = False) -> pd.DataFrame:
    """Every candidate pair stored: relevant first (or ``last``), then the others in catalogue
    order."""
    cat = np.unique(catalog.astype(str))
    seen = history.groupby("user_id")["item_id"].agg(set).to_dict()
    lines = []
    for u, pos in zip(rows["user_id"], rows["item_id"], strict=True):
        others = [(f"u{u}", u, it, 0) for it in cat if it != pos and it not in seen.get(u, ())]
        lines += others + [(f"u{u}", u, pos, 1)] if last else [(f"u{u}", u, pos, 1)] + others
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
def test_summary_gives_the_full_tables_metrics(data, name, options) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer(name, **options).fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=7, seeds=SEEDS,
                                      calibration=calibration_sample(rows, catalog))  # fmt: skip
    assert list(reduced.columns) == summary_columns(SEEDS)
    assert list(reduced.columns[: len(FULL_COLUMNS)]) == list(FULL_COLUMNS)
    assert len(reduced) == len(rows) and (reduced["label"] == 1).all()
    full = materialised(rows, history, catalog, scorer.score)  # (calibrated by the call above)
    a, b = summary(full), summary(reduced)
    pdt.assert_frame_equal(a, b, check_exact=False, rtol=1e-12, atol=1e-12)
    # every count, against sorting each tie group of the stored full table (the oracle)
    want = summarise(full, SEEDS, ("input_order", "item_id", "docno_desc"))
    got = reduced[want.columns].reset_index(drop=True)
    pdt.assert_frame_equal(got, want, check_dtype=False)
    # the held-out item's score is its score in the full table
    rel = full[full["label"] == 1].set_index("row")["score"]
    assert np.array_equal(reduced["score"].to_numpy(), rel.loc[reduced["row"]].to_numpy())


def test_relevant_stored_last(data) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, positive_position="last",
                                      seeds=[0])  # fmt: skip
    full = materialised(rows, history, catalog, scorer.score, last=True)
    assert (reduced["before:input_order"] == reduced["n_tied"]).all()
    rules = ["input_order", "pessimistic", "hash:0", "item_id"]
    pdt.assert_frame_equal(summary(full, rules), summary(reduced, rules))
    assert summary(reduced, ["input_order"])["value"].tolist() == summary(
        reduced, ["pessimistic"])["value"].tolist()  # fmt: skip


def test_relevant_stored_at_a_seeded_random_place(data) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)

    def place(seed, chunk_rows=None):
        out = full_catalog_candidates(rows, history, catalog, scorer, seeds=[],
                                      positive_position="random", seed=seed,
                                      chunk_rows=chunk_rows)  # fmt: skip
        return out["before:input_order"].to_numpy(), out["n_tied"].to_numpy()

    p, tied = place(1)
    assert ((p >= 0) & (p <= tied)).all()
    assert np.array_equal(p, place(1, chunk_rows=3)[0])  # the draw does not depend on chunks
    assert not np.array_equal(p, place(2)[0])
    assert (p[tied > 2] > 0).any() and (p[tied > 2] < tied[tied > 2]).any()
    # drawn per user: the same places when the rows come in another order, or fewer of them
    back = full_catalog_candidates(rows.iloc[::-1], history, catalog, scorer, seeds=[],
                                   positive_position="random", seed=1)  # fmt: skip
    assert np.array_equal(back["before:input_order"].to_numpy()[::-1], p)
    few = full_catalog_candidates(rows.iloc[5:9], history, catalog, scorer, seeds=[],
                                  positive_position="random", seed=1)  # fmt: skip
    assert np.array_equal(few["before:input_order"].to_numpy(), p[5:9])


def test_random_rule_is_the_documented_exception(data) -> None:
    # random:SEED is drawn per row on a summary table: it runs, moves under the audit, and is
    # not promised equal to random:SEED on the stored full table
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, seeds=[])
    out = summary(reduced, ["random:0", "expected"])
    assert set(out["rule"]) == {"random:0", "expected"}
    inv = audit(reduced, METRICS, ["random:0", "input_order", "expected"], n_permutations=2)
    verdict = inv.invariance.drop_duplicates("rule").set_index("rule")["invariant"]
    assert verdict.to_dict() == {"random:0": "no", "input_order": "no", "expected": "yes"}


@pytest.mark.parametrize("name", ["attribute_overlap", "residualized_attribute", "popularity"])
def test_chunk_size_does_not_change_the_result(data, name) -> None:
    history, rows, catalog, attrs = data
    outs = []
    pairs = calibration_sample(rows, catalog, 500, seed=2)
    for chunk in (1, 3, 16, 1000):
        scorer = get_scorer(name).fit(history, attrs)
        outs.append(full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=chunk,
                                            seeds=SEEDS, calibration=pairs))  # fmt: skip
    for other in outs[1:]:
        pdt.assert_frame_equal(outs[0], other, check_exact=True)


def test_residualization_is_fitted_once_on_the_given_pairs(data) -> None:
    history, rows, catalog, attrs = data
    fit_pairs = materialised(rows.iloc[:10], history, catalog, lambda u, i: np.zeros(len(u)))
    users, items = fit_pairs["user_id"].to_numpy(object), fit_pairs["item_id"].to_numpy(object)
    # the OLS over the calibration pairs, computed here from the overlap and the covariates
    ref = get_scorer("residualized_attribute").fit(history, attrs)
    s = get_scorer("attribute_overlap").fit(history, attrs).score(users, items)
    x1, x2 = ref.covariates(items)
    coef = np.linalg.lstsq(np.column_stack([np.ones(len(s)), x1, x2]), s, rcond=None)[0]
    scorer = get_scorer("residualized_attribute").fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=4,
                                      calibration=fit_pairs, seeds=[0])  # fmt: skip
    assert np.array_equal(scorer.coef_, coef)
    # applied to the calibration pairs, the scorer gives the residuals of that OLS, bit for bit
    b0, b1, b2 = (float(c) for c in coef)
    assert scorer.score(users, items).tobytes() == (s - (b0 + b1 * x1 + b2 * x2)).tobytes()
    # the held-out items' scores are those of the same function
    held = scorer.score(rows["user_id"].to_numpy(object), rows["item_id"].to_numpy(object))
    assert reduced["score"].to_numpy().tobytes() == held.tobytes()
    # a scorer that needs calibration and got none says so
    with pytest.raises(RuntimeError, match="after calibrate"):
        full_catalog_candidates(rows, history, catalog,
                                get_scorer("residualized_attribute").fit(history, attrs))  # fmt: skip


def test_calibration_sample_is_seeded_and_drawn_from_rows_x_catalogue(data) -> None:
    _, rows, catalog, _ = data
    a = calibration_sample(rows, catalog, 300, seed=1)
    assert list(a.columns) == ["user_id", "item_id"] and len(a) == 300
    assert set(a["user_id"]) <= set(rows["user_id"]) and set(a["item_id"]) <= set(catalog)
    pdt.assert_frame_equal(a, calibration_sample(rows, catalog[::-1], 300, seed=1))
    assert not a.equals(calibration_sample(rows, catalog, 300, seed=2))
    with pytest.raises(ValueError, match="at least one row"):
        calibration_sample(rows.iloc[:0], catalog)


class _Centred:
    """A calibrated scorer that is not a built-in: popularity minus its mean over the
    calibration pairs; it counts its calibrations and refuses to score before one."""

    def __init__(self, inner):
        self.inner, self.shift, self.calibrations = inner, None, 0

    def fit(self, history, attrs):
        return self

    def calibrate(self, pairs):
        self.calibrations += 1
        s = self.inner.score(pairs["user_id"].to_numpy(object), pairs["item_id"].to_numpy(object))
        self.shift = float(s.mean())
        return self

    def score(self, users, items):
        if self.shift is None:
            raise RuntimeError("score before calibrate")
        return self.inner.score(users, items) - self.shift


def test_any_calibrated_scorer_runs_full_catalog(data) -> None:
    history, rows, catalog, attrs = data
    pairs = calibration_sample(rows, catalog, 200, seed=3)
    inner = get_scorer("popularity").fit(history, attrs)
    scorer = _Centred(inner)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, chunk_rows=6, seeds=[0, 1],
                                      calibration=pairs)  # fmt: skip
    assert scorer.calibrations == 1 and scorer.shift > 0
    full = materialised(rows, history, catalog, scorer.score)
    rules = ["input_order", "expected", "hash:0", "hash:1", "item_id"]
    pdt.assert_frame_equal(summary(full, rules), summary(reduced, rules))
    # the shift moves every score alike, so the counts are popularity's
    plain = full_catalog_candidates(rows, history, catalog, inner, seeds=[0, 1])
    pdt.assert_frame_equal(reduced.drop(columns="score"), plain.drop(columns="score"))


class _Decoy:
    """A plain pairwise scorer that happens to have attributes named as the residualized
    scorer's (``overlap``, ``covariates``, ``coef_``): the core must not care."""

    overlap = None
    coef_ = None

    def __init__(self, inner):
        self.inner = inner

    def fit(self, history, attrs):
        return self

    def covariates(self, item_ids):
        raise AssertionError("not part of the scorer protocol")

    def score(self, users, items):
        return self.inner.score(users, items)


def test_the_core_uses_only_the_protocol(data) -> None:
    history, rows, catalog, attrs = data
    inner = get_scorer("attribute_overlap").fit(history, attrs)
    want = full_catalog_candidates(rows, history, catalog, inner, seeds=[0])
    got = full_catalog_candidates(rows, history, catalog, _Decoy(inner), seeds=[0],
                                  calibration=calibration_sample(rows, catalog))  # fmt: skip
    pdt.assert_frame_equal(got, want, check_exact=True)


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
        full_catalog_candidates(rows, history, catalog, rec, chunk_pairs=pairs, seeds=[0])
        assert rec.largest <= max(chunk * n_items, 4096)  # (the first-chunk batch check)
        assert rec.largest <= max(pairs, n_items) or chunk * n_items >= len(rows) * n_items


class _Constant:
    """Every pair scores 0: the held-out item ties with the whole catalogue."""

    def fit(self, history, attrs):
        return self

    def score(self, users, items):
        return np.zeros(len(users))


def test_a_tie_with_the_whole_catalogue_is_one_line_a_row(data) -> None:
    history, rows, catalog, _ = data
    # two users without history (no excluded items), side by side in one chunk
    rows = pd.concat([rows, pd.DataFrame({"user_id": ["new1", "new2"], "item_id": ["i001"] * 2})])
    big = np.array([f"x{j:05d}" for j in range(20_000)] + list(catalog), dtype=object)
    reduced = full_catalog_candidates(rows, history, big, _Constant(), chunk_pairs=50_000,
                                      seeds=range(3))  # fmt: skip
    assert len(reduced) == len(rows)
    assert (reduced["n_higher"] == 0).all() and (reduced["n_lower"] == 0).all()
    seen = history.groupby("user_id")["item_id"].nunique().reindex(rows["user_id"], fill_value=0)
    held_seen = [it in set(history[history.user_id == u].item_id)
                 for u, it in zip(rows.user_id, rows.item_id, strict=True)]  # fmt: skip
    want = len(big) - 1 - seen.loc[rows["user_id"]].to_numpy() + np.array(held_seen)
    assert np.array_equal(reduced["n_tied"].to_numpy(), want)
    assert (reduced["n_modal"] == reduced["n_tied"] + 1).all()
    # hash places are spread over the group: the mean place is near the middle
    frac = reduced["before:hash:0"] / reduced["n_tied"]
    assert 0.25 < frac.mean() < 0.75
    ev = evaluate(reduced, ["HR@10"], ["expected", "input_order"])
    assert ev.mean("input_order", "HR@10") == 1.0
    assert ev.mean("expected", "HR@10") == pytest.approx(np.mean(10 / (want + 1)))


class _BatchDependent:
    def fit(self, history, attrs):
        return self

    def score(self, users, items):
        return np.full(len(users), float(len(users)))


def test_batch_dependent_scorer_is_refused(data) -> None:
    history, rows, catalog, _ = data
    with pytest.raises(ValueError, match="depend on the batch"):
        full_catalog_candidates(rows, history, catalog, _BatchDependent())


class _Matrix:
    """A popularity scorer with a score_matrix hook (optionally a wrong one)."""

    def __init__(self, inner, wrong: bool = False):
        self.inner, self.wrong, self.pairs, self.blocks = inner, wrong, 0, 0

    def score(self, users, items):
        self.pairs += len(users)
        return self.inner.score(users, items)

    def score_matrix(self, users, items):
        self.blocks += 1
        s = self.inner.score(np.repeat(users, len(items)), np.tile(items, len(users)))
        s = s.reshape(len(users), len(items))
        return s + 1e-9 if self.wrong else s


def test_score_matrix_is_used_and_checked(data) -> None:
    history, rows, catalog, attrs = data
    inner = get_scorer("popularity").fit(history, attrs)
    via_pairs = full_catalog_candidates(rows, history, catalog, inner, chunk_rows=5)
    hook = _Matrix(inner)
    via_blocks = full_catalog_candidates(rows, history, catalog, hook, chunk_rows=5)
    pdt.assert_frame_equal(via_pairs, via_blocks, check_exact=True)
    n_items = len(np.unique(catalog))
    assert hook.blocks == -(-len(rows) // 5) + 3  # every chunk, plus 3 for the first's check
    assert hook.pairs <= 3 * 5 * n_items  # score only for the checks
    with pytest.raises(ValueError, match="score_matrix differs from its score"):
        full_catalog_candidates(rows, history, catalog, _Matrix(inner, wrong=True))


def test_output_is_read_by_the_evaluator(data, tmp_path) -> None:
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, seeds=SEEDS)
    for name in ("scores.parquet", "scores.csv"):
        write_table(reduced, tmp_path / name)
        table = read_candidates(tmp_path / name)
        assert table.is_summary and table.n_rows == len(rows)
        assert sorted(table.before) == sorted(c[len("before:") :] for c in reduced.columns
                                              if c.startswith("before:"))  # fmt: skip
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
    with pytest.raises(ValueError, match="positive_position"):
        full_catalog_candidates(rows, history, catalog, scorer, positive_position="middle")
    with pytest.raises(ValueError, match="seeds must be >= 0"):
        full_catalog_candidates(rows, history, catalog, scorer, seeds=[-1])


def test_equal_hash_keys_fall_back_to_item_id_order(data, monkeypatch) -> None:
    # every id hashing alike makes every key of a row equal: the documented tie-break of equal
    # keys (smaller item id first) then decides alone, in the summary as in the evaluator
    import importlib

    def same(values):
        return np.full(len(values), 12345, dtype=np.uint64)

    for name in ("tieaudit.ties.blocks", "tieaudit.ties.rules.hashed"):  # full catalogue, stored table
        monkeypatch.setattr(importlib.import_module(name), "string_hashes", same)
    history, rows, catalog, attrs = data
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    reduced = full_catalog_candidates(rows, history, catalog, scorer, seeds=[0, 5])
    assert (reduced["n_tied"] > 0).any()
    for s in (0, 5):
        assert reduced[f"before:hash:{s}"].tolist() == reduced["before:item_id"].tolist()
    full = materialised(rows, history, catalog, scorer.score)
    rules = ["hash:0", "hash:5", "item_id"]
    pdt.assert_frame_equal(summary(full, rules), summary(reduced, rules))


class _SortedRows(_Matrix):
    """A score_matrix that returns its rows sorted by user id: wrong unless the chunk's users
    happen to come sorted."""

    def score_matrix(self, users, items):
        return super().score_matrix(np.sort(users), items)


class _CountsUsers:
    """Batch-dependent in both paths: every score depends on how many users share the call."""

    def __init__(self, inner):
        self.inner = inner

    def score(self, users, items):
        return self.inner.score(users, items) + len(set(users))

    def score_matrix(self, users, items):
        s = self.inner.score(np.repeat(users, len(items)), np.tile(items, len(users)))
        return s.reshape(len(users), len(items)) + len(set(users))


def test_a_wrong_score_matrix_is_caught_on_a_large_catalogue(data) -> None:
    history, rows, catalog, attrs = data
    big = np.array(list(catalog) + [f"x{j:05d}" for j in range(5000)], dtype=object)
    inner = get_scorer("attribute_overlap").fit(history, attrs)  # rows differ by user
    shuffled = rows.iloc[::-1].reset_index(drop=True)  # users not in sorted order
    with pytest.raises(ValueError, match="score_matrix differs from its score"):
        full_catalog_candidates(shuffled, history, big, _SortedRows(inner), seeds=[])
    with pytest.raises(ValueError, match="depend"):
        full_catalog_candidates(rows, history, big, _CountsUsers(inner), seeds=[])


def test_ids_with_trailing_nul_stay_distinct() -> None:
    # numpy's fixed-width strings would drop the NUL and merge the two items
    rows = pd.DataFrame({"user_id": ["u"], "item_id": ["z\x00"]})
    history = pd.DataFrame({"user_id": ["v"], "item_id": ["y"]})
    out = full_catalog_candidates(rows, history, ["z", "z\x00", "y"], _Constant(), seeds=[0])
    assert out["item_id"].tolist() == ["z\x00"]
    assert out["n_tied"].tolist() == [2] and out["before:item_id"].tolist() == [2]

"""score_matrix: the block-scoring hook of the built-in scorers, bit for bit the pair path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tieaudit.scorers import (
    AttributeOverlapScorer,
    PopularityScorer,
    ResidualizedAttributeScorer,
    Scorer,
    ScorerInterfaceError,
    check_scorer,
    get_scorer,
)
from tests.conftest import examples

WEIGHTS = ["rating", "binary", "count"]


def pair_path(scorer, users, items) -> np.ndarray:
    """What score_matrix must equal: score on the repeat/tile pairs, reshaped."""
    users, items = np.asarray(users, dtype=object), np.asarray(items, dtype=object)
    s = scorer.score(np.repeat(users, len(items)), np.tile(items, len(users)))
    return s.reshape(len(users), len(items))


def assert_bit_identical(scorer, users, items) -> np.ndarray:
    got = scorer.score_matrix(np.asarray(users, dtype=object), np.asarray(items, dtype=object))
    want = pair_path(scorer, users, items)
    assert got.dtype == np.float64 and got.shape == (len(users), len(items))
    assert np.array_equal(got, want)  # exact, not allclose
    # and the same bits (array_equal would accept -0.0 for +0.0)
    assert got.tobytes() == want.tobytes()
    return got


def random_data(rng, ratings, n_users=60, n_items=120, n_attr=25, n_hist=900, n_pairs=500):
    """A tie-heavy history (few attributes per item, many shared) with the given rating draw.

    Item ids i0..i{n_items+9} carry attributes (some none), users u0..u{n_users-1} have history;
    ids past those ranges are unknown to fit."""
    history = pd.DataFrame(
        {
            "user_id": [f"u{k}" for k in rng.integers(0, n_users, n_hist)],
            "item_id": [f"i{k}" for k in rng.integers(0, n_items + 10, n_hist)],
            "rating": ratings(n_hist),
        }
    )
    attrs = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in rng.integers(0, n_items, n_pairs)],
            "attribute": [f"a{k}" for k in rng.integers(0, n_attr, n_pairs)],
        }
    )
    return history, attrs


def random_block(rng, n_users=60, n_items=120, m=45, n=150):
    """Users and items with duplicates, unknown ids and items without attributes."""
    users = np.array([f"u{k}" for k in rng.integers(0, n_users + 8, m)], dtype=object)
    items = np.array([f"i{k}" for k in rng.integers(0, n_items + 25, n)], dtype=object)
    return users, items


@pytest.mark.parametrize("weight", WEIGHTS)
@pytest.mark.parametrize("chunk_size", [1, 7, 500, 1_000_000])
def test_overlap_score_matrix_is_the_pair_path_bit_for_bit(weight, chunk_size):
    rng = np.random.default_rng(11)

    def ratings(k):  # integer ratings with NaNs: tie-heavy
        return np.where(rng.random(k) < 0.1, np.nan, rng.integers(1, 6, k).astype(float))

    history, attrs = random_data(rng, ratings)
    scorer = AttributeOverlapScorer(weight=weight, chunk_size=chunk_size).fit(history, attrs)
    users, items = random_block(rng)
    got = assert_bit_identical(scorer, users, items)
    # the data is tie-heavy and exercises every case
    assert len(np.unique(got)) < got.size / 10
    assert (got == 0).any() and (got > 0).any()


def non_dyadic_scorer(chunk_size=1_000_000):
    rng = np.random.default_rng(5)

    def ratings(k):  # uniform ratings plus 0.1 / 3.7 / 1e-3: additions round
        r = rng.uniform(0.0, 5.0, k)
        decimal = rng.random(k) < 0.3
        r[decimal] = rng.choice([0.1, 3.7, 0.7, 1e-3], int(decimal.sum()))
        return r

    history, attrs = random_data(rng, ratings, n_users=40, n_attr=12, n_pairs=700)
    return AttributeOverlapScorer(chunk_size=chunk_size).fit(history, attrs), rng


@pytest.mark.parametrize("chunk_size", [3, 1_000_000])
def test_overlap_score_matrix_bit_identical_with_non_dyadic_ratings(chunk_size):
    scorer, rng = non_dyadic_scorer(chunk_size)
    users, items = random_block(rng, n_users=40, m=50, n=160)
    assert_bit_identical(scorer, users, items)


def test_non_dyadic_data_is_sensitive_to_the_summation_order():
    """The data above does tell summation orders apart: summing each cell's weights in
    ascending attribute order (in Python) gives the scorer's bits, descending order does not."""
    scorer, rng = non_dyadic_scorer()
    users, items = random_block(rng, n_users=40, m=50, n=160)
    got = scorer.score_matrix(users, items)
    ia = scorer._ia
    keys, weights = scorer._user_weights(np.arange(len(scorer._users)))
    w = dict(zip(keys.tolist(), weights.tolist(), strict=True))
    n_attr = scorer._n_attr
    ascending = np.zeros(got.shape)
    descending = np.zeros(got.shape)
    for r, u in enumerate(users):
        uc = scorer._users.get_indexer([u])[0]
        for c, i in enumerate(items):
            ic = ia.items.get_indexer([i])[0]
            if uc < 0 or ic < 0:
                continue
            terms = [
                w.get(uc * n_attr + a, 0.0) for a in ia.attr[ia.indptr[ic] : ia.indptr[ic + 1]]
            ]
            up = down = 0.0
            for t in terms:
                up += t
            for t in reversed(terms):
                down += t
            ascending[r, c], descending[r, c] = up, down
    assert np.array_equal(got, ascending)
    assert not np.array_equal(got, descending)  # a changed order changes bits here
    np.testing.assert_allclose(got, descending, rtol=1e-12)


# u1: i1 (5), i2 (3), i3 (NaN).  u2: i2 twice (4, then 2).
HISTORY = pd.DataFrame(
    {
        "user_id": ["u1", "u1", "u1", "u2", "u2"],
        "item_id": ["i1", "i2", "i3", "i2", "i2"],
        "rating": [5.0, 3.0, np.nan, 4.0, 2.0],
    }
)
# i1 {red, big}, i2 {red, small}, i3 {blue}, i4 {red, blue, big}; i6 none.
ATTRS = pd.DataFrame(
    [("i1", "red"), ("i1", "big"), ("i1", "red"), ("i2", "red"), ("i2", "small"),
     ("i3", "blue"), ("i4", "red"), ("i4", "blue"), ("i4", "big")],
    columns=["item_id", "attribute"],
)  # fmt: skip


def hand_scorer(weight="rating"):
    return AttributeOverlapScorer(weight=weight).fit(HISTORY, ATTRS)


def test_overlap_score_matrix_by_hand_with_unknowns_and_duplicates():
    scorer = hand_scorer()
    # u3 unknown to fit, u1 twice; i6 without attributes, "nope" unknown, i4 twice
    users = ["u1", "u3", "u2", "u1"]
    items = ["i4", "i6", "nope", "i1", "i4", "i3"]
    # rating weights: w_u1 = {red: 8, big: 5, small: 3, blue: 1}, w_u2 = {red: 6, small: 6}
    expected = np.array(
        [
            [8 + 1 + 5, 0, 0, 8 + 5, 8 + 1 + 5, 1],
            [0, 0, 0, 0, 0, 0],
            [6, 0, 0, 6, 6, 0],
            [8 + 1 + 5, 0, 0, 8 + 5, 8 + 1 + 5, 1],
        ],
        dtype=float,
    )
    got = assert_bit_identical(scorer, users, items)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("weight", WEIGHTS)
def test_overlap_score_matrix_empty_and_degenerate_inputs(weight):
    scorer = hand_scorer(weight)
    for users, items in [([], []), ([], ["i1", "i2"]), (["u1", "u2"], []),
                         (["u3", "nobody"], ["i1", "i4"]), (["u1"], ["i6", "nope"])]:  # fmt: skip
        got = assert_bit_identical(scorer, users, items)
        assert got.shape == (len(users), len(items))
    assert not assert_bit_identical(scorer, ["u3", "nobody"], ["i1", "i4"]).any()
    # no attributes at all / no history at all: everything scores 0
    empty_attrs = pd.DataFrame({"item_id": pd.Series([], dtype=object),
                                "attribute": pd.Series([], dtype=object)})  # fmt: skip
    history = pd.DataFrame({"user_id": ["u1"], "item_id": ["i1"], "rating": [3.0]})
    for h, a in [(history, empty_attrs), (history.iloc[:0], ATTRS)]:
        s = AttributeOverlapScorer(weight=weight).fit(h, a)
        assert not assert_bit_identical(s, ["u1", "u2"], ["i1", "i4", "x"]).any()


def test_overlap_score_matrix_errors():
    with pytest.raises(RuntimeError, match="before fit"):
        AttributeOverlapScorer().score_matrix(np.array(["u1"]), np.array(["i1"]))
    scorer = hand_scorer()
    with pytest.raises(ValueError, match="1-D"):
        scorer.score_matrix(np.array([["u1"]], dtype=object), np.array(["i1"], dtype=object))


def test_overlap_score_matrix_inverted_index_cache_follows_the_items():
    scorer = hand_scorer()
    users = np.array(["u1", "u2"], dtype=object)
    items = np.array(["i1", "i2", "i4"], dtype=object)
    first = assert_bit_identical(scorer, users, items)
    assert scorer.score_matrix(users, items.copy()).tobytes() == first.tobytes()  # cached
    items[0] = "i3"  # the caller reuses its array: the cache kept its own copy
    assert_bit_identical(scorer, users, items)
    assert_bit_identical(scorer, users, items[::-1])  # same length, other content
    assert_bit_identical(scorer, users, np.array(["i4"], dtype=object))
    # a refit drops the index of the previous fit
    history = pd.DataFrame({"user_id": ["u1"], "item_id": ["i9"], "rating": [2.0]})
    attrs = pd.DataFrame({"item_id": ["i9", "i1"], "attribute": ["red", "red"]})
    scorer.fit(history, attrs)
    got = assert_bit_identical(scorer, users, items)
    np.testing.assert_array_equal(got, [[0, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(scorer.score_matrix(users, ["i1", "i9"]), [[2, 2], [0, 0]])


def test_last_ids_reuses_a_frozen_array_by_identity_and_compares_others():
    from tieaudit.scorers._ids import LastIds

    calls = []

    def make(items):
        calls.append(list(items))
        return len(calls)

    kept = LastIds()
    frozen = np.array(["a", "b", "c"], dtype=object)
    frozen.flags.writeable = False  # as full_catalog_candidates passes its catalogue
    assert kept.get(frozen, make) == 1
    assert kept.get(frozen, make) == 1  # the same read-only array: kept, not recomputed
    assert kept.get(np.array(["a", "b", "c"], dtype=object), make) == 1  # equal ids
    assert kept.get(np.array(["a", "b", "d"], dtype=object), make) == 2
    # a writeable array is compared by content: changed in place, it is looked up again
    mine = np.array(["x", "y"], dtype=object)
    assert kept.get(mine, make) == 3
    mine[1] = "z"
    assert kept.get(mine, make) == 4 and calls[-1] == ["x", "z"]
    # a read-only view of a writeable array can change through its base: compared by content
    base = np.array(["p", "q"], dtype=object)
    view = base.view()
    view.flags.writeable = False
    assert kept.get(view, make) == 5
    base[0] = "r"
    assert kept.get(view, make) == 6 and calls[-1] == ["r", "q"]


def test_full_catalog_scorers_look_the_catalogue_up_once(monkeypatch):
    from tieaudit.analyses.fullcatalog import full_catalog_candidates
    from tieaudit.scorers._ids import LastIds

    rng = np.random.default_rng(5)
    history = pd.DataFrame({"user_id": [f"u{k}" for k in rng.integers(0, 30, 400)],
                            "item_id": [f"i{k}" for k in rng.integers(0, 90, 400)],
                            "rating": rng.integers(1, 6, 400).astype(float)})  # fmt: skip
    attrs = pd.DataFrame({"item_id": [f"i{k}" for k in range(90)],
                          "attribute": [f"a{k % 7}" for k in range(90)]})  # fmt: skip
    catalog = [f"i{k}" for k in range(90)]
    rows = pd.DataFrame({"user_id": [f"u{k}" for k in range(30)],
                         "item_id": [catalog[k] for k in range(30)]})  # fmt: skip
    made, compared = [], []
    get, equal = LastIds.get, np.array_equal

    def counted_get(self, items, make):
        return get(self, items, lambda x: made.append(len(x)) or make(x))

    def counted_equal(a, b, *args, **kwargs):
        if np.asarray(a).dtype == object:  # ids (scores are compared too, elsewhere)
            compared.append(len(a))
        return equal(a, b, *args, **kwargs)

    monkeypatch.setattr(LastIds, "get", counted_get)
    monkeypatch.setattr(np, "array_equal", counted_equal)
    for scorer in (PopularityScorer().fit(history), AttributeOverlapScorer().fit(history, attrs),
                   ResidualizedAttributeScorer().fit(history, attrs)):  # fmt: skip
        if isinstance(scorer, ResidualizedAttributeScorer):
            scorer.calibrate(rows)
        made.clear()
        compared.clear()
        full_catalog_candidates(rows, history, catalog, scorer, seeds=[0], chunk_rows=2)
        # 15 chunks: the catalogue is looked up once (a cache each), never compared id by id
        caches = 2 if isinstance(scorer, ResidualizedAttributeScorer) else 1
        assert made == [90] * caches, (type(scorer).__name__, made)
        assert 90 not in compared, type(scorer).__name__


# ------------------------------------------------------------------------------------ residualized


@pytest.mark.parametrize("chunk_size", [3, 1_000_000])
def test_residualized_score_matrix_is_the_pair_path_bit_for_bit(chunk_size):
    rng = np.random.default_rng(9)
    history = pd.DataFrame({"user_id": [f"u{k}" for k in rng.integers(0, 40, 600)],
                            "item_id": [f"i{k}" for k in rng.integers(0, 130, 600)],
                            "rating": rng.uniform(0, 5, 600)})  # fmt: skip
    attrs = pd.DataFrame({"item_id": [f"i{k}" for k in rng.integers(0, 120, 500)],
                          "attribute": [f"a{k}" for k in rng.integers(0, 12, 500)]})  # fmt: skip
    resid = ResidualizedAttributeScorer(chunk_size=chunk_size).fit(history, attrs)
    users, items = random_block(rng, n_users=40, m=30, n=140)
    resid.calibrate(pd.DataFrame({"user_id": np.repeat(users[:5], 20),
                                  "item_id": np.tile(items[:20], 5)}))  # fmt: skip
    got = assert_bit_identical(resid, users, items)
    assert len(np.unique(got)) > got.size / 20  # residuals: the fitted part moved the scores
    # the items' fitted values are kept for the same items, recomputed for other ones
    again = items.copy()
    assert resid.score_matrix(users, again).tobytes() == got.tobytes()
    again[0] = "i7"  # the caller reuses its array
    assert_bit_identical(resid, users, again)
    # a new calibration drops them
    resid.calibrate(pd.DataFrame({"user_id": users[:3], "item_id": items[:3]}))
    assert not np.array_equal(assert_bit_identical(resid, users, items), got)


# ------------------------------------------------------------------------------------- popularity


def test_popularity_score_matrix_is_the_pair_path():
    rng = np.random.default_rng(3)
    history = pd.DataFrame(
        {"user_id": [f"u{k}" for k in rng.integers(0, 20, 300)],
         "item_id": [f"i{k}" for k in rng.integers(0, 50, 300)]}
    )  # fmt: skip
    scorer = PopularityScorer().fit(history)
    users = np.array([f"u{k}" for k in rng.integers(0, 25, 30)], dtype=object)
    items = np.array([f"i{k}" for k in rng.integers(0, 60, 80)], dtype=object)
    got = assert_bit_identical(scorer, users, items)
    got[0, 0] = -1.0  # a writable array of its own, not a broadcast view
    assert got[1, 0] != -1.0
    for u, i in [([], []), ([], ["i1"]), (["u1"], [])]:
        assert_bit_identical(scorer, u, i)
    with pytest.raises(RuntimeError, match="before fit"):
        PopularityScorer().score_matrix(users, items)


# ------------------------------------------------------------------------------------- interface


class _PairsOnly:
    def fit(self, history, item_attributes):
        return self

    def score(self, user_ids, item_ids):
        return np.zeros(len(user_ids))


def test_score_matrix_stays_optional():
    check_scorer(_PairsOnly())  # no error
    assert isinstance(_PairsOnly(), Scorer)
    assert "score_matrix" in (Scorer.__doc__ or "")
    # every built-in offers it
    for name in ("attribute_overlap", "popularity", "residualized_attribute"):
        assert callable(getattr(get_scorer(name), "score_matrix", None))


# ------------------------------------------------------------------------------------- property

_USERS = ["u0", "u1", "u2", "u3", "ux"]  # ux never in the history
_ITEMS = ["i0", "i1", "i2", "i3", "i4", "i5", "iy"]  # iy never has attributes
_ATTRIBUTES = ["a", "b", "c", "d", "e", "f"]
# awkward weights: non-dyadic decimals, large and tiny magnitudes, negatives, -0.0, NaN (-> 1)
_ratings = st.one_of(
    st.sampled_from([0.1, 0.2, 0.3, 3.7, -0.0, 0.0, -1.5, 1e16, -1e16, 1e-300, float("nan")]),
    st.floats(-1e6, 1e6, allow_nan=False, width=64),
)


@st.composite
def overlap_inputs(draw):
    """A small fit (history, item attributes), a block of users x items, weight and chunk size.

    Items get up to 8 attribute rows each (repeats included), so cells often sum 3+ weights and
    the summation order shows; the block has duplicate and unknown ids and may be empty."""
    n_hist = draw(st.integers(0, 25))
    history = pd.DataFrame(
        {
            "user_id": draw(
                st.lists(st.sampled_from(_USERS[:-1]), min_size=n_hist, max_size=n_hist)
            ),
            "item_id": draw(st.lists(st.sampled_from(_ITEMS), min_size=n_hist, max_size=n_hist)),
            "rating": draw(st.lists(_ratings, min_size=n_hist, max_size=n_hist)),
        },
        columns=["user_id", "item_id", "rating"],
    ).astype({"user_id": object, "item_id": object, "rating": float})
    attr_rows = [
        (item, a)
        for item in _ITEMS[:-1]
        for a in draw(st.lists(st.sampled_from(_ATTRIBUTES), max_size=8))
    ]
    attrs = pd.DataFrame(attr_rows, columns=["item_id", "attribute"], dtype=object)
    if attr_rows:
        attrs = attrs.iloc[draw(st.permutations(range(len(attrs))))]
    users = draw(st.lists(st.sampled_from(_USERS), max_size=6))
    items = draw(st.lists(st.sampled_from(_ITEMS), max_size=9))
    weight = draw(st.sampled_from(["rating", "rating", "binary", "count"]))
    chunk_size = draw(st.sampled_from([1, 2, 5, 1_000_000]))
    return history, attrs, users, items, weight, chunk_size


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(overlap_inputs())
def test_overlap_score_matrix_property(inputs):
    history, attrs, users, items, weight, chunk_size = inputs
    scorer = AttributeOverlapScorer(weight=weight, chunk_size=chunk_size).fit(history, attrs)
    assert_bit_identical(scorer, users, items)
    assert_bit_identical(scorer, users, items)  # again, from the cached inverted index


def test_check_scorer_checks_the_optional_methods():
    class CalibrateTwoArgs(_PairsOnly):
        def calibrate(self, pairs, extra):
            return self

    class MatrixOneArg(_PairsOnly):
        def score_matrix(self, user_ids):
            return np.zeros((len(user_ids), 0))

    class CalibrateNotCallable(_PairsOnly):
        calibrate = 3

    with pytest.raises(ScorerInterfaceError, match="calibrate cannot be called with one"):
        check_scorer(CalibrateTwoArgs())
    with pytest.raises(ScorerInterfaceError, match="score_matrix cannot be called with two"):
        check_scorer(MatrixOneArg())
    with pytest.raises(ScorerInterfaceError, match="calibrate is not callable"):
        check_scorer(CalibrateNotCallable())

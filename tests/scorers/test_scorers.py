"""tieaudit.scorers: built-in scorers (hand-computed), registry, user scorers, score_candidates."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tieaudit.pipeline.sampling import build_candidates
from tieaudit.scorers import (
    AttributeOverlapScorer,
    ResidualizedAttributeScorer,
    Scorer,
    ScorerInterfaceError,
    ScorerLoadError,
    available_scorers,
    calibrate_scorer,
    check_scorer_spec,
    get_scorer,
    register,
    score_candidates,
)
from tieaudit.scorers import base as scorer_base

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my_scorer.py"

# u1: i1 (5), i2 (3), i3 (NaN).  u2: i2 twice (4, then 2).
HISTORY = pd.DataFrame(
    {
        "user_id": ["u1", "u1", "u1", "u2", "u2"],
        "item_id": ["i1", "i2", "i3", "i2", "i2"],
        "rating": [5.0, 3.0, np.nan, 4.0, 2.0],
        "timestamp": [1, 2, 3, 4, 5],
    }
).astype({"user_id": "str", "item_id": "str"})
# i1 {red, big}, i2 {red, small}, i3 {blue}, i4 {red, blue, big}, i5 {green}; i6 none.
# The repeated (i1, red) pair counts once.
ATTRS = pd.DataFrame(
    [
        ("i1", "red"), ("i1", "big"), ("i1", "red"),
        ("i2", "red"), ("i2", "small"),
        ("i3", "blue"),
        ("i4", "red"), ("i4", "blue"), ("i4", "big"),
        ("i5", "green"),
    ],
    columns=["item_id", "attribute"],
).astype("str")

PAIRS = [("u1", "i4"), ("u1", "i5"), ("u1", "i6"), ("u1", "i1"), ("u2", "i4"), ("u2", "i2"),
         ("u3", "i1"), ("u2", "nope"), ("u1", "i3")]
# By hand. rating: w_u1 = {red: 5+3, big: 5, small: 3, blue: NaN->1}, w_u2 = {red: 4+2, small: 6}
#          binary: w_u1 = {red, big, small, blue: 1},  w_u2 = {red, small: 1}
#          count:  w_u1 = {red: 2, big: 1, small: 1, blue: 1}, w_u2 = {red: 2, small: 2}
EXPECTED = {
    #          u1i4        u1i5 u1i6 u1i1      u2i4 u2i2   u3i1 u2nope u1i3
    "rating": [8 + 1 + 5, 0, 0, 8 + 5, 6, 6 + 6, 0, 0, 1],
    "binary": [3, 0, 0, 2, 1, 2, 0, 0, 1],
    "count": [2 + 1 + 1, 0, 0, 2 + 1, 2, 2 + 2, 0, 0, 1],
}
POPULARITY = {"i1": 1, "i2": 3, "i3": 1}  # history rows per item
N_ATTRS = {"i1": 2, "i2": 2, "i3": 1, "i4": 3, "i5": 1}


def users_items(pairs=PAIRS):
    u, i = zip(*pairs, strict=True)
    return np.array(u, dtype=object), np.array(i, dtype=object)


@pytest.mark.parametrize("weight", ["rating", "binary", "count"])
def test_attribute_overlap_by_hand(weight):
    scorer = get_scorer("attribute_overlap", weight=weight).fit(HISTORY, ATTRS)
    assert isinstance(scorer, AttributeOverlapScorer) and isinstance(scorer, Scorer)
    got = scorer.score(*users_items())
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, np.array(EXPECTED[weight], dtype=float))


def test_attribute_overlap_default_weight_is_rating():
    scorer = get_scorer("attribute_overlap").fit(HISTORY, ATTRS)
    np.testing.assert_array_equal(scorer.score(*users_items()), EXPECTED["rating"])


def test_attribute_overlap_errors():
    with pytest.raises(ValueError, match="weight"):
        AttributeOverlapScorer(weight="tfidf")
    with pytest.raises(RuntimeError, match="before fit"):
        AttributeOverlapScorer().score(*users_items())
    with pytest.raises(ValueError, match="rating"):
        AttributeOverlapScorer().fit(HISTORY.drop(columns="rating"), ATTRS)
    # binary/count do not need ratings
    AttributeOverlapScorer(weight="count").fit(HISTORY.drop(columns="rating"), ATTRS)


def _naive_overlap(history, attrs, weight, pairs):
    """Pure-Python reference: dict of dicts, one loop per pair (what the scorer must not do)."""
    item_attrs: dict[str, set] = {}
    for it, a in zip(attrs["item_id"], attrs["attribute"], strict=True):
        item_attrs.setdefault(it, set()).add(a)
    w: dict[str, dict[str, float]] = {}
    for u, it, r in zip(history["user_id"], history["item_id"], history["rating"], strict=True):
        for a in item_attrs.get(it, ()):
            d = w.setdefault(u, {})
            v = {"rating": 1.0 if np.isnan(r) else r, "count": 1.0, "binary": 1.0}[weight]
            d[a] = 1.0 if weight == "binary" else d.get(a, 0.0) + v
    return np.array([sum(w.get(u, {}).get(a, 0.0) for a in item_attrs.get(i, ()))
                     for u, i in pairs])


@pytest.mark.parametrize("weight", ["rating", "binary", "count"])
def test_attribute_overlap_matches_naive_reference_with_chunking(weight):
    rng = np.random.default_rng(4)
    n_users, n_items, n_attr = 40, 80, 15
    history = pd.DataFrame(
        {
            "user_id": [f"u{k}" for k in rng.integers(0, n_users, 400)],
            "item_id": [f"i{k}" for k in rng.integers(0, n_items, 400)],
            "rating": np.where(rng.random(400) < 0.1, np.nan, rng.integers(1, 6, 400)),
        }
    )
    attrs = pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in rng.integers(0, n_items + 10, 300)],
            "attribute": [f"a{k}" for k in rng.integers(0, n_attr, 300)],
        }
    )
    pairs = [(f"u{rng.integers(0, n_users + 5)}", f"i{rng.integers(0, n_items + 10)}")
             for _ in range(700)]
    expected = _naive_overlap(history, attrs.drop_duplicates(), weight, pairs)
    for chunk in (7, 1_000_000):  # chunking must not change anything
        got = AttributeOverlapScorer(weight=weight, chunk_size=chunk).fit(history, attrs)
        np.testing.assert_allclose(got.score(*users_items(pairs)), expected, rtol=1e-12)


def pairs_frame(users, items) -> pd.DataFrame:
    return pd.DataFrame({"user_id": users, "item_id": items})


@pytest.mark.parametrize("weight", ["rating", "count"])
def test_residualized_equals_independent_lstsq(weight):
    scorer = get_scorer("residualized_attribute", weight=weight).fit(HISTORY, ATTRS)
    assert isinstance(scorer, ResidualizedAttributeScorer)
    users, items = users_items()
    s = np.array(EXPECTED[weight], dtype=float)
    x1 = np.log(1.0 + np.array([POPULARITY.get(i, 0) for i in items], dtype=float))
    x2 = np.array([N_ATTRS.get(i, 0) for i in items], dtype=float)
    X = np.column_stack([np.ones_like(s), x1, x2])
    beta, *_ = np.linalg.lstsq(X, s, rcond=None)
    assert scorer.calibrate(pairs_frame(users, items)) is scorer
    got = scorer.score(users, items)
    np.testing.assert_allclose(got, s - X @ beta, atol=1e-12)
    np.testing.assert_allclose(scorer.coef_, beta, atol=1e-12)
    # residuals are orthogonal to the design (OLS normal equations)
    np.testing.assert_allclose(X.T @ got, 0.0, atol=1e-10)


def test_residualized_sampled_scores_are_the_batch_ols_residuals_bit_for_bit():
    """score_candidates calibrates on the candidates and scores them: the very floats of one
    OLS over the candidates, s - (b0 + b1 x1 + b2 x2) evaluated per pair (what the sampled
    pipeline step has always written)."""
    cands = _candidates()
    users, items = cands["user_id"].to_numpy(object), cands["item_id"].to_numpy(object)
    s = get_scorer("attribute_overlap").fit(HISTORY, ATTRS).score(users, items)
    x1 = np.log1p(np.array([POPULARITY.get(i, 0) for i in items], dtype=float))
    x2 = np.array([N_ATTRS.get(i, 0) for i in items], dtype=float)
    coef = np.linalg.lstsq(np.column_stack([np.ones(len(s)), x1, x2]), s, rcond=None)[0]
    b0, b1, b2 = (float(c) for c in coef)
    want = s - (b0 + b1 * x1 + b2 * x2)
    scorer = get_scorer("residualized_attribute").fit(HISTORY, ATTRS)
    got = score_candidates(cands, scorer)["score"].to_numpy()
    assert got.tobytes() == want.tobytes()
    assert np.array_equal(scorer.coef_, coef)


def test_residualized_score_is_pure_after_calibrate():
    scorer = ResidualizedAttributeScorer().fit(HISTORY, ATTRS)
    users, items = users_items()
    with pytest.raises(RuntimeError, match=r"after calibrate\(pairs\)"):
        scorer.score(users, items)
    with pytest.raises(RuntimeError, match="after calibrate"):
        scorer.score_matrix(users, items)
    scorer.calibrate(pairs_frame(users, items))
    full = scorer.score(users, items)  # the calibration pairs' residuals, kept by calibrate
    assert scorer.score(users, items).tobytes() == full.tobytes()  # computed again: same bits
    # kept as they were: the caller's frame changed after calibrate does not fool score
    frame = pairs_frame(users.copy(), items.copy())
    scorer.calibrate(frame)
    frame.loc[0, "item_id"] = "i5"
    changed = frame["item_id"].to_numpy(object)
    assert scorer.score(users, changed)[0] == scorer.score(users[:1], changed[:1])[0]
    assert scorer.score(users, changed)[0] != full[0]
    scorer.calibrate(pairs_frame(users, items))
    # a batch is scored pair by pair with the calibrated function: parts, reversed, again
    assert np.array_equal(np.r_[scorer.score(users[:5], items[:5]),
                                scorer.score(users[5:], items[5:])], full)  # fmt: skip
    assert np.array_equal(scorer.score(users[::-1], items[::-1])[::-1], full)
    assert np.array_equal(scorer.score(users, items), full)
    assert len(scorer.score(users[:0], items[:0])) == 0
    # other calibration pairs give another function; a refit drops the calibration
    coef = scorer.coef_.copy()
    scorer.calibrate(pairs_frame(users[:5], items[:5]))
    assert not np.allclose(scorer.coef_, coef)
    assert not np.allclose(scorer.score(users, items), full)
    scorer.fit(HISTORY, ATTRS)
    assert scorer.coef_ is None
    with pytest.raises(RuntimeError, match="after calibrate"):
        scorer.score(users, items)
    with pytest.raises(RuntimeError, match="before fit"):
        ResidualizedAttributeScorer().calibrate(pairs_frame(users, items))
    with pytest.raises(ValueError, match="lack column"):
        scorer.calibrate(pd.DataFrame({"user_id": users}))
    # no calibration pairs: no fitted part, the score is the overlap
    scorer.calibrate(pairs_frame(users[:0], items[:0]))
    np.testing.assert_array_equal(scorer.coef_, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(scorer.score(users, items), EXPECTED["rating"])


def test_residualized_keeps_identical_pairs_tied():
    scorer = ResidualizedAttributeScorer().fit(HISTORY, ATTRS)
    # two identical pairs (same s, x1, x2) placed far apart get bit-identical residuals
    u = np.array(["u1"] + ["u2"] * 997 + ["u1", "u2"], dtype=object)
    i = np.array(["i4"] + ["i2"] * 997 + ["i4", "i5"], dtype=object)
    r = score_candidates(pairs_frame(u, i), scorer)["score"].to_numpy()
    assert r[0] == r[998]


class _PublicOnly:
    """An attribute-overlap scorer that exposes only its public methods."""

    def __init__(self, inner):
        self._inner = inner

    def fit(self, history, item_attributes):
        self._inner.fit(history, item_attributes)
        return self

    def score(self, user_ids, item_ids):
        return self._inner.score(user_ids, item_ids)

    def score_matrix(self, user_ids, item_ids):
        return self._inner.score_matrix(user_ids, item_ids)

    def n_attributes(self, item_ids):
        return self._inner.n_attributes(item_ids)


def test_residualized_composes_the_overlap_through_its_public_methods():
    """It never reads the overlap scorer's private fields: wrapped so that only the public
    methods are reachable, the scores are the same bits."""
    users, items = users_items()
    pairs = pairs_frame(users, items)
    plain = ResidualizedAttributeScorer().fit(HISTORY, ATTRS).calibrate(pairs)
    wrapped = ResidualizedAttributeScorer()
    wrapped.overlap = _PublicOnly(wrapped.overlap)
    wrapped.fit(HISTORY, ATTRS).calibrate(pairs)
    assert wrapped.score(users, items).tobytes() == plain.score(users, items).tobytes()
    block = wrapped.score_matrix(users, items)
    assert block.tobytes() == plain.score_matrix(users, items).tobytes()
    np.testing.assert_array_equal(
        AttributeOverlapScorer().fit(HISTORY, ATTRS).n_attributes(items),
        [N_ATTRS.get(i, 0) for i in items],
    )


def test_residualized_rank_deficient_design_is_handled():
    # every scored item has 2 attributes: x2 is collinear with the intercept
    scorer = ResidualizedAttributeScorer().fit(HISTORY, ATTRS)
    users = np.array(["u1", "u2", "u1", "u2"], dtype=object)
    items = np.array(["i1", "i1", "i2", "i2"], dtype=object)
    got = scorer.calibrate(pairs_frame(users, items)).score(users, items)
    s = np.array([13.0, 6.0, 11.0, 12.0])  # u1i1 8+5, u2i1 6, u1i2 8+3, u2i2 6+6
    x1 = np.log1p(np.array([1.0, 1.0, 3.0, 3.0]))
    X = np.column_stack([np.ones(4), x1])  # the same column space
    beta, *_ = np.linalg.lstsq(X, s, rcond=None)
    np.testing.assert_allclose(got, s - X @ beta, atol=1e-12)


def test_popularity_counts_history_rows():
    scorer = get_scorer("popularity").fit(HISTORY, ATTRS)
    users, items = users_items()
    got = scorer.score(users, items)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [POPULARITY.get(i, 0) for i in items])


# ---------------------------------------------------------------------------- registry & loading


def test_registry_lists_builtins_and_registers_new_names():
    assert {"attribute_overlap", "residualized_attribute", "popularity"} <= set(
        available_scorers()
    )

    class Const:
        def __init__(self, value=1.0):
            self.value = value

        def fit(self, history, item_attributes):
            return self

        def score(self, user_ids, item_ids):
            return np.full(len(item_ids), self.value)

    try:
        register("const_test", Const)
        s = get_scorer("const_test", value=2.5)
        assert isinstance(s, Const) and s.value == 2.5
        with pytest.raises(ValueError, match="already registered"):
            register("const_test", lambda: Const())
        register("const_test", Const)  # same factory again is fine
        with pytest.raises(ValueError, match="invalid scorer name"):
            register("a:b", Const)

        @register("const_test_deco")
        class Deco(Const):
            pass

        assert isinstance(get_scorer("const_test_deco"), Deco)
    finally:
        scorer_base._REGISTRY.pop("const_test", None)
        scorer_base._REGISTRY.pop("const_test_deco", None)


def test_unknown_name_and_bad_options():
    with pytest.raises(ScorerLoadError, match="unknown scorer 'nope'.*registered"):
        get_scorer("nope")
    with pytest.raises(ScorerLoadError, match="cannot construct scorer 'popularity'"):
        get_scorer("popularity", weight="rating")
    with pytest.raises(ValueError, match="weight must be"):
        get_scorer("attribute_overlap", weight="idf")


def _fit_example(scorer):
    # u1: i1 at day 0, i2 at day 10; half-life 10 days -> decay i1 0.5, i2 1.0
    history = pd.DataFrame(
        {"user_id": ["u1", "u1"], "item_id": ["i1", "i2"], "rating": [1.0, 1.0],
         "timestamp": [0, 10 * 86_400]}
    )
    attrs = pd.DataFrame(
        {"item_id": ["i1", "i2", "i2", "i9"], "attribute": ["red", "red", "blue", "blue"]}
    )
    scorer.fit(history, attrs)
    # w_u1 = {red: 0.5 + 1, blue: 1}; i9 {blue} -> 1; i2 {red, blue} -> 2.5; u2 unknown -> 0;
    # plus 1e-6 x freshness: i2 was chosen last (1), i1 first (0), i9 and i7 never (0)
    got = scorer.score(np.array(["u1", "u1", "u2", "u1", "u1"], dtype=object),
                       np.array(["i9", "i2", "i2", "i7", "i1"], dtype=object))
    np.testing.assert_allclose(got, [1.0, 2.5 + 1e-6, 1e-6, 0.0, 1.5], rtol=0, atol=1e-12)


def test_example_scorer_by_file_path(monkeypatch):
    scorer = get_scorer(f"{EXAMPLE}:RecencyAttributeScorer", half_life_days=10)
    assert type(scorer).__name__ == "RecencyAttributeScorer" and isinstance(scorer, Scorer)
    _fit_example(scorer)
    # relative to the current directory
    monkeypatch.chdir(REPO)
    _fit_example(get_scorer("examples/my_scorer.py:RecencyAttributeScorer", half_life_days=10))


def test_example_scorer_by_dotted_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    monkeypatch.delitem(sys.modules, "my_scorer", raising=False)
    try:
        _fit_example(get_scorer("my_scorer:RecencyAttributeScorer", half_life_days=10))
    finally:
        sys.modules.pop("my_scorer", None)


def test_user_scorer_loading_errors(tmp_path, monkeypatch):
    (tmp_path / "bad_scorers.py").write_text(
        "import numpy as np\n"
        "class NoScore:\n"
        "    def fit(self, history, item_attributes):\n"
        "        return self\n"
        "class OneArgFit:\n"
        "    def fit(self, history):\n"
        "        return self\n"
        "    def score(self, user_ids, item_ids):\n"
        "        return np.zeros(len(item_ids))\n"
        "class ScoreNotCallable:\n"
        "    score = 3\n"
        "    def fit(self, history, item_attributes):\n"
        "        return self\n"
        "def returns_class():\n"
        "    return NoScore\n"
        "NOT_CALLABLE = 42\n"
    )
    (tmp_path / "broken_scorer.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for mod in ("bad_scorers", "broken_scorer"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    with pytest.raises(ScorerLoadError, match="cannot import module 'no_such_pkg.mod'"):
        get_scorer("no_such_pkg.mod:Thing")
    with pytest.raises(ScorerLoadError, match="has no attribute 'Missing'"):
        get_scorer("bad_scorers:Missing")
    with pytest.raises(ScorerInterfaceError, match="NOT_CALLABLE' names an int, not a class"):
        get_scorer("bad_scorers:NOT_CALLABLE")
    with pytest.raises(ScorerLoadError, match="boom"):
        get_scorer("broken_scorer:X")
    with pytest.raises(ScorerLoadError, match="boom"):
        get_scorer(f"{tmp_path / 'broken_scorer.py'}:X")
    with pytest.raises(ScorerLoadError, match="does not exist"):
        get_scorer(f"{tmp_path / 'missing.py'}:X")
    with pytest.raises(ScorerLoadError, match="must look like"):
        get_scorer("bad_scorers:")
    with pytest.raises(ScorerLoadError, match="cannot construct"):
        get_scorer("bad_scorers:OneArgFit", alpha=1)
    with pytest.raises(ScorerInterfaceError, match="no callable 'score'"):
        get_scorer("bad_scorers:NoScore")
    with pytest.raises(ScorerInterfaceError, match="no callable 'score'"):
        get_scorer(f"{tmp_path / 'bad_scorers.py'}:ScoreNotCallable")
    with pytest.raises(ScorerInterfaceError, match=r"fit cannot be called with two"):
        get_scorer("bad_scorers:OneArgFit")
    with pytest.raises(ScorerInterfaceError, match="names a function, not a class"):
        get_scorer("bad_scorers:returns_class")


BAD_CLASSES = """
import numpy as np

from tieaudit.scorers import AttributeOverlapScorer as Good

CONSTRUCTED = []


def make_good(weight="rating"):
    return Good(weight)


class NoFit:
    def __init__(self, *args, **kwargs):
        CONSTRUCTED.append(args)

    def score(self, user_ids, item_ids):
        return np.zeros(len(item_ids))


class Factory:
    def __call__(self, weight="rating"):
        return Good(weight)


CALLABLE_INSTANCE = Factory()
"""


def test_a_path_must_name_a_scorer_class(tmp_path, monkeypatch):
    # A path names code to run; only a class implementing the Scorer protocol is accepted, so
    # an arbitrary callable (a function, a callable object, a class without fit/score) is
    # refused before it is ever called.
    (tmp_path / "scorer_kinds.py").write_text(BAD_CLASSES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "scorer_kinds", raising=False)
    assert get_scorer("scorer_kinds:Good", weight="binary").weight == "binary"
    for spec, kind in (
        ("subprocess:run", "function"),
        ("scorer_kinds:make_good", "function"),  # returns a valid scorer, still not a class
        ("scorer_kinds:CALLABLE_INSTANCE", "Factory"),
        ("os:system", "builtin_function_or_method"),
    ):
        with pytest.raises(ScorerInterfaceError, match=f"{spec}' names an? {kind}, not a class"):
            get_scorer(spec)
    for spec in ("scorer_kinds:NoFit", "subprocess:Popen"):
        with pytest.raises(ScorerInterfaceError, match="has no callable 'fit' method"):
            get_scorer(spec, args=["true"])
    import scorer_kinds

    assert scorer_kinds.CONSTRUCTED == []  # refused before construction
    sys.modules.pop("scorer_kinds", None)


def test_check_scorer_spec_checks_without_constructing(tmp_path, monkeypatch):
    (tmp_path / "spec_kinds.py").write_text(BAD_CLASSES)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "spec_kinds", raising=False)
    check_scorer_spec("attribute_overlap", {"weight": "binary"})
    check_scorer_spec("popularity")
    check_scorer_spec(f"{EXAMPLE}:RecencyAttributeScorer", {"half_life_days": 10})
    check_scorer_spec("spec_kinds:Good", {"weight": "count"})
    with pytest.raises(ScorerLoadError, match="unknown scorer 'nope'"):
        check_scorer_spec("nope")
    with pytest.raises(ScorerLoadError, match=r"cannot construct scorer 'popularity'.*weight"):
        check_scorer_spec("popularity", {"weight": "rating"})
    with pytest.raises(ScorerLoadError, match="cannot construct scorer 'spec_kinds:Good'"):
        check_scorer_spec("spec_kinds:Good", {"wieght": "count"})
    with pytest.raises(ScorerInterfaceError, match="names a function, not a class"):
        check_scorer_spec("subprocess:run")
    with pytest.raises(ScorerInterfaceError, match="has no callable 'fit'"):
        check_scorer_spec("spec_kinds:NoFit", {"x": 1})
    import spec_kinds

    assert spec_kinds.CONSTRUCTED == []
    sys.modules.pop("spec_kinds", None)


# ------------------------------------------------------------------------------ score_candidates


def _candidates():
    heldout = pd.DataFrame({"user_id": ["u1", "u2"], "item_id": ["i4", "i5"]}).astype("str")
    catalog = ["i1", "i2", "i3", "i4", "i5", "i6"]
    return build_candidates(heldout, HISTORY, catalog, 2, seed=0)


def test_score_candidates_adds_scores_in_stored_order():
    cands = _candidates()
    scorer = get_scorer("attribute_overlap").fit(HISTORY, ATTRS)
    scored = score_candidates(cands, scorer)
    assert "score" not in cands.columns  # input untouched
    assert list(scored.columns) == ["row", "user_id", "item_id", "label", "score"]
    assert scored["score"].dtype == np.float64
    expected = scorer.score(cands["user_id"].to_numpy(object), cands["item_id"].to_numpy(object))
    np.testing.assert_array_equal(scored["score"].to_numpy(), expected)
    # u1's positive i4 scores 14 (hand value above)
    assert scored.loc[(scored["user_id"] == "u1") & (scored["label"] == 1), "score"].item() == 14
    again = score_candidates(scored, get_scorer("popularity").fit(HISTORY, ATTRS))
    assert list(again.columns) == list(scored.columns)  # score replaced, not duplicated


def test_score_candidates_rejects_bad_output():
    cands = _candidates()

    class Bad:
        def __init__(self, out):
            self.out = out

        def fit(self, h, a):
            return self

        def score(self, u, i):
            return self.out(len(i))

    with pytest.raises(ValueError, match="shape"):
        score_candidates(cands, Bad(lambda n: np.zeros(n - 1)))
    with pytest.raises(ValueError, match="non-finite"):
        score_candidates(cands, Bad(lambda n: np.r_[np.zeros(n - 1), np.nan]))
    with pytest.raises(ValueError, match="not numbers"):
        score_candidates(cands, Bad(lambda n: np.array(["x"] * n)))


def test_score_candidates_calibrates_unless_told_not_to():
    cands = _candidates()
    other = pairs_frame(*users_items())
    scorer = get_scorer("residualized_attribute").fit(HISTORY, ATTRS).calibrate(other)
    coef = scorer.coef_.copy()
    kept = score_candidates(cands, scorer, calibrate=False)
    assert np.array_equal(scorer.coef_, coef)  # the calibration made beforehand is used
    fresh = score_candidates(cands, scorer)  # calibrated on the candidates
    assert not np.array_equal(scorer.coef_, coef)
    assert not np.allclose(kept["score"], fresh["score"])
    with pytest.raises(RuntimeError, match="after calibrate"):
        score_candidates(cands, get_scorer("residualized_attribute").fit(HISTORY, ATTRS),
                         calibrate=False)  # fmt: skip
    # a scorer without calibrate is scored as it is; pairs need both id columns
    popularity = get_scorer("popularity").fit(HISTORY, ATTRS)
    assert calibrate_scorer(popularity, cands) is popularity
    with pytest.raises(ValueError, match="calibration pairs lack column"):
        calibrate_scorer(scorer, cands.drop(columns="item_id"))


def test_overlap_ties_are_common_and_residualized_ties_rare():
    """The motivating contrast, on a small synthetic set."""
    rng = np.random.default_rng(0)
    n_items, n_users = 400, 150
    items = [f"i{k}" for k in range(n_items)]
    attrs = pd.DataFrame(
        {"item_id": np.repeat(items, 3), "attribute": [f"a{k}" for k in rng.integers(0, 30, 3 * n_items)]}
    )
    history = pd.DataFrame(
        {
            "user_id": [f"u{k}" for k in rng.integers(0, n_users, 3000)],
            "item_id": [items[k] for k in np.minimum(rng.zipf(1.5, 3000), n_items) - 1],
            "rating": rng.integers(1, 6, 3000).astype(float),
        }
    )
    users = sorted(set(history["user_id"]))
    heldout = pd.DataFrame({"user_id": users, "item_id": rng.choice(items, len(users))})
    cands = build_candidates(heldout, history, items, 49, seed=1)

    def tie_share(scored):
        dup = scored.duplicated(["row", "score"], keep=False)
        return dup.mean()

    overlap = score_candidates(cands, get_scorer("attribute_overlap").fit(history, attrs))
    resid = score_candidates(cands, get_scorer("residualized_attribute").fit(history, attrs))
    assert tie_share(overlap) > 0.5
    assert tie_share(resid) < tie_share(overlap) / 1.5
    # residual ties come only from pairs with identical (s, x1, x2) - e.g. s = 0 on unseen items
    scorer = get_scorer("residualized_attribute").fit(history, attrs)
    x1, x2 = scorer.covariates(cands["item_id"].to_numpy(object))
    full = resid.assign(s=overlap["score"], x1=x1, x2=x2)
    tied = full[full.duplicated(["row", "score"], keep=False)]
    assert (tied.groupby(["row", "score"])[["s", "x1", "x2"]].nunique() == 1).all().all()

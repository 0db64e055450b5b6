"""tieaudit.pipeline.sampling: choosing evaluation rows and building candidate lists."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tieaudit.pipeline.sampling import (
    CANDIDATE_COLUMNS,
    InsufficientNegativesError,
    build_candidates,
    row_id,
    sample_rows,
)
from tieaudit.common.seeds import make_seed
from tests.conftest import examples

N_ITEMS = 300
CATALOG = [f"i{j:03d}" for j in range(N_ITEMS)]


@pytest.fixture(scope="module")
def data():
    """60 users with 0-40 history items each, one 'dense' user with 200 of 300, held-out items."""
    rng = np.random.default_rng(11)
    hist, held = [], []
    for u in range(60):
        user = f"user{u}"
        n = 200 if u == 7 else int(rng.integers(0, 40))
        items = rng.choice(N_ITEMS, size=n + 1, replace=False)
        hist += [(user, CATALOG[j]) for j in items[:-1]]
        held.append((user, CATALOG[items[-1]]))
    history = pd.DataFrame(hist, columns=["user_id", "item_id"]).astype("str")
    heldout = pd.DataFrame(held, columns=["user_id", "item_id"]).astype("str")
    return history, heldout


def by_row(cands: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {r: g.reset_index(drop=True) for r, g in cands.groupby("row", sort=False)}


def check_valid(cands, heldout, history, n_neg):
    assert tuple(cands.columns) == CANDIDATE_COLUMNS
    assert cands["label"].dtype == np.int64
    for col in ("row", "user_id", "item_id"):
        assert cands[col].dtype == "str"
    seen = history.groupby("user_id")["item_id"].agg(set).to_dict()
    pos = dict(zip(heldout["user_id"], heldout["item_id"], strict=True))
    assert cands["row"].nunique() == len(heldout)
    for r, g in by_row(cands).items():
        user = g["user_id"].iloc[0]
        assert r == row_id(user) == "u" + user
        assert (g["user_id"] == user).all()
        assert g["label"].sum() == 1
        assert g.loc[g["label"] == 1, "item_id"].item() == pos[user]
        negs = g.loc[g["label"] == 0, "item_id"]
        assert len(negs) == n_neg
        assert negs.is_unique
        assert pos[user] not in set(negs)
        assert not (set(negs) & seen.get(user, set()))
        assert set(negs) <= set(CATALOG)


def test_rows_are_contiguous_blocks_in_heldout_order(data):
    history, heldout = data
    c = build_candidates(heldout, history, CATALOG, 10, seed=1)
    assert len(c) == 11 * len(heldout)
    block_rows = c["row"].to_numpy().reshape(len(heldout), 11)
    assert (block_rows == block_rows[:, :1]).all()
    assert list(block_rows[:, 0]) == ["u" + u for u in heldout["user_id"]]


@pytest.mark.parametrize("position", ["first", "last", "random"])
def test_valid_candidates_and_positive_position(data, position):
    history, heldout = data
    n_neg = 25
    c = build_candidates(heldout, history, CATALOG, n_neg, seed=5, positive_position=position)
    check_valid(c, heldout, history, n_neg)
    slots = {r: int(np.flatnonzero(g["label"].to_numpy() == 1)[0]) for r, g in by_row(c).items()}
    if position == "first":
        assert set(slots.values()) == {0}
    elif position == "last":
        assert set(slots.values()) == {n_neg}
    else:
        expected = {"u" + u: make_seed(5, "positive-position", u) % (n_neg + 1)
                    for u in heldout["user_id"]}
        assert slots == expected
        assert len(set(slots.values())) > 10


def test_same_seed_same_frame_different_seed_different(data):
    history, heldout = data
    a = build_candidates(heldout, history, CATALOG, 20, seed=3)
    b = build_candidates(heldout, history, CATALOG, 20, seed=3)
    pd.testing.assert_frame_equal(a, b)
    c = build_candidates(heldout, history, CATALOG, 20, seed=4)
    assert not a["item_id"].equals(c["item_id"])
    # every row changes (not just some): negatives of 20 out of ~260 coincide rarely
    changed = [not ga["item_id"].equals(gc["item_id"])
               for (_, ga), (_, gc) in zip(by_row(a).items(), by_row(c).items(), strict=True)]
    assert all(changed)


def test_row_negatives_do_not_depend_on_other_rows(data):
    history, heldout = data
    full = by_row(build_candidates(heldout, history, CATALOG, 30, seed=9))
    # drop most rows, reorder the rest; keep the dense user (index 7)
    subset = heldout.iloc[[42, 7, 3, 15]]
    part = by_row(build_candidates(subset, history, CATALOG, 30, seed=9))
    assert set(part) == {"u" + u for u in subset["user_id"]}
    for r, g in part.items():
        pd.testing.assert_frame_equal(g, full[r])
    # add rows (new users) and unrelated history: existing rows unchanged
    extra = pd.DataFrame({"user_id": ["new1", "new2"], "item_id": ["i000", "i001"]}, dtype="str")
    more_hist = pd.concat(
        [history, pd.DataFrame({"user_id": ["new1"] * 5, "item_id": CATALOG[:5]}, dtype="str")]
    )
    grown = by_row(build_candidates(pd.concat([extra, heldout]), more_hist, CATALOG, 30, seed=9))
    for r, g in full.items():
        pd.testing.assert_frame_equal(grown[r], g)


def test_catalog_order_and_duplicates_do_not_matter(data):
    history, heldout = data
    a = build_candidates(heldout, history, CATALOG, 15, seed=2)
    shuffled = list(np.random.default_rng(0).permutation(CATALOG)) + CATALOG[:50]
    b = build_candidates(heldout, history, pd.Series(shuffled), 15, seed=2)
    pd.testing.assert_frame_equal(a, b)


def _splitmix_stream(seed: int, count: int):
    """Reference SplitMix64 stream in pure Python integers (the documented formula)."""
    mask = (1 << 64) - 1
    for j in range(count):
        z = (seed + (j + 1) * 0x9E3779B97F4A7C15) & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        yield z ^ (z >> 31)


def _reference_negatives(seed: int, user: str, banned: set, n_neg: int, budget: int) -> list[str]:
    """The documented draw: the first n_neg distinct allowed catalogue items of the user's stream."""
    expected: list[str] = []
    for x in _splitmix_stream(make_seed(seed, "negatives", user), budget):
        item = CATALOG[int((x >> 11) / 2.0**53 * N_ITEMS)]
        if item not in banned and item not in expected:
            expected.append(item)
            if len(expected) == n_neg:
                break
    return expected


def test_sparse_rows_follow_the_documented_stream(data):
    history, heldout = data
    n_neg = 40
    c = by_row(build_candidates(heldout, history, CATALOG, n_neg, seed=21))
    seen = history.groupby("user_id")["item_id"].agg(set).to_dict()
    for user, positive in list(zip(heldout["user_id"], heldout["item_id"], strict=True))[:12]:
        if user == "user7":
            continue  # the dense user is drawn by permutation
        banned = seen.get(user, set()) | {positive}
        expected = _reference_negatives(21, user, banned, n_neg, 10_000)
        got = c["u" + user]
        assert got.loc[got["label"] == 0, "item_id"].tolist() == expected


def test_dense_row_uses_seeded_permutation(data):
    history, heldout = data
    user, positive = "user7", heldout.set_index("user_id").loc["user7", "item_id"]
    seen = set(history.loc[history["user_id"] == user, "item_id"]) | {positive}
    allowed = np.array([j for j, it in enumerate(CATALOG) if it not in seen])
    assert 2 * len(allowed) < N_ITEMS  # really dense
    perm = np.random.default_rng(make_seed(8, "negatives", user)).permutation(allowed)
    c = build_candidates(heldout[heldout["user_id"] == user], history, CATALOG, 30, seed=8)
    assert c.loc[c["label"] == 0, "item_id"].tolist() == [CATALOG[j] for j in perm[:30]]


def test_fewer_negatives_is_a_prefix_of_more(data):
    history, heldout = data
    small = by_row(build_candidates(heldout, history, CATALOG, 10, seed=4))
    large = by_row(build_candidates(heldout, history, CATALOG, 60, seed=4))
    for r, g in small.items():
        assert g["item_id"].tolist() == large[r]["item_id"].tolist()[:11]


def test_negatives_are_uniform_over_allowed_items():
    # 4000 users, each interacted with items 0-4 of a 20-item catalog, positive item 5:
    # allowed items 6..19 (14), 3 negatives each -> each allowed item expected 4000*3/14 ~ 857.
    catalog = [f"c{j:02d}" for j in range(20)]
    users = [f"u{k}" for k in range(4000)]
    history = pd.DataFrame(
        {"user_id": np.repeat(users, 5), "item_id": catalog[:5] * len(users)}, dtype="str"
    )
    heldout = pd.DataFrame({"user_id": users, "item_id": "c05"}, dtype="str")
    c = build_candidates(heldout, history, catalog, 3, seed=0)
    counts = c.loc[c["label"] == 0, "item_id"].value_counts()
    assert set(counts.index) == set(catalog[6:])
    expected = 4000 * 3 / 14
    assert (abs(counts - expected) < 0.15 * expected).all()


def test_insufficient_negatives_error_or_truncate():
    catalog = ["a", "b", "c", "d", "e"]
    history = pd.DataFrame({"user_id": ["x", "x", "x", "y"], "item_id": ["a", "b", "c", "a"]})
    heldout = pd.DataFrame({"user_id": ["x", "y"], "item_id": ["d", "b"]})
    # x may only get 'e' (1 item), y may get c, d, e (3 items)
    with pytest.raises(InsufficientNegativesError, match=r"1 row\(s\).*x \(1 allowed\)") as err:
        build_candidates(heldout, history, catalog, 2, seed=0)
    # the message names both ways to allow short rows: the argument and the workflow's config key
    assert "insufficient='truncate'" in str(err.value)
    assert "evaluation.insufficient_negatives: truncate" in str(err.value)
    c = build_candidates(heldout, history, catalog, 2, seed=0, insufficient="truncate")
    g = by_row(c)
    assert g["ux"]["item_id"].tolist() == ["d", "e"]
    assert g["uy"]["label"].tolist() == [1, 0, 0]
    assert set(g["uy"]["item_id"][1:]) <= {"c", "d", "e"}
    # a user who has seen everything: only the positive remains
    heldout2 = pd.DataFrame({"user_id": ["x"], "item_id": ["e"]})
    hist2 = pd.concat([history, pd.DataFrame({"user_id": ["x"], "item_id": ["d"]})])
    c2 = build_candidates(heldout2, hist2, catalog, 2, seed=0, insufficient="truncate")
    assert c2["item_id"].tolist() == ["e"] and c2["label"].tolist() == [1]


def test_edge_cases_and_input_errors(data):
    history, heldout = data
    c0 = build_candidates(heldout, history, CATALOG, 0, seed=0)
    assert (c0["label"] == 1).all() and len(c0) == len(heldout)
    empty = build_candidates(heldout.iloc[:0], history, CATALOG, 5, seed=0)
    assert len(empty) == 0 and tuple(empty.columns) == CANDIDATE_COLUMNS
    # positive not in the catalog is fine
    odd = pd.DataFrame({"user_id": ["zz"], "item_id": ["not-in-catalog"]})
    c = build_candidates(odd, history, CATALOG, 5, seed=0)
    assert c["item_id"].iloc[0] == "not-in-catalog" and len(c) == 6
    dup = pd.concat([heldout.iloc[:2], heldout.iloc[:1]])
    with pytest.raises(ValueError, match="one row per user"):
        build_candidates(dup, history, CATALOG, 5, seed=0)
    with pytest.raises(ValueError, match="positive_position"):
        build_candidates(heldout, history, CATALOG, 5, seed=0, positive_position="middle")
    with pytest.raises(ValueError, match="n_negatives"):
        build_candidates(heldout, history, CATALOG, -1, seed=0)


# --------------------------------------------------------------------------------- sample_rows


def test_sample_rows_basic_and_seeded(data):
    _, heldout = data
    s = sample_rows(heldout, 10, seed=1)
    assert len(s) == 10 and s["user_id"].is_unique
    assert list(s["user_id"]) == sorted(s["user_id"])
    assert set(s["user_id"]) <= set(heldout["user_id"])
    pd.testing.assert_frame_equal(s, sample_rows(heldout, 10, seed=1))
    assert set(sample_rows(heldout, 10, seed=2)["user_id"]) != set(s["user_id"])
    # independent of the input row order
    shuffled = heldout.sample(frac=1.0, random_state=0)
    pd.testing.assert_frame_equal(sample_rows(shuffled, 10, seed=1), s)
    # all rows (sorted by user) when asking for more, or None
    everything = sample_rows(heldout, 1000, seed=1)
    assert len(everything) == len(heldout)
    assert list(everything["user_id"]) == sorted(heldout["user_id"])
    pd.testing.assert_frame_equal(sample_rows(heldout, None, seed=7), everything)
    with pytest.raises(ValueError, match="one row per user"):
        sample_rows(pd.concat([heldout, heldout.iloc[:1]]), 5, seed=0)


def test_sample_rows_says_when_n_rows_is_more_than_the_users(data, caplog):
    _, heldout = data
    n = len(heldout)
    with caplog.at_level("WARNING", logger="tieaudit.pipeline.sampling"):
        sample_rows(heldout, n, seed=1)
        sample_rows(heldout, None, seed=1)
        assert caplog.records == []  # exactly all, or all asked for: nothing to say
        sample_rows(heldout, n + 5, seed=1)
    assert [r.getMessage() for r in caplog.records] == [
        f"n_rows {n + 5} asks for more rows than the {n} users with a held-out item: all {n} taken"
    ]


def test_sample_rows_is_uniform():
    heldout = pd.DataFrame({"user_id": [f"u{k}" for k in range(10)], "item_id": "x"})
    hits = pd.Series(0, index=heldout["user_id"])
    for seed in range(1500):
        hits[sample_rows(heldout, 3, seed)["user_id"]] += 1
    assert (abs(hits - 450) < 80).all()  # expected 1500 * 3/10 = 450, sd ~ 18


def test_many_rounds_give_the_same_stream_result(monkeypatch):
    """Nearly exhausting the allowed items needs several draw rounds; the result is still the
    documented 'first n distinct allowed stream values', and other rows do not change it."""
    import tieaudit.pipeline.sampling as sampling

    calls = []
    original = sampling._stream_indices
    monkeypatch.setattr(
        sampling, "_stream_indices", lambda *a: calls.append(a[2]) or original(*a)
    )
    rng = np.random.default_rng(1)
    users = ["p", "q", "r"]
    hist = [(u, CATALOG[j]) for u in users for j in rng.choice(N_ITEMS, 100, replace=False)]
    history = pd.DataFrame(hist, columns=["user_id", "item_id"]).astype("str")
    seen = history.groupby("user_id")["item_id"].agg(set).to_dict()
    positives = {u: next(it for it in CATALOG if it not in seen[u]) for u in users}
    heldout = pd.DataFrame({"user_id": users, "item_id": [positives[u] for u in users]})
    n_neg = 195  # of 199 allowed
    c = by_row(build_candidates(heldout, history, CATALOG, n_neg, seed=13))
    assert len(calls) > 1  # several rounds happened
    for user in users:
        banned = seen[user] | {positives[user]}
        expected = _reference_negatives(13, user, banned, n_neg, 100_000)
        got = c["u" + user]
        assert got.loc[got["label"] == 0, "item_id"].tolist() == expected
        alone = build_candidates(heldout[heldout["user_id"] == user], history, CATALOG, n_neg, 13)
        pd.testing.assert_frame_equal(alone, got)


@settings(max_examples=examples(40), deadline=None)
@given(
    n_items=st.integers(1, 40),
    n_users=st.integers(1, 8),
    n_neg=st.integers(0, 30),
    density=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32),
    position=st.sampled_from(["first", "last", "random"]),
)
def test_property_valid_rows_and_row_independence(n_items, n_users, n_neg, density, seed,
                                                  position):
    rng = np.random.default_rng(seed)
    catalog = [f"c{j}" for j in range(n_items)]
    hist, held = [], []
    for u in range(n_users):
        seen = rng.choice(n_items, size=int(rng.binomial(n_items, density)), replace=False)
        hist += [(f"u{u}", catalog[j]) for j in seen]
        held.append((f"u{u}", catalog[int(rng.integers(n_items))]))
    history = pd.DataFrame(hist, columns=["user_id", "item_id"], dtype="str")
    heldout = pd.DataFrame(held, columns=["user_id", "item_id"], dtype="str")
    c = build_candidates(heldout, history, catalog, n_neg, seed, position, insufficient="truncate")
    seen = history.groupby("user_id")["item_id"].agg(set).to_dict()
    rows = by_row(c)
    assert list(rows) == ["u" + u for u in heldout["user_id"]]
    for (user, positive), g in zip(held, rows.values(), strict=True):
        assert g["label"].sum() == 1
        slot = int(np.flatnonzero(g["label"].to_numpy() == 1)[0])
        assert slot == {"first": 0, "last": len(g) - 1}.get(position, slot)
        negs = set(g.loc[g["label"] == 0, "item_id"])
        allowed = set(catalog) - seen.get(user, set()) - {positive}
        assert negs <= allowed and len(negs) == len(g) - 1 == min(n_neg, len(allowed))
        alone = build_candidates(heldout[heldout["user_id"] == user], history, catalog, n_neg,
                                 seed, position, insufficient="truncate")
        pd.testing.assert_frame_equal(alone, g)

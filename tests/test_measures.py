"""tieaudit.ties.measures: parsing measure names and the values of HR, nDCG and MRR at a rank."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tieaudit.ties.measures import (
    DEFAULT_MEASURES,
    MEASURE_NAMES,
    Measure,
    parse_measure,
    parse_measures,
)

# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "name", "k"),
    [
        ("nDCG@10", "nDCG", 10),
        ("ndcg@10", "nDCG", 10),
        ("NDCG@10", "nDCG", 10),
        ("HR@5", "HR", 5),
        ("hr@5", "HR", 5),
        ("hit@5", "HR", 5),
        ("HitRate@20", "HR", 20),
        ("MRR@20", "MRR", 20),
        ("mrr@1", "MRR", 1),
        ("RR@3", "MRR", 3),
        ("  nDCG @ 10 ", "nDCG", 10),
        ("HR@007", "HR", 7),
    ],
)
def test_parse_measure_names_case_and_aliases(text: str, name: str, k: int) -> None:
    assert parse_measure(text) == Measure(name, k)


def test_parse_measure_passes_measures_through() -> None:
    m = Measure("MRR", 4)
    assert parse_measure(m) is m


@pytest.mark.parametrize("m", DEFAULT_MEASURES)
def test_str_round_trip(m: Measure) -> None:
    assert parse_measure(str(m)) == m
    assert str(m) == f"{m.name}@{m.k}"


def test_str_is_canonical() -> None:
    assert str(parse_measure("ndcg@10")) == "nDCG@10"
    assert str(parse_measure("hit@1")) == "HR@1"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("nDCG", "expected NAME@K"),
        ("nDCG@", "expected NAME@K"),
        ("@10", "expected NAME@K"),
        ("nDCG@-1", "expected NAME@K"),
        ("nDCG@1.5", "expected NAME@K"),
        ("nDCG@ten", "expected NAME@K"),
        ("nDCG10", "expected NAME@K"),
        ("", "expected NAME@K"),
        ("MAP@10", "unknown measure 'MAP'"),
        ("accuracy@5", "unknown measure 'accuracy'"),
        ("nDCG@0", "cutoff must be >= 1"),
        ("HR@000", "cutoff must be >= 1"),
        ("nDCG@\u0661\u0660", "expected NAME@K"),  # Arabic-Indic digits: ASCII only
        ("nDCG@\uff11\uff10", "expected NAME@K"),  # fullwidth digits
        ("nDCG@10\u00a0", "expected NAME@K"),  # NBSP is not a separator
    ],
)
def test_parse_measure_errors(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_measure(text)
    msg = str(info.value)
    assert fragment in msg
    # The message quotes what was given so the user can find it in their config.
    if text:
        assert repr(text) in msg or text.strip() in msg


def test_unknown_measure_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: HR, nDCG, MRR"):
        parse_measure("MAP@10")


@pytest.mark.parametrize(
    ("name", "k"), [("ndcg", 10), ("Hit", 1), ("AP", 3), ("HR", 0), ("HR", -2)]
)
def test_measure_constructor_validates(name: str, k: int) -> None:
    with pytest.raises(ValueError):
        Measure(name, k)


def test_parse_measures_dedups_keeping_order() -> None:
    got = parse_measures(["HR@10", "ndcg@5", "hit@10", "nDCG@5", "MRR@1"])
    assert got == [Measure("HR", 10), Measure("nDCG", 5), Measure("MRR", 1)]


def test_parse_measures_empty_is_an_error() -> None:
    with pytest.raises(ValueError, match="no measures"):
        parse_measures([])


def test_default_measures() -> None:
    assert len(DEFAULT_MEASURES) == 12
    assert {m.name for m in DEFAULT_MEASURES} == {"HR", "nDCG", "MRR"} < set(MEASURE_NAMES)
    assert {m.k for m in DEFAULT_MEASURES} == {1, 5, 10, 20}


def test_measures_are_hashable_and_ordered() -> None:
    d = {Measure("HR", 10): 1}
    assert d[parse_measure("hr@10")] == 1
    assert sorted([Measure("nDCG", 5), Measure("HR", 10), Measure("HR", 5)]) == [
        Measure("HR", 5),
        Measure("HR", 10),
        Measure("nDCG", 5),
    ]


# ----------------------------------------------------------------------------- values

# (measure, rank, value) computed by hand from the formulas in the module docstring.
HAND = [
    ("nDCG@10", 1, 1.0),  # 1/log2(2)
    ("nDCG@10", 3, 0.5),  # 1/log2(4) = 1/2
    ("nDCG@10", 7, 1 / 3),  # 1/log2(8) = 1/3
    ("nDCG@10", 10, 1 / math.log2(11)),
    ("nDCG@10", 11, 0.0),  # beyond the cutoff
    ("nDCG@3", 3, 0.5),
    ("nDCG@2", 3, 0.0),
    ("nDCG@20", 15, 0.25),  # 1/log2(16)
    ("HR@1", 1, 1.0),
    ("HR@1", 2, 0.0),
    ("HR@5", 5, 1.0),
    ("HR@5", 6, 0.0),
    ("HR@5", 1000, 0.0),
    ("MRR@10", 1, 1.0),
    ("MRR@10", 4, 0.25),
    ("MRR@10", 10, 0.1),
    ("MRR@10", 11, 0.0),
    ("MRR@3", 2, 0.5),
]


@pytest.mark.parametrize(("text", "rank", "value"), HAND)
def test_hand_computed_values(text: str, rank: int, value: float) -> None:
    m = parse_measure(text)
    assert float(m(rank)) == pytest.approx(value, abs=1e-15)
    assert m.gains(max(rank, 1))[rank] == pytest.approx(value, abs=1e-15)


@pytest.mark.parametrize("m", DEFAULT_MEASURES)
def test_vectorised_call_matches_formula(m: Measure) -> None:
    ranks = np.arange(1, 60)
    if m.name == "HR":
        want = [1.0 if r <= m.k else 0.0 for r in ranks]
    elif m.name == "nDCG":
        want = [1.0 / math.log2(r + 1) if r <= m.k else 0.0 for r in ranks]
    else:
        want = [1.0 / r if r <= m.k else 0.0 for r in ranks]
    np.testing.assert_allclose(m(ranks), want, rtol=0, atol=1e-15)
    assert m(ranks).dtype == np.float64


def test_gains_table_layout() -> None:
    g = Measure("MRR", 3).gains(5)
    # index 0 unused; ranks 1..3 inside the cutoff; 4 and 5 outside.
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.5, 1 / 3, 0.0, 0.0])
    assert Measure("HR", 10).gains(0).tolist() == [0.0]


def test_measure_is_monotone_non_increasing_in_rank() -> None:
    for m in DEFAULT_MEASURES:
        v = m(np.arange(1, 40))
        assert np.all(np.diff(v) <= 0), m
        assert v[0] == 1.0, m  # rank 1 always scores 1


@pytest.mark.parametrize("text", ["HR@99999999999999999999", f"nDCG@{2**53 + 1}"])
def test_absurd_cutoffs_are_one_clear_error(text: str) -> None:
    """Was: an OverflowError deep in the evaluation for HR@99999999999999999999."""
    with pytest.raises(ValueError, match=r"is above 2\*\*53 = 9007199254740992; to count every "
                       "candidate, any cutoff at least the longest row will do"):  # fmt: skip
        parse_measure(text)
    assert parse_measure(f"P@{2**53}").k == 2**53


def test_a_cutoff_beyond_every_rank_tabulates_only_the_ranks_given() -> None:
    """Was: nDCG@1000000000 tabulated a billion gains (7.45 GiB) for ranks up to 5."""
    m = Measure("nDCG", 10**9)
    assert m.table_end(5) == 6 and Measure("nDCG", 3).table_end(5) == 4
    np.testing.assert_array_equal(m([1, 3, 5]), Measure("nDCG", 5)([1, 3, 5]))
    assert m.norm(np.array([1, 2])).tolist() == Measure("nDCG", 2).norm(np.array([1, 2])).tolist()
    assert m.of_ranks([2, 4], n_relevant=3) == Measure("nDCG", 4).of_ranks([2, 4], n_relevant=3)

"""tieaudit.common.numbers: the one ASCII number grammar every reader applies, against Python's float."""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tieaudit.common.numbers import (
    INTEGER,
    NUMBER,
    inexact_integer,
    not_a_number_text,
    number_text,
    parse_integer,
)
from tests.conftest import examples

ACCEPTED = ["0", "3", "-0.5", "+.5", "5.", "007", "1e-3", "2.5E+10", "-1E5", "1e400", "-1e400",
            "1e-400", "inf", "-inf", "+inf", "Inf", "-INF", "infinity", "-Infinity", "+INFINITY",
            "0.1000000000000000055511151231257827"]  # fmt: skip
REFUSED = [
    "1_5",  # Python reads 15, strtod (trec_eval) reads 1
    "\u0661\u0665", "\uff11\uff15", "\u0967", "\u2167",  # Arabic-Indic, fullwidth, Devanagari, Roman
    " 1", "1 ", "\t1", "1\u00a0", "\u20031",  # no whitespace, ASCII or not
    "nan", "NaN", "-nan", "", ".", "+", "-", "e5", "1e", "1e+", "--1", "+-1", "1.5.2", "1,5",
    "0x10", "0x1p3", "1d5", "infinit", "infinityy", "in f", "1 000",
]  # fmt: skip


def numbers(texts: list[str]) -> tuple[list[float | None], list[int]]:
    clean, refused = number_text(pa.array(texts, pa.string()))
    return pc.cast(clean, pa.float64()).to_pylist(), refused.tolist()


def test_accepted_numbers_equal_pythons_float() -> None:
    values, refused = numbers(ACCEPTED)
    assert refused == []
    assert values == [float(t) for t in ACCEPTED]  # correctly rounded, infinities included
    assert math.isinf(values[ACCEPTED.index("1e400")])


@pytest.mark.parametrize("text", REFUSED)
def test_refused_text(text: str) -> None:
    values, refused = numbers(["1", text, "2"])
    assert refused == [1]
    assert values == [1.0, None, 2.0]  # a refused value never reaches the cast


def test_python_float_takes_what_the_grammar_refuses() -> None:
    """Why the grammar exists: ``float()`` reads these as numbers."""
    assert float("1_5") == 15.0 and float("\u0661\u0665") == 15.0 and float("\uff11\uff15") == 15.0
    assert float(" 1\u3000") == 1.0


_ALPHABET = "0123456789.eE+-_ \tinfINFtyaTY\u0661\uff11\u00a0x"


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.text(alphabet=_ALPHABET, max_size=8), min_size=1, max_size=20))
def test_grammar_is_python_float_restricted_to_plain_ascii(texts: list[str]) -> None:
    """Accepted exactly when ``float()`` reads the text and it is ASCII without whitespace, ``_``
    or NaN; the value is then ``float(text)``."""
    values, refused = numbers(texts)
    for j, t in enumerate(texts):
        try:
            want = float(t)
        except ValueError:
            want = None
        plain = t.isascii() and t == "".join(t.split()) and "_" not in t and not math.isnan(
            want if want is not None else 0.0)  # fmt: skip
        if want is not None and plain:
            assert j not in refused and values[j] == want, t
        else:
            assert j in refused and values[j] is None, t


@st.composite
def grammar_numbers(draw: st.DrawFn) -> str:
    """A number of the grammar, built from its parts (sign, digits, point, digits, exponent)."""
    digits = st.text(alphabet="0123456789", min_size=1, max_size=25)
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole, frac = draw(st.one_of(
        st.tuples(digits, st.sampled_from([None, ""]) | digits),  # 12, 12., 12.5
        st.tuples(st.just(""), digits),  # .5
    ))  # fmt: skip
    body = whole if frac is None else f"{whole}.{frac}"
    if draw(st.booleans()):
        body += draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "+", "-"])) + draw(digits)
    return sign + body


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(grammar_numbers(), min_size=1, max_size=20))
def test_every_number_of_the_grammar_is_read_as_float_reads_it(texts: list[str]) -> None:
    assert all(re.fullmatch(NUMBER, t) for t in texts)
    values, refused = numbers(texts)
    assert refused == []
    assert values == [float(t) for t in texts]


def test_integers() -> None:
    texts = ["5", "+5", "-3", "007", "0x10", "1.0", "1e3", "\u0661", "1_0", "", " 1"]
    clean, refused = number_text(pa.array(texts), integer=True)
    assert refused.tolist() == [4, 5, 6, 7, 8, 9, 10]
    assert pc.cast(clean, pa.int64()).to_pylist()[:4] == [5, 5, -3, 7]  # Arrow refuses "+5" alone
    assert parse_integer("+12") == 12 and parse_integer("-0") == 0
    for bad in ("1_0", "\u0661", "0x10", " 1", "1.0", ""):
        with pytest.raises(ValueError, match="is not an integer"):
            parse_integer(bad)
    assert all(re.fullmatch(INTEGER, t) for t in texts[:4])


def test_nulls_and_chunked_columns() -> None:
    col = pa.chunked_array([["1", None], ["x", "-inf"]])
    clean, refused = number_text(col)
    assert refused.tolist() == [2]  # a null is missing, not refused
    assert pc.cast(clean, pa.float64()).to_pylist() == [1.0, None, None, -np.inf]


def test_not_a_number_text_leaves_out_empty_and_nan() -> None:
    col = pa.array(["", "nan", "-NaN", "x", "1", "1_5", "+nan"])
    _, refused = number_text(col)
    assert refused.tolist() == [0, 1, 2, 3, 5, 6]
    assert not_a_number_text(col, refused).tolist() == [3, 5]
    assert not_a_number_text(col, np.empty(0, np.int64)).tolist() == []


@pytest.mark.parametrize(
    ("values", "found"),
    [
        (pa.array(["1", "9007199254740992", "9007199254740993"]), (2, "9007199254740993")),
        (pa.array(["+9007199254740993"]), (0, "+9007199254740993")),
        (pa.array(["-9007199254740993"]), (0, "-9007199254740993")),
        (pa.array(["0000000000000000001", "1e30", "1.5e20", str(2**60), "100000000000000000000",
                   None, "inf", "x"]), None),  # exact, or written as floats, or no integer
        (pa.array([None, 2**60, -(2**63)], pa.int64()), None),
        (pa.array([1, None, 2**53 + 1], pa.int64()), (2, str(2**53 + 1))),
        (pa.array([2**63 - 1], pa.int64()), (0, str(2**63 - 1))),  # rounds up past int64
        (pa.array([-(2**53) - 1], pa.int64()), (0, str(-(2**53) - 1))),
        (pa.array([2**64 - 1, 2**63], pa.uint64()), (0, str(2**64 - 1))),
        (pa.array([2**63], pa.uint64()), None),
        (pa.array([2**31 - 1], pa.int32()), None),
        (pa.array([2.0**60 + 0.5]), None),
    ],
)
def test_inexact_integer_finds_the_first_integer_float64_rounds(values, found) -> None:
    assert inexact_integer(values) == found
    assert inexact_integer(pa.chunked_array([values])) == found

"""Score precision (``--score-precision``): casts and roundings against exact references."""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import examples
from tieaudit.tables.candidates import as_table
from tieaudit.analyses.casting import CAST_COLUMNS, cast_summary
from tieaudit.tables.precision import cast_scores, cast_table, parse_precision


def _bf16_reference(x: float) -> float:
    """bfloat16 by brute force: the two neighbours of ``x`` with 8 significant bits (exponents
    of float32, subnormals included), the nearer one, ties to an even last bit; exact
    arithmetic."""
    if x == 0 or not np.isfinite(x):
        return x
    fx = Fraction(x)
    e = max(int(np.floor(np.log2(abs(x)))), -126)  # subnormals share the smallest exponent
    step = Fraction(2) ** (e - 7)
    low = (abs(fx) // step) * step
    high = low + step
    pick = low if abs(fx) - low < high - abs(fx) else high
    if abs(fx) - low == high - abs(fx):
        pick = low if (low / step) % 2 == 0 else high
    biggest = (2 - Fraction(2) ** -7) * Fraction(2) ** 127
    if pick > biggest:
        return float(np.copysign(np.inf, x))
    return float(pick) * (1 if x > 0 else -1)


def test_bfloat16_is_the_correctly_rounded_value() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.normal(size=2000) * 10.0 ** rng.integers(-40, 39, 2000),
        # halfway cases and their neighbours: 8 significant bits, then exactly half a step
        (1 + (np.arange(200) + 0.5) / 128) * 2.0 ** rng.integers(-20, 20, 200),
        np.nextafter((1 + (np.arange(50) + 0.5) / 128), 3.0),
        [0.0, -0.0, 1.0, -1.0, 3.4e38, -3.4e38, 1e39, 1e-45, 1e-39, np.inf, -np.inf],
    ])  # fmt: skip
    got = cast_scores(x, "bfloat16")
    want = np.array([_bf16_reference(float(v)) for v in x])
    assert np.array_equal(got, want), x[got != want][:5]


def test_bfloat16_rounds_half_to_even() -> None:
    # 1 + 1/256 is halfway between 1 and 1 + 1/128: to 1 (even); 1 + 3/256: to 1 + 2/128
    assert cast_scores(np.array([1 + 1 / 256, 1 + 3 / 256]), "bfloat16").tolist() == [
        1.0, 1 + 2 / 128]  # fmt: skip


@pytest.mark.parametrize(("precision", "dtype"), [("float32", np.float32), ("float16", np.float16)])
def test_float_casts_are_numpy_s(precision: str, dtype) -> None:
    x = np.random.default_rng(1).normal(size=500) * 1e3
    assert np.array_equal(cast_scores(x, precision), x.astype(dtype).astype(np.float64))


def test_rounding_to_decimals() -> None:
    x = np.array([0.123456, 0.123454, 2.5, -1.000004])
    assert cast_scores(x, "round:5").tolist() == [0.12346, 0.12345, 2.5, -1.0]
    assert cast_scores(x, "round:0").tolist() == [0.0, 0.0, 2.0, -1.0]


@pytest.mark.parametrize("bad", ["float64", "round", "round:-1", "round:16", "round:x", "FP16"])
def test_bad_precisions_are_named(bad: str) -> None:
    with pytest.raises(ValueError, match=f"unknown score precision {bad!r}; give one of float32"):
        parse_precision(bad)


def test_a_cast_makes_ties_and_a_summary_table_is_refused() -> None:
    frame = pd.DataFrame({"row": "a", "user_id": "u", "item_id": ["x", "y", "z"],
                          "label": [1, 0, 0], "score": [1.0, 1.0 + 2**-12, 0.5]})  # fmt: skip
    table = as_table(frame)
    assert cast_table(table, None) is table
    half = cast_table(table, "float16")  # 11 significant bits: the first two tie
    assert half.score.tolist() == [1.0, 1.0, 0.5]
    assert cast_table(table, "float32").score.tolist() == table.score.tolist()
    summary = as_table(pd.DataFrame({"row": ["a"], "user_id": ["u"], "item_id": ["x"],
                                     "label": [1], "score": [1.0], "n_higher": [0],
                                     "n_tied": [3], "n_lower": [5]}))  # fmt: skip
    with pytest.raises(ValueError, match="counts candidates it does not store"):
        cast_table(summary, "float16")


# ---------------------------------------------------------------------- the casting table
def test_cast_summary_gives_each_precision_s_ties_and_inflation(tmp_path) -> None:
    from tieaudit import evaluate, read_candidates

    data = _near_ties(tmp_path / "c.csv")
    got = cast_summary(data, ["round:2", "float16", "round:2", "round:6"], ["nDCG@10", "HR@1"])
    assert list(got.columns) == list(CAST_COLUMNS)
    # the stored scores first, then each precision once, in the order given
    assert got["precision"].drop_duplicates().tolist() == ["none", "round:2", "float16",
                                                           "round:6"]  # fmt: skip
    assert (got["rows"] == 40).all()
    table = read_candidates(data)
    for line in got.itertuples(index=False):
        cast = cast_table(table, None if line.precision == "none" else line.precision)
        ev = evaluate(cast, [line.metric], ["input_order", "expected"])
        assert line.input_order == pytest.approx(ev.mean("input_order", line.metric), abs=1e-12)
        assert line.expected == pytest.approx(ev.mean("expected", line.metric), abs=1e-12)
        assert line.inflation == pytest.approx(line.input_order - line.expected, abs=1e-15)
    tied = got.drop_duplicates("precision").set_index("precision")["tied"]
    # no ties as stored; every score of a row rounds to 3.0 at two decimals
    assert tied.to_dict() == {"none": 0.0, "round:2": 1.0, "float16": tied["float16"],
                              "round:6": 0.0}  # fmt: skip
    assert 0 < tied["float16"] < 1
    hr1 = got.set_index(["precision", "metric"]).loc[("round:2", "HR@1")]
    assert hr1.input_order == 1.0 and hr1.expected == pytest.approx(1 / 20)


def test_cast_summary_streams_chunks_and_parts_alike(tmp_path) -> None:
    import pyarrow.dataset as ds

    data = _near_ties(tmp_path / "c.csv")
    frame = pd.read_csv(data)
    parts = []
    for i, rows in enumerate((range(0, 13), range(13, 40))):  # two parts of whole rows
        path = tmp_path / f"scores.{i}.parquet"
        frame[frame["row"].isin([f"r{r}" for r in rows])].to_parquet(path, index=False)
        parts.append(str(path))
    args = (["float16", "bfloat16", "round:3"], ["nDCG@10", "MRR@10"])
    whole = cast_summary(data, *args)
    for other in (cast_summary(data, *args, chunk_rows=3),
                  cast_summary(ds.dataset(parts, format="parquet"), *args, chunk_rows=7)):
        pd.testing.assert_frame_equal(other, whole, rtol=0, atol=1e-12)


def test_cast_summary_refuses_what_it_cannot_cast(tmp_path) -> None:
    data = _near_ties(tmp_path / "c.csv")
    with pytest.raises(ValueError, match="unknown score precision 'float64'"):
        cast_summary(data, ["float64"], ["HR@10"])
    summary = as_table(pd.DataFrame({"row": ["a"], "user_id": ["u"], "item_id": ["x"],
                                     "label": [1], "score": [1.0], "n_higher": [0],
                                     "n_tied": [3], "n_lower": [5]}))  # fmt: skip
    with pytest.raises(ValueError, match="counts candidates it does not store"):
        cast_summary(summary, ["float16"], ["HR@10"])


# ---------------------------------------------------------------------- the command line
def _near_ties(path) -> str:
    """Scores that differ only below two decimals (and below float16's 11 bits) around 3."""
    rng = np.random.default_rng(0)
    lines = [(f"r{r}", f"u{r}", f"i{j}", int(j == 0), 3.0 + 0.001 * float(s))
             for r in range(40) for j, s in enumerate(rng.normal(size=20))]  # fmt: skip
    pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"]).to_csv(
        path, index=False)  # fmt: skip
    return str(path)


def test_evaluate_casts_before_ranking(tmp_path, capsys) -> None:
    from tieaudit.cli import main

    data = _near_ties(tmp_path / "c.csv")
    args = [data, "-m", "nDCG@10", "-r", "input_order", "expected", "--format", "csv"]
    values = {}
    for p in (None, "round:2", "float16", "round:6"):
        assert main(["evaluate", *args, *(["--score-precision", p] if p else [])]) == 0
        frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
        values[p] = frame.set_index("rule")["value"]
    assert values[None]["input_order"] == pytest.approx(values[None]["expected"])  # no ties
    # every score of a row rounds to 3.0: the relevant item, stored first, wins every tie
    assert values["round:2"]["input_order"] == 1.0 > values["round:2"]["expected"]
    assert values["float16"]["input_order"] > values["float16"]["expected"]
    assert values["round:6"].equals(values[None])


def test_audit_says_what_the_cast_does(tmp_path, capsys) -> None:
    from tieaudit.cli import main

    data = _near_ties(tmp_path / "c.csv")
    out = tmp_path / "audit"
    assert main(["audit", data, "-m", "nDCG@10", "-r", "input_order", "expected",
                 "--score-precision", "round:2", "-o", str(out)]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert ("--score-precision round:2: the relevant item ties in 100.0% of the rows (0.0% "
            "uncast); input_order - expected nDCG@10: +") in err  # fmt: skip
    inv = pd.read_csv(out / "invariance.csv").drop_duplicates("rule").set_index("rule")
    assert inv.loc["input_order", "invariant"] == "no"


def test_audit_casts_chunk_by_chunk_as_the_whole_table(tmp_path, capsys) -> None:
    """With --chunk-rows the file is read, cast and audited a chunk at a time (the cast's
    effect streamed too): the same line and the same files as the whole table cast at once."""
    from tieaudit import read_candidates
    from tieaudit.analyses.audit import audit
    from tieaudit.cli import main
    from tieaudit.tables.precision import cast_table

    data = _near_ties(tmp_path / "c.csv")
    args = ["-m", "nDCG@10", "HR@10", "-r", "input_order", "expected", "hash:0",
            "--score-precision", "float16"]  # fmt: skip
    said, files = [], []
    for i, chunks in enumerate(([], ["--chunk-rows", "7"])):
        out = tmp_path / f"audit{i}"
        assert main(["audit", data, *args, *chunks, "-o", str(out)]) == 0
        said.append([x for x in capsys.readouterr().err.splitlines() if "float16" in x])
        files.append(pd.read_csv(out / "invariance.csv"))
    assert said[0] == said[1] and len(said[0]) == 1
    pd.testing.assert_frame_equal(files[0], files[1], rtol=1e-12)
    whole = audit(cast_table(read_candidates(data), "float16"), ["nDCG@10", "HR@10"],
                  ["input_order", "expected", "hash:0"])  # fmt: skip
    pd.testing.assert_frame_equal(files[0], whole.invariance.reset_index(drop=True),
                                  check_dtype=False, rtol=1e-12)  # fmt: skip
    uncast = audit(data, ["nDCG@10"], ["input_order", "expected"], chunk_rows=7)
    cast = audit(data, ["nDCG@10"], ["input_order", "expected"], chunk_rows=7,
                 score_precision="float16")  # fmt: skip
    assert not cast.invariance.equals(uncast.invariance)  # the cast is not ignored


def test_a_bad_precision_or_a_summary_table_is_refused(tmp_path, capsys) -> None:
    from tieaudit.cli import main

    data = _near_ties(tmp_path / "c.csv")
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", data, "--score-precision", "float8"])
    assert exc.value.code == 2
    assert "unknown score precision 'float8'" in capsys.readouterr().err
    summary = tmp_path / "s.csv"
    pd.DataFrame({"row": ["a"], "user_id": ["u"], "item_id": ["x"], "label": [1],
                  "score": [1.0], "n_higher": [0], "n_tied": [3],
                  "n_lower": [5]}).to_csv(summary, index=False)  # fmt: skip
    out = tmp_path / "m.csv"
    assert main(["evaluate", str(summary), "--score-precision", "float16", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tieaudit: error: ") and "counts candidates it does not store" in err
    assert not out.exists()


@pytest.mark.parametrize("decimals", [0, 1, 8, 15])
def test_rounding_never_overflows_nor_merges_scores_with_no_digits_that_far_down(
    decimals: int,
) -> None:
    # near the top of float64's range, numpy's scaling by 10**D overflows to inf; a little
    # lower it moves a score by a unit in the last place: both make ties the data does not have
    big = np.array([1e300, np.nextafter(1e300, np.inf), -1e300, 1.7e308, 1e20,
                    np.nextafter(1e20, 0.0), 2.0**53, np.inf, -np.inf])  # fmt: skip
    got = cast_scores(big, f"round:{decimals}")
    assert np.array_equal(got, big)
    assert len(np.unique(got)) == len(big)


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(0, 15))
def test_rounding_stays_within_half_a_unit_of_the_last_decimal(x: float, decimals: int) -> None:
    got = float(cast_scores(np.array([x]), f"round:{decimals}")[0])
    assert np.isfinite(got)
    with np.errstate(over="ignore"):  # the spacing of float64's largest value
        assert abs(got - x) <= 0.5 * 10.0**-decimals + 2 * np.spacing(abs(x))

"""Ranking flips (tieaudit.analyses.compare) and `tieaudit compare`: a hand-computed case, the row check,
and the command on files."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tieaudit import evaluate
from tieaudit.cli import main
from tieaudit.analyses.compare import FLIP_COLUMNS, ModelRows, flips_markdown, orderings, ranking_flips

RULES = ["input_order", "pessimistic", "optimistic", "expected"]


def table(rows: list[list[tuple[str, int, float]]]) -> pd.DataFrame:
    """Candidates of rows r0, r1, ... given as (item, label, score) in stored order."""
    return pd.DataFrame([{"row": f"r{i}", "user_id": f"u{i}", "item_id": it, "label": lab,
                          "score": sc} for i, row in enumerate(rows) for it, lab, sc in row])  # fmt: skip


# A: every row's relevant item tied at the top with one negative, stored first (HR@1: 1 under
# input_order, 1/2 expected, 0 pessimistic). B: relevant item alone on top in r0 and r1, second
# in r2 (HR@1 2/3 under every rule).
A = table([[("p", 1, 0.5), ("n", 0, 0.5), ("m", 0, 0.1)]] * 3)
B = table([[("p", 1, 0.9), ("n", 0, 0.5), ("m", 0, 0.1)]] * 2
          + [[("n", 0, 0.9), ("p", 1, 0.5), ("m", 0, 0.1)]])  # fmt: skip


def evaluations() -> dict:
    return {"A": evaluate(A, ["HR@1"], RULES), "B": evaluate(B, ["HR@1"], RULES)}


def test_hand_computed_pair_and_flip() -> None:
    flips = ranking_flips(evaluations(), ["HR@1"])
    assert list(flips.columns) == list(FLIP_COLUMNS)
    # oriented so that A (scorer_a) is ahead under expected: B 2/3 vs A 1/2
    assert set(flips["scorer_a"]) == {"B"} and set(flips["scorer_b"]) == {"A"}
    one = flips.set_index("rule")
    assert one.loc["input_order", "diff"] == pytest.approx(2 / 3 - 1)
    assert one.loc["input_order", "flip"] == "yes"  # A ahead under input_order
    assert one.loc["pessimistic", "flip"] == "no"
    assert one.loc["optimistic", "flip"] == "yes"
    # d_w = (1/2, 1/2, -1/2): mean 1/6, sd (n-1) sqrt(1/3), se = sd / sqrt(3) = 1/3
    assert one["expected_diff"].iloc[0] == pytest.approx(1 / 6)
    assert one["se_rows"].iloc[0] == pytest.approx(1 / 3)
    # Var_A,w = 1/4 on each row, Var_B,w = 0: sqrt(3/4) / 3
    assert one["sd_ties"].iloc[0] == pytest.approx(math.sqrt(0.75) / 3)
    assert "expected" not in set(flips["rule"])


def test_orderings_and_markdown_say_how_many_pairs_flip() -> None:
    models = [ModelRows.from_evaluation(n, ev) for n, ev in evaluations().items()]
    order = orderings(models, ["HR@1"], RULES).set_index("rule")["order"]
    assert order["input_order"] == "A > B" and order["expected"] == "B > A"
    text = flips_markdown(ranking_flips(models, ["HR@1"]), orderings(models), "t")
    assert "**Ranking flips: 1 of 1 pairs**" in text
    assert "| B | A | 0.1667 | 0.3333 | 0.2887 | input_order, optimistic |" in text
    same = ranking_flips(models, ["HR@1"], ["pessimistic"])
    assert "Ranking flips: none." in flips_markdown(same, orderings(models, rules=["pessimistic"]))


def test_models_on_different_rows_are_refused() -> None:
    other = B.replace({"row": {"r2": "r9"}})
    with pytest.raises(ValueError, match=r"A and B are not evaluated on the same rows: 1 row\(s\) "
                       r"of A are not in B \(first: 'r2'\)"):  # fmt: skip
        ranking_flips({"A": evaluate(A, ["HR@1"], RULES), "B": evaluate(other, ["HR@1"], RULES)})
    with pytest.raises(ValueError, match="A: not evaluated for nDCG@10"):
        ranking_flips(evaluations(), ["nDCG@10"])
    with pytest.raises(ValueError, match="two or more models"):
        ranking_flips({"A": evaluate(A, ["HR@1"], RULES)})


def test_rows_are_paired_by_id_not_by_position() -> None:
    # B with its rows stored in another order gives the same comparison
    shuffled = pd.concat([B[B["row"] == r] for r in ("r2", "r0", "r1")], ignore_index=True)
    one = ranking_flips({"A": evaluate(A, ["HR@1"], RULES), "B": evaluate(B, ["HR@1"], RULES)})
    two = ranking_flips({"A": evaluate(A, ["HR@1"], RULES),
                         "B": evaluate(shuffled, ["HR@1"], RULES)})  # fmt: skip
    pd.testing.assert_frame_equal(one, two)


def test_cli_compare_writes_the_csv_and_prints_markdown(tmp_path, capsys) -> None:
    A.to_csv(tmp_path / "a.csv", index=False)
    B.to_parquet(tmp_path / "b.parquet", index=False)
    out = tmp_path / "flips.csv"
    code = main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.parquet"), "-m", "HR@1",
                 "-r", "input_order", "pessimistic", "--out", str(out)])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "# Ranking flips" in text and "| b | a |" in text
    flips = pd.read_csv(out)
    assert list(flips["rule"]) == ["input_order", "pessimistic"]
    assert list(flips["flip"]) == ["yes", "no"]


def test_cli_compare_needs_two_files(tmp_path, capsys) -> None:
    A.to_csv(tmp_path / "a.csv", index=False)
    assert main(["compare", str(tmp_path / "a.csv")]) == 2
    assert "two or more FILEs" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"user_id": {"u1": "u9"}}, "row 'r1' has user 'u1' in A, 'u9' in B"),
        ({"item_id": {"p": "q"}}, "row 'r0' has relevant items ['p'] in A, ['q'] in B (3 rows differ)"),
    ],
)
def test_rows_pair_only_when_user_and_relevant_items_agree(change, words) -> None:
    """Was: rows paired by the row label alone, so B's r1 could be another user or another
    held-out item, and a paired difference was printed for unrelated rows."""
    other = B.replace(change)
    with pytest.raises(ValueError) as exc:
        ranking_flips({"A": evaluate(A, ["HR@1"], RULES), "B": evaluate(other, ["HR@1"], RULES)})
    assert "A and B do not hold the same evaluation rows: " + words in str(exc.value)


def test_relevant_items_counted_but_not_stored_pair_by_their_number() -> None:
    """With n_relevant above the stored relevant lines the relevant items cannot all be named:
    R must agree, the stored ones may differ."""
    a = A.assign(n_relevant=2)
    b = B.assign(n_relevant=2).replace({"item_id": {"p": "q"}})
    assert len(ranking_flips({"A": evaluate(a, ["HR@1"], RULES),
                              "B": evaluate(b, ["HR@1"], RULES)}))  # fmt: skip
    with pytest.raises(ValueError, match="row 'r0' has 2 relevant item"):
        ranking_flips({"A": evaluate(a, ["HR@1"], RULES),
                       "B": evaluate(B.assign(n_relevant=3), ["HR@1"], RULES)})  # fmt: skip


def test_cli_compare_refuses_rows_of_other_users(tmp_path, capsys) -> None:
    A.to_csv(tmp_path / "a.csv", index=False)
    B.replace({"user_id": {"u2": "someone"}}).to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "flips.csv"
    code = main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-m", "HR@1",
                 "--out", str(out)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and not out.exists()
    assert captured.err.startswith("tieaudit: error: a and b do not hold the same evaluation rows: "
                                   "row 'r2' has user 'u2' in a, 'someone' in b")  # fmt: skip


def test_cli_compare_says_when_the_negatives_differ(tmp_path, capsys) -> None:
    A.to_csv(tmp_path / "a.csv", index=False)
    B.replace({"item_id": {"m": "x"}}).to_csv(tmp_path / "b.csv", index=False)
    B.to_csv(tmp_path / "same.csv", index=False)
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-m", "HR@1"]) == 0
    text = capsys.readouterr().out
    assert ("**Candidates differ:** same users and relevant items, other negatives than a's: b in "
            "3 of 3 rows (first: 'r0').") in text  # fmt: skip
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "same.csv"), "-m", "HR@1"]) == 0
    assert "Candidates differ" not in capsys.readouterr().out


def test_cli_compare_under_expected_alone_gives_the_paired_difference(tmp_path, capsys) -> None:
    """Was: "Fewer than two scorers: no pair to compare" for two models and `-r expected`."""
    A.to_csv(tmp_path / "a.csv", index=False)
    B.to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "flips.csv"
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-m", "HR@1",
                 "-r", "expected", "--out", str(out)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "Fewer than two scorers" not in text
    assert "No rule besides `expected` was evaluated" in text
    assert "| b | a | 0.1667 | 0.3333 | 0.2887 | none |" in text
    flips = pd.read_csv(out)
    assert list(flips["rule"]) == ["expected"] and list(flips["flip"]) == ["no"]
    assert flips["diff"].iloc[0] == pytest.approx(1 / 6)

"""reversed_input, the worked example of a tie rule added as one module
(:mod:`tieaudit.ties.rules.reversed_input`): the order ``np.argsort(scores)[::-1]`` gives.

Every reference here is that numpy expression (``kind="stable"``, so the order of equal scores is
defined) applied to each row's scores in stored order; it shares no code with the rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.oracle import COLS, lines_by_row, ranks_by_row, relevant_ranks, summarise
from tieaudit import evaluate
from tieaudit.analyses.audit import invariance
from tieaudit.cli import main
from tieaudit.analyses.fullcatalog import full_catalog_candidates
from tieaudit.scorers import get_scorer
from tieaudit.testing import candidate_frames
from tests.conftest import examples

MEASURES = ["HR@1", "HR@3", "nDCG@3", "MRR@5", "Recall@2"]


def argsort_ranks(frame: pd.DataFrame) -> dict[str, list[int]]:
    """Each row's relevant ranks (sorted) in ``np.argsort(scores, kind="stable")[::-1]`` order."""
    out = {}
    for rid, part in frame.groupby("row", sort=False):
        order = np.argsort(part["score"].to_numpy(), kind="stable")[::-1]
        labels = part["label"].to_numpy()[order]
        out[str(rid)] = sorted(int(j) + 1 for j in np.flatnonzero(labels))
    return out


def ranks_of(ev) -> dict[str, list[int]]:
    """Each row's relevant ranks (sorted) under reversed_input, as the evaluator gives them."""
    return {rid: list(draws[0]) for rid, draws in ranks_by_row(ev, "reversed_input").items()}


def test_hand_example_loses_every_tie_when_stored_first() -> None:
    # relevant "a" stored first among a tie of four below one higher item: last of its group
    lines = [("r", "u", "a", 1, 2.0), ("r", "u", "top", 0, 5.0), ("r", "u", "x", 0, 2.0),
             ("r", "u", "y", 0, 2.0), ("r", "u", "z", 0, 2.0), ("r", "u", "low", 0, 1.0)]
    frame = pd.DataFrame(lines, columns=COLS)
    ev = evaluate(frame, MEASURES, ["reversed_input", "input_order", "pessimistic", "optimistic"],
                  rank_cap=None)  # fmt: skip
    assert ev["reversed_input"].ranks.tolist() == [[5]] == ev["pessimistic"].ranks.tolist()
    assert ev["input_order"].ranks.tolist() == [[2]] == ev["optimistic"].ranks.tolist()
    last = frame.iloc[[1, 2, 3, 4, 0, 5]]  # the relevant item stored last of its group: it wins
    assert evaluate(last, MEASURES, ["reversed_input"], rank_cap=None)[
        "reversed_input"].ranks.tolist() == [[2]]  # fmt: skip


@settings(max_examples=examples(80), deadline=None)
@given(frame=candidate_frames(max_rows=8, max_len=8, score_levels=3), data=st.data())
def test_ranks_equal_numpy_argsort_reversed(frame: pd.DataFrame, data: st.DataObject) -> None:
    if data.draw(st.booleans()):  # a second relevant item in some rows
        extra = data.draw(st.lists(st.integers(0, len(frame) - 1), max_size=3))
        frame = frame.assign(label=frame["label"].where(~frame.index.isin(extra), 1))
    want = argsort_ranks(frame)
    # the shared oracle's key for the rule (minus the stored position) is that order too
    rows = lines_by_row(frame)
    assert {rid: list(relevant_ranks(lines, "reversed_input")) for rid, lines in rows.items()} == want
    exact = evaluate(frame, MEASURES, ["reversed_input"], rank_cap=None)
    assert ranks_of(exact) == want
    capped = evaluate(frame, MEASURES, ["reversed_input"])
    cap = capped.rank_cap
    assert ranks_of(capped) == {k: [min(r, cap) for r in v] for k, v in want.items()}


def summary_of(frame: pd.DataFrame) -> pd.DataFrame:
    """One line a row: the relevant item, its counts and before:input_order (its place among
    its tie group in stored order), from a table with one relevant line a row."""
    return summarise(frame, rules=["input_order"], modal=False)


@settings(max_examples=examples(60), deadline=None)
@given(frame=candidate_frames(max_rows=8, max_len=8, score_levels=2))
def test_summary_table_derives_the_count_from_input_order(frame: pd.DataFrame) -> None:
    summary = summary_of(frame)
    assert not any(c == "before:reversed_input" for c in summary.columns)  # nothing recorded
    ev = evaluate(summary, MEASURES, ["reversed_input"], rank_cap=None)
    assert ranks_of(ev) == argsort_ranks(frame)
    # before = n_tied - before:input_order
    np.testing.assert_array_equal(
        ev["reversed_input"].ranks[0],
        summary["n_higher"] + 1 + summary["n_tied"] - summary["before:input_order"],
    )


def test_summary_table_without_input_order_is_a_clear_error() -> None:
    summary = summary_of(pd.DataFrame([("r", "u", "a", 1, 1.0), ("r", "u", "b", 0, 1.0)],
                                      columns=COLS)).drop(columns="before:input_order")  # fmt: skip
    with pytest.raises(ValueError, match="rule reversed_input needs column before:input_order"):
        evaluate(summary, MEASURES, ["reversed_input"])


@pytest.mark.parametrize("position", ["first", "last", "random"])
def test_full_catalogue_equals_argsort_of_the_materialised_rows(position: str) -> None:
    rng = np.random.default_rng(4)
    items = [f"i{j:02d}" for j in range(30)]
    attrs = pd.DataFrame([(it, f"a={rng.integers(0, 2)}") for it in items[:-4]],
                         columns=["item_id", "attribute"])  # fmt: skip
    hist, held = [], []
    for u in range(12):
        seen = rng.choice(len(items), size=int(rng.integers(2, 6)), replace=False)
        hist += [(f"u{u}", items[j], 1.0, 0) for j in seen[:-1]]
        held.append((f"u{u}", items[seen[-1]]))
    history = pd.DataFrame(hist, columns=["user_id", "item_id", "rating", "timestamp"])
    rows = pd.DataFrame(held, columns=["user_id", "item_id"])
    scorer = get_scorer("attribute_overlap").fit(history, attrs)
    summary = full_catalog_candidates(rows, history, np.array(items, dtype=object), scorer,
                                      seeds=[], positive_position=position)  # fmt: skip
    ev = evaluate(summary, MEASURES, ["reversed_input"], rank_cap=None)
    # the conceptual rows: the held-out item at before:input_order among its tie group, the
    # other candidates in catalogue order
    lines = []
    for u, held_item, place in zip(rows["user_id"], rows["item_id"],
                                   summary["before:input_order"], strict=True):  # fmt: skip
        own = set(history.loc[history["user_id"] == u, "item_id"]) - {held_item}
        others = [it for it in items if it != held_item and it not in own]
        ids = np.array([u] * (len(others) + 1), dtype=object)
        s = scorer.score(ids, np.array(others + [held_item], dtype=object))
        row = [(f"u{u}", u, it, 0, sc) for it, sc in zip(others, s[:-1], strict=True)]
        tied = [j for j, sc in enumerate(s[:-1]) if sc == s[-1]]
        at = tied[place] if place < len(tied) else len(row)
        row.insert(at, (f"u{u}", u, held_item, 1, s[-1]))
        lines += row
    assert ranks_of(ev) == argsort_ranks(pd.DataFrame(lines, columns=COLS))


def test_not_invariant_by_design_and_the_audit_agrees() -> None:
    from tieaudit.ties.rules import TieRule

    assert not TieRule("reversed_input").invariant_by_design
    frame = pd.DataFrame([(f"r{r}", "u", f"i{j}", int(j == 0), 1.0) for r in range(3)
                          for j in range(4)], columns=COLS)  # fmt: skip
    inv = invariance(frame, ["HR@1"], ["reversed_input"], n_permutations=1)
    assert (inv["invariant"] == "no").all() and (inv["share_rows_moved"] == 1.0).all()


def test_cli_evaluates_reversed_input(tmp_path, capsys) -> None:
    path = tmp_path / "c.csv"
    pd.DataFrame([("r", "u", "a", 1, 1.0), ("r", "u", "b", 0, 1.0), ("r", "u", "c", 0, 0.0)],
                 columns=COLS).to_csv(path, index=False)  # fmt: skip
    out = tmp_path / "m.csv"
    assert main(["evaluate", str(path), "-m", "HR@1", "MRR@3", "-r", "reversed_input",
                 "pessimistic", "--out", str(out)]) == 0  # fmt: skip
    m = pd.read_csv(out).set_index(["rule", "metric"])["value"]
    assert m[("reversed_input", "HR@1")] == 0.0 == m[("pessimistic", "HR@1")]
    assert m[("reversed_input", "MRR@3")] == 0.5
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert "reversed_input" in capsys.readouterr().out  # the help lists every registered rule

"""Figures (tieaudit.figures): they draw what the metrics say, deterministically."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tieaudit.figures import rules_figure, save, tie_size_figure

RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean"]
SCORERS = ["a", "b"]


def metrics(hash_min_offset: float = 0.0) -> pd.DataFrame:
    rows = []
    for s, base in zip(SCORERS, (0.2, 0.05), strict=True):
        for r in RULES:
            v = base * (2 if r in ("input_order", "optimistic") else 1)
            rec = {"scorer": s, "rule": r, "metric": "nDCG@10", "value": v,
                   "min": np.nan, "max": np.nan}  # fmt: skip
            if r == "hash_mean":  # every seed alike: min and max equal the mean up to rounding
                rec.update(min=v + hash_min_offset, max=v - hash_min_offset)
            rows.append(rec)
    return pd.DataFrame(rows)


def test_rules_figure_bars_and_a_seed_range_of_zero_width(tmp_path) -> None:
    # min a hair above the mean and max a hair below (different summation orders) must still
    # draw: a negative error-bar length is clipped to 0
    fig = rules_figure(metrics(1e-17), SCORERS, RULES, ["nDCG@10"], title="t")
    ax = fig.axes[0]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    # 4 single-ranking bars a scorer: input_order, optimistic (doubled), pessimistic, hash:0
    assert heights == sorted([0.4, 0.4, 0.2, 0.2, 0.1, 0.1, 0.05, 0.05])
    save(fig, [tmp_path / "f.png"])
    assert (tmp_path / "f.png").stat().st_size > 0


def test_saved_figures_are_byte_identical(tmp_path) -> None:
    diag = pd.DataFrame({"scorer": ["a", "a", "b"], "diagnostic": "rows_with_tie_size",
                         "key": ["t=1", "t=40", "t=2"], "value": [3, 1, 4]})  # fmt: skip
    for name in ("one", "two"):
        save(rules_figure(metrics(), SCORERS, RULES, ["nDCG@10"]),
             [tmp_path / f"{name}.png", tmp_path / f"{name}.pdf"])  # fmt: skip
        save(tie_size_figure(diag, SCORERS), [tmp_path / f"{name}_t.pdf"])
    for ext in (".png", ".pdf", "_t.pdf"):
        assert (tmp_path / f"one{ext}").read_bytes() == (tmp_path / f"two{ext}").read_bytes()

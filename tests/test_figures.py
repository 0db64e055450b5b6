"""Figures (tieaudit.outputs.figures): they draw what the metrics say, deterministically, and stay
readable at one column (3.3 in) and two (6.8 in): legends off the data, text inside the figure."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text

from tieaudit.outputs.figures import COLUMN, TEXT, rules_figure, save, tie_size_figure

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
    # 2 single-ranking bars a scorer: input_order (doubled) and hash:0; optimistic and
    # pessimistic are the interval around expected, not bars
    assert heights == sorted([0.4, 0.2, 0.1, 0.05])
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


# the demo's scorers and rules: long tick labels and eight legend entries
DEMO_SCORERS = ["attribute_overlap", "residualized_attribute", "popularity"]
DEMO_RULES = ["input_order", "optimistic", "pessimistic", "expected", "hash:0", "hash_mean",
              "random:0", "item_id"]  # fmt: skip


def demo_metrics() -> pd.DataFrame:
    rows = [{"scorer": s, "rule": r, "metric": h, "value": v * (1.8 if r == "input_order" else 1),
             "min": v * 0.98, "max": v * 1.02}
            for s, v in zip(DEMO_SCORERS, (0.5, 0.45, 0.9), strict=True)
            for r in DEMO_RULES for h in ("nDCG@10", "HR@10")]  # fmt: skip
    return pd.DataFrame(rows)


def demo_diagnostics() -> pd.DataFrame:
    sizes = [1, 2, 3, 5, 8, 13, 29, 40, 120]
    return pd.DataFrame([{"scorer": s, "diagnostic": "rows_with_tie_size", "key": f"t={t}",
                          "value": 10 + j * t % 7} for j, s in enumerate(DEMO_SCORERS)
                         for t in sizes])  # fmt: skip


def figures(width: float | None) -> dict[str, plt.Figure]:
    kw = {} if width is None else {"width": width}
    return {
        "rules": rules_figure(demo_metrics(), DEMO_SCORERS, DEMO_RULES, ["nDCG@10", "HR@10"],
                              title="demo_amazon_beauty", **kw),
        "tie_sizes": tie_size_figure(demo_diagnostics(), DEMO_SCORERS, title="demo", **kw),
    }  # fmt: skip


def overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


@pytest.mark.parametrize("width", [None, TEXT])  # None: the default, one column
def test_legends_never_cover_the_data_and_text_is_readable(width: float | None) -> None:
    for name, fig in figures(width).items():
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        assert fig.get_figwidth() == pytest.approx(width or COLUMN), name
        axes = [ax for ax in fig.axes if ax.get_visible()]
        legends = list(fig.legends) + [ax.get_legend() for ax in axes if ax.get_legend()]
        assert len(legends) == 1, name
        legend = legends[0].get_window_extent(r)
        for ax in axes:  # the panel, its tick labels and axis labels: none under the legend
            assert not overlap(legend, ax.get_tightbbox(r)), (name, ax.get_ylabel())
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
        box = fig.bbox
        for t in texts:
            e = t.get_window_extent(r)
            assert t.get_fontsize() >= 7, (name, t.get_text(), t.get_fontsize())
            assert box.x0 - 1 <= e.x0 and e.x1 <= box.x1 + 1, (name, t.get_text())
            assert box.y0 - 1 <= e.y0 and e.y1 <= box.y1 + 1, (name, t.get_text())
        for ax in axes:  # tick labels do not run into each other
            for axis in (ax.xaxis, ax.yaxis):
                labels = [t.get_window_extent(r) for t in axis.get_ticklabels()
                          if t.get_visible() and t.get_text()]  # fmt: skip
                for i, a in enumerate(labels):
                    assert not any(overlap(a, b) for b in labels[i + 1:]), (name, axis)
        plt.close(fig)


def test_expected_is_drawn_with_its_exact_interval_and_the_seeds_as_a_strip(tmp_path) -> None:
    from matplotlib.collections import LineCollection, PathCollection

    m = demo_metrics()
    seeds = pd.DataFrame([{"scorer": s, "metric": "nDCG@10", "seed": k, "value": v + 0.001 * k}
                          for s, v in zip(DEMO_SCORERS, (0.5, 0.45, 0.9), strict=True)
                          for k in range(7)])  # fmt: skip
    fig = rules_figure(m, DEMO_SCORERS, DEMO_RULES, ["nDCG@10"], seed_means=seeds)
    ax = fig.axes[0]
    strips = [c for c in ax.collections if isinstance(c, PathCollection)
              and c.get_label() == "hash seeds"]  # fmt: skip
    points = np.concatenate([c.get_offsets() for c in ax.collections
                             if isinstance(c, PathCollection) and c.get_sizes()[0] < 5])  # fmt: skip
    assert len(strips) == 1 and len(points) == 3 * 7  # every seed of every scorer a point
    assert sorted(np.round(points[:, 1], 6)) == sorted(np.round(seeds["value"], 6))
    # the expected interval: vertical error bars from min (pessimistic) to max (optimistic)
    bars = [c for c in ax.collections if isinstance(c, LineCollection)]
    spans = sorted((round(seg[0][1], 6), round(seg[1][1], 6)) for c in bars for seg in c.get_segments())
    want = sorted((round(v * 0.98, 6), round(v * 1.02, 6)) for v in (0.5, 0.45, 0.9))
    assert spans == want
    # optimistic and pessimistic are not bars; palette colours only (Okabe-Ito)
    from matplotlib.colors import to_hex

    from tieaudit.outputs.figures import OKABE_ITO

    colours = {to_hex(p.get_facecolor()).upper() for p in ax.patches}
    assert colours <= {c.upper() for c in OKABE_ITO}
    assert len(ax.patches) == 3 * 4  # input_order, hash:0, random:0, item_id
    save(fig, [tmp_path / "f.svg"])
    text = (tmp_path / "f.svg").read_text()
    assert "<svg" in text and "<dc:date>" not in text


def test_svg_figures_are_byte_identical(tmp_path) -> None:
    for name in ("one", "two"):
        save(rules_figure(metrics(), SCORERS, RULES, ["nDCG@10"]), [tmp_path / f"{name}.svg"])
    assert (tmp_path / "one.svg").read_bytes() == (tmp_path / "two.svg").read_bytes()

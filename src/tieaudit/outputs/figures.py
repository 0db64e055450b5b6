"""Figures: each scorer's headline measure under each tie rule, and tie sizes at the positive.

Every figure is drawn at the width it will be printed (``width`` in inches: :data:`COLUMN`, one
column of a two-column paper, or :data:`TEXT`, both columns), with fonts of 7-9 pt at that size,
and its legend below the panels, never over the data. Narrow figures stack the panels of the
rules figure; wide ones set them side by side.

Each figure is saved as PNG, PDF and SVG (the results page inlines the SVG). Colours are the
Okabe-Ito palette, which stays distinct under the common colour-vision deficiencies.

Matplotlib runs on the Agg backend (set here, before pyplot is imported), PDFs and SVGs carry no
date, and SVG ids come from a fixed salt, so the same inputs give the same files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["COLUMN", "TEXT", "OKABE_ITO", "rules_figure", "tie_size_figure", "save"]

#: Printed widths in inches: one column of a two-column paper, and the full text width.
COLUMN, TEXT = 3.3, 6.8
#: Font sizes in points at the printed size: tick and legend labels, axis labels, titles.
_SMALL, _LABEL, _TITLE = 7, 8, 9
#: Below this width the rules figure stacks its panels.
_SIDE_BY_SIDE = 5.0

#: The Okabe-Ito palette (Okabe & Ito 2008), safe for the common colour-vision deficiencies.
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
             "#000000")  # fmt: skip
_COLORS = {"input_order": "#D55E00", "optimistic": "#56B4E9", "pessimistic": "#F0E442",
           "item_id": "#009E73", "docno_desc": "#CC79A7", "hash": "#0072B2",
           "random": "#E69F00", "expected": "#000000"}  # fmt: skip


def _color(rule: str) -> str:
    return _COLORS.get(rule, _COLORS.get(rule.split(":")[0], "#7f7f7f"))


def _wrap(name: str, width: int = 13) -> str:
    """A scorer name broken after underscores into lines of about ``width`` characters, so tick
    labels stay horizontal: ``residualized_attribute`` -> ``residualized_`` / ``attribute``."""
    lines = [""]
    for part in re.findall(r"[^_]+_*|_+", name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return "\n".join(lines)


def _legend_below(fig: plt.Figure, ax: plt.Axes) -> None:
    """The legend of ``ax``'s labelled artists under the panels, outside every axes, in the
    fewest rows whose columns fit the figure's width (measured on the drawn text)."""
    handles, labels = ax.get_legend_handles_labels()
    renderer = fig.canvas.get_renderer()
    n = len(labels)
    for ncol in sorted({-(-n // rows) for rows in range(1, n + 1)}, reverse=True):
        legend = fig.legend(handles, labels, loc="outside lower center", ncol=ncol,
                            fontsize=_SMALL, frameon=False, handlelength=1.5,
                            columnspacing=1.0)  # fmt: skip
        if ncol == 1 or legend.get_window_extent(renderer).width <= 0.96 * fig.bbox.width:
            return
        legend.remove()


def rules_figure(
    metrics: pd.DataFrame, scorers: Sequence[str], rules: Sequence[str], headline: Sequence[str],
    title: str = "", width: float = COLUMN, seed_means: pd.DataFrame | None = None,
) -> plt.Figure:  # fmt: skip
    """One panel per headline measure; per scorer a bar for each single-ranking rule, the
    hash seeds as a strip of points (one per seed's mean over rows, from ``seed_means``:
    ``scorer, metric, seed, value``; without it the seed range min to max) with their mean, and
    the exact expectation as a black diamond with its [pessimistic, optimistic] interval.
    ``optimistic`` and ``pessimistic`` get bars only when ``expected`` is not drawn (its interval
    shows them). ``width`` is the printed width in inches; narrower than 5 in, the panels are
    stacked. Colours: the Okabe-Ito palette."""
    bounds = ("optimistic", "pessimistic") if "expected" in rules else ()
    bars = [r for r in rules if r not in ("expected", "hash_mean", *bounds)]
    slots = len(bars) + ("hash_mean" in rules) + ("expected" in rules)
    ncols = len(headline) if width >= _SIDE_BY_SIDE else 1
    nrows = -(-len(headline) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, 0.9 + 2.0 * nrows), squeeze=False,
                             sharex=True, layout="constrained")  # fmt: skip
    slot = 0.8 / max(1, slots)
    x = np.arange(len(scorers))
    for ax, h in zip(axes.flat, headline, strict=False):
        m = metrics[metrics["metric"] == h]

        def get(s: str, r: str, col: str = "value", m: pd.DataFrame = m) -> float:
            sel = m[(m["scorer"] == s) & (m["rule"] == r)]
            return float(sel[col].iloc[0]) if len(sel) else np.nan

        for j, r in enumerate(bars):
            ax.bar(x - 0.4 + (j + 0.5) * slot, [get(s, r) for s in scorers], slot,
                   label=r, color=_color(r), edgecolor="white", linewidth=0.3)  # fmt: skip
        top = [float(np.nanmax(m["value"])) if len(m) else 0.0]
        j = len(bars)
        if "hash_mean" in rules:
            xm = x - 0.4 + (j + 0.5) * slot
            mean = np.array([get(s, "hash_mean") for s in scorers])
            if seed_means is not None and len(seed_means):
                for i, s in enumerate(scorers):
                    v = seed_means[(seed_means["scorer"] == s) & (seed_means["metric"] == h)]
                    v = np.sort(v["value"].to_numpy(dtype=float))
                    # a deterministic strip: the seeds spread evenly across the slot
                    dx = np.linspace(-0.3, 0.3, len(v)) * slot if len(v) > 1 else np.zeros(len(v))
                    ax.scatter(xm[i] + dx, v, s=2.5, color=_COLORS["hash"], alpha=0.55,
                               linewidths=0, label="hash seeds" if i == 0 else None)  # fmt: skip
                    top.append(float(v.max()) if len(v) else 0.0)
                ax.scatter(xm, mean, marker="_", s=40, color="black", linewidths=1.0,
                           label="hash_mean", zorder=3)  # fmt: skip
            else:
                # value (row mean of the seed mean) and min/max (over the seeds' row means) are
                # summed in different orders: with every seed alike they differ in the last bits
                lo = np.maximum(mean - np.array([get(s, "hash_mean", "min") for s in scorers]), 0)
                hi = np.maximum(np.array([get(s, "hash_mean", "max") for s in scorers]) - mean, 0)
                ax.errorbar(xm, mean, yerr=[lo, hi], fmt="o", color=_COLORS["hash"], ms=3,
                            capsize=2, label="hash_mean (seed min-max)")  # fmt: skip
            j += 1
        if "expected" in rules:
            xe = x - 0.4 + (j + 0.5) * slot
            e = np.array([get(s, "expected") for s in scorers])
            lo = np.maximum(e - np.array([get(s, "expected", "min") for s in scorers]), 0)
            hi = np.maximum(np.array([get(s, "expected", "max") for s in scorers]) - e, 0)
            ax.errorbar(xe, e, yerr=[lo, hi], fmt="D", color="black", ms=3, capsize=2,
                        elinewidth=0.9, label="expected [pessimistic, optimistic]")  # fmt: skip
            top += [float(v) for v in e + hi if np.isfinite(v)]
        ax.set_xticks(x, [_wrap(s) for s in scorers])
        ax.tick_params(labelsize=_SMALL)
        ax.set_ylabel(h, fontsize=_LABEL)
        ax.set_ylim(0, max([0.05] + [1.1 * v for v in top if np.isfinite(v)]))
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat[len(headline):]:
        ax.set_visible(False)
    _legend_below(fig, axes.flat[0])
    if title:
        fig.suptitle(title, fontsize=_TITLE)
    return fig


def tie_size_figure(
    diagnostics: pd.DataFrame, scorers: Sequence[str], title: str = "", max_t: int = 30,
    width: float = COLUMN,
) -> plt.Figure:  # fmt: skip
    """Share of rows by tie-group size t at the relevant item (t > max_t pooled, labelled
    ``>max_t``), per scorer. ``width`` is the printed width in inches."""
    fig, ax = plt.subplots(figsize=(width, 2.6), layout="constrained")
    bar_width = 0.8 / max(1, len(scorers))
    for j, s in enumerate(scorers):
        d = diagnostics[(diagnostics["scorer"] == s)
                        & (diagnostics["diagnostic"] == "rows_with_tie_size")]  # fmt: skip
        t = d["key"].str.removeprefix("t=").astype(int).to_numpy()
        c = d["value"].astype(float).to_numpy()
        counts = np.zeros(max_t + 2)
        np.add.at(counts, np.minimum(t, max_t + 1), c)
        share = counts / max(1.0, counts.sum())
        xs = np.arange(1, max_t + 2)
        ax.bar(xs - 0.4 + (j + 0.5) * bar_width, share[1:], bar_width, label=s,
               color=OKABE_ITO[j % len(OKABE_ITO)])
    step = 5 if max_t <= 40 else 10
    ticks = [1] + list(range(step, max_t - 1, step)) + [max_t + 1]  # none crowding ">max_t"
    ax.set_xticks(ticks, [str(v) for v in ticks[:-1]] + [f">{max_t}"])
    ax.tick_params(labelsize=_SMALL)
    ax.set_xlabel("tie-group size t at the relevant item", fontsize=_LABEL)
    ax.set_ylabel("share of rows", fontsize=_LABEL)
    ax.grid(axis="y", alpha=0.3)
    _legend_below(fig, ax)
    if title:
        ax.set_title(title, fontsize=_TITLE)
    return fig


def save(fig: plt.Figure, paths: Sequence[str | Path]) -> None:
    """Save to each path (format from the extension), deterministically, and close the figure."""
    for p in paths:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        suffix = Path(p).suffix
        meta = {".pdf": {"CreationDate": None}, ".svg": {"Date": None}}.get(
            suffix, {"Software": None})
        with matplotlib.rc_context({"svg.hashsalt": "tieaudit", "svg.fonttype": "none"}):
            fig.savefig(p, dpi=150, metadata=meta)
    plt.close(fig)

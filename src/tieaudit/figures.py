"""Figures: each scorer's headline measure under each tie rule, and tie sizes at the positive.

Matplotlib runs on the Agg backend (set here, before pyplot is imported), and PDFs carry no
creation date, so the same inputs give the same files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

__all__ = ["rules_figure", "tie_size_figure", "save"]

_SINGLE = ("input_order", "optimistic", "pessimistic", "item_id")
_COLORS = {"input_order": "#d62728", "optimistic": "#ff9896", "pessimistic": "#9edae5",
           "item_id": "#c7c7c7", "hash": "#1f77b4", "random": "#ff7f0e"}  # fmt: skip


def _color(rule: str) -> str:
    return _COLORS.get(rule, _COLORS.get(rule.split(":")[0], "#7f7f7f"))


def rules_figure(
    metrics: pd.DataFrame, scorers: Sequence[str], rules: Sequence[str], headline: Sequence[str],
    title: str = "",
) -> plt.Figure:  # fmt: skip
    """One panel per headline measure; per scorer a bar for each single-ranking rule, the
    hash_mean seed range (min to max) with its mean, and the exact expectation as a black line."""
    bars = [r for r in rules if r not in ("expected", "hash_mean")]
    fig, axes = plt.subplots(1, len(headline), figsize=(4.2 * len(headline), 3.6), squeeze=False)
    width = 0.8 / max(1, len(bars) + 1)
    x = np.arange(len(scorers))
    for ax, h in zip(axes[0], headline, strict=True):
        m = metrics[metrics["metric"] == h]

        def get(s: str, r: str, col: str = "value", m: pd.DataFrame = m) -> float:
            sel = m[(m["scorer"] == s) & (m["rule"] == r)]
            return float(sel[col].iloc[0]) if len(sel) else np.nan

        for j, r in enumerate(bars):
            ax.bar(x - 0.4 + (j + 0.5) * width, [get(s, r) for s in scorers], width,
                   label=r, color=_color(r))  # fmt: skip
        if "hash_mean" in rules:
            xm = x - 0.4 + (len(bars) + 0.5) * width
            mean = np.array([get(s, "hash_mean") for s in scorers])
            # value (row mean of the seed mean) and min/max (over the seeds' row means) are
            # summed in different orders: with every seed alike they differ in the last bits
            lo = np.maximum(mean - np.array([get(s, "hash_mean", "min") for s in scorers]), 0)
            hi = np.maximum(np.array([get(s, "hash_mean", "max") for s in scorers]) - mean, 0)
            ax.errorbar(xm, mean, yerr=[lo, hi], fmt="o", color=_COLORS["hash"], ms=4,
                        capsize=3, label="hash_mean (seed min-max)")  # fmt: skip
        if "expected" in rules:
            for i, s in enumerate(scorers):
                ax.hlines(get(s, "expected"), x[i] - 0.42, x[i] + 0.42, colors="black",
                          linewidth=1.5, label="expected" if i == 0 else None)  # fmt: skip
        ax.set_xticks(x, scorers, rotation=15, ha="right", fontsize=8)
        ax.set_ylabel(h)
        ax.set_ylim(0, max(0.05, float(np.nanmax(m["value"])) * 1.15))
        ax.grid(axis="y", alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="upper right", frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def tie_size_figure(
    diagnostics: pd.DataFrame, scorers: Sequence[str], title: str = "", max_t: int = 30
) -> plt.Figure:
    """Share of rows by tie-group size t at the relevant item (t > max_t pooled), per scorer."""
    fig, ax = plt.subplots(figsize=(6.0, 3.4))
    width = 0.8 / max(1, len(scorers))
    for j, s in enumerate(scorers):
        d = diagnostics[(diagnostics["scorer"] == s)
                        & (diagnostics["diagnostic"] == "rows_with_tie_size")]  # fmt: skip
        t = d["key"].str.removeprefix("t=").astype(int).to_numpy()
        c = d["value"].astype(float).to_numpy()
        counts = np.zeros(max_t + 2)
        np.add.at(counts, np.minimum(t, max_t + 1), c)
        share = counts / max(1.0, counts.sum())
        xs = np.arange(1, max_t + 2)
        ax.bar(xs - 0.4 + (j + 0.5) * width, share[1:], width, label=s)
    ax.set_xlabel(f"tie-group size t at the relevant item ({max_t + 1} = more than {max_t})")
    ax.set_ylabel("share of rows")
    ax.legend(fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def save(fig: plt.Figure, paths: Sequence[str | Path]) -> None:
    """Save to each path (format from the extension), deterministically, and close the figure."""
    for p in paths:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        meta = {"CreationDate": None} if str(p).endswith(".pdf") else {"Software": None}
        fig.savefig(p, dpi=150, metadata=meta)
    plt.close(fig)

"""Does the tie rule change which model wins? Ranking flips between models on the same rows.

Given two or more models evaluated on the same evaluation rows (scored candidates tables of the
same users and held-out items), :func:`ranking_flips` compares every pair ``(A, B)`` under every
tie rule and against the exact expectation.

Paired difference under ``expected``
    Per row ``w``: ``d_w = E_A,w - E_B,w``, each model's exact expectation under a uniform random
    order within its tie groups. Reported: the mean ``D = (1/W) sum_w d_w``; its standard error
    over rows ``se = sd_w(d) / sqrt(W)`` (sd with n-1: the sampling of users); and the exact
    standard deviation of the mean difference that tie-breaking alone causes,
    ``sd_ties = sqrt(sum_w Var_A,w + sum_w Var_B,w) / W``. That formula assumes A's and B's ties
    are broken independently of each other (and rows independently of one another), as two
    independent uniform shuffles would do; a rule that orders both models' ties by one shared key
    (``hash:SEED`` over the same user and item ids, ``item_id``) correlates them, and the
    variance of their difference may then be smaller or larger.

Flips
    Under a rule ``R`` the pair is ordered by the sign of ``mean_R(A) - mean_R(B)`` (a
    difference within ``1e-12`` is a tie). A pair *flips* under ``R`` when that sign differs from
    its sign under ``expected``. Pairs are oriented so that A is ahead of (or level with) B under
    ``expected``.

Outputs are tidy frames (:func:`ranking_flips`, :func:`orderings`) and Markdown
(:func:`flips_markdown`); ``tieaudit compare A.parquet B.parquet ...`` runs them on files.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .evaluate import Evaluation
from .io import frame_to_markdown
from .measures import Measure, parse_measures

__all__ = [
    "FLIP_COLUMNS",
    "ModelRows",
    "ranking_flips",
    "orderings",
    "flips_markdown",
]

#: A mean difference within this distance of 0 is a tie.
TIE_TOLERANCE = 1e-12

#: Columns of :func:`ranking_flips`, one line per (measure, pair, rule).
FLIP_COLUMNS = ("metric", "scorer_a", "scorer_b", "rule", "mean_a", "mean_b", "diff",
                "expected_diff", "se_rows", "sd_ties", "n_rows", "flip")  # fmt: skip


@dataclass(frozen=True)
class ModelRows:
    """What a comparison needs of one model: its rows (sorted ids), each rule's mean over rows,
    and per row the exact expectation and variance under uniform random tie-breaking."""

    name: str
    row_ids: np.ndarray
    means: dict[str, dict[str, float]]  # rule -> measure -> mean over rows
    expected: dict[str, np.ndarray]  # measure -> per-row expectation, in row_ids order
    variance: dict[str, np.ndarray]  # measure -> per-row variance, in row_ids order

    @classmethod
    def from_evaluation(
        cls, name: str, ev: Evaluation, measures: Iterable[str | Measure] | None = None
    ) -> ModelRows:
        """The rows of ``ev`` for ``measures`` (default: all of ``ev``'s), under all its rules
        and ``expected`` (computed when it was not among the rules)."""
        ms = parse_measures(measures) if measures is not None else list(ev.measures)
        missing = [str(m) for m in ms if m not in ev.measures]
        if missing:
            raise ValueError(f"{name}: not evaluated for {', '.join(missing)}")
        ids = np.asarray(ev.table.row_ids).astype(str)
        order = np.argsort(ids, kind="stable")
        exp = ev.expected
        means = {str(r): {str(m): float(ev[r].values[m].mean()) for m in ms} for r in ev.rules}
        means.setdefault("expected", {str(m): float(exp.values[m].mean()) for m in ms})
        return cls(
            name,
            ids[order],
            means,
            {str(m): exp.values[m][order] for m in ms},
            {str(m): exp.variances[m][order] for m in ms},
        )


def _check_rows(models: Sequence[ModelRows]) -> None:
    """Every model holds exactly the rows of the first; else name the first row that differs."""
    first = models[0]
    for other in models[1:]:
        if np.array_equal(first.row_ids, other.row_ids):
            continue
        for a, b in ((first, other), (other, first)):
            extra = np.setdiff1d(a.row_ids, b.row_ids)
            if len(extra):
                raise ValueError(
                    f"{a.name} and {b.name} are not evaluated on the same rows: {len(extra)} "
                    f"row(s) of {a.name} are not in {b.name} (first: {str(extra[0])!r})"
                )
        raise ValueError(f"{first.name} and {other.name}: the same rows, repeated differently")


def _sign(x: float) -> int:
    return 0 if abs(x) <= TIE_TOLERANCE else (1 if x > 0 else -1)


def ranking_flips(
    models: Sequence[ModelRows] | Mapping[str, Evaluation],
    measures: Iterable[str | Measure] | None = None,
    rules: Iterable[str] | None = None,
) -> pd.DataFrame:
    """One line per measure, pair of models and rule (:data:`FLIP_COLUMNS`; see module doc).

    ``models`` are :class:`ModelRows` or a mapping name -> :class:`Evaluation` (two or more, on
    the same rows); ``rules`` are the rules whose order is set against ``expected`` (default:
    every rule the models share but ``expected``). ``flip`` is ``yes`` where the pair's order
    under the rule differs from its order under ``expected``.
    """
    if isinstance(models, Mapping):
        models = [ModelRows.from_evaluation(n, ev, measures) for n, ev in models.items()]
    models = list(models)
    if len(models) < 2:
        raise ValueError(f"a comparison needs two or more models, got {len(models)}")
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"model names repeat: {', '.join(names)}")
    _check_rows(models)
    ms = [str(m) for m in parse_measures(measures)] if measures is not None else list(
        models[0].expected)
    for m in models:
        missing = [x for x in ms if x not in m.expected]
        if missing:
            raise ValueError(f"{m.name}: not evaluated for {', '.join(missing)}")
    shared = [r for r in models[0].means if all(r in m.means for m in models)]
    rs = [r for r in (list(rules) if rules is not None else shared) if r != "expected"]
    for r in rs:
        for m in models:
            if r not in m.means:
                raise ValueError(f"{m.name}: not evaluated under rule {r}")
    w = len(models[0].row_ids)
    lines = []
    for metric in ms:
        for a, b in itertools.combinations(models, 2):
            d = a.expected[metric] - b.expected[metric]
            if _sign(float(d.mean())) < 0:
                a, b, d = b, a, -d
            diff = float(d.mean())
            se = float(d.std(ddof=1) / math.sqrt(w)) if w > 1 else math.nan
            ties = math.sqrt(float(a.variance[metric].sum() + b.variance[metric].sum())) / w
            for r in rs:
                ra, rb = a.means[r][metric], b.means[r][metric]
                lines.append({
                    "metric": metric, "scorer_a": a.name, "scorer_b": b.name, "rule": r,
                    "mean_a": ra, "mean_b": rb, "diff": ra - rb, "expected_diff": diff,
                    "se_rows": se, "sd_ties": ties, "n_rows": w,
                    "flip": "yes" if _sign(ra - rb) != _sign(diff) else "no",
                })  # fmt: skip
    return pd.DataFrame(lines, columns=list(FLIP_COLUMNS))


def orderings(
    models: Sequence[ModelRows], measures: Iterable[str] | None = None,
    rules: Iterable[str] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """``metric, rule, order``: the models from best to worst under each rule, e.g.
    ``A > B = C`` (``=`` for means within :data:`TIE_TOLERANCE`)."""
    models = list(models)
    ms = list(measures) if measures is not None else list(models[0].expected)
    rs = list(rules) if rules is not None else list(models[0].means)
    out = []
    for metric in ms:
        for r in rs:
            ranked = sorted(models, key=lambda m: -m.means[r][metric])  # stable: given order
            text = ranked[0].name
            for prev, cur in itertools.pairwise(ranked):
                gap = _sign(prev.means[r][metric] - cur.means[r][metric])
                text += f" {'>' if gap else '='} {cur.name}"
            out.append({"metric": metric, "rule": r, "order": text})
    return pd.DataFrame(out, columns=["metric", "rule", "order"])


def _pair_lines(flips: pd.DataFrame) -> pd.DataFrame:
    """One line per measure and pair: the expected difference and the rules that flip it."""
    rows = []
    for (metric, a, b), g in flips.groupby(["metric", "scorer_a", "scorer_b"], sort=False):
        one = g.iloc[0]
        flipped = [r for r, f in zip(g["rule"], g["flip"], strict=True) if f == "yes"]
        rows.append({
            "metric": metric, "A": a, "B": b, "expected A - B": one["expected_diff"],
            "se (rows)": one["se_rows"], "sd (ties)": one["sd_ties"],
            "order differs under": ", ".join(flipped) or "none",
        })  # fmt: skip
    return pd.DataFrame(rows)


FLIPS_LEGEND = (
    "A is ahead of B (or level) under `expected`. *expected A - B*: mean over rows of the "
    "per-row difference of exact expectations; *se (rows)*: its standard error over rows "
    "(sd/sqrt(W)); *sd (ties)*: the exact sd of that mean from tie-breaking alone, A's and B's "
    "ties broken independently; *order differs under*: the rules under which B is ahead of A, "
    "or level where expected separates them, or apart where expected has them level."
)


def flips_markdown(
    flips: pd.DataFrame, order: pd.DataFrame, title: str = "", level: int = 2
) -> str:
    """A block per measure: the order of the models under each rule, and the pairs with their
    paired difference under ``expected`` and the rules that flip them; a line saying how many
    pairs flip (or that none does)."""
    h = "#" * level
    out = [f"{h} {title}", ""] if title else []
    n = int((flips.groupby(["metric", "scorer_a", "scorer_b"])["flip"]
             .agg(lambda f: (f == "yes").any())).sum()) if len(flips) else 0  # fmt: skip
    total = flips.groupby(["metric", "scorer_a", "scorer_b"]).ngroups if len(flips) else 0
    out += ["**Ranking flips: none.** Fewer than two scorers: no pair to compare." if total == 0
            else f"**Ranking flips: none.** Every rule orders every pair of scorers as `expected` "
            f"does ({total} pairs)." if n == 0 else
            f"**Ranking flips: {n} of {total} pairs** change order under at least one rule.",
            ""]  # fmt: skip
    pairs = _pair_lines(flips)
    for metric in dict.fromkeys(order["metric"]):
        out += [f"{h}# {metric}", ""]
        out += [f"- `{r}`: {o}" for r, o in zip(*order[order["metric"] == metric][["rule", "order"]]
                                                .to_numpy().T, strict=True)]  # fmt: skip
        out.append("")
        sel = pairs[pairs["metric"] == metric].drop(columns="metric") if len(pairs) else pairs
        if len(sel):
            out.append(frame_to_markdown(sel.reset_index(drop=True)))
    out += [FLIPS_LEGEND, ""]
    return "\n".join(out)

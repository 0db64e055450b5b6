"""Whether an evaluator casts or rounds the scores before it ranks them.

An evaluator that casts scores to float32 (recsys_metrics), a model served in float16 or
bfloat16, or a step that rounds scores to a few decimals ties candidates whose scores differ only
below that precision. The probe feeds the crafted rows whose relevant item is stored first again,
once per precision ``P`` of :data:`PROBED`, with the tie group's scores pulled apart by less
than half a unit of ``P``'s last place at 1.0 (the relevant item keeps 1.0, the others get
``1 + delta`` with ``delta`` from 0.5 to 0.6 of that half unit): an evaluator that does not
cast ranks the relevant item last in its group, one that casts at least as coarsely as ``P``
sees the exact ties it saw before and returns what it returned then.

Which precisions collapse a perturbation is simulated with :func:`tieaudit.tables.precision.cast_scores`
for every candidate precision (and for none), and the ones whose pattern is the observed one
are named. Precisions whose last places at 1.0 are within a factor of two of each other
(``float16`` and ``round:3``, ``bfloat16`` and ``round:2``) give the same pattern: the probe
names both. An evaluator that ties every perturbation casts at least as coarsely as the
coarsest probed (``round:0``): the probe says ``round:0 or coarser``. An evaluator whose ties
already rank the relevant item last (``pessimistic``) gives the same values either way, and one
that is not deterministic cannot be compared with itself: then nothing is said. Only the rows
of plain scores are perturbed (not those of numeric edge values, :mod:`.cases`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ..tables.candidates import CandidateTable
from ..ties.measures import Measure
from ..tables.precision import PRECISIONS, cast_scores
from .cases import Layout

__all__ = ["COARSER", "PROBED", "detect_casting"]

#: The precisions the probe looks for: the fixed ones, and rounding to 6 decimals down to none.
PROBED = tuple(p for p in PRECISIONS if ":" not in p) + tuple(
    f"round:{d}" for d in range(6, -1, -1)
)
#: Named beside the coarsest precision probed when every perturbation ties: a coarser cast
#: (rounding to tens, truncating to integers) ties them all too.
COARSER = "coarser"
_SPREAD = (0.5, 0.6)  # the perturbations, as fractions of half a last place (no two probed
# precisions have half units between 1.67 and 2 times each other: each collapses all or none)


def _half_unit(precision: str) -> float:
    """Half a unit in the last place of ``precision`` at 1.0."""
    if precision.startswith("round:"):
        return 0.5 * 10.0 ** -int(precision.split(":")[1])
    fraction_bits = {"float32": 23, "float16": 10, "bfloat16": 7}[precision]
    return 2.0 ** -(fraction_bits + 1)


def _deltas(precision: str, n: int) -> np.ndarray:
    lo, hi = _SPREAD
    return _half_unit(precision) * (lo + (hi - lo) * np.arange(1, n + 1) / max(n, 1))


def _collapses(cast: str | None, precision: str) -> bool:
    """Whether ``cast`` (``None``: no cast) ties every perturbation for ``precision`` with 1.0."""
    x = 1.0 + _deltas(precision, 8)
    if cast is None:
        return False
    return bool(np.all(cast_scores(x, cast) == cast_scores(np.array([1.0]), cast)[0]))


def _perturbed(base: CandidateTable, rows: np.ndarray) -> CandidateTable:
    """The ``rows`` of ``base`` (codes), once per precision of :data:`PROBED`, the tie group's
    scores pulled apart below it (rows renamed ``ROW.pN``)."""
    frame = base.to_frame()
    frame = frame[frame["row"].isin(base.row_ids[rows])]
    parts = []
    for i, p in enumerate(PROBED):
        part = frame.copy()
        tied = (part["score"] == 1.0) & (part["label"] == 0)
        order = part[tied].groupby("row", sort=False).cumcount().to_numpy()
        part.loc[tied, "score"] = 1.0 + _deltas(p, int(order.max()) + 1 if len(order) else 1)[order]
        part["row"] = part["row"].astype(str) + f".p{i}"
        parts.append(part)
    return CandidateTable.from_frame(pd.concat(parts, ignore_index=True),
                                     source="crafted tie cases with scores pulled apart below "
                                     "each precision")  # fmt: skip


def detect_casting(
    call: Callable[..., np.ndarray], measure: Measure, base: CandidateTable,
    lays: Sequence[Layout], tied: np.ndarray, strict: np.ndarray,
    close: Callable[[np.ndarray, np.ndarray], np.ndarray], tag: str,
) -> tuple[list[str], str] | None:  # fmt: skip
    """The precisions the evaluator's values point to (``"none"``: it does not cast) and the
    evidence; ``None`` when the rows cannot tell (see the module docstring). ``tied`` are its
    values on ``base``, ``strict`` the values of a ranking with the relevant item last in its
    group (what it gives without a cast)."""
    rows = np.array([i for i, lay in enumerate(lays) if lay.stored == 0 and lay.m >= 1
                     and lay.plain])  # fmt: skip
    if not len(rows) or close(tied[rows], strict[rows]).all():
        return None
    table = _perturbed(base, rows)
    values = call(table, measure.k, table.source, tag).reshape(len(PROBED), len(rows))
    observed = []
    for got in values:
        if close(got, tied[rows]).all():
            observed.append(True)
        elif close(got, strict[rows]).all():
            observed.append(False)
        else:
            return [], ("with the scores of a tie group pulled apart below a precision, its "
                        "values are neither those of the ties nor those of the strict order")  # fmt: skip
    match = [c for c in (None, *PROBED) if [_collapses(c, p) for p in PROBED] == observed]
    names = ["none" if c is None else c for c in match]
    if all(observed):  # nothing probed is coarse enough to tell a coarser cast apart
        names.append(COARSER)
    if names == ["none"]:
        return names, ("scores that differ by less than half a float32 unit at 1.0 rank apart: "
                       "it casts them to no precision probed")  # fmt: skip
    if not any(observed):
        return names, "scores pulled apart below each precision rank apart"  # pragma: no cover
    coarsest = max((p for p, o in zip(PROBED, observed, strict=True) if o), key=_half_unit)
    return names, (f"scores that differ by less than half a unit of {coarsest} at 1.0 give the "
                   "values of exact ties: it casts or rounds its scores to "
                   f"{' or '.join(names) or 'a precision not probed'}")

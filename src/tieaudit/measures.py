"""Top-k measures for one relevant item among candidates, named declaratively (``nDCG@10``).

Every measure here is a function of the rank ``r`` (1-based) of the single relevant item in the
final ranking of a row and a cutoff ``k``:

* ``HR@k`` (hit rate, also called Recall@k with one relevant item):
  ``HR@k(r) = 1[r <= k]``.
* ``nDCG@k`` (normalised discounted cumulative gain, Järvelin & Kekäläinen 2002, base-2 log):
  ``nDCG@k(r) = 1[r <= k] / log2(r + 1)``; with one relevant item of gain 1 the ideal DCG is 1.
* ``MRR@k`` (reciprocal rank truncated at k): ``MRR@k(r) = 1[r <= k] / r``.

With ties, the rank is a random variable. If ``g`` candidates score strictly higher than the
relevant item and ``t`` candidates (the relevant one included) share its score, a uniform random
order within the tie group makes ``r`` uniform on ``g+1 .. g+t``; the exact expectation of any
measure ``m`` is then

    E[m] = (1/t) * sum_{r=g+1}^{g+t} m(r),

which for nDCG is the tie-averaged DCG of McSherry & Najork (2008), "Computing Information Retrieval
Performance Measures Efficiently in the Presence of Tied Scores", ECIR 2008; its variance is
``E[m^2] - E[m]^2``. Note that plugging the mean rank ``g + (t+1)/2`` into ``m`` does *not* give
the expected measure (``m`` is not linear in ``r``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Iterable

import numpy as np

__all__ = ["Measure", "parse_measure", "parse_measures", "MEASURE_NAMES", "DEFAULT_MEASURES"]

#: Canonical measure names, as accepted (case-insensitively) by :func:`parse_measure`.
MEASURE_NAMES = ("HR", "nDCG", "MRR")

_ALIASES = {"hr": "HR", "hit": "HR", "hitrate": "HR", "ndcg": "nDCG", "mrr": "MRR", "rr": "MRR"}
_PATTERN = re.compile(r"^\s*([A-Za-z]+)\s*@\s*(\d+)\s*$")


@dataclass(frozen=True, order=True)
class Measure:
    """A measure at a cutoff, e.g. ``Measure("nDCG", 10)``; ``str()`` gives ``"nDCG@10"``."""

    name: str
    k: int

    def __post_init__(self) -> None:
        if self.name not in MEASURE_NAMES:
            raise ValueError(f"unknown measure {self.name!r}; known: {', '.join(MEASURE_NAMES)}")
        if self.k < 1:
            raise ValueError(f"cutoff must be >= 1, got {self.name}@{self.k}")

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    def gains(self, max_rank: int) -> np.ndarray:
        """``m(r)`` for ``r = 0 .. max_rank`` (index 0 unused, 0.0), as float64."""
        r = np.arange(max_rank + 1, dtype=np.float64)
        out = np.zeros(max_rank + 1, dtype=np.float64)
        hit = (r >= 1) & (r <= self.k)
        if self.name == "HR":
            out[hit] = 1.0
        elif self.name == "nDCG":
            out[hit] = 1.0 / np.log2(r[hit] + 1.0)
        else:  # MRR
            out[hit] = 1.0 / r[hit]
        return out

    def __call__(self, rank: np.ndarray | int) -> np.ndarray:
        """The measure at 1-based ``rank`` (array or scalar)."""
        rank = np.asarray(rank)
        table = self.gains(self.k + 1)
        return table[np.minimum(rank, self.k + 1)]


def parse_measure(text: str | Measure) -> Measure:
    """Parse ``"nDCG@10"``, ``"HR@5"``, ``"MRR@20"`` (case-insensitive names) into a Measure.

    >>> parse_measure("ndcg@10")
    Measure(name='nDCG', k=10)
    """
    if isinstance(text, Measure):
        return text
    m = _PATTERN.match(str(text))
    if not m:
        raise ValueError(
            f"cannot parse measure {text!r}: expected NAME@K such as nDCG@10, HR@5 or MRR@20"
        )
    name = _ALIASES.get(m.group(1).lower())
    if name is None:
        raise ValueError(
            f"unknown measure {m.group(1)!r} in {text!r}; known: {', '.join(MEASURE_NAMES)}"
        )
    k = int(m.group(2))
    if k < 1:
        raise ValueError(f"cutoff must be >= 1 in {text!r}")
    return Measure(name, k)


def parse_measures(texts: Iterable[str | Measure]) -> list[Measure]:
    """Parse several measures, dropping duplicates while keeping the given order."""
    out: list[Measure] = []
    for t in texts:
        m = parse_measure(t)
        if m not in out:
            out.append(m)
    if not out:
        raise ValueError("no measures given")
    return out


#: HR, nDCG and MRR at 1, 5, 10 and 20.
DEFAULT_MEASURES = tuple(Measure(n, k) for n in MEASURE_NAMES for k in (1, 5, 10, 20))

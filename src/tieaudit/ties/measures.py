"""Top-k measures, named declaratively (``nDCG@10``, ``Recall@20``), with binary or graded
relevance.

A row has ``R >= 1`` relevant items (``R`` may exceed the number retrieved, see
:mod:`tieaudit.tables.candidates`); let ``r_1 <= r_2 <= ...`` be the 1-based ranks of the relevant items
that were ranked. With ``rel(p) = 1`` when the item at position ``p`` is relevant:

* ``HR@k`` (hit rate): ``1[r_1 <= k]``, at least one relevant item in the top ``k``.
* ``MRR@k`` (reciprocal rank of the first relevant item, truncated): ``1[r_1 <= k] / r_1``.
* ``nDCG@k`` (Järvelin & Kekäläinen 2002, binary gains, base-2 log, the ``log2(p + 1)`` discount):
  ``DCG@k / IDCG@k`` with ``DCG@k = sum_{p <= k} rel(p) / log2(p + 1)`` and the ideal
  ``IDCG@k = sum_{p=1}^{min(R, k)} 1 / log2(p + 1)``.
* ``Recall@k``: ``#{i : r_i <= k} / R``.
* ``P@k`` (precision, also ``Precision@k``): ``#{i : r_i <= k} / k`` (a ranking shorter than
  ``k`` is padded with non-relevant items, as trec_eval's ``P_k`` does).

Graded relevance (labels that are numbers ``l >= 0``, not only 0 and 1; :mod:`tieaudit.tables.candidates`):
an item is relevant when ``l > 0``, which is all ``HR``, ``MRR``, ``Recall`` and ``P`` read. nDCG's
gain is the label itself (linear, as trec_eval's ``ndcg_cut`` and scikit-learn's ``ndcg_score``):
``DCG@k = sum_{p <= k} l(p) / log2(p + 1)`` and the ideal ``IDCG@k = sum_{p=1}^{min(R, k)}
l_(p) / log2(p + 1)`` with ``l_(1) >= l_(2) >= ...`` the labels of the row's ``R`` relevant
items sorted descending (:meth:`Measure.ideal`). With labels 0 and 1 these are the binary
formulas above. (For the exponential gain ``2**l - 1`` of Burges et al. 2005, give ``2**l - 1``
as the label.)

With one relevant item (``R = 1``) every measure is a function of its rank ``r``: ``HR@k`` and
``Recall@k`` are ``1[r <= k]``, ``nDCG@k`` is ``1[r <= k] / log2(r + 1)``, ``MRR@k`` is
``1[r <= k] / r`` and ``P@k`` is ``1[r <= k] / k``. :meth:`Measure.gains` tabulates that function.

``HR`` and ``MRR`` depend only on the best-ranked relevant item (kind ``"first"``); ``nDCG``,
``Recall`` and ``P`` are sums of a per-item gain (:meth:`Measure.item_gains`) divided by a per-row
normaliser (:meth:`Measure.norm`: ``IDCG@k``, ``R`` or ``k``; kind ``"sum"``).

With ties the ranks are random variables. If ``g`` candidates score strictly higher than a tie
group of ``t`` candidates holding one relevant item, a uniform random order within the group makes
its rank uniform on ``g+1 .. g+t``; the exact expectation of a measure ``m`` is then

    E[m] = (1/t) * sum_{r=g+1}^{g+t} m(r),

which for nDCG is the tie-averaged DCG of McSherry & Najork (2008), "Computing Information Retrieval
Performance Measures Efficiently in the Presence of Tied Scores", ECIR 2008; its variance is
``E[m^2] - E[m]^2``. Note that plugging the mean rank ``g + (t+1)/2`` into ``m`` does *not* give
the expected measure (``m`` is not linear in ``r``). :mod:`tieaudit.ties.rules.expected` gives the exact
expectation and variance for several relevant items per row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Iterable

import numpy as np

from ..common.parsing import parse_unique

__all__ = [
    "Measure", "parse_measure", "parse_measures", "MEASURE_NAMES", "DEFAULT_MEASURES",
    "MAX_CUTOFF",
]  # fmt: skip

#: Canonical measure names, as accepted (case-insensitively) by :func:`parse_measure`.
MEASURE_NAMES = ("HR", "nDCG", "MRR", "Recall", "P")

_ALIASES = {
    "hr": "HR", "hit": "HR", "hitrate": "HR", "ndcg": "nDCG", "mrr": "MRR", "rr": "MRR",
    "recall": "Recall", "p": "P", "prec": "P", "precision": "P",
}  # fmt: skip
_PATTERN = re.compile(r"^[ \t]*([A-Za-z]+)[ \t]*@[ \t]*([0-9]+)[ \t]*$")  # ASCII only
_FIRST = ("HR", "MRR")  # depend only on the best-ranked relevant item
#: The largest cutoff: ranks and cutoffs are counted in int64 and divided as float64, exact up to
#: 2**53 (no ranking is that long; a cutoff beyond the longest row costs nothing more).
MAX_CUTOFF = 2**53


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
        if self.k > MAX_CUTOFF:
            raise ValueError(
                f"cutoff {self.k} of {self.name}@{self.k} is above 2**53 = {MAX_CUTOFF}; to count "
                "every candidate, any cutoff at least the longest row will do"
            )

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"

    @property
    def kind(self) -> str:
        """``"first"`` (HR, MRR: a function of the best relevant rank) or ``"sum"`` (nDCG, Recall,
        P: a sum of per-item gains over the relevant items, divided by :meth:`norm`)."""
        return "first" if self.name in _FIRST else "sum"

    def table_end(self, longest: int) -> int:
        """The last index a gain table needs for ranks up to ``longest``: ``min(k, longest) +
        1``, past every rank that can score (so a cutoff beyond the longest row costs nothing)."""
        return min(self.k, max(int(longest), 0)) + 1

    def item_gains(self, max_rank: int) -> np.ndarray:
        """Per-item gain at ``r = 0 .. max_rank`` (index 0 unused, 0.0), before normalisation.

        ``HR``, ``Recall``, ``P``: ``1[r <= k]``; ``nDCG``: ``1[r <= k] / log2(r + 1)``;
        ``MRR``: ``1[r <= k] / r``. For the ``"first"`` kind it applies to the best rank only.
        """
        out = np.zeros(max_rank + 1, dtype=np.float64)
        out[1:] = self.item_gain_at(np.arange(1, max_rank + 1, dtype=np.float64))
        return out

    def item_gain_at(self, rank: np.ndarray) -> np.ndarray:
        """The per-item gain (:meth:`item_gains`' formulas) at ranks ``>= 1`` that may be
        fractional: a tie group's mean rank plugged in (:mod:`tieaudit.ties.rules.mean_rank`)."""
        r = np.asarray(rank, dtype=np.float64)
        out = np.zeros(r.shape, dtype=np.float64)
        hit = r <= self.k
        if self.name == "nDCG":
            out[hit] = 1.0 / np.log2(r[hit] + 1.0)
        elif self.name == "MRR":
            out[hit] = 1.0 / r[hit]
        else:  # HR, Recall, P
            out[hit] = 1.0
        return out

    def norm(self, n_relevant: np.ndarray | int) -> np.ndarray:
        """The per-row normaliser for ``R = n_relevant`` relevant items (float64).

        ``nDCG``: ``IDCG@k = sum_{p=1}^{min(R, k)} 1 / log2(p + 1)``; ``Recall``: ``R``;
        ``P``: ``k``; ``HR`` and ``MRR``: 1.
        """
        n = np.asarray(n_relevant, dtype=np.int64)
        if self.name == "nDCG":
            top = min(self.k, int(n.max()) if n.size else 0)  # the ideal needs min(R, k) places
            ideal = np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(2, top + 2, dtype=np.float64)))]
            return ideal[np.clip(n, 0, top)]
        if self.name == "Recall":
            return n.astype(np.float64)
        if self.name == "P":
            return np.full(n.shape, float(self.k))
        return np.ones(n.shape)

    @property
    def graded(self) -> bool:
        """Whether the measure weighs a relevant item by its grade (nDCG: its gain is the label);
        the others read only whether an item is relevant."""
        return self.name == "nDCG"

    def ideal(self, row: np.ndarray, grade: np.ndarray, n_rows: int) -> np.ndarray:
        """nDCG's ideal ``IDCG@k`` of each of ``n_rows`` rows from the grades of its relevant
        items, ``grade[j]`` of an item of row ``row[j]``: ``sum_{p=1}^{min(R, k)} l_(p) / log2(p
        + 1)`` with the row's grades sorted descending (float64; 0 for a row without one)."""
        order = np.lexsort((-grade, row))
        row, grade = row[order], grade[order]
        starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]]) if len(row) else row
        place = np.arange(len(row)) - np.repeat(starts, np.diff(np.r_[starts, len(row)]))
        top = place < self.k
        gain = grade[top] / np.log2(place[top] + 2.0)
        return np.bincount(row[top], weights=gain, minlength=n_rows)

    def gains(self, max_rank: int) -> np.ndarray:
        """``m(r)`` for one relevant item (``R = 1``) at ``r = 0 .. max_rank`` (index 0 unused,
        0.0), as float64: :meth:`item_gains` divided by ``norm(1)``."""
        out = self.item_gains(max_rank)
        if self.name == "P":
            out /= self.k
        return out

    def __call__(self, rank: np.ndarray | int) -> np.ndarray:
        """The measure when the row's only relevant item (``R = 1``) is at 1-based ``rank``."""
        rank = np.asarray(rank)
        end = self.table_end(int(rank.max()) if rank.size else 0)
        return self.gains(end)[np.minimum(rank, end)]

    def of_ranks(self, ranks: Iterable[int], n_relevant: int | None = None) -> float:
        """The measure of one row from the ranks of its ranked relevant items (plain Python).

        ``n_relevant`` is ``R`` (default: the number of ranks given; it may be larger, for relevant
        items that were not ranked, but not smaller).

        >>> Measure("Recall", 2).of_ranks([1, 3], n_relevant=4)
        0.25
        """
        rs = sorted(int(r) for r in ranks)
        n = len(rs) if n_relevant is None else int(n_relevant)
        if n < max(len(rs), 1):
            raise ValueError(f"n_relevant={n} is below the {len(rs)} ranks given (or zero)")
        top = [r for r in rs if r <= self.k]
        gain = self.item_gains(self.table_end(max(rs, default=0)))
        if self.kind == "first":
            return float(gain[top[0]]) if top else 0.0
        return float(sum(gain[r] for r in top) / float(self.norm(n)))


def parse_measure(text: str | Measure) -> Measure:
    """Parse ``"nDCG@10"``, ``"HR@5"``, ``"MRR@20"``, ``"Recall@10"``, ``"P@10"`` (or
    ``"Precision@10"``; names are case-insensitive) into a Measure.

    >>> parse_measure("ndcg@10")
    Measure(name='nDCG', k=10)
    """
    if isinstance(text, Measure):
        return text
    m = _PATTERN.match(str(text))
    if not m:
        raise ValueError(
            f"cannot parse measure {text!r}: expected NAME@K such as nDCG@10, HR@5, MRR@20, "
            "Recall@10 or P@10"
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
    return parse_unique(texts, parse_measure, "measures")


#: HR, nDCG and MRR at 1, 5, 10 and 20 (Recall and P are asked for by name).
DEFAULT_MEASURES = tuple(Measure(n, k) for n in ("HR", "nDCG", "MRR") for k in (1, 5, 10, 20))

"""Scorers: the :class:`Scorer` interface, a name registry and the built-in scorers.

Get one with :func:`get_scorer`::

    scorer = get_scorer("attribute_overlap", weight="binary").fit(history, item_attributes)
    scored = score_candidates(candidates, scorer)

The protocol (:class:`Scorer`): ``fit(history, item_attributes) -> self``, an optional
``calibrate(pairs) -> self`` for a score function fitted on the evaluation's pairs
(:func:`score_candidates` calls it on the candidates), then a pure ``score(user_ids, item_ids)``
and an optional ``score_matrix(user_ids, item_ids)``. :mod:`tieaudit.scorers.testing` holds the
conformance battery every scorer passes (:func:`~tieaudit.scorers.testing.check_scorer_conformance`).

Built-ins (registered on import): ``attribute_overlap`` (option ``weight``: ``rating`` |
``binary`` | ``count``), ``residualized_attribute`` (same option) and ``popularity``. A user scorer
is named ``"package.module:Class"`` (importable) or ``"path/to/file.py:Class"`` and constructed
with the options; the path must name a class with ``fit`` and ``score`` (importing it runs its
module's code, so a scorer path is code). ``examples/my_scorer.py`` at the repository top level
is a worked example. :func:`check_scorer_spec` checks a name and its options without building.
:class:`MatrixScorer` wraps a precomputed users x items score matrix (a model run elsewhere).
"""

from tieaudit.scorers.attribute import AttributeOverlapScorer, ResidualizedAttributeScorer
from tieaudit.scorers.base import (
    Scorer,
    ScorerInterfaceError,
    ScorerLoadError,
    available_scorers,
    calibrate_scorer,
    check_scorer,
    check_scorer_spec,
    get_scorer,
    register,
    score_candidates,
)
from tieaudit.scorers.matrix import MatrixScorer
from tieaudit.scorers.popularity import PopularityScorer

__all__ = [
    "Scorer",
    "ScorerLoadError",
    "ScorerInterfaceError",
    "register",
    "get_scorer",
    "available_scorers",
    "check_scorer",
    "check_scorer_spec",
    "calibrate_scorer",
    "score_candidates",
    "AttributeOverlapScorer",
    "ResidualizedAttributeScorer",
    "PopularityScorer",
    "MatrixScorer",
]

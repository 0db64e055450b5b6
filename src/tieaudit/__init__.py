"""tieaudit: tie-aware, row-order-invariant top-k evaluation for recommender scores.

>>> import tieaudit
>>> ev = tieaudit.evaluate("candidates.csv", ["nDCG@10", "HR@10"], ["input_order", "expected"])
>>> ev.summary()                                               # doctest: +SKIP

See :mod:`tieaudit.rules` for the tie rules (one module per rule kind, one registry),
:mod:`tieaudit.measures` for the measures and their formulas, :mod:`tieaudit.hashing` for the
stable hash behind ``hash:SEED``, :mod:`tieaudit.evaluate` for how the evaluation is split
(:mod:`tieaudit.ties`, :mod:`tieaudit.values`), and :mod:`tieaudit.audit` for the row-order
invariance audit and the reporting checklist.
"""

from .candidates import CandidateError, CandidateTable, read_candidates
from .evaluate import (
    SUMMARY_COLUMNS,
    Evaluation,
    RuleResult,
    evaluate,
    expected_moments,
    hash_seed_ranks,
    tie_structure,
)
from .hashing import hash_key
from .measures import DEFAULT_MEASURES, Measure, parse_measure, parse_measures
from .rules import DEFAULT_RULES, TieRule, parse_rule, parse_rules
from .seeds import make_rng, make_seed
from .trec import read_trec

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MEASURES",
    "DEFAULT_RULES",
    "SUMMARY_COLUMNS",
    "CandidateError",
    "CandidateTable",
    "Evaluation",
    "Measure",
    "RuleResult",
    "TieRule",
    "__version__",
    "evaluate",
    "expected_moments",
    "hash_key",
    "hash_seed_ranks",
    "make_rng",
    "make_seed",
    "parse_measure",
    "parse_measures",
    "parse_rule",
    "parse_rules",
    "read_candidates",
    "read_trec",
    "tie_structure",
]

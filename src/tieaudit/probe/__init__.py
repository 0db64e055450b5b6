"""``tieaudit probe``: which tie rule does an evaluator use? A black-box test.

An evaluator is a callable ``fn(candidates, k)``: ``candidates`` is a DataFrame with columns
``row, user_id, item_id, label, score`` in stored order, and it returns each row's nDCG@k (or
the measure named), one value per row in order of first appearance. :func:`probe` feeds it
crafted tie cases (:mod:`.cases`) and infers its rule, whether it is row-order invariant, and
its inflation on a tie-heavy table (:mod:`.infer`), or names a behaviour that is no tie rule
with its parameters (:mod:`.behaviours`); :mod:`.report` writes ``probe.json`` and
``probe.md``. :mod:`.adapters` wraps library evaluators (scikit-learn, ranx, trec_eval,
ir_measures, torchmetrics, RecBole) and numpy/pandas idioms into the contract, and
:func:`evaluator_table` probes them all, once per measure each computes (the pipeline's
``evaluators.csv``).

>>> from tieaudit.probe import probe
>>> def my_ndcg(candidates, k): ...                      # doctest: +SKIP
>>> probe(my_ndcg, "nDCG@10").rule                       # doctest: +SKIP
'input_order'
"""

from __future__ import annotations

from .adapters import Adapter, AdapterError, adapters, get_adapter
from .infer import (
    DEFAULT_TIMEOUT,
    TOLERANCE,
    UNKNOWN,
    UNSTABLE,
    Evaluator,
    ProbeError,
    ProbeResult,
    candidate_rules,
    probe,
)
from .load import load_evaluator
from .table import EVALUATOR_COLUMNS, evaluator_table

__all__ = [
    "Adapter",
    "AdapterError",
    "DEFAULT_TIMEOUT",
    "EVALUATOR_COLUMNS",
    "Evaluator",
    "ProbeError",
    "ProbeResult",
    "TOLERANCE",
    "UNKNOWN",
    "UNSTABLE",
    "adapters",
    "candidate_rules",
    "evaluator_table",
    "get_adapter",
    "load_evaluator",
    "probe",
]

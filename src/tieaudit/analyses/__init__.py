"""What the evaluation is used for: the full catalogue, the row-order audit, model comparison
and what casting scores does.

- :mod:`~tieaudit.analyses.fullcatalog`: every catalogue item scored and reduced to one line a
  row (a summary table);
- :mod:`~tieaudit.analyses.audit`: the row-order invariance audit, tie diagnostics and the
  reporting checklist (:func:`tieaudit.analyses.audit.audit`);
- :mod:`~tieaudit.analyses.compare`: whether the tie rule changes which model wins
  (:func:`tieaudit.analyses.compare.compare`);
- :mod:`~tieaudit.analyses.casting`: what casting the scores to a narrower type, or rounding
  them, does (the pipeline's casting table).
"""


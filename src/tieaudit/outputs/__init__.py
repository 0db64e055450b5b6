"""What people read: the paper's tables, the reports, the figures and the results page, made
from the files the analyses wrote (nothing here evaluates).

- :mod:`~tieaudit.outputs.papertables`: the paper's tables (CSV, Markdown, LaTeX);
- :mod:`~tieaudit.outputs.report`: the reports beside them (ranking flips, the comparison with
  the paper);
- :mod:`~tieaudit.outputs.figures`: the figures (Matplotlib, Agg);
- :mod:`~tieaudit.outputs.page`: the results page.
"""

"""The evaluation: a table under every tie rule asked for, summed over its rows.

- :mod:`~tieaudit.evaluation.evaluate`: :func:`~tieaudit.evaluation.evaluate.evaluate` (also
  :func:`tieaudit.evaluate`) and its :class:`Evaluation` (per-row values, the summary);
- :mod:`~tieaudit.evaluation.sums`: the sums a summary is made of, merged exactly;
- :mod:`~tieaudit.evaluation.stream`: the streamed evaluation, in chunks of whole rows within a
  memory budget, on one or more processes;
- :mod:`~tieaudit.evaluation.parts`: the per-row values of the pipeline's parts of rows, merged
  as one evaluation sums them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

#: The names this folder's face imports on first use, by module.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "evaluate": ("Evaluation",),
    "stream": ("evaluate_stream",),
}
__all__ = ["Evaluation", "evaluate_stream"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .evaluate import Evaluation
    from .stream import evaluate_stream

"""Candidate tables: a file, folder, glob or DataFrame read into a checked
:class:`~tieaudit.tables.candidates.CandidateTable`.

- :mod:`~tieaudit.tables.candidates`: the table and its format (:func:`read_candidates`);
- :mod:`~tieaudit.tables.read`: reading CSV and Parquet files and DataFrames, and checking them
  (every error names the file and its lines or records);
- :mod:`~tieaudit.tables.inputs`: what an input is (a file, a folder of files, a glob, a
  dataset, Arrow record batches) and its chunks of whole rows;
- :mod:`~tieaudit.tables.summary`: a summary table's recorded ``before:RULE`` columns;
- :mod:`~tieaudit.tables.trec`: TREC run and qrels files;
- :mod:`~tieaudit.tables.precision`: scores cast to a narrower type, or rounded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

#: The names this folder's face imports on first use, by module.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "candidates": ("CandidateError", "CandidateTable", "read_candidates"),
    "trec": ("read_trec",),
    "precision": ("cast_scores", "cast_table"),
}
__all__ = ["CandidateError", "CandidateTable", "cast_scores", "cast_table", "read_candidates",
           "read_trec"]  # fmt: skip
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from .candidates import CandidateError, CandidateTable, read_candidates
    from .precision import cast_scores, cast_table
    from .trec import read_trec

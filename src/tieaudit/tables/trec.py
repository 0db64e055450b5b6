"""TREC run and qrels files as a candidates table, so every tie rule applies to a TREC run.

Formats (fields separated by ASCII whitespace, C's ``isspace`` as in trec_eval, so a no-break or
ideographic space is part of a field; blank lines and lines starting with ``#`` are skipped, as
trec_eval's reader skips them):

* run: ``qid Q0 docno rank score tag``. The rank, the tag and any further field are ignored;
  the run's *line order* is the stored order that ``input_order`` keeps among equal scores.
  The score is an ASCII number (:mod:`tieaudit.common.numbers`); ``inf`` and ``-inf`` are scores
  (equal infinities tie), ``nan`` is an error.
* qrels: ``qid iteration docno rel``, ``rel`` a whole number. A document is relevant when
  ``rel > 0`` (trec_eval's default relevance level 1); ``rel <= 0`` (non-relevant, or -1 for
  judged-unjudged) is not.

Each query of the run becomes a row (``row`` and ``user_id`` the qid, ``item_id`` the docno,
``score`` the run's score, ``label`` the document's ``rel`` when it is relevant, else 0) with
``n_relevant`` set to the query's number of relevant documents in the qrels, so relevant
documents the run did not retrieve count in ``Recall@k`` and in the ideal DCG of ``nDCG@k``, as
in trec_eval. Graded qrels (a ``rel`` above 1) keep their grades: nDCG's gain is the ``rel`` of a
document, and its ideal DCG is made of the ``rel`` of every relevant document of the query, those
the run did not retrieve too (:class:`tieaudit.tables.read.Grades`), as in trec_eval's
``ndcg_cut``. A query that retrieved none of its relevant documents stays in (every measure 0).

How trec_eval orders ties
    trec_eval ignores the rank column and sorts each query's documents by score descending,
    breaking ties by docno *descending*: ``comp_sim_docno`` in ``form_res_rels.c``
    (usnistgov/trec_eval) returns ``strcmp(p2->docno, p1->docno)`` after comparing ``sim``
    ("Sort results by sim, breaking ties lexicographically using docno"); ``get_trec_results.c``
    notes that "the rank field is ignored here; internally ranks will be assigned by sorting by
    the sim field with ties broken determinstically (using docno)". The rule ``docno_desc``
    (item id descending, byte order of UTF-8 = code-point order, as ``strcmp``) reproduces that
    ranking; ``expected`` beside it shows what the run is worth without the docno tie-break.
    With binary qrels, trec_eval's ``P_k`` (``m_P.c``: relevant in the top k / k),
    ``recall_k`` (``m_recall.c``: relevant in the top k / relevant in the qrels) and
    ``ndcg_cut_k`` (``m_ndcg_cut.c``: gain / ``log2(rank + 1)``, "i+2 since doc i has rank i+1",
    the ideal DCG over the qrels' relevant documents) are ``P@k``, ``Recall@k`` and ``nDCG@k``
    under ``docno_desc``, and ``recip_rank`` is ``MRR@k`` for ``k`` at least the run's depth.
    trec_eval's nDCG uses the qrels' relevance values as gains, and so does ``nDCG@k`` here with
    graded qrels. Older trec_eval releases discounted rank ``r >= 2`` by ``log2(r)`` in
    ``ndcg_cut``.

Queries that are skipped
    trec_eval evaluates the queries that are in the run and in the qrels ("Queries for which
    there is no relevance information are ignored completely", ``trec_eval.c``). A row here needs
    a relevant item, so queries of the run without any relevant document in the qrels are
    skipped: those absent from the qrels (trec_eval skips them too) and those judged with no
    relevant document (trec_eval keeps them with every measure 0, so its mean is this mean times
    ``W / (W + b)`` for ``W`` evaluated and ``b`` such queries). Queries of the qrels missing from
    the run are ignored, like trec_eval without ``-c``. :meth:`TrecInput.message` counts each
    kind.

Duplicate documents for a query, in the run or in the qrels, are errors, as in trec_eval.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..common.files import input_problem, is_gzip
from ..common.numbers import INEXACT, inexact_integer, number_text
from .candidates import CandidateError, CandidateTable
from .read import validate_arrow

__all__ = [
    "TrecError", "TrecInput", "TrecRecords", "read_run", "read_qrels", "read_trec", "trec_input",
]  # fmt: skip


class TrecError(CandidateError):
    """A run or qrels file that cannot be read; the message names the file and the line."""


#: A field: a run of characters other than ASCII whitespace (C's ``isspace``, which trec_eval
#: splits on). ``str.split()`` would also split on NBSP, U+0085, U+3000, ..., inside a docno.
_FIELD = re.compile(r"[^ \t\n\r\f\v]+")


def _lines(path: str | os.PathLike[str], n_fields: int, layout: str):
    """(line number, fields) of every content line, checking the field count."""
    p = Path(path)
    problem = input_problem(p)
    if problem is not None:
        raise TrecError(f"{path}: {problem}")
    opener = gzip.open if is_gzip(p) else open
    try:
        with opener(p, "rt", encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                fields = _FIELD.findall(line)
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) < n_fields:
                    raise TrecError(
                        f"{path}: line {number}: expected {n_fields} fields ({layout}), "
                        f"got {len(fields)}"
                    )
                yield number, fields
    except UnicodeDecodeError as exc:
        raise TrecError(f"{path}: not UTF-8 text: {exc}") from None


@dataclass(frozen=True, eq=False)
class TrecRecords:
    """The content lines of a run or qrels file, as parallel arrays."""

    qid: np.ndarray  # object (str)
    docno: np.ndarray  # object (str)
    value: np.ndarray  # float64: score (run) or rel (qrels)
    line: np.ndarray  # int64 file line numbers


def _read(path: str | os.PathLike[str], kind: str) -> TrecRecords:
    run = kind == "run"
    n_fields, layout = (6, "qid Q0 docno rank score tag") if run else (4, "qid iter docno rel")
    at = 4 if run else 3
    qid, docno, text, line = [], [], [], []
    for number, fields in _lines(path, n_fields, layout):
        qid.append(fields[0])
        docno.append(fields[2])
        text.append(fields[at])
        line.append(number)
    if not line:
        raise TrecError(f"{path}: no {kind} lines")
    what = "score" if run else "rel"
    clean, refused = number_text(pa.array(text, pa.string()))
    if len(refused):
        j = int(refused[0])
        raise TrecError(f"{path}: line {line[j]}: {what} {text[j]!r} is not a number")
    lost = inexact_integer(clean)
    if lost is not None:
        raise TrecError(f"{path}: line {line[lost[0]]}: {what} {lost[1]} {INEXACT}")
    value = pc.cast(clean, pa.float64()).to_numpy(zero_copy_only=False)
    if not run:
        whole = np.flatnonzero(~np.isfinite(value) | (value != np.floor(value)))
        if len(whole):
            j = int(whole[0])
            raise TrecError(f"{path}: line {line[j]}: rel {text[j]!r} is not a whole number")
    records = TrecRecords(
        np.asarray(qid, dtype=object), np.asarray(docno, dtype=object), value,
        np.asarray(line, dtype=np.int64),
    )  # fmt: skip
    twice = _first_repeat(records.qid, records.docno)
    if twice is not None:
        a, b = records.line[list(twice)]
        q, d = records.qid[twice[1]], records.docno[twice[1]]
        twice_what = "docno" if run else "judgement of docno"
        raise TrecError(f"{path}: lines {a} and {b}: duplicate {twice_what} {d!r} for query {q!r}")
    return records


def _first_repeat(qid: np.ndarray, docno: np.ndarray) -> tuple[int, int] | None:
    """The first record repeating an earlier (qid, docno), with that earlier one; ids compared
    exactly (a trailing NUL counts)."""
    q_code = pd.factorize(qid)[0].astype(np.int64)
    d_code, d_uniques = pd.factorize(docno)
    key = q_code * np.int64(len(d_uniques)) + d_code
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    repeats = np.flatnonzero(sorted_key[1:] == sorted_key[:-1]) + 1
    if not len(repeats):
        return None
    at = repeats[np.argmin(order[repeats])]  # the repeat earliest in the file
    first = order[np.searchsorted(sorted_key, sorted_key[at])]  # its key's first occurrence
    return int(first), int(order[at])


def read_run(path: str | os.PathLike[str]) -> TrecRecords:
    """The lines of a run file: ``qid``, ``docno``, ``value`` (the score) and ``line``."""
    return _read(path, "run")


def read_qrels(path: str | os.PathLike[str]) -> TrecRecords:
    """The lines of a qrels file: ``qid``, ``docno``, ``value`` (the rel) and ``line``."""
    return _read(path, "qrels")


@dataclass(frozen=True, eq=False)
class TrecInput:
    """A run and its qrels as a candidates table, with what was skipped (see module docstring)."""

    table: CandidateTable
    run: str
    qrels: str
    n_run_queries: int
    not_in_qrels: tuple[str, ...]
    no_relevant: tuple[str, ...]
    not_in_run: tuple[str, ...]

    def message(self) -> str:
        """One line for the user: how many queries are evaluated and why others are not."""
        w = self.table.n_rows
        text = f"{self.run}: evaluating {w} of {self.n_run_queries} queries"
        skipped = []
        if self.not_in_qrels:
            skipped.append(f"{len(self.not_in_qrels)} not in the qrels (trec_eval skips these too)")
        if self.no_relevant:
            b = len(self.no_relevant)
            skipped.append(
                f"{b} without a relevant document in the qrels (trec_eval keeps these with every "
                f"measure 0: its mean = this mean x {w}/{w + b})"
            )
        if skipped:
            text += "; skipped " + " and ".join(skipped)
        if self.not_in_run:
            n = len(self.not_in_run)
            text += (
                f"; {n} {'query' if n == 1 else 'queries'} of the qrels with relevant documents "
                f"{'is' if n == 1 else 'are'} not in the run (ignored, as by trec_eval without -c)"
            )
        return text + "."


def read_trec(run: str | os.PathLike[str], qrels: str | os.PathLike[str]) -> TrecInput:
    """Read a TREC run and its qrels into a :class:`TrecInput` (see the module docstring).

    Errors (a :class:`TrecError`) name the file and line: a missing file, a line with too few
    fields, a score or rel that is no number, a duplicate document for a query in the run or in
    the qrels, or a run none of whose queries has a relevant document in the qrels.
    """
    return trec_input(read_run(run), read_qrels(qrels), str(run), str(qrels))


def trec_input(res: TrecRecords, rel: TrecRecords, run: str, qrels: str) -> TrecInput:
    """The :class:`TrecInput` of a run's records ``res`` and its qrels' records ``rel``, read
    from files or given as arrays (``tieaudit.ir_measures``), ``run`` and ``qrels`` naming them
    in errors (which name ``res.line``); see :func:`read_trec`."""
    relevant = rel.value > 0
    judged = set(rel.qid.tolist())
    n_rel: dict[str, int] = {}
    for q in rel.qid[relevant].tolist():
        n_rel[q] = n_rel.get(q, 0) + 1
    run_qids = list(dict.fromkeys(res.qid.tolist()))  # first-appearance order
    not_in_qrels = tuple(q for q in run_qids if q not in judged)
    no_relevant = tuple(q for q in run_qids if q in judged and q not in n_rel)
    keep_q = {q for q in run_qids if q in n_rel}
    if not keep_q:
        raise TrecError(f"{run}: no query of the run has a relevant document in {qrels}")
    in_run = set(run_qids)
    not_in_run = tuple(sorted(q for q in n_rel if q not in in_run))

    keep = np.fromiter((q in keep_q for q in res.qid.tolist()), dtype=bool, count=len(res.qid))
    qid, docno = res.qid[keep], res.docno[keep]
    grade = dict(zip(zip(rel.qid[relevant].tolist(), rel.docno[relevant].tolist(), strict=True),
                     rel.value[relevant].tolist(), strict=True))  # fmt: skip
    retrieved = set(zip(qid.tolist(), docno.tolist(), strict=True))
    graded = any(v != 1.0 for v in grade.values())
    label = np.fromiter(
        (grade.get((q, d), 0.0) for q, d in zip(qid.tolist(), docno.tolist(), strict=True)),
        dtype=np.float64 if graded else np.int8, count=len(qid),
    )  # fmt: skip
    # the grades of relevant documents not retrieved: the ideal DCG counts them
    unstored = [(q, v) for (q, d), v in grade.items() if q in keep_q and (q, d) not in retrieved]
    lines = res.line[keep]
    table = pa.table(
        {
            "row": pa.array(qid.tolist(), pa.string()),
            "user_id": pa.array(qid.tolist(), pa.string()),
            "item_id": pa.array(docno.tolist(), pa.string()),
            "label": label,
            "score": res.value[keep],
            "n_relevant": np.fromiter((n_rel[q] for q in qid.tolist()), np.int64, len(qid)),
        }
    )
    try:
        cands = CandidateTable(**validate_arrow(
            table, str(run), lambda pos: lines[np.asarray(pos)].tolist(),
            unstored=(np.array([q for q, _ in unstored], dtype=object),
                      np.array([v for _, v in unstored], dtype=np.float64)) if graded else None,
        ))  # fmt: skip
    except TrecError:
        raise
    except CandidateError as exc:  # in TREC words: checked above; this names run lines anyway
        raise TrecError(str(exc)) from None
    return TrecInput(cands, str(run), str(qrels), len(run_qids), not_in_qrels, no_relevant,
                     not_in_run)  # fmt: skip

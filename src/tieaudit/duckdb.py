"""Evaluate candidates files in DuckDB: the exact tie rules as one SQL query, memory bounded by
DuckDB's own limit.

``tieaudit evaluate FILE|DIR|GLOB --engine duckdb`` (or :func:`evaluate`) reads the same files
as the default engine (CSV, TSV, Parquet, gzip; folders and globs with the same rules: files in
name order, hidden and ``_`` folders skipped, hive ``key=value`` folders as columns) and gives
the same summary for the rules SQL computes (:data:`tieaudit.evaluation.sql.SQL_RULES`); the
others (``hash``, ``hash_mean``, ``random``) are refused by name. The stored order that
``input_order`` keeps is the files' line order. The table is checked as the default engine
checks it (one user a row, no item twice in a row, labels, a relevant item in every row,
scores that are numbers), each problem named by file and line.

DuckDB is an optional extra: ``pip install 'tieaudit[duckdb]'``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .evaluation.sql import (
    DUCKDB,
    POSITION_RULES,
    SQL_RULES,
    evaluation_sql,
    sql_rules,
    sums_of,
)
from .tables.candidates import COUNT_COLUMNS, REQUIRED_COLUMNS, CandidateError
from .tables.inputs import PathInput, hive_columns
from .ties.measures import DEFAULT_MEASURES, parse_measures
from .ties.rules import DEFAULT_RULES

__all__ = ["evaluate", "sql", "DEFAULT_SQL_RULES"]

#: The default rules in SQL: the default engine's, less those SQL does not compute.
DEFAULT_SQL_RULES = tuple(r for r in DEFAULT_RULES if r.kind in SQL_RULES)

_TYPES = {"row": "VARCHAR", "user_id": "VARCHAR", "item_id": "VARCHAR", "label": "DOUBLE",
          "score": "DOUBLE", "n_relevant": "BIGINT", "n_higher": "BIGINT", "n_lower": "BIGINT"}  # fmt: skip


#: A line's place in the stored order: its file's index (name order), then its line in the file.
_FILE = 2**32
_PLACE = f"file_ * {_FILE} + line_"


def _connect(memory: int | None, threads: int | None, spill: str | None = None) -> Any:
    try:
        import duckdb
    except ImportError:
        raise ImportError("the DuckDB engine needs duckdb: pip install 'tieaudit[duckdb]'") from None
    con = duckdb.connect(":memory:")
    con.execute("SET preserve_insertion_order = true")
    if memory is not None:
        con.execute(f"SET memory_limit = '{max(int(memory) // 2**20, 64)}MiB'")
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    if spill is not None:  # DuckDB's default is .tmp in the working folder
        con.execute(f"SET temp_directory = {_quote(spill)}")
    return con


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _kind(path: Path) -> str:
    name = path.name.lower()
    for end, kind in ((".parquet", "parquet"), (".pq", "parquet"), (".csv", "csv"),
                      (".csv.gz", "csv"), (".tsv", "tsv"), (".tsv.gz", "tsv")):  # fmt: skip
        if name.endswith(end):
            return kind
    raise CandidateError(f"{path}: not a candidates file (.csv, .tsv, .parquet, .pq, optionally "
                         ".gz for text)")  # fmt: skip


def _columns(con: Any, path: Path, kind: str) -> list[str]:
    if kind == "parquet":
        rel = con.sql(f"SELECT * FROM read_parquet({_quote(str(path))}, "
                      "hive_partitioning = false) LIMIT 0")
    else:
        sep = "\t" if kind == "tsv" else ","
        rel = con.sql(f"SELECT * FROM read_csv({_quote(str(path))}, header = true, "
                      f"delim = {_quote(sep)}, all_varchar = true, hive_partitioning = false) "
                      "LIMIT 0")  # fmt: skip
    return list(rel.columns)


def _load(con: Any, data: str | os.PathLike[str]) -> tuple[list[str], list[str]]:
    """Reads ``data`` into the table ``lines_`` (the columns read, ``file_`` and ``line_``: the
    file's index and the line's place in it, 0-based), in name order; its files' names and the
    optional columns found."""
    given = PathInput.of(str(data))
    if not given.files:
        raise CandidateError(f"{data}: no candidates files (.parquet, .pq, .csv, .tsv, gzip) found")
    names = [str(f) for f, _ in given.files]
    optional: set[str] = set()
    selects = []
    for i, (f, root) in enumerate(given.files):
        if not f.exists():
            raise CandidateError(f"{f}: no such file")
        kind = _kind(f)
        cols = _columns(con, f, kind)
        hive = hive_columns(f, root) if root is not None else {}
        have = set(cols) | set(hive)
        missing = [c for c in REQUIRED_COLUMNS if c not in have and c != "row"]
        if missing:
            raise CandidateError(f"{f}: missing column(s) {', '.join(missing)}; found "
                                 f"{', '.join(cols)}; a candidates table needs "
                                 f"{', '.join(REQUIRED_COLUMNS)}")  # fmt: skip
        if "n_tied" in have:
            raise CandidateError(f"{f}: a summary table (n_tied): evaluate it with the default "
                                 "engine (one line a row is small)")  # fmt: skip
        optional |= {c for c in COUNT_COLUMNS if c in have}
        parts = []
        for c in (*REQUIRED_COLUMNS, *COUNT_COLUMNS):
            if c == "row" and c not in have:  # no row column: each user is one row
                parts.append(f"CAST({_quote_id('user_id')} AS VARCHAR) AS row, "
                             f"CAST({_quote_id('user_id')} AS VARCHAR) AS raw_row")  # fmt: skip
                continue
            if c == "label" and c in cols:  # True/False as text too, as the default engine reads
                text = f"lower(trim(CAST({_quote_id(c)} AS VARCHAR)))"
                parts.append(f"CASE {text} WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0 ELSE "
                             f"TRY_CAST({_quote_id(c)} AS DOUBLE) END AS label, "
                             f"{_quote_id(c)} AS raw_label")  # fmt: skip
                continue
            if c in hive and c not in cols:  # a file's own column wins, as the default engine reads
                v = hive[c]
                text = "NULL" if v is None else _quote(v)
                parts.append(f"CAST({text} AS {_TYPES[c]}) AS {c}, CAST({text} AS VARCHAR) "
                             f"AS raw_{c}")  # fmt: skip
            elif c in cols:
                parts.append(f"TRY_CAST({_quote_id(c)} AS {_TYPES[c]}) AS {c}, "
                             f"{_quote_id(c)} AS raw_{c}")  # fmt: skip
        if kind == "parquet":
            src = (f"read_parquet({_quote(str(f))}, file_row_number = true, "
                   "hive_partitioning = false)")
            line = "file_row_number"
        else:
            sep = "\t" if kind == "tsv" else ","
            src = (f"read_csv({_quote(str(f))}, header = true, delim = {_quote(sep)}, "
                   "all_varchar = true, parallel = false, hive_partitioning = false)")  # fmt: skip
            line = "ROW_NUMBER() OVER () - 1"
        selects.append(f"SELECT {i} AS file_, {line} AS line_, {', '.join(parts)} FROM {src}")
    con.execute("CREATE TEMP TABLE lines_ AS " + "\nUNION ALL BY NAME\n".join(selects))
    return names, sorted(optional)


def _quote_id(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _where(names: list[str], file_: int, line: int, parquet: bool) -> str:
    f = names[file_]
    return f"{f} row {line + 1}" if parquet else f"{f} line {line + 2}"


def _check(con: Any, names: list[str], optional: list[str]) -> bool:
    """Every line and row as the default engine requires; the first problem, named by file and
    line, as a :class:`CandidateError`."""
    kinds = [_kind(Path(n)) for n in names]
    source = names[0] if len(names) == 1 else "the files"  # what a row's problem names

    def first(cond: str, what: str, cols: str = "") -> None:
        hit = con.sql(f"SELECT file_, line_{cols} FROM lines_ WHERE {cond} "
                      "ORDER BY file_, line_ LIMIT 1").fetchall()  # fmt: skip
        if hit:
            f, line, *rest = hit[0]
            shown = what.format(*rest)
            raise CandidateError(f"{_where(names, f, int(line), kinds[f] == 'parquet')}: {shown}")

    for c in REQUIRED_COLUMNS:
        first(f"raw_{c} IS NULL", f"empty {c}")
    for c in ("label", "score", *optional):
        first(f"{c} IS NULL AND raw_{c} IS NOT NULL", f"{c} {{0!r}} is not a number",
              f", CAST(raw_{c} AS VARCHAR)")  # fmt: skip
    first("isnan(score)", "score is NaN")
    first("label < 0 OR isinf(label) OR isnan(label)", "label {0!r} is not 0, 1 or a grade (a "
          "finite number >= 0)", ", CAST(raw_label AS VARCHAR)")  # fmt: skip
    graded = bool(con.sql("SELECT COUNT(*) FROM lines_ WHERE label <> 0 AND label <> 1"
                          ).fetchall()[0][0])  # fmt: skip
    for c in optional:
        first(f"{c} < 0", f"{c} {{0}} is negative", f", {c}")
    dup = con.sql(f"SELECT row, item_id, MIN({_PLACE}) AS a, "
                  f"MAX({_PLACE}) AS b FROM lines_ GROUP BY row, item_id "
                  "HAVING COUNT(*) > 1 ORDER BY a LIMIT 1").fetchall()  # fmt: skip
    if dup:
        row, item, _, b = dup[0]
        f, line = divmod(int(b), _FILE)
        raise CandidateError(f"{_where(names, f, line, kinds[f] == 'parquet')}: item {item!r} "
                             f"appears twice in row {row!r}")  # fmt: skip
    for c in ("user_id", *optional):
        bad = con.sql(f"SELECT row FROM lines_ GROUP BY row HAVING COUNT(DISTINCT {c}) > 1 "
                      f"ORDER BY MIN({_PLACE}) LIMIT 1").fetchall()  # fmt: skip
        if bad:
            raise CandidateError(f"{source}: row "
                                 f"{bad[0][0]!r} has more than one {c}; it is constant within a "
                                 "row")  # fmt: skip
    need = "MAX(n_relevant)" if "n_relevant" in optional else "0"
    bad = con.sql(f"SELECT row, SUM(CASE WHEN label > 0 THEN 1 ELSE 0 END) AS r, {need} AS n "
                  "FROM lines_ GROUP BY row HAVING (r = 0 AND n = 0) OR (n > 0 AND n < r) "
                  f"ORDER BY MIN({_PLACE}) LIMIT 1").fetchall()  # fmt: skip
    if bad:
        row, r, n = bad[0]
        what = ("has no relevant item (a row needs a relevant line, or n_relevant >= 1)" if r == 0
                else f"has {r} relevant lines but n_relevant {n}")  # fmt: skip
        raise CandidateError(f"{source}: row {row!r} {what}")
    if graded and "n_relevant" in optional:
        bad = con.sql("SELECT row FROM lines_ GROUP BY row HAVING MAX(n_relevant) > SUM(CASE WHEN "
                      f"label > 0 THEN 1 ELSE 0 END) ORDER BY MIN({_PLACE}) "
                      "LIMIT 1").fetchall()  # fmt: skip
        if bad:
            raise CandidateError(
                f"{source}: row {bad[0][0]!r}: n_relevant "
                "above its relevant lines and graded labels: the grades of relevant items not "
                "stored are not known, nor is the ideal DCG: store every relevant item, or give "
                "labels 0 and 1")  # fmt: skip
    return graded


def sql(
    measures: Sequence[str] = DEFAULT_MEASURES, rules: Sequence[str] = DEFAULT_SQL_RULES, *,
    longest: int = 1000, has_position: bool = True, graded: bool = False,
) -> str:  # fmt: skip
    """The query :func:`evaluate` runs, for reading or for another engine: it reads a relation
    ``cand(row, item_id, label, score[, pos])`` (:mod:`tieaudit.evaluation.sql`)."""
    return evaluation_sql(measures, rules, longest=longest, dialect=DUCKDB,
                          has_position=has_position, graded=graded)  # fmt: skip


def evaluate(
    data: str | os.PathLike[str], measures: Sequence[str] = DEFAULT_MEASURES,
    rules: Sequence[str] | None = None, *, memory: int | None = None,
    threads: int | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The summary of :meth:`tieaudit.Evaluation.summary` for the candidates at ``data`` (a
    file, folder or glob), computed in DuckDB. ``rules`` default to :data:`DEFAULT_SQL_RULES`;
    ``memory`` (bytes) is DuckDB's memory limit (beyond it, DuckDB spills to a temporary folder,
    removed at the end). Labels are 0 and 1 (or ``True``/``False``), or grades (numbers ``>= 0``:
    nDCG's gain is the label, its ideal DCG from the row's own labels; the others read label >
    0), as the default engine reads them; without a ``row`` column each user is one row."""
    ms = parse_measures(measures)
    rs = sql_rules(DEFAULT_SQL_RULES if rules is None else rules, has_position=True)
    spill = tempfile.mkdtemp(prefix="tieaudit-duckdb-")
    con = _connect(memory, threads, spill)
    try:
        names, optional = _load(con, data)
        if con.sql("SELECT COUNT(*) FROM lines_").fetchall()[0][0] == 0:
            raise CandidateError(f"{data}: no candidate lines")
        graded = _check(con, names, optional)
        pos = any(r.kind in POSITION_RULES for r in rs)
        extra = ", ".join(c for c in ("n_relevant", "n_higher") if c in optional)
        con.execute(
            "CREATE TEMP VIEW cand AS SELECT row, item_id, label, score"
            + (f", {_PLACE} AS pos" if pos else "")
            + (f", {extra}" if extra else "") + " FROM lines_")  # fmt: skip
        # places a prefix table needs: the longest row, or the most relevant items of a row
        longest = con.sql("SELECT MAX(GREATEST(n, r)) FROM (SELECT COUNT(*) + "
                          + ("MAX(n_higher)" if "n_higher" in optional else "0") + " AS n, "
                          + ("MAX(n_relevant)" if "n_relevant" in optional else "0")
                          + " AS r FROM cand GROUP BY row) l_").fetchall()[0][0]  # fmt: skip
        query = evaluation_sql(ms, rs, longest=int(longest), dialect=DUCKDB, has_position=pos,
                               n_relevant="n_relevant" in optional,
                               n_higher="n_higher" in optional, graded=graded)  # fmt: skip
        record = dict(zip(*_one(con.sql(query)), strict=True))
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    return sums_of(record, ms, rs).summary()


def _one(rel: Any) -> tuple[list[str], tuple]:
    """A one-line relation's column names and its line."""
    return rel.columns, rel.fetchall()[0]

"""The exact tie rules as SQL: one query that any engine with window functions runs.

Every exact rule is a sum over rows, and a row's tie structure is a few counts, so a SQL engine
can evaluate a candidates table where it lives (:mod:`tieaudit.duckdb`, :mod:`tieaudit.spark`).
:func:`evaluation_sql` writes one ``SELECT`` over a relation of candidate lines with the columns

``row``, ``item_id`` (text), ``label``, ``score`` (doubles) and, when asked for, ``pos``
    (the line's place in the stored order, for ``input_order`` and ``reversed_input``),
    ``n_relevant`` and ``n_higher`` (per-row counts, as in :mod:`tieaudit.tables.candidates`).

The query returns one line: ``n``, the number of rows, and per rule and measure the sums
:class:`tieaudit.evaluation.sums.Moments` keeps (``total``, ``m2``; for ``expected`` also
``var_total``, ``low_total``, ``high_total``), in columns named ``WHAT__RULE__MEASURE``
(:func:`sum_column`: ``total__expected__nDCG_10``). :func:`sums_of` turns them into the same
summary as :func:`tieaudit.evaluate`; by hand, the mean is ``total / n``, its standard error
``sqrt(m2 / (n - 1)) / sqrt(n)``, and under ``expected`` the sd of the mean over tie orders
``sqrt(var_total) / n``. Every per-row value is computed once (the CTE ``per_row``) and summed
in one pass, so engines that do not materialise a CTE read it once too.

How each rule is written
------------------------
Each row's candidates are grouped by score into tie groups ``(g, t, r)``: ``g`` candidates
above (``n_higher`` included), ``t`` members, ``r`` of them relevant. An ordered rule ranks a
relevant line ``g + 1 + b``, where ``b`` counts the members of its group the rule puts first:
stored before it (``input_order``; after it for ``reversed_input``), with a smaller item id
(``item_id``; larger for ``docno_desc``: ids compare as text, byte by byte, which is code-point
order for UTF-8), relevant with a larger gain (``optimistic``) or with a smaller one, the
non-relevant ones included (``pessimistic``), equal gains by item id. The counts come from one
join of the relevant lines with their groups' members, so no row is sorted. A measure of the
row is then a sum or a maximum over its relevant lines, as in :mod:`tieaudit.ties.measures`.

``expected`` reads the groups alone (their gains summing to ``a1`` and their squares to
``a2``). For nDCG, Recall and P, each member's expected discount is the mean of the
group's places' discounts, read from prefix sums of the discount over places, so the mean is
``a1 * mu`` and the variance ``(a2 - a1**2 / t) * t * s2 / (t - 1)`` (a sample of the group's
places drawn without replacement; with binary gains ``r (t - r) / (t - 1) * s2``). For HR and
MRR only the first group holding a relevant item counts: with one relevant item its rank is
uniform on the group's places; with ``r > 1`` the first relevant item takes place ``j`` with
probability ``C(t - j, r - 1) / C(t, r)``, a running product over ``j`` written as a running sum
of logarithms (:mod:`tieaudit.ties.rules.expected` has the formulas). Sums of logarithms and
engine-side sums round differently from numpy's: results agree with the default engine to
about ``1e-12``, relative.

Not in SQL: ``hash:SEED`` and ``hash_mean`` (the project's 64-bit hash of the ids),
``random:SEED`` (a permutation of the stored positions), and the other rule kinds; they are
refused by name (:func:`sql_rules`). The default engine computes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..ties.measures import Measure, parse_measures
from ..ties.rules import TieRule, parse_rules
from .sums import Moments, Sums

__all__ = ["SQL_RULES", "POSITION_RULES", "Dialect", "DUCKDB", "SPARK", "sql_rules",
           "evaluation_sql", "sums_of", "sum_column"]  # fmt: skip

#: The ordered rule kinds written in SQL: when a tie-group member ``m`` comes before the relevant
#: line ``x``.
_BEFORE = {
    "input_order": "m.pos < x.pos",
    "reversed_input": "m.pos > x.pos",
    "optimistic": "m.label > x.label OR (m.label = x.label AND m.item_id < x.item_id)",
    "pessimistic": "m.label < x.label OR (m.label = x.label AND m.item_id < x.item_id)",
    "item_id": "m.item_id < x.item_id",
    "docno_desc": "m.item_id > x.item_id",
}
#: The rule kinds SQL computes: the ordered ones, then ``expected``.
SQL_RULES = (*_BEFORE, "expected")
#: The rules that read the stored order (a ``pos`` column).
POSITION_RULES = ("input_order", "reversed_input")


@dataclass(frozen=True)
class Dialect:
    """What differs between engines: a relation of the whole numbers ``0 .. n`` as column
    ``p``."""

    name: str

    def numbers(self, n: int) -> str:
        if self.name == "spark":
            return f"(SELECT id AS p FROM range(0, {n + 1}))"
        return f"(SELECT range AS p FROM range(0, {n + 1}))"


#: DuckDB's dialect (``range(0, n + 1)`` gives the column ``range``).
DUCKDB = Dialect("duckdb")
#: Spark SQL's dialect (``range(0, n + 1)`` gives the column ``id``).
SPARK = Dialect("spark")


def sql_rules(rules: Sequence[TieRule | str], *, has_position: bool) -> list[TieRule]:
    """The rules parsed, each one SQL computes; a :class:`ValueError` naming any other, or a
    stored-order rule without a stored order."""
    parsed = parse_rules(rules)
    other = [str(r) for r in parsed if r.kind not in SQL_RULES]
    if other:
        raise ValueError(
            f"tie rule{'s' if len(other) > 1 else ''} {', '.join(other)} cannot be computed in "
            f"SQL (only {', '.join(SQL_RULES)}); use the default engine for "
            f"{'them' if len(other) > 1 else 'it'}"
        )
    stored = [str(r) for r in parsed if r.kind in POSITION_RULES]
    if stored and not has_position:
        raise ValueError(
            f"{', '.join(stored)} need{'s' if len(stored) == 1 else ''} the stored order of the "
            "lines, and this table has none: give a position column"
        )
    return parsed


def _lit(x: float) -> str:
    """A float64 as an exact SQL double literal."""
    return f"CAST({float(x)!r} AS DOUBLE)"


class _Query:
    """Builds the query: named CTEs, and per rule and measure a per-row value column."""

    def __init__(self, measures: list[Measure], rules: list[TieRule], longest: int,
                 dialect: Dialect, n_relevant: bool, n_higher: bool, graded: bool) -> None:  # fmt: skip
        self.measures, self.rules, self.dialect = measures, rules, dialect
        self.graded, self.n_relevant, self.n_higher = graded, n_relevant, n_higher
        self.longest = max(int(longest), 1)
        self.ctes: list[tuple[str, str]] = []
        self.kinds = {r.kind for r in rules}
        if "expected" in self.kinds:  # its bounds are the optimistic and pessimistic means
            self.kinds |= {"optimistic", "pessimistic"}
        self.ordered = [k for k in _BEFORE if k in self.kinds]
        self.ndcg = any(m.name == "nDCG" for m in measures)

    def cap(self, k: int) -> int:
        """A cutoff beyond the longest row counts as the longest row (no rank is past it)."""
        return min(k, self.longest)

    def build(self) -> str:
        nrel = "MAX(n_relevant)" if self.n_relevant else "SUM(CASE WHEN label > 0 THEN 1 ELSE 0 END)"
        self.ctes.append(("rows_", f"SELECT row, {nrel} AS n_rel FROM cand GROUP BY row"))
        self._prefix_table()
        joins: list[str] = []
        if self.ndcg:
            self._ideal()
            joins.append("LEFT JOIN ideal_ ON ideal_.row = rows_.row")
        cols: list[str] = []
        self._groups()
        if self.ordered:
            self._ranks()
            cols += self._ordered_columns()
            joins.append("LEFT JOIN ord ON ord.row = rows_.row")
        if "expected" in self.kinds:
            cols += self._expected_columns(joins)
        self.ctes.append(("per_row", "SELECT rows_.row,\n    " + ",\n    ".join(cols)
                          + "\n  FROM rows_\n  " + "\n  ".join(joins)))  # fmt: skip
        head = "WITH " + ",\n".join(f"{name} AS (\n  {body}\n)" for name, body in self.ctes)
        sums = ",\n  ".join(self._aggregate(rule, m) for rule in self.rules for m in self.measures)
        return f"{head}\nSELECT COUNT(*) AS n,\n  {sums}\nFROM per_row"

    def _prefix_table(self) -> None:
        """``pre(p, c1, c2, h1, h2)``: sums over places ``1 .. p`` of the nDCG discount
        ``1 / log2(q + 1)`` and of MRR's ``1 / q``, and of their squares (``p = 0 ..`` the
        largest cutoff, capped at the longest row)."""
        top = max(self.cap(m.k) for m in self.measures)
        run = "OVER (ORDER BY p ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
        terms = {"c1": "1 / LOG2(p + 1)", "c2": "1 / (LOG2(p + 1) * LOG2(p + 1))",
                 "h1": "1.0 / p", "h2": "1.0 / (p * p)"}  # fmt: skip
        body = ",\n    ".join(f"SUM(CASE WHEN p = 0 THEN 0 ELSE {t} END) {run} AS {c}"
                              for c, t in terms.items())  # fmt: skip
        self.ctes.append(("pre", f"SELECT p,\n    {body}\n  FROM {self.dialect.numbers(top)} nums_"))

    def _ideal(self) -> None:
        """``ideal_(row, idcg_K)``: each row's ideal DCG at the nDCG cutoffs."""
        ks = sorted({self.cap(m.k) for m in self.measures if m.name == "nDCG"})
        if self.graded:  # the ideal order of the row's own labels
            terms = ", ".join(
                f"SUM(CASE WHEN ip <= {k} THEN label / LOG2(ip + 1) ELSE 0 END) AS idcg_{k}"
                for k in ks)  # fmt: skip
            self.ctes.append(("ideal_", (
                f"SELECT row, {terms}\n  FROM (SELECT row, label, ROW_NUMBER() OVER (PARTITION "
                "BY row ORDER BY label DESC) AS ip FROM cand WHERE label > 0) lab_\n  GROUP BY row")))
            return
        # binary: the first min(R, k) places
        terms = ", ".join(f"i_{k}.c1 AS idcg_{k}" for k in ks)
        joins = " ".join(f"LEFT JOIN pre i_{k} ON i_{k}.p = LEAST(rows_.n_rel, {k})" for k in ks)
        self.ctes.append(("ideal_", f"SELECT rows_.row, {terms}\n  FROM rows_ {joins}"))

    def _norm(self, m: Measure) -> str:
        if m.name == "nDCG":
            return f"ideal_.idcg_{self.cap(m.k)}"
        if m.name == "Recall":
            return "rows_.n_rel"
        if m.name == "P":
            return _lit(m.k)
        return "1.0"

    # --- ordered rules ------------------------------------------------------------------------
    def _ordered_columns(self) -> list[str]:
        terms, cols = [], []
        for k in self.ordered:
            rk = f"rk_{k}"
            for i, m in enumerate(self.measures):
                hit = f"{rk} <= {m.k}"
                if m.name == "nDCG":
                    t = f"SUM(CASE WHEN {hit} THEN label / LOG2({rk} + 1) ELSE 0 END)"
                elif m.name in ("Recall", "P"):
                    t = f"SUM(CASE WHEN {hit} THEN 1.0 ELSE 0 END)"
                elif m.name == "HR":
                    t = f"MAX(CASE WHEN {hit} THEN 1.0 ELSE 0 END)"
                else:  # MRR
                    t = f"MAX(CASE WHEN {hit} THEN 1.0 / {rk} ELSE 0 END)"
                terms.append(f"{t} AS s_{k}_{i}")
                cols.append(f"COALESCE(ord.s_{k}_{i} / {self._norm(m)}, 0) AS v_{k}_{i}")
        self.ctes.append(("ord", "SELECT row,\n    " + ",\n    ".join(terms)
                          + "\n  FROM ranked WHERE label > 0 GROUP BY row"))  # fmt: skip
        return cols

    # --- expected -----------------------------------------------------------------------------
    def _groups(self) -> None:
        """``grp``: each row's tie groups, ``g`` candidates above (``n_higher`` too), ``t``
        members, ``r`` of them relevant, their gains summing to ``a1`` and squares to ``a2``."""
        higher = "MAX(n_higher)" if self.n_higher else "0"
        self.ctes.append(("grp", (
            "SELECT row, score, t, r, a1, a2, nh + COALESCE(SUM(t) OVER (PARTITION BY row ORDER "
            "BY score DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS g\n"
            "  FROM (SELECT row, score, COUNT(*) AS t, SUM(CASE WHEN label > 0 THEN 1 ELSE 0 END) "
            f"AS r,\n    SUM(label) AS a1, SUM(label * label) AS a2, {higher} AS nh\n"
            "  FROM cand GROUP BY row, score) grp_")))  # fmt: skip

    def _ranks(self) -> None:
        """``ranked``: each relevant line's rank under each ordered rule, ``g + 1 + b`` with
        ``b`` the members of its tie group the rule puts first (counted in one join of the
        relevant lines with their groups' members: no sort of the rows)."""
        pos = ", x.pos" if any(k in self.ordered for k in ("input_order", "reversed_input")) else ""
        counts = ",\n    ".join(f"SUM(CASE WHEN {_BEFORE[k]} THEN 1 ELSE 0 END) AS b_{k}"
                                  for k in self.ordered)  # fmt: skip
        self.ctes.append(("tied_", (
            f"SELECT x.row, x.score, x.label,\n    {counts}\n  FROM (SELECT * FROM cand WHERE "
            "label > 0) x JOIN cand m ON m.row = x.row AND m.score = x.score\n"
            f"  GROUP BY x.row, x.score, x.label, x.item_id{pos}")))  # fmt: skip
        ranks = ", ".join(f"grp.g + 1 + b_{k} AS rk_{k}" for k in self.ordered)
        self.ctes.append(("ranked", f"SELECT tied_.row, tied_.label, {ranks}\n  FROM tied_ JOIN "
                          "grp ON grp.row = tied_.row AND grp.score = tied_.score"))  # fmt: skip

    def _expected_columns(self, joins: list[str]) -> list[str]:
        ks = sorted({self.cap(m.k) for m in self.measures})
        bounds = ", ".join(f"LEAST(g, {k}) AS lo_{k}, LEAST(g + t, {k}) AS hi_{k}" for k in ks)
        self.ctes.append(("rg", f"SELECT row, score, t, r, a1, a2, g, {bounds}\n  FROM grp "
                          "WHERE r > 0"))  # fmt: skip
        prefixed = sorted({self.cap(m.k) for m in self.measures if m.name in ("nDCG", "MRR")})
        pjoin = " ".join(f"LEFT JOIN pre lo{k}_ ON lo{k}_.p = lo_{k} "
                         f"LEFT JOIN pre hi{k}_ ON hi{k}_.p = hi_{k}" for k in prefixed)  # fmt: skip
        sums, firsts = [], []
        for i, m in enumerate(self.measures):
            k = self.cap(m.k)
            if m.kind != "sum":
                firsts.append((i, m, k))
                continue
            if m.name == "nDCG":
                mu = f"(hi{k}_.c1 - lo{k}_.c1) / t"
                sq = f"(hi{k}_.c2 - lo{k}_.c2) / t"
                a1, a2 = "a1", "a2"
            else:  # Recall, P: 1 on every place up to k
                mu = sq = f"CAST(hi_{k} - lo_{k} AS DOUBLE) / t"
                a1 = a2 = "r"
            sums.append(f"SUM({a1} * {mu}) AS e_{i}")
            sums.append(f"SUM(CASE WHEN t > 1 THEN ({a2} - {a1} * {a1} / t) * t * "
                        f"GREATEST({sq} - ({mu}) * ({mu}), 0) / (t - 1) ELSE 0 END) AS w_{i}")  # fmt: skip
        if sums:
            self.ctes.append(("esum", "SELECT row,\n    " + ",\n    ".join(sums)
                              + f"\n  FROM rg {pjoin}\n  GROUP BY row"))  # fmt: skip
            joins.append("LEFT JOIN esum ON esum.row = rows_.row")
        if firsts:
            self._first_groups(firsts, pjoin)
            joins.append("LEFT JOIN efirst ON efirst.row = rows_.row")
        cols = []
        for i, m in enumerate(self.measures):
            if m.kind == "sum":
                n = self._norm(m)
                cols.append(f"COALESCE(esum.e_{i} / {n}, 0) AS v_expected_{i}")
                cols.append(f"COALESCE(esum.w_{i} / ({n} * {n}), 0) AS var_expected_{i}")
            else:
                cols.append(f"COALESCE(efirst.e_{i}, 0) AS v_expected_{i}")
                cols.append(f"COALESCE(GREATEST(efirst.e2_{i} - efirst.e_{i} * efirst.e_{i}, 0), "
                            f"0) AS var_expected_{i}")  # fmt: skip
        return cols

    def _first_groups(self, firsts: list[tuple[int, Measure, int]], pjoin: str) -> None:
        """HR and MRR under ``expected``: only the row's first group with a relevant item."""
        self.ctes.append(("fg", (
            "SELECT * FROM (SELECT rg.*, ROW_NUMBER() OVER (PARTITION BY row ORDER BY score DESC) "
            "AS o_ FROM rg) f_ WHERE o_ = 1")))  # fmt: skip
        top = max(k for _, _, k in firsts)
        # r > 1: P(j) = (r / t) prod_{i=2}^{j} (t - r - i + 2) / (t - i + 1), j <= t - r + 1
        self.ctes.append(("fj", (
            "SELECT row, g, t, r, j, EXP(LN(CAST(r AS DOUBLE) / t) + SUM(CASE WHEN j >= 2 THEN "
            "LN(CAST(t - r - j + 2 AS DOUBLE) / (t - j + 1)) ELSE 0 END) OVER (PARTITION BY row "
            "ORDER BY j ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) AS prob\n"
            f"  FROM fg JOIN (SELECT p AS j FROM {self.dialect.numbers(top)} n_ WHERE p >= 1) "
            f"nums_ ON nums_.j <= LEAST({top} - g, t - r + 1)\n  WHERE r > 1")))  # fmt: skip
        one, many = [], []
        for i, m, k in firsts:
            if m.name == "HR":
                e = f"CAST(hi_{k} - lo_{k} AS DOUBLE) / t"
                one += [f"{e} AS e_{i}", f"{e} AS e2_{i}"]
                # 1 exactly when every place the first relevant item can take is inside k
                p = (f"CASE WHEN MAX(g + t - r + 1) <= {k} THEN 1.0 ELSE "
                     f"SUM(CASE WHEN g + j <= {k} THEN prob ELSE 0 END) END")
                many += [f"{p} AS e_{i}", f"{p} AS e2_{i}"]
            else:  # MRR
                one += [f"(hi{k}_.h1 - lo{k}_.h1) / t AS e_{i}",
                        f"(hi{k}_.h2 - lo{k}_.h2) / t AS e2_{i}"]  # fmt: skip
                many += [f"SUM(CASE WHEN g + j <= {k} THEN prob / (g + j) ELSE 0 END) AS e_{i}",
                         f"SUM(CASE WHEN g + j <= {k} THEN prob / ((g + j) * (g + j)) ELSE 0 "
                         f"END) AS e2_{i}"]  # fmt: skip
        self.ctes.append(("efirst", (
            "SELECT row, " + ", ".join(one) + f" FROM fg {pjoin} WHERE r = 1\n  UNION ALL\n  "
            "SELECT row, " + ", ".join(many) + " FROM fj GROUP BY row")))  # fmt: skip

    # --- the summary --------------------------------------------------------------------------
    def _aggregate(self, rule: TieRule, m: Measure) -> str:
        """The sums over rows of ``m`` under ``rule``: columns named by :func:`sum_column`."""
        i = self.measures.index(m)
        v = f"v_{rule.kind}_{i}"
        out = [f"SUM({v}) AS {sum_column(rule, m, 'total')}",
               f"VAR_POP({v}) * COUNT(*) AS {sum_column(rule, m, 'm2')}"]  # fmt: skip
        if rule.kind == "expected":
            out += [f"SUM(var_expected_{i}) AS {sum_column(rule, m, 'var_total')}",
                    f"SUM(v_pessimistic_{i}) AS {sum_column(rule, m, 'low_total')}",
                    f"SUM(v_optimistic_{i}) AS {sum_column(rule, m, 'high_total')}"]  # fmt: skip
        return ", ".join(out)


def sum_column(rule: TieRule | str, measure: Measure | str, what: str) -> str:
    """The query's column of one sum: ``what`` (``total``, ``m2``, ``var_total``, ``low_total``,
    ``high_total``) of ``measure`` under ``rule``, e.g. ``total__expected__nDCG_10``."""
    name = f"{what}__{rule}__{measure}"
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


def evaluation_sql(
    measures: Sequence[Measure | str], rules: Sequence[TieRule | str], *, longest: int,
    dialect: Dialect = DUCKDB, has_position: bool = False, n_relevant: bool = False,
    n_higher: bool = False, graded: bool = False,
) -> str:  # fmt: skip
    """The query evaluating the relation ``cand`` (see the module docstring) under ``rules``:
    register ``cand`` as a view, or put ``cand AS (...)`` first in its ``WITH``. ``longest`` is
    the longest row's length (with ``n_higher``), or the largest ``n_relevant`` when that is
    larger: prefix tables over places stop there, and larger cutoffs are taken at it;
    ``graded`` takes each row's ideal DCG from its own labels (binary: from its count of
    relevant items, ``n_relevant`` when given)."""
    ms = parse_measures(measures)
    rs = sql_rules(rules, has_position=has_position)
    if not ms or not rs:
        raise ValueError("nothing to evaluate: no measure or no rule")
    return _Query(ms, rs, longest, dialect, n_relevant, n_higher, graded).build()


def sums_of(record: dict, measures: Sequence[Measure | str],
            rules: Sequence[TieRule | str]) -> Sums:  # fmt: skip
    """The :class:`Sums` of the query's one line of output (a mapping of its columns)."""
    ms, rs = parse_measures(measures), parse_rules(rules)
    n = int(record["n"])

    def get(r: TieRule, m: Measure, what: str) -> float:
        x = record[sum_column(r, m, what)]
        return 0.0 if x is None or (what == "m2" and np.isnan(x)) else float(x)

    moments = {}
    for r in rs:
        for m in ms:
            extra = {}
            if r.kind == "expected":
                extra = {w: get(r, m, w) for w in ("var_total", "low_total", "high_total")}
            moments[(str(r), str(m))] = Moments(n, get(r, m, "total"), get(r, m, "m2"), **extra)
    return Sums(tuple(str(r) for r in rs), tuple(str(m) for m in ms), moments)

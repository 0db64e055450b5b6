"""The conformance check every tie rule kind passes (scikit-learn's ``check_estimator`` idea).

Users reach it as :func:`tieaudit.testing.check_tie_rule`. It runs the evaluator, the audit and
the full-catalogue reduction on a rule, so it sits above them (:mod:`tieaudit.layers`), not in the
:mod:`tieaudit.ties.rules` package those import.

:func:`check_tie_rule` runs a registered kind through the same battery as the built-ins and
raises an :class:`AssertionError` naming the check that failed:

``parse``
    the rule's name round-trips through :func:`tieaudit.ties.rules.parse_rule`.
``stored``
    on seeded random stored tables (tie-heavy, rows interleaved, one or two relevant items a
    row, multi-byte ids; whole numbers of one to three digits, some negative or zero-padded, for
    a kind that declares ``numeric_ids``), the ranks equal a brute-force sort of every row by score, then by the
    kind's pure-Python :meth:`~tieaudit.ties.rules.RuleKind.reference_key` (per seed for a kind drawn
    per seed); capped ranks are the exact ones capped. A distribution's values lie between those
    of its support rules, and its variances are not negative (0 for a point, which names no
    support).
``graded``
    on seeded random stored tables with graded labels (numbers >= 0, several relevant items in
    one tie group), each row's nDCG, Recall and HR equal those of a brute-force sort of the row
    by score, then by the kind's reference key (which sees the grade as the label: the bounds
    order a group by grade), with the grades as nDCG's gains; a distribution's values lie
    between those of its support rules.
``summary``
    a summary table of the same candidates (its ``before:`` counts made by brute force from the
    recorded kinds' reference keys) gives the stored table's ranks (distribution: its values),
    unless the kind declares ``summary_exact = False``; then its ranks stay inside the tie group.
    A kind that declares ``on_summary = False`` must refuse a summary table with a
    ``ValueError`` instead (this check and ``full``).
``full``
    a full-catalog reduction (:func:`tieaudit.analyses.fullcatalog.full_catalog_candidates`) gives the
    ranks of the materialised full table (same exception).
``invariance``
    :func:`tieaudit.analyses.audit.invariance` agrees with the kind's ``invariant`` on a tie-heavy table
    whose relevant items are stored first.
``seeds``
    a seeded kind (or one drawn per seed) ranks differently under different seeds.

Every table is drawn from explicit seeds, so a failure reproduces.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..analyses.audit import invariance
from ..evaluation.evaluate import evaluate
from ..analyses.fullcatalog import full_catalog_candidates
from ..ties.measures import parse_measures
from ..ties.rules.base import RefLine, Result, RuleKind, TieRule, get_kind, parse_rule, recorded_rules

__all__ = ["check_tie_rule"]

_MEASURES = parse_measures(["HR@1", "HR@3", "nDCG@2", "nDCG@5", "MRR@4", "Recall@3"])
_SEEDS = 3  # seeds drawn for a kind drawn per seed
_RULE_SEEDS = (0, 7)  # the seeds of a seeded kind's rules
_RECORDED = sorted(set(range(_SEEDS)) | set(_RULE_SEEDS))  # seeds a summary records
_IDS = "ab07é日\uff21\U0001f600"


def _fail(check: str, kind: RuleKind, what: str) -> AssertionError:
    return AssertionError(f"tie rule {kind.syntax}: check {check!r} failed: {what}")


def _rules(kind: RuleKind) -> list[TieRule]:
    """The rules checked for ``kind``: two seeds of a seeded kind, else the kind itself."""
    return [TieRule(kind.name, s) for s in _RULE_SEEDS] if kind.seeded else [TieRule(kind.name)]


def _draw_rankings(kind: RuleKind, rule: TieRule) -> list[TieRule]:
    """The single-ranking rules whose ranks ``rule`` reports, one per draw."""
    if kind.result is Result.SEEDS:
        return [TieRule(str(kind.per_seed), s) for s in kind.draws(rule, _SEEDS)]
    return [rule]


def _draw_id(rng: np.random.Generator, numeric: bool) -> str:
    """An item id: one or two of :data:`_IDS`, or a whole number (``numeric``) of one to three
    digits, some with a sign or leading zeros (``7``, ``07`` and ``-7`` are three ids)."""
    if not numeric:
        return "".join(rng.choice(list(_IDS), size=int(rng.integers(1, 3))))
    digits = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 4))))
    return ("-" if rng.random() < 0.2 else "") + digits


#: The grades of the relevant items of a graded table.
_GRADES = (1.0, 2.0, 3.0, 0.5)


def _stored_frame(rng: np.random.Generator, one_relevant: bool, numeric: bool,
                  graded: bool = False) -> pd.DataFrame:  # fmt: skip
    """A tie-heavy stored table: 1-6 rows of 1-7 candidates at three score levels, rows
    interleaved, one relevant item a row (or one or two; ``graded``: one to three, each with a
    grade of :data:`_GRADES`)."""
    lines = []
    for r in range(int(rng.integers(1, 7))):
        n = int(rng.integers(1, 8))
        items = set()
        while len(items) < n:
            items.add(_draw_id(rng, numeric))
        n_rel = 1 if one_relevant or n == 1 else int(rng.integers(1, min(n, 3 if graded else 2)
                                                                  + 1))  # fmt: skip
        rel = set(rng.choice(n, size=n_rel, replace=False).tolist())
        user = f"u{int(rng.integers(0, 3))}é"
        for j, item in enumerate(sorted(items)):
            label = float(rng.choice(_GRADES)) if graded and j in rel else int(j in rel)
            lines.append((f"r{r}", user, item, label, float(rng.integers(0, 3))))
    order = rng.permutation(len(lines))
    return pd.DataFrame([lines[i] for i in order],
                        columns=["row", "user_id", "item_id", "label", "score"])  # fmt: skip


def _row_lines(frame: pd.DataFrame) -> dict[str, list[tuple[RefLine, float]]]:
    out: dict[str, list[tuple[RefLine, float]]] = {}
    for idx, (r, u, i, lab, s) in enumerate(frame[["row", "user_id", "item_id", "label", "score"]]
                                            .itertuples(index=False)):  # fmt: skip
        out.setdefault(str(r), []).append((RefLine(idx, str(u), str(i), float(lab)), float(s)))
    return out


def _brute_ranks(frame: pd.DataFrame, rule: TieRule) -> dict[str, list[int]]:
    """Each row's relevant ranks, sorted: the row sorted by the rule's key, then stably by
    score descending."""
    key = rule.spec.reference_key(rule.seed, len(frame))
    out = {}
    for rid, lines in _row_lines(frame).items():
        ranked = sorted(sorted(lines, key=lambda x: key(x[0])), key=lambda x: -x[1])
        out[rid] = sorted(j + 1 for j, (ln, _) in enumerate(ranked) if ln.label)
    return out


def _ranks_by_row(ev, rule: TieRule, draw: int = 0) -> dict[str, list[int]]:
    ts, ranks = ev.structure, ev[rule].ranks[draw]
    out: dict[str, list[int]] = {str(r): [] for r in ev.table.row_ids}
    for item, row in enumerate(ts.rel_row):
        out[str(ev.table.row_ids[row])].append(int(ranks[item]))
    return {k: sorted(v) for k, v in out.items()}


def _check_stored(kind: RuleKind, frames: Sequence[pd.DataFrame]) -> None:
    for frame, rule in itertools.product(frames, _rules(kind)):
        exact = evaluate(frame, _MEASURES, [rule], n_seeds=_SEEDS, rank_cap=None)
        capped = evaluate(frame, _MEASURES, [rule], n_seeds=_SEEDS)
        if kind.result is Result.DISTRIBUTION:
            _check_distribution(kind, exact, rule)
            continue
        for draw, single in enumerate(_draw_rankings(kind, rule)):
            want = _brute_ranks(frame, single)
            got = _ranks_by_row(exact, rule, draw)
            if got != want:
                raise _fail("stored", kind, f"{rule} ranks {got}, a brute-force sort gives {want}"
                            f" (draw {draw}) on\n{frame}")  # fmt: skip
            cap = capped.rank_cap
            if _ranks_by_row(capped, rule, draw) != {k: [min(r, cap) for r in v]
                                                     for k, v in want.items()}:  # fmt: skip
                raise _fail("stored", kind, f"{rule} ranks capped at {cap} differ from the exact")


def _check_distribution(kind: RuleKind, ev, rule: TieRule) -> None:
    for m in _MEASURES:
        v, var = ev[rule].values[m], ev[rule].variances[m]
        if kind.support is None:  # a point: no spread
            if np.any(var != 0):
                raise _fail("stored", kind, f"{m}: a point distribution with variances {var}")
            continue
        low, high = kind.support
        lo, hi = ev.bound(low)[m], ev.bound(high)[m]
        if np.any(v < lo - 1e-12) or np.any(v > hi + 1e-12):
            raise _fail("stored", kind, f"{m} outside [{low}, {high}]: {v} vs {lo}, {hi}")
        if np.any(var < 0):
            raise _fail("stored", kind, f"{m} has a negative variance")


def _brute_values(frame: pd.DataFrame, rule: TieRule) -> dict[str, dict[str, float]]:
    """Each row's value of every measure of :data:`_MEASURES` when it is sorted by score, then
    by the rule's reference key: nDCG with the labels as gains and the ideal from the row's
    labels sorted descending."""
    key = rule.spec.reference_key(rule.seed, len(frame))
    out = {}
    for rid, lines in _row_lines(frame).items():
        ranked = sorted(sorted(lines, key=lambda x: key(x[0])), key=lambda x: -x[1])
        labels = [ln.label for ln, _ in ranked]
        ideal = sorted((x for x in labels if x > 0), reverse=True)
        values = {}
        for m in _MEASURES:
            top = labels[: m.k]
            hits = [p for p, x in enumerate(top) if x > 0]
            if m.name == "nDCG":
                values[str(m)] = (sum(x / np.log2(p + 2) for p, x in enumerate(top))
                                  / sum(x / np.log2(p + 2) for p, x in enumerate(ideal[: m.k])))
            elif m.name == "HR":
                values[str(m)] = float(bool(hits))
            elif m.name == "MRR":
                values[str(m)] = 1.0 / (hits[0] + 1) if hits else 0.0
            else:  # Recall
                values[str(m)] = len(hits) / len(ideal)
        out[rid] = values
    return out


def _check_graded(kind: RuleKind, frames: Sequence[pd.DataFrame]) -> None:
    for frame, rule in itertools.product(frames, _rules(kind)):
        ev = evaluate(frame, _MEASURES, [rule], n_seeds=_SEEDS, rank_cap=None)
        if kind.result is Result.DISTRIBUTION:
            _check_distribution(kind, ev, rule)
            continue
        draws = [_brute_values(frame, single) for single in _draw_rankings(kind, rule)]
        for j, rid in enumerate(map(str, ev.table.row_ids)):
            for m in _MEASURES:
                want = float(np.mean([d[rid][str(m)] for d in draws]))
                got = float(ev[rule].values[m][j])
                if abs(got - want) > 1e-12:
                    raise _fail("graded", kind, f"{rule} {m} of row {rid}: {got}, a brute-force "
                                f"sort gives {want} on\n{frame}")  # fmt: skip


def _summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """The summary table of a stored table with one relevant line per row, by brute force:
    every recorded rule's ``before:`` count from its reference key."""
    recorded = recorded_rules(_RECORDED)
    keys = {str(r): r.spec.reference_key(r.seed, len(frame)) for r in recorded}
    out = []
    for rid, lines in _row_lines(frame).items():
        (rel, score) = next((ln, s) for ln, s in lines if ln.label)
        group = [ln for ln, s in lines if s == score]
        rec = {"row": rid, "user_id": rel.user, "item_id": rel.item, "label": 1, "score": score,
               "n_higher": sum(s > score for _, s in lines), "n_tied": len(group) - 1,
               "n_lower": sum(s < score for _, s in lines)}  # fmt: skip
        for name, key in keys.items():
            rec[f"before:{name}"] = sorted(group, key=key).index(rel)
        out.append(rec)
    return pd.DataFrame(out)


def _check_same(check: str, kind: RuleKind, stored, summary, rule: TieRule) -> None:
    """``summary`` (a summary table's evaluation) gives ``stored``'s results for ``rule``."""
    if kind.result is Result.DISTRIBUTION or kind.summary_exact:
        for m in _MEASURES:
            a, b = stored[rule].values[m], summary[rule].values[m]
            if not np.allclose(a, b, rtol=0, atol=1e-12):
                raise _fail(check, kind, f"{rule} {m}: summary {b}, stored {a}")
        if kind.result is not Result.DISTRIBUTION and not np.array_equal(
            stored[rule].ranks, summary[rule].ranks
        ):
            raise _fail(check, kind, f"{rule}: summary ranks {summary[rule].ranks}, stored "
                        f"{stored[rule].ranks}")  # fmt: skip
        return
    ts, ranks = summary.structure, summary[rule].ranks
    if np.any(ranks < ts.g + 1) or np.any(ranks > ts.g + ts.t):
        raise _fail(check, kind, f"{rule}: summary ranks {ranks} outside the tie groups")


def _evaluate_summary(check: str, kind: RuleKind, summary: pd.DataFrame, rule: TieRule):
    try:
        return evaluate(summary, _MEASURES, [rule], n_seeds=_SEEDS, rank_cap=None)
    except ValueError as exc:  # e.g. neither a block count nor a count derived from others
        raise _fail(check, kind, f"{rule} cannot be evaluated on a summary table: {exc}") from exc


def _check_refused(check: str, kind: RuleKind, summary: pd.DataFrame, rule: TieRule) -> None:
    """A kind that is not evaluated on summary tables refuses one with a ValueError."""
    try:
        evaluate(summary, _MEASURES, [rule], n_seeds=_SEEDS, rank_cap=None)
    except ValueError:
        return
    raise _fail(check, kind, f"{rule} declares on_summary=False but evaluates a summary table")


def _check_summary(kind: RuleKind, frames: Sequence[pd.DataFrame]) -> None:
    for frame, rule in itertools.product(frames, _rules(kind)):
        if not kind.on_summary:
            _check_refused("summary", kind, _summarise(frame), rule)
            continue
        stored = evaluate(frame, _MEASURES, [rule], n_seeds=_SEEDS, rank_cap=None)
        summary = _evaluate_summary("summary", kind, _summarise(frame), rule)
        _check_same("summary", kind, stored, summary, rule)


class _TieScorer:
    """Scores from a few levels of the ids (many ties), pair by pair."""

    def score(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return np.array([float((ord(i[-1]) + 2 * len(u)) % 3) for u, i in zip(users, items,
                                                                               strict=True)])


def _check_full(kind: RuleKind, seed: int) -> None:
    rng = np.random.default_rng([seed, 1])
    ids = [str(j) if kind.numeric_ids else f"i{j}{_IDS[j % len(_IDS)]}" for j in range(40)]
    catalog = np.array(sorted(ids), dtype=object)
    users = [f"u{k}" + "é" * (k % 3) for k in range(12)]
    seen = [rng.choice(len(catalog), size=int(rng.integers(1, 6)), replace=False) for _ in users]
    history = pd.DataFrame([(u, catalog[j]) for u, s in zip(users, seen, strict=True)
                            for j in s[1:]], columns=["user_id", "item_id"])  # fmt: skip
    rows = pd.DataFrame({"user_id": users, "item_id": [catalog[s[0]] for s in seen]})
    summary = full_catalog_candidates(rows, history, catalog, _TieScorer(), seeds=_RECORDED)
    lines = []
    for u, held, s in zip(users, rows["item_id"], seen, strict=True):
        own = {catalog[j] for j in s[1:]} - {held}
        lines += [(f"u{u}", u, held, 1)] + [(f"u{u}", u, i, 0) for i in catalog
                                            if i != held and i not in own]  # fmt: skip
    full = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label"])
    full["score"] = _TieScorer().score(full["user_id"].to_numpy(), full["item_id"].to_numpy())
    for rule in _rules(kind):
        if not kind.on_summary:
            _check_refused("full", kind, summary, rule)
            continue
        stored = evaluate(full, _MEASURES, [rule], n_seeds=_SEEDS, rank_cap=None)
        reduced = _evaluate_summary("full", kind, summary, rule)
        _check_same("full", kind, stored, reduced, rule)


def _check_invariance(kind: RuleKind, seed: int) -> None:
    rng = np.random.default_rng([seed, 2])
    lines = []
    for r in range(8):  # relevant first, tied with most of its row
        scores = np.where(rng.random(12) < 0.8, 1.0, rng.integers(0, 3, 12).astype(float))
        scores[0] = 1.0
        lines += [(f"r{r}", f"u{r}", f"{j:02d}", int(j == 0), scores[j]) for j in range(12)]
    frame = pd.DataFrame(lines, columns=["row", "user_id", "item_id", "label", "score"])
    for rule in _rules(kind):
        inv = invariance(frame, _MEASURES[:2], [rule], n_permutations=3, n_seeds=_SEEDS)
        verdict = inv["invariant"].iloc[0] == "yes"
        if verdict != kind.invariant:
            raise _fail("invariance", kind, f"{rule} declares invariant={kind.invariant}, the "
                        f"audit finds {verdict} (rows moved: {inv['share_rows_moved'].iloc[0]})")


def _check_seeds(kind: RuleKind, frames: Sequence[pd.DataFrame]) -> None:
    if kind.seeded:
        rules = [TieRule(kind.name, s) for s in range(5)]
        ranks = [np.concatenate([evaluate(f, _MEASURES, [r], rank_cap=None)[r].ranks.ravel()
                                 for f in frames]) for r in rules]  # fmt: skip
    elif kind.result is Result.SEEDS:
        rule = TieRule(kind.name)
        ranks = [np.concatenate([evaluate(f, _MEASURES, [rule], n_seeds=5, rank_cap=None)[rule]
                                 .ranks[s] for f in frames]) for s in range(5)]  # fmt: skip
    else:
        return
    if all(np.array_equal(ranks[0], r) for r in ranks[1:]):
        raise _fail("seeds", kind, "five seeds give the same ranks on tie-heavy tables")


def check_tie_rule(kind: str | RuleKind, *, n_tables: int = 20, seed: int = 0) -> None:
    """Check a registered tie rule kind (or its name) against the conformance battery (see the
    module docstring) on ``n_tables`` random tables drawn from ``seed``; raises an
    :class:`AssertionError` naming the failed check."""
    spec = get_kind(kind) if isinstance(kind, str) else kind
    if get_kind(spec.name) is not spec:
        raise _fail("parse", spec, "another kind is registered under its name")
    for rule in _rules(spec):
        if parse_rule(str(rule)) != rule or parse_rule(str(rule).upper()) != rule:
            raise _fail("parse", spec, f"{rule} does not round-trip through parse_rule")
    rng = np.random.default_rng([seed, 0])
    numeric = spec.numeric_ids
    several = [_stored_frame(rng, False, numeric) for _ in range(n_tables)]
    single = [_stored_frame(rng, True, numeric) for _ in range(n_tables)]
    _check_stored(spec, several + single)
    _check_graded(spec, [_stored_frame(rng, False, numeric, graded=True)
                         for _ in range(max(1, n_tables // 2))])  # fmt: skip
    _check_summary(spec, single)
    _check_full(spec, seed)
    _check_invariance(spec, seed)
    _check_seeds(spec, several + single)


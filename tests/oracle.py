"""The brute-force oracle the tests check the library against.

Plain loops, obviously correct and slow: a row is a list of :class:`Line`; a tie rule is a sort
key on lines (:func:`tie_key`); a rank is found by sorting the row with Python's ``sorted`` on
(score descending, rule key); a measure is computed from its textbook formula on the ranked 0/1
relevance flags; the expected value is the average over every order of every tie group
(``itertools.permutations``). The only library code used is ``hash_key``, the documented
pure-Python reference of the hash rules (pinned in test_hashing); ``random:SEED``'s keyed
permutation is written out here again from its definition (:func:`random_positions`).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from tieaudit import hash_key

COLS = ["row", "user_id", "item_id", "label", "score"]


class Line(NamedTuple):
    """One stored candidate."""

    idx: int  # stored position in the whole table (from 0)
    row: str
    user: str
    item: str
    label: int
    score: float
    higher: int = 0  # unstored candidates above (a summary's n_higher column), else 0
    lower: int = 0  # unstored candidates below (n_lower), else 0


def lines_by_row(frame: pd.DataFrame) -> dict[str, list[Line]]:
    """Each row's lines in stored order, rows in order of first appearance."""
    n = len(frame)
    higher = frame["n_higher"] if "n_higher" in frame.columns else [0] * n
    lower = frame["n_lower"] if "n_lower" in frame.columns else [0] * n
    out: dict[str, list[Line]] = {}
    recs = zip(*(frame[c] for c in COLS), higher, lower, strict=True)
    for idx, (r, u, i, lab, s, h, lo) in enumerate(recs):
        line = Line(idx, str(r), str(u), str(i), int(lab), float(s), int(h), int(lo))
        out.setdefault(line.row, []).append(line)
    return out


def totals_of(frame: pd.DataFrame) -> dict[str, int]:
    """R per row: the n_relevant column, else the number of relevant lines."""
    if "n_relevant" in frame.columns:
        return {str(r): int(n) for r, n in zip(frame["row"], frame["n_relevant"], strict=True)}
    return {str(r): int(n) for r, n in frame.groupby("row", sort=False)["label"].sum().items()}


# ----------------------------------------------------------------------------- tie rules


def tie_key(rule: str, n_lines: int | None = None) -> Callable[[Line], Any]:
    """The documented order of ``rule`` among equal scores, as a sort key on lines.

    ``random:SEED`` orders by each line's place in the keyed permutation of the table's
    ``n_lines`` stored positions (:func:`random_positions`).
    """
    kind, _, arg = rule.partition(":")
    if kind == "input_order":
        return lambda ln: ln.idx
    if kind == "reversed_input":  # np.argsort(scores)[::-1]: the last stored first
        return lambda ln: -ln.idx
    if kind == "optimistic":
        return lambda ln: -ln.label
    if kind == "pessimistic":
        return lambda ln: ln.label
    if kind == "item_id":  # Python compares strings by code point
        return lambda ln: ln.item
    if kind == "docno_desc":  # descending code points; a prefix after its extensions
        return lambda ln: [-ord(c) for c in ln.item] + [1]
    if kind == "hash":
        seed = int(arg)
        return lambda ln: (hash_key(seed, ln.user, ln.item), ln.item)
    if kind == "random" and n_lines is not None:
        where = random_positions(int(arg), n_lines)
        return lambda ln: where[ln.idx]
    raise AssertionError(f"no reference order for {rule!r}")


def _splitmix(x: int) -> int:
    m = (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def random_positions(seed: int, n: int) -> list[int]:
    """Where each of ``n`` lines lands under ``random:SEED``, from the rule's definition
    (tieaudit.ties.rules.random): the permutation of ``0 .. 2**b - 1`` an eight-round Feistel network
    with SHA-256 round keys makes, written out whole, then each line's cycle followed until it
    comes back below ``n``."""
    if n == 1:
        return [0]
    b = (n - 1).bit_length()
    keys = [int.from_bytes(hashlib.sha256(f"random\x1f{seed}\x1f{i}".encode()).digest()[:8],
                           "little") % 2**63 for i in range(8)]  # fmt: skip
    widths = [-(-b // 2) if i % 2 == 0 else b // 2 for i in range(8)]

    def feistel(x: int) -> int:
        for key, w in zip(keys, widths, strict=True):
            hi, lo = divmod(x, 2 ** (b - w))
            x = lo * 2**w + (hi ^ _splitmix(lo ^ key)) % 2**w
        return x

    perm = [feistel(x) for x in range(2**b)]
    assert sorted(perm) == list(range(2**b))  # each round is a bijection
    out = []
    for line in range(n):
        x = perm[line]
        while x >= n:
            x = perm[x]
        out.append(x)
    return out


Key = Callable[[Line], Any]


def _key(rule: str | Key) -> Key:
    return tie_key(rule) if isinstance(rule, str) else rule


def rule_order(lines: list[Line], rule: str | Key) -> list[Line]:
    """``lines`` in the order ``rule`` gives to equal scores (the whole list treated as tied)."""
    return sorted(lines, key=_key(rule))


def ranked(lines: list[Line], rule: str | Key) -> list[Line]:
    """The row ranked: score descending, then ``rule`` (a rule name or a sort key)."""
    key = _key(rule)
    return sorted(lines, key=lambda ln: (-ln.score, key(ln)))


def relevant_ranks(lines: list[Line], rule: str | Key) -> tuple[int, ...]:
    """1-based ranks of the relevant lines of a row ranked by ``rule``, in increasing order."""
    return tuple(p + 1 for p, ln in enumerate(ranked(lines, rule)) if ln.label)


def rank(lines: list[Line], rule: str | Key) -> int:
    """1-based rank of the row's first relevant line under ``rule``."""
    return relevant_ranks(lines, rule)[0]


# ----------------------------------------------------------------------------- measures


def measure_value(name: str, k: int, rel: list[int], n_rel: int) -> float:
    """The measure of a ranked list of 0/1 relevance flags (position 1 first)."""
    top = rel[:k]
    if name == "HR":
        return float(any(top))
    if name == "MRR":
        return next((1.0 / (p + 1) for p, x in enumerate(top) if x), 0.0)
    hits = sum(top)
    if name == "Recall":
        return hits / n_rel
    if name == "P":
        return hits / k
    assert name == "nDCG", name
    dcg = sum(1.0 / math.log2(p + 2) for p, x in enumerate(top) if x)
    idcg = sum(1.0 / math.log2(p + 2) for p in range(min(n_rel, k)))
    return dcg / idcg


def value_at(m, r: int) -> float:
    """Measure ``m`` (with ``.name``, ``.k``) of one relevant item at rank ``r``."""
    return measure_value(m.name, m.k, [0] * (r - 1) + [1], 1)


def values_of(lines: list[Line], rule: str | Key, measures: Iterable, n_rel: int | None = None):
    """``{measure: value}`` of the row ranked by ``rule``; ``n_rel`` defaults to its relevant
    lines."""
    rel = [ln.label for ln in ranked(lines, rule)]
    n = sum(rel) if n_rel is None else n_rel
    return {m: measure_value(m.name, m.k, rel, n) for m in measures}


def brute_expected(lines: list[Line], measures: Iterable, n_rel: int | None = None):
    """``{measure: (mean, variance)}`` over every ordering of every tie group of the row."""
    measures = list(measures)
    groups: dict[float, list[Line]] = defaultdict(list)
    for ln in lines:
        groups[ln.score].append(ln)
    vals: dict[Any, list[float]] = {m: [] for m in measures}
    for combo in itertools.product(*(itertools.permutations(g) for g in groups.values())):
        place = {ln.idx: j for perm in combo for j, ln in enumerate(perm)}
        got = values_of(lines, lambda ln, place=place: place[ln.idx], measures, n_rel)
        for m, v in got.items():
            vals[m].append(v)
    out = {}
    for m, vs in vals.items():
        mean = sum(vs) / len(vs)
        out[m] = (mean, sum((v - mean) ** 2 for v in vs) / len(vs))
    return out


# ----------------------------------------------------------------------------- summary tables


def summarise(
    frame: pd.DataFrame, seeds: Iterable[int] = (), rules: Iterable[str] = (), modal: bool = True
) -> pd.DataFrame:
    """The summary table of a stored table with one relevant line per row: the counts above,
    tied and below, the largest tie group (``modal``), and for each rule (and ``hash:S`` for each
    seed) the tie members it puts before the relevant item, by sorting the tie group."""
    out = []
    for rid, lines in lines_by_row(frame).items():
        (rel,) = [ln for ln in lines if ln.label == 1]
        group = [ln for ln in lines if ln.score == rel.score]
        rec = {
            "row": rid, "user_id": rel.user, "item_id": rel.item, "label": 1, "score": rel.score,
            "n_higher": sum(ln.score > rel.score for ln in lines) + rel.higher,
            "n_tied": len(group) - 1,
            "n_lower": sum(ln.score < rel.score for ln in lines) + rel.lower,
        }  # fmt: skip
        if modal:
            rec["n_modal"] = max(Counter(ln.score for ln in lines).values())
        for rule in [*rules, *(f"hash:{s}" for s in seeds)]:
            rec[f"before:{rule}"] = rule_order(group, rule).index(rel)
        out.append(rec)
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- the library's answer


def ranks_by_row(ev, rule: str) -> dict[str, list[tuple[int, ...]]]:
    """Per row of an evaluation, per draw, the sorted ranks of its stored relevant items."""
    ranks = ev[rule].ranks
    rel_row = ev.structure.rel_row
    out: dict[str, list[tuple[int, ...]]] = {}
    for j, rid in enumerate(ev.table.row_ids.tolist()):
        cols = np.flatnonzero(rel_row == j)
        out[str(rid)] = [tuple(sorted(ranks[d, cols].tolist())) for d in range(ranks.shape[0])]
    return out


def values_by_row(ev, rule: str, m) -> dict[str, float]:
    """Per row of an evaluation, the value of measure ``m`` under ``rule``."""
    return dict(zip(ev.table.row_ids.tolist(), ev[rule].values[m].tolist(), strict=True))

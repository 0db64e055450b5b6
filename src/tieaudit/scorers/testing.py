"""The scorer conformance battery: the checks every :class:`~tieaudit.scorers.Scorer` passes.

As scikit-learn's ``check_estimator`` does for estimators, :func:`check_scorer_conformance` runs
one battery of checks on any scorer, built-in or your own::

    from tieaudit.scorers.testing import check_scorer_conformance

    check_scorer_conformance(lambda: MyScorer(alpha=0.5))          # small built-in data
    check_scorer_conformance(MyScorer, history, item_attributes)   # or your own

``factory()`` must return a new, unfitted scorer. The checks, in order (the first failure raises
:class:`ScorerConformanceError` naming the check):

1. ``interface`` — the object has ``fit(history, item_attributes)`` and ``score(user_ids,
   item_ids)``, and any of the optional ``calibrate(pairs)`` / ``score_matrix(user_ids,
   item_ids)`` it has take the documented arguments (:func:`tieaudit.scorers.check_scorer`);
2. ``fit`` — ``fit`` returns the scorer itself and leaves ``history`` and ``item_attributes``
   unchanged;
3. ``calibrate`` (when present) — returns the scorer itself and leaves ``pairs`` unchanged;
4. ``score`` — one finite float64 per pair, as a 1-D ``numpy`` array, also for users and items
   never seen in ``fit`` (the pairs include such ids), and an empty array for no pairs;
5. ``pure`` — the scores do not depend on the batch: scored whole, in two halves, in reverse
   order, one pair at a time, or a second time, every pair gets the same float, bit for bit;
6. ``score_matrix`` (when present) — an ``m x n`` float64 array, bit for bit ``score`` on the
   repeated/tiled pairs (duplicate and unseen ids included), the same for the users scored in
   two halves, and of shape ``(0, n)`` / ``(m, 0)`` for no users / no items;
7. ``calibration`` (when present) — calibrating on other pairs and then on the same pairs again
   gives the same scores (a calibration depends on its pairs only, not on earlier calls), and
   the calibration pairs scored right after ``calibrate`` (what ``score_candidates`` does) get
   the scores they get later;
8. ``deterministic`` — a second scorer from ``factory``, fitted (and calibrated) on the same
   data, gives the same scores, bit for bit.

The pairs scored are every (user, item) of a few users and items of ``history`` and
``item_attributes`` plus ``"unseen-user"`` and ``"unseen-item"``; the calibration pairs (unless
``pairs`` is given) are a seeded sample of those. :func:`example_data` is the default data: a
small history with ratings and timestamps and item attributes (some items have none). Nothing
here imports a test framework: the function raises, a test calls it. The tests run it on every
registered scorer, on :class:`~tieaudit.scorers.MatrixScorer` and on ``examples/my_scorer.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from tieaudit.scorers.base import Scorer, ScorerInterfaceError, check_scorer

__all__ = ["ScorerConformanceError", "check_scorer_conformance", "example_data"]

UNSEEN_USER = "unseen-user"
UNSEEN_ITEM = "unseen-item"


class ScorerConformanceError(AssertionError):
    """A scorer failed a check of :func:`check_scorer_conformance` (the message names it)."""


def example_data(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(history, item_attributes)``: 12 users with 3-8 interactions each over items
    ``i00 .. i29`` (integer ratings 1-5, timestamps in seconds), and 2-3 attributes out of 8 for
    each item but the last five. Deterministic for a given ``seed``."""
    rng = np.random.default_rng(seed)
    items = [f"i{j:02d}" for j in range(30)]
    rows = []
    for u in range(12):
        seen = rng.choice(len(items), size=int(rng.integers(3, 9)), replace=False)
        for k, j in enumerate(seen):
            rows.append((f"u{u:02d}", items[j], float(rng.integers(1, 6)), 86_400 * (k + u)))
    history = pd.DataFrame(rows, columns=["user_id", "item_id", "rating", "timestamp"])
    attrs = [
        (item, f"a{a}")
        for item in items[:-5]
        for a in rng.choice(8, size=int(rng.integers(2, 4)), replace=False)
    ]
    return history, pd.DataFrame(attrs, columns=["item_id", "attribute"])


def check_scorer_conformance(
    factory: Callable[[], Scorer],
    history: pd.DataFrame | None = None,
    item_attributes: pd.DataFrame | None = None,
    *,
    pairs: pd.DataFrame | None = None,
    seed: int = 0,
) -> None:
    """Run the conformance battery (module docstring) on the scorers ``factory()`` builds.

    ``history`` and ``item_attributes`` default to :func:`example_data`; give both or neither.
    ``pairs`` (``user_id``, ``item_id``): the calibration pairs (default: a seeded sample of the
    scored pairs, drawn with ``seed``). Returns ``None``; raises
    :class:`ScorerConformanceError` at the first failed check.
    """
    if (history is None) != (item_attributes is None):
        raise ValueError("give both history and item_attributes, or neither")
    if history is None:
        history, item_attributes = example_data(seed)
    users, items = _probe_ids(history, item_attributes)
    pair_u, pair_i = np.repeat(users, len(items)), np.tile(items, len(users))
    if pairs is None:
        pick = np.random.default_rng(seed).choice(len(pair_u), size=len(pair_u) // 2, replace=False)
        pairs = pd.DataFrame({"user_id": pair_u[np.sort(pick)], "item_id": pair_i[np.sort(pick)]})

    scorer = _fitted(factory, history, item_attributes, pairs)
    whole = _scores(scorer, pair_u, pair_i, "score")
    _check_pure(scorer, pair_u, pair_i, whole)
    if callable(getattr(scorer, "score_matrix", None)):
        _check_score_matrix(scorer, users, items)
    if callable(getattr(scorer, "calibrate", None)):
        scorer.calibrate(pairs.iloc[: max(1, len(pairs) // 3)].copy())
        scorer.calibrate(pairs.copy())
        cal_u = pairs["user_id"].to_numpy(dtype=object)
        cal_i = pairs["item_id"].to_numpy(dtype=object)
        first = _scores(scorer, cal_u, cal_i, "calibration")  # as score_candidates calls it
        _same(_scores(scorer, cal_u, cal_i, "calibration"), first, "calibration",
              "the calibration pairs scored right after calibrate get other scores than later")
        _same(_scores(scorer, pair_u, pair_i, "calibration"), whole, "calibration",
              "calibrating on other pairs, then on the same pairs again, changed the scores")  # fmt: skip
    again = _fitted(factory, history, item_attributes, pairs)
    _same(_scores(again, pair_u, pair_i, "deterministic"), whole, "deterministic",
          "a second scorer fitted on the same data gives other scores")  # fmt: skip


def _fail(check: str, message: str) -> ScorerConformanceError:
    return ScorerConformanceError(f"[{check}] {message}")


def _probe_ids(history: pd.DataFrame, item_attributes: pd.DataFrame):
    """Up to 6 users and 12 items of the data (as strings), plus an unseen user and item."""
    known_users = pd.unique(history["user_id"].astype(str))[:6]
    hist_items = pd.unique(history["item_id"].astype(str))[:6]
    attr_items = pd.unique(item_attributes["item_id"].astype(str))
    extra = [i for i in attr_items if i not in set(hist_items)][:6]
    users = np.array([*known_users, UNSEEN_USER], dtype=object)
    items = np.array([*hist_items, *extra, UNSEEN_ITEM], dtype=object)
    return users, items


def _fitted(factory, history, item_attributes, pairs) -> Scorer:
    """A new scorer, checked, fitted (inputs unchanged) and calibrated when it can be."""
    scorer = factory()
    try:
        check_scorer(scorer)
    except ScorerInterfaceError as exc:
        raise _fail("interface", str(exc)) from exc
    h, a = history.copy(deep=True), item_attributes.copy(deep=True)
    if scorer.fit(h, a) is not scorer:
        raise _fail("fit", "fit(history, item_attributes) must return the scorer itself")
    for name, before, after in (("history", history, h), ("item_attributes", item_attributes, a)):
        if not before.equals(after) or list(before.dtypes) != list(after.dtypes):
            raise _fail("fit", f"fit modified its {name} argument")
    calibrate = getattr(scorer, "calibrate", None)
    if callable(calibrate):
        p = pairs.copy(deep=True)
        if calibrate(p) is not scorer:
            raise _fail("calibrate", "calibrate(pairs) must return the scorer itself")
        if not p.equals(pairs):
            raise _fail("calibrate", "calibrate modified its pairs argument")
    return scorer


def _scores(scorer, users: np.ndarray, items: np.ndarray, check: str) -> np.ndarray:
    """``score`` of the pairs, checked: a finite float64 1-D array, one value per pair."""
    try:
        out = scorer.score(users.copy(), items.copy())
    except Exception as exc:
        raise _fail(check, f"score raised {exc!r} on {len(users)} pairs (ids unseen in fit "
                           f"included: {UNSEEN_USER!r}, {UNSEEN_ITEM!r})") from exc  # fmt: skip
    if not isinstance(out, np.ndarray) or out.dtype != np.float64:
        kind = getattr(out, "dtype", type(out).__name__)
        raise _fail(check, f"score must return a float64 numpy array, got {kind}")
    if out.shape != (len(users),):
        raise _fail(check, f"score returned shape {out.shape} for {len(users)} pairs")
    bad = ~np.isfinite(out)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise _fail(check, f"score of ({users[k]!r}, {items[k]!r}) is {out[k]}, not finite")
    return out


def _same(got: np.ndarray, want: np.ndarray, check: str, message: str) -> None:
    """``got`` must have ``want``'s shape and bits (``-0.0`` and ``+0.0`` differ)."""
    same = got.shape == want.shape and np.array_equal(
        np.asarray(got, dtype=np.float64).view(np.uint64), want.view(np.uint64)
    )
    if not same:
        raise _fail(check, message)


def _check_pure(scorer, users: np.ndarray, items: np.ndarray, whole: np.ndarray) -> None:
    empty = _scores(scorer, users[:0], items[:0], "score")
    if empty.shape != (0,):  # pragma: no cover - _scores checks the shape
        raise _fail("score", "score of no pairs must be an empty array")
    half = len(users) // 2
    halves = np.concatenate([_scores(scorer, users[:half], items[:half], "pure"),
                             _scores(scorer, users[half:], items[half:], "pure")])  # fmt: skip
    _same(halves, whole, "pure", "the pairs scored in two halves get other scores than whole")
    back = _scores(scorer, users[::-1], items[::-1], "pure")[::-1]
    _same(back, whole, "pure", "the pairs scored in reverse order get other scores")
    step = max(1, len(users) // 8)
    one = np.array([_scores(scorer, users[k : k + 1], items[k : k + 1], "pure")[0]
                    for k in range(0, len(users), step)])  # fmt: skip
    _same(one, whole[::step], "pure", "a pair scored alone gets another score than in a batch")
    _same(_scores(scorer, users, items, "pure"), whole, "pure",
          "scoring the same pairs a second time gives other scores")  # fmt: skip


def _check_score_matrix(scorer, users: np.ndarray, items: np.ndarray) -> None:
    block_users = np.concatenate([users, users[:2]])  # duplicates too
    block_items = np.concatenate([items[::-1], items[:3]])
    m, n = len(block_users), len(block_items)
    got = _matrix(scorer, block_users, block_items)
    want = _scores(scorer, np.repeat(block_users, n), np.tile(block_items, m), "score_matrix")
    _same(got, want.reshape(m, n), "score_matrix",
          "score_matrix differs from score on the same pairs (bit for bit)")  # fmt: skip
    parts = np.concatenate([_matrix(scorer, block_users[: m // 2], block_items),
                            _matrix(scorer, block_users[m // 2 :], block_items)])  # fmt: skip
    _same(parts, got, "score_matrix", "score_matrix depends on the users scored with it")
    _matrix(scorer, block_users[:0], block_items)
    _matrix(scorer, block_users, block_items[:0])


def _matrix(scorer, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    try:
        out = scorer.score_matrix(users.copy(), items.copy())
    except Exception as exc:
        raise _fail("score_matrix", f"score_matrix raised {exc!r} on a {len(users)} x "
                                    f"{len(items)} block") from exc  # fmt: skip
    if not isinstance(out, np.ndarray) or out.dtype != np.float64:
        kind = getattr(out, "dtype", type(out).__name__)
        raise _fail("score_matrix", f"score_matrix must return a float64 numpy array, got {kind}")
    if out.shape != (len(users), len(items)):
        raise _fail("score_matrix", f"score_matrix returned shape {out.shape} for "
                                    f"{len(users)} users x {len(items)} items")  # fmt: skip
    return out

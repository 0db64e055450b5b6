"""tieaudit.scorers.testing: the conformance battery passes every built-in scorer, the example
scorer and a wrapped matrix, and catches each kind of broken scorer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tieaudit.scorers import MatrixScorer, available_scorers, get_scorer
from tieaudit.scorers.testing import (
    ScorerConformanceError,
    check_scorer_conformance,
    example_data,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my_scorer.py"
WEIGHTED = {"attribute_overlap", "residualized_attribute"}


def _registry_cases():
    for name in available_scorers():
        weights = ("rating", "binary", "count") if name in WEIGHTED else (None,)
        for w in weights:
            yield pytest.param(name, {} if w is None else {"weight": w}, id=f"{name}-{w}")


@pytest.mark.parametrize("name,options", list(_registry_cases()))
def test_every_registered_scorer_conforms(name, options) -> None:
    check_scorer_conformance(lambda: get_scorer(name, **options))


@pytest.mark.parametrize("chunk_size", [1, 5])
def test_chunked_attribute_scorers_conform(chunk_size) -> None:
    for name in sorted(WEIGHTED):
        check_scorer_conformance(lambda n=name: get_scorer(n, chunk_size=chunk_size))


def test_example_scorer_conforms() -> None:
    check_scorer_conformance(
        lambda: get_scorer(f"{EXAMPLE}:RecencyAttributeScorer", half_life_days=3)
    )


def test_a_wrapped_matrix_conforms_when_it_can_score_unseen_ids() -> None:
    history, attrs = example_data()
    users = sorted(set(history["user_id"]))
    items = sorted(set(history["item_id"]) | set(attrs["item_id"]))
    scores = np.random.default_rng(1).integers(0, 4, (len(users), len(items))).astype(np.float32)
    check_scorer_conformance(lambda: MatrixScorer(scores, users, items, fill=-1.0))
    # without fill an unseen id is an error by design, and the battery says so
    with pytest.raises(ScorerConformanceError, match=r"\[score\].*unseen-user"):
        check_scorer_conformance(lambda: MatrixScorer(scores, users, items))


def test_own_data_and_calibration_pairs() -> None:
    history, attrs = example_data(seed=5)
    pairs = pd.DataFrame({"user_id": ["u00", "u01", "zz"], "item_id": ["i00", "i29", "i03"]})
    check_scorer_conformance(lambda: get_scorer("residualized_attribute"), history, attrs,
                             pairs=pairs)  # fmt: skip
    with pytest.raises(ValueError, match="both"):
        check_scorer_conformance(lambda: get_scorer("popularity"), history)


def test_example_data_is_deterministic_and_has_what_scorers_read() -> None:
    h1, a1 = example_data(3)
    h2, a2 = example_data(3)
    pd.testing.assert_frame_equal(h1, h2)
    pd.testing.assert_frame_equal(a1, a2)
    assert {"user_id", "item_id", "rating", "timestamp"} <= set(h1.columns)
    assert set(h1["item_id"]) - set(a1["item_id"])  # some history items have no attributes
    assert not example_data(4)[0].equals(h1)


# ------------------------------------------------------------------------- broken scorers caught


class _Popularity:
    """A correct pairwise scorer the broken ones below change one thing of."""

    def fit(self, history, item_attributes):
        self.counts = history["item_id"].astype(str).value_counts()
        return self

    def score(self, user_ids, item_ids):
        found = self.counts.reindex(np.asarray(item_ids, dtype=object), fill_value=0)
        return found.to_numpy(dtype=np.float64)


class _FitReturnsNone(_Popularity):
    def fit(self, history, item_attributes):
        super().fit(history, item_attributes)


class _MutatesHistory(_Popularity):
    def fit(self, history, item_attributes):
        history["rating"] = 0.0
        return super().fit(history, item_attributes)


class _Float32(_Popularity):
    def score(self, user_ids, item_ids):
        return super().score(user_ids, item_ids).astype(np.float32)


class _List(_Popularity):
    def score(self, user_ids, item_ids):
        return super().score(user_ids, item_ids).tolist()


class _Short(_Popularity):
    def score(self, user_ids, item_ids):
        return super().score(user_ids, item_ids)[1:]


class _NaNForUnseen(_Popularity):
    def score(self, user_ids, item_ids):
        out = super().score(user_ids, item_ids)
        out[np.asarray(item_ids, dtype=object) == "unseen-item"] = np.nan
        return out


class _BatchCentred(_Popularity):
    """What ``residualized_attribute`` used to do: fit on whatever batch ``score`` gets."""

    def score(self, user_ids, item_ids):
        s = super().score(user_ids, item_ids)
        return s - s.mean() if len(s) else s


class _Drifting(_Popularity):
    """Every call changes the next call's scores."""

    calls = 0

    def score(self, user_ids, item_ids):
        self.calls += 1
        return super().score(user_ids, item_ids) + self.calls


class _SignedZero(_Popularity):
    """-0.0 for an unseen item scored in a batch, +0.0 alone: equal, but not the same bits."""

    def score(self, user_ids, item_ids):
        out = super().score(user_ids, item_ids)
        if len(out) > 1:
            out[out == 0] = -0.0
        return out


class _Unseeded(_Popularity):
    """Random noise with a fresh seed per instance: not deterministic across fits."""

    def fit(self, history, item_attributes):
        self.noise = np.random.default_rng().random()
        return super().fit(history, item_attributes)

    def score(self, user_ids, item_ids):
        return super().score(user_ids, item_ids) + self.noise


class _WrongMatrix(_Popularity):
    def score_matrix(self, user_ids, item_ids):
        row = self.score(np.asarray(item_ids), np.asarray(item_ids))
        return np.repeat(row[None, :], len(user_ids), axis=0) + 1e-12


class _MatrixOfBlock(_Popularity):
    """score_matrix adds the number of users of the block: right only for the block it was
    compared with."""

    def score(self, user_ids, item_ids):
        return super().score(user_ids, item_ids) + len(set(user_ids))

    def score_matrix(self, user_ids, item_ids):
        users, items = np.asarray(user_ids, dtype=object), np.asarray(item_ids, dtype=object)
        s = _Popularity.score(self, np.repeat(users, len(items)), np.tile(items, len(users)))
        return s.reshape(len(users), len(items)) + len(set(users))


class _Calibrated(_Popularity):
    """Popularity minus its mean over the calibration pairs (correct)."""

    shift = None

    def calibrate(self, pairs):
        s = super().score(pairs["user_id"], pairs["item_id"])
        self.shift = float(s.mean()) if len(s) else 0.0
        return self

    def score(self, user_ids, item_ids):
        if self.shift is None:
            raise RuntimeError("call calibrate(pairs) first")
        return super().score(user_ids, item_ids) - self.shift


class _AccumulatingCalibration(_Calibrated):
    """Each calibrate adds to the previous one."""

    def calibrate(self, pairs):
        before = self.shift or 0.0
        super().calibrate(pairs)
        self.shift += before
        return self


class _KeptWrong(_Calibrated):
    """Keeps the calibration pairs' scores for the next call, rounded: not what it computes."""

    def calibrate(self, pairs):
        super().calibrate(pairs)
        self.kept = np.round(super().score(pairs["user_id"], pairs["item_id"]))
        return self

    def score(self, user_ids, item_ids):
        kept, self.kept = getattr(self, "kept", None), None
        if kept is not None and len(kept) == len(user_ids):
            return kept
        return super().score(user_ids, item_ids)


class _CalibrateReturnsNone(_Calibrated):
    def calibrate(self, pairs):
        super().calibrate(pairs)


class _CalibrateDropsPairs(_Calibrated):
    def calibrate(self, pairs):
        pairs["item_id"] = "i00"  # the caller's frame
        return super().calibrate(pairs)


class _NoFit:
    def score(self, user_ids, item_ids):
        return np.zeros(len(user_ids))


class _BadCalibrateSignature(_Popularity):
    def calibrate(self):
        return self


@pytest.mark.parametrize(
    "cls,check,fragment",
    [
        (_NoFit, "interface", "no callable 'fit'"),
        (_BadCalibrateSignature, "interface", "calibrate cannot be called with one"),
        (_FitReturnsNone, "fit", "return the scorer itself"),
        (_MutatesHistory, "fit", "modified its history"),
        (_Float32, "score", "float64 numpy array, got float32"),
        (_List, "score", "got list"),
        (_Short, "score", "shape"),
        (_NaNForUnseen, "score", "'unseen-item'.*not finite"),
        (_BatchCentred, "pure", "two halves"),
        (_Drifting, "pure", "two halves"),
        (_SignedZero, "pure", "alone"),
        (_WrongMatrix, "score_matrix", "differs from score"),
        (_MatrixOfBlock, "pure", ""),
        (_Unseeded, "deterministic", "second scorer"),
        (_AccumulatingCalibration, "calibration", "changed the scores"),
        (_KeptWrong, "calibration", "right after calibrate"),
        (_CalibrateReturnsNone, "calibrate", "return the scorer itself"),
        (_CalibrateDropsPairs, "calibrate", "modified its pairs"),
    ],
)  # fmt: skip
def test_the_battery_catches_a_broken_scorer(cls, check, fragment) -> None:
    with pytest.raises(ScorerConformanceError, match=rf"^\[{check}\] .*{fragment}"):
        check_scorer_conformance(cls)


def test_the_correct_references_pass() -> None:
    check_scorer_conformance(_Popularity)
    check_scorer_conformance(_Calibrated)


def test_a_score_matrix_depending_on_its_block_is_caught() -> None:
    class PureScoreBlockMatrix(_Popularity):
        def score_matrix(self, user_ids, item_ids):
            users, items = np.asarray(user_ids, dtype=object), np.asarray(item_ids, dtype=object)
            s = self.score(np.repeat(users, len(items)), np.tile(items, len(users)))
            # right for the whole block (9 users) and one half (5), wrong for the other (4)
            return s.reshape(len(users), len(items)) + (0 < len(users) < 5) * 1.0

    with pytest.raises(ScorerConformanceError, match=r"\[score_matrix\] .*depends on the users"):
        check_scorer_conformance(PureScoreBlockMatrix)


# ----------------------------------------------------------- the example of docs/guide/library.md


def test_readme_scorer_example_runs() -> None:
    """The guide's worked example of a user scorer (a calibrated one) runs as shown."""
    text = (REPO / "docs" / "guide" / "library.md").read_text(encoding="utf-8")
    m = re.search(r"## Your own scorer\n.*?```python\n(.*?)```", text, re.S)
    assert m, "docs/guide/library.md has no '## Your own scorer' section with a python block"
    namespace: dict[str, object] = {}
    exec(compile(m.group(1), "docs/guide/library.md", "exec"), namespace)  # noqa: S102 - our docs
    scorer_cls = namespace["CentredPopularity"]
    assert callable(getattr(scorer_cls, "calibrate", None))
    scored = namespace["scored"]
    assert isinstance(scored, pd.DataFrame) and "score" in scored.columns
    # calibrated on the candidates it scored: the scores are centred on them
    assert abs(scored["score"].mean()) < 1e-12

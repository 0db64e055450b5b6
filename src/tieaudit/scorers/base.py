"""The scorer interface, the registry of named scorers, user-scorer loading and candidate scoring."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

from ..common.loading import exec_file

__all__ = [
    "Scorer",
    "ScorerLoadError",
    "ScorerInterfaceError",
    "register",
    "get_scorer",
    "available_scorers",
    "check_scorer",
    "check_scorer_spec",
    "calibrate_scorer",
    "score_candidates",
]


@runtime_checkable
class Scorer(Protocol):
    """What a scorer must provide: ``fit``, then ``score`` as a pure function of its pairs.

    ``fit(history, item_attributes) -> self``
        ``history``: interactions available for training (``user_id``, ``item_id``, ``rating``,
        ``timestamp``; never the held-out rows). ``item_attributes``: one row per
        ``(item_id, attribute)`` pair. Returns the fitted scorer itself; the inputs are not
        modified.

    ``score(user_ids, item_ids) -> np.ndarray``
        A batch of ``n`` (user, item) pairs as two equally long 1-D arrays of id strings; returns
        ``n`` finite float64 scores, higher is better, in the same order. It must be vectorised
        (no Python loop per pair). Users or items never seen in ``fit`` must still get a score.
        It is **pure**: a pair's score depends on the pair and on what ``fit`` (and
        ``calibrate``) learnt, never on the other pairs of the batch, so scoring a batch whole,
        in parts or in another order gives the same floats, bit for bit, and so does a second
        call. (Full-catalog evaluation scores in chunks and relies on it.)

    Optional methods (not members of this protocol, used when present):

    ``calibrate(pairs) -> self``
        For a scorer whose score function is fitted on the evaluation pairs themselves
        (``residualized_attribute`` regresses its score on item covariates over the candidates):
        ``pairs`` is a DataFrame with ``user_id`` and ``item_id``, the pairs of an evaluation.
        Called once after ``fit``, before any ``score``; afterwards ``score`` and
        ``score_matrix`` are pure. :func:`score_candidates` calibrates on the candidates it
        scores, and the pipeline's full-catalog step calibrates on the same sampled candidates
        (:func:`tieaudit.analyses.fullcatalog.full_catalog_candidates`, ``calibration=``), so both
        settings score with the same function. A scorer that needs calibration raises
        ``RuntimeError`` from ``score`` before it; a refit drops the calibration.

    ``score_matrix(user_ids, item_ids) -> np.ndarray``
        Every (user, item) pair of a block: ``m`` user ids and ``n`` item ids (1-D, duplicates
        allowed, either may be empty) give an ``m x n`` float64 array, row ``k`` the scores of
        user ``user_ids[k]``, bit for bit (``np.array_equal``, not approximately) equal to
        ``score(np.repeat(user_ids, n), np.tile(item_ids, m)).reshape(m, n)``: exact ties must
        stay exact, and full-catalog scores must be the same function as the sampled evaluation's.
        Full-catalog evaluation uses it when present, instead of scoring ``m x n`` repeated
        pairs, and verifies it against ``score`` on the first chunk. All built-ins provide it.

    :func:`tieaudit.scorers.testing.check_scorer_conformance` runs the battery of checks any
    scorer must pass (the built-ins and ``examples/my_scorer.py`` pass it in the tests).
    """

    def fit(self, history: pd.DataFrame, item_attributes: pd.DataFrame) -> Scorer: ...

    def score(self, user_ids: np.ndarray, item_ids: np.ndarray) -> np.ndarray: ...


class ScorerLoadError(ValueError):
    """A scorer name or ``module:Class`` path that cannot be resolved or constructed."""


class ScorerInterfaceError(TypeError):
    """An object that does not satisfy :class:`Scorer`."""


_REGISTRY: dict[str, Callable[..., Scorer]] = {}


def register(name: str, factory: Callable[..., Scorer] | None = None, *, replace: bool = False):
    """Register ``factory`` (usually a class) under ``name``; usable as ``@register("name")``.

    Names must not contain ``':'`` (that marks a ``module:Class`` path). Registering a taken name
    raises ``ValueError`` unless ``replace=True``.
    """
    if not name or ":" in name:
        raise ValueError(f"invalid scorer name {name!r} (non-empty, no ':')")

    def deco(f: Callable[..., Scorer]) -> Callable[..., Scorer]:
        if not callable(f):
            raise TypeError(f"scorer factory for {name!r} is not callable: {f!r}")
        if name in _REGISTRY and not replace and _REGISTRY[name] is not f:
            raise ValueError(f"scorer name {name!r} is already registered")
        _REGISTRY[name] = f
        return f

    return deco if factory is None else deco(factory)


def available_scorers() -> list[str]:
    """The registered scorer names, sorted."""
    return sorted(_REGISTRY)


def get_scorer(name_or_path: str, **options) -> Scorer:
    """An unfitted scorer: a registered name, or a user scorer given by path.

    * ``"attribute_overlap"`` — a registered name (see :func:`available_scorers`);
    * ``"package.module:Class"`` — ``importlib.import_module("package.module")``, then the
      attribute ``Class`` (dots after the colon walk nested attributes); the module must be
      importable, i.e. on ``sys.path``;
    * ``"path/to/file.py:Class"`` — the module part ends in ``.py``: the file is loaded directly
      (relative paths are relative to the current directory), no ``sys.path`` change needed.

    A path is code: its module is imported (executed). It must name a class with callable
    ``fit`` and ``score`` (a :class:`Scorer`); any other object (a function such as
    ``subprocess:run``, a callable instance) is refused before it is called.
    The factory is called with ``**options``; the result is checked with :func:`check_scorer`.
    Failures raise :class:`ScorerLoadError` (cannot find / construct) or
    :class:`ScorerInterfaceError` (a path naming no scorer class, or a constructed object
    lacking ``fit``/``score``).
    """
    factory = _resolve(name_or_path)
    try:
        scorer = factory(**options)
    except TypeError as exc:
        raise ScorerLoadError(
            f"cannot construct scorer {name_or_path!r} with options {options}: {exc}"
        ) from exc
    check_scorer(scorer, name_or_path)
    return scorer


def check_scorer_spec(name_or_path: str, options: Mapping[str, object] | None = None) -> None:
    """Check that :func:`get_scorer` ``(name_or_path, **options)`` can build a scorer, without
    building one: the name is registered, or the path imports and names a scorer class (as in
    :func:`get_scorer`), and ``options`` bind to its constructor's signature. Raises what
    :func:`get_scorer` would: :class:`ScorerLoadError` or :class:`ScorerInterfaceError`. The
    workflow calls it for every configured scorer before any job runs.
    """
    factory = _resolve(name_or_path)
    options = dict(options or {})
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return
    try:
        signature.bind(**options)
    except TypeError as exc:
        raise ScorerLoadError(
            f"cannot construct scorer {name_or_path!r} with options {options}: {exc}"
        ) from exc


def check_scorer(obj: object, name: str | None = None) -> None:
    """Raise :class:`ScorerInterfaceError` unless ``obj`` has ``fit(h, a)`` and ``score(u, i)``."""
    what = f"scorer {name!r}" if name else f"{type(obj).__name__} object"
    if isinstance(obj, type):
        raise ScorerInterfaceError(f"{what} is a class, not an instance: {obj!r}")
    for method in ("fit", "score"):
        fn = getattr(obj, method, None)
        if fn is None or not callable(fn):
            raise ScorerInterfaceError(
                f"{what} ({type(obj).__name__}) has no callable '{method}' method; a scorer needs "
                "fit(history, item_attributes) -> self and score(user_ids, item_ids) -> float64 "
                "array"
            )
        _check_arguments(fn, f"{what} ({type(obj).__name__}).{method}", 2)
    for method, n_args in _OPTIONAL_METHODS:
        if not hasattr(obj, method):
            continue
        fn = getattr(obj, method)
        if not callable(fn):
            raise ScorerInterfaceError(f"{what} ({type(obj).__name__}).{method} is not callable")
        _check_arguments(fn, f"{what} ({type(obj).__name__}).{method}", n_args)


#: Optional scorer methods and their number of positional arguments (see :class:`Scorer`).
_OPTIONAL_METHODS = (("calibrate", 1), ("score_matrix", 2))


def _check_arguments(fn, label: str, n_args: int) -> None:
    """Raise :class:`ScorerInterfaceError` unless ``fn`` takes ``n_args`` positional arguments."""
    try:
        inspect.signature(fn).bind(*[None] * n_args)
    except TypeError as exc:
        words = {1: "one positional argument", 2: "two positional arguments"}[n_args]
        raise ScorerInterfaceError(f"{label} cannot be called with {words}: {exc}") from exc
    except ValueError:  # pragma: no cover - builtins without a signature
        pass


def calibrate_scorer(scorer: Scorer, pairs: pd.DataFrame) -> Scorer:
    """Call ``scorer.calibrate(pairs[["user_id", "item_id"]])`` if the scorer has ``calibrate``
    (see :class:`Scorer`); a scorer without it is left as it is. Returns ``scorer``."""
    missing = [c for c in ("user_id", "item_id") if c not in pairs.columns]
    if missing:
        raise ValueError(f"calibration pairs lack column(s) {missing}")
    calibrate = getattr(scorer, "calibrate", None)
    if calibrate is not None:
        calibrate(pairs[["user_id", "item_id"]])
    return scorer


def score_candidates(
    candidates: pd.DataFrame, scorer: Scorer, *, calibrate: bool = True
) -> pd.DataFrame:
    """A copy of ``candidates`` with a float64 ``score`` column from a fitted ``scorer``.

    With ``calibrate`` (default) a scorer that has ``calibrate`` is first calibrated on the
    candidates' ``(user_id, item_id)`` pairs (:func:`calibrate_scorer`), as the pipeline's
    sampled step does; ``calibrate=False`` keeps a calibration made beforehand. All pairs are
    then scored in one call (``scorer.score(user_ids, item_ids)`` with object arrays of id
    strings, in stored order). An existing ``score`` column is replaced. The result must have one
    finite float per line, otherwise ``ValueError``.
    """
    missing = [c for c in ("user_id", "item_id") if c not in candidates.columns]
    if missing:
        raise ValueError(f"candidates lack column(s) {missing}")
    if calibrate:
        calibrate_scorer(scorer, candidates)
    users = candidates["user_id"].to_numpy(dtype=object)
    items = candidates["item_id"].to_numpy(dtype=object)
    raw = scorer.score(users, items)
    try:
        scores = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"scorer returned values that are not numbers: {exc}") from exc
    if scores.shape != (len(candidates),):
        raise ValueError(
            f"scorer returned an array of shape {scores.shape} for {len(candidates)} pairs"
        )
    bad = ~np.isfinite(scores)
    if bad.any():
        raise ValueError(
            f"scorer returned {int(bad.sum())} non-finite score(s), first at line "
            f"{int(np.flatnonzero(bad)[0])}"
        )
    out = candidates.copy()
    out["score"] = scores
    return out


def _resolve(name_or_path: str) -> Callable[..., Scorer]:
    """The factory behind a scorer name: the registered one, or the class a path names."""
    if not isinstance(name_or_path, str) or not name_or_path:
        raise ScorerLoadError(f"scorer must be a non-empty string, got {name_or_path!r}")
    if ":" in name_or_path:
        return _resolve_path(name_or_path)
    if name_or_path not in _REGISTRY:
        raise ScorerLoadError(
            f"unknown scorer {name_or_path!r}; registered: {available_scorers()}; "
            "a user scorer is given as 'package.module:Class' or 'path/to/file.py:Class'"
        )
    return _REGISTRY[name_or_path]


def _check_scorer_class(obj: object, spec: str) -> None:
    """A path must name a class implementing :class:`Scorer`, never another callable."""
    if not isinstance(obj, type):
        kind = type(obj).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise ScorerInterfaceError(
            f"scorer {spec!r} names {article} {kind}, not a class; a scorer path must name a "
            "class with fit(history, item_attributes) and score(user_ids, item_ids)"
        )
    for method in ("fit", "score"):
        if not callable(getattr(obj, method, None)):
            raise ScorerInterfaceError(
                f"scorer {spec!r} (class {obj.__name__}) has no callable '{method}' method; a "
                "scorer needs fit(history, item_attributes) -> self and "
                "score(user_ids, item_ids) -> float64 array"
            )


def _resolve_path(spec: str) -> Callable[..., Scorer]:
    module_part, _, attr_part = spec.rpartition(":")
    if not module_part or not attr_part:
        raise ScorerLoadError(f"scorer path {spec!r} must look like 'package.module:Class'")
    if module_part.endswith(".py"):
        module = _load_file(module_part, spec)
    else:
        try:
            module = importlib.import_module(module_part)
        except ImportError as exc:
            raise ScorerLoadError(
                f"cannot import module {module_part!r} for scorer {spec!r}: {exc} "
                "(is it on sys.path? a file can be given as 'path/to/file.py:Class')"
            ) from exc
        except Exception as exc:
            raise ScorerLoadError(
                f"error while importing module {module_part!r} for scorer {spec!r}: {exc!r}"
            ) from exc
    obj: object = module
    for part in attr_part.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise ScorerLoadError(
                f"module {module_part!r} has no attribute {attr_part!r} (scorer {spec!r})"
            ) from exc
    _check_scorer_class(obj, spec)
    return obj  # type: ignore[return-value]


def _load_file(path_text: str, spec_text: str):
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ScorerLoadError(f"scorer file {path_text!r} does not exist (scorer {spec_text!r})")
    try:
        return exec_file(path, "_tieaudit_user_scorer")
    except Exception as exc:
        raise ScorerLoadError(f"error while executing scorer file {path_text!r}: {exc}") from exc

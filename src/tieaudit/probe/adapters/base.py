"""The adapter protocol and registry (see :mod:`tieaudit.probe.adapters`)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from ...ties.measures import Measure, parse_measure
from ..infer import Evaluator

__all__ = ["Adapter", "AdapterError", "register", "get_adapter", "adapters", "adapter_names"]


class AdapterError(ValueError):
    """An adapter cannot give an evaluator: its library is missing, or the measure is not one it
    computes."""


@dataclass(frozen=True)
class Adapter:
    """A library evaluator (or an idiom) wrapped into the probe's contract."""

    name: str  #: what ``tieaudit probe NAME`` calls it
    library: str  #: the library's name as people know it
    module: str  #: the module imported (``available`` looks for it)
    distribution: str  #: the distribution whose version is reported
    call: str  #: the call or idiom it wraps, in one line
    measures: tuple[str, ...]  #: the measure names it computes (``nDCG``, ``HR``)
    build: Callable[[Measure], Evaluator]  #: imports the library, returns the evaluator
    extra: str | None = None  #: the pip extra of tieaudit that installs the library
    #: The device its arrays or tensors are on when probed (every adapter builds them there)
    device: str = "cpu"
    #: What the library's source does that the probe's rows or device do not show (the census
    #: says it beside the verdict), with the file that does it
    caveat: str = ""
    #: The functions whose code decides the order the evaluator ranks in (its sort, top-k or
    #: tie handling), each ``"module:qualname"`` as imported from the installed library (a
    #: compiled module's function too: ``"pytrec_eval:RelevanceEvaluator"``); the census
    #: resolves each to its file and line in the pinned version, so a verdict can be checked
    decides: tuple[str, ...] = ()

    def available(self) -> bool:
        """Whether the library is installed (found, not imported)."""
        try:
            return importlib.util.find_spec(self.module) is not None
        except (ImportError, ValueError):
            return False

    def version(self) -> str | None:
        """The installed version of the library, or ``None``."""
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    @property
    def install(self) -> str:
        """How to install the library."""
        if self.extra is None:
            return f"pip install {self.distribution}"
        return f"pip install 'tieaudit[{self.extra}]' (or: pip install {self.distribution})"

    def evaluator(self, metric: str | Measure) -> Evaluator:
        """The evaluator for ``metric``; :class:`AdapterError` when the library is missing or
        does not compute that measure."""
        measure = parse_measure(metric)
        if measure.name not in self.measures:
            raise AdapterError(
                f"adapter {self.name} computes {', '.join(self.measures)}, not {measure.name}"
            )
        if not self.available():
            raise AdapterError(
                f"adapter {self.name} needs {self.library}, which is not installed: "
                f"{self.install}"
            )
        return self.build(measure)


_REGISTRY: dict[str, Adapter] = {}


def register(adapter: Adapter) -> Adapter:
    """Add an adapter (once per name); returns it."""
    if adapter.name in _REGISTRY:
        raise ValueError(f"adapter {adapter.name!r} is registered already")
    _REGISTRY[adapter.name] = adapter
    return adapter


def get_adapter(name: str) -> Adapter:
    """The registered adapter ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(adapter_names())
        raise AdapterError(f"unknown adapter {name!r}; known: {known}") from None


def adapters() -> tuple[Adapter, ...]:
    """Every registered adapter, in registration order."""
    return tuple(_REGISTRY.values())


def adapter_names() -> list[str]:
    return list(_REGISTRY)

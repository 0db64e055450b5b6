"""``REF``, the evaluator ``tieaudit probe`` is pointed at: an adapter's name, ``package.module:
function`` or ``path/to/file.py:function``."""

from __future__ import annotations

import importlib
from pathlib import Path

from ..common.loading import exec_file
from ..ties.measures import Measure
from .adapters import AdapterError, adapter_names, get_adapter
from .calls import Evaluator, ProbeError, raised

__all__ = ["load_evaluator"]


def load_evaluator(ref: str, metric: str | Measure) -> Evaluator:
    """The evaluator ``ref`` names (an adapter's built for ``metric``); a :class:`ProbeError`
    saying what is wrong otherwise."""
    if ":" not in ref:
        if ref not in adapter_names():
            raise ProbeError(
                f"{ref!r} is no built-in adapter ({', '.join(adapter_names())}); a function of "
                "yours is given as 'package.module:function' or 'path/to/file.py:function'"
            )
        try:
            return get_adapter(ref).evaluator(metric)
        except AdapterError as exc:
            raise ProbeError(str(exc)) from None
    where, _, attr = ref.rpartition(":")
    if not where or not attr:
        raise ProbeError(f"{ref!r} must look like 'package.module:function'")
    module = _file_module(where, ref) if where.endswith(".py") else _import(where, ref)
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ProbeError(f"{where} has no attribute {attr!r} ({ref})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ProbeError(f"{ref} is a {type(obj).__name__}, not a function fn(candidates, k)")
    return obj  # type: ignore[return-value]


def _import(name: str, ref: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ProbeError(
            f"cannot import {name!r} ({ref}): {exc}; a file is given as 'path/to/file.py:function'"
        ) from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - sys.exit at import is the module's failure
        raise raised(f"importing {name!r} ({ref})", exc) from exc


def _file_module(path_text: str, ref: str):
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ProbeError(f"no file {path_text} ({ref})")
    try:
        return exec_file(path, "_tieaudit_probe")
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - sys.exit at import is the module's failure
        raise raised(f"running {path_text} ({ref})", exc) from exc


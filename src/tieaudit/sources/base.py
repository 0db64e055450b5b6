"""The dataset-source protocol, the ready-made :class:`DatasetSource`, and the registry.

A dataset source is one raw-data format. It names the files it reads (:class:`FileKey`) and the
options it takes (:class:`Option`), checks a dataset's file keys and options before anything runs
(:meth:`Source.validate`, a list of messages each naming its key), parses the raw files into the
interim pair (:meth:`Source.ingest`, see :mod:`tieaudit.data.interim`) and writes format-faithful
synthetic files of its format (:meth:`Source.generate`). The core --
:func:`tieaudit.sources.ingest.ingest`, :func:`tieaudit.sources.synthetic.generate`, the workflow's
config check and download step, the docs tables -- talks to a source only through this protocol.

Every source also takes the options in :data:`COMMON_OPTIONS` (``max_bad_lines``,
``max_line_bytes``). A source is registered once, under its name (:func:`register`); the
built-in ones register when :mod:`tieaudit.sources` imports their modules.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tieaudit.data.interim import IngestReport
from tieaudit.data.streams import MAX_LINE_BYTES, _BadLines, _line_limit

__all__ = [
    "COMMON_OPTIONS",
    "DatasetSource",
    "FileKey",
    "Option",
    "Source",
    "available_sources",
    "get_source",
    "register",
]

_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class FileKey:
    """One raw file a source reads, by its logical key (a key of ``paths`` and of a dataset's
    ``files:`` in the configuration)."""

    name: str
    #: One line for the docs: what the file is, and the real file's name.
    description: str
    #: Whether every dataset of the source has it (a source may have other rules too, see
    #: :attr:`DatasetSource.check_files`).
    required: bool = True
    #: What a download of the file must be: a format name of :func:`tieaudit.data.download.
    #: download` (``"zip"``, ``"gzip"``, ``"Parquet"``, ...), checked by its magic bytes whatever
    #: the URL is called; ``None``: whatever the file's name says.
    format: str | None = None


@dataclass(frozen=True)
class Option:
    """One option of a source's parser."""

    name: str
    #: One line for the docs.
    description: str
    #: The value when the option is not given (``None``: no default).
    default: Any = None
    #: Checks a given value: raises ``ValueError`` (or ``TypeError``) saying what is wrong. The
    #: parser runs the same check, so the config check and the parse never disagree.
    check: Callable[[Any], object] | None = None


#: The options every source takes.
COMMON_OPTIONS = (
    Option("max_bad_lines", "how many malformed records may be skipped (counted and logged); 0: "
           "the first is an error naming its file and line", 0, _BadLines),
    Option("max_line_bytes", "the longest line (CSV header or record, JSON line) accepted; a "
           "longer one is an error naming its file and line", MAX_LINE_BYTES, _line_limit),
)


@runtime_checkable
class Source(Protocol):
    """What the core asks of a dataset source."""

    #: The ``source:`` name in the configuration.
    name: str
    #: One line for the docs.
    description: str
    #: The files it reads.
    files: tuple[FileKey, ...]
    #: Its own parser options (every source also takes :data:`COMMON_OPTIONS`).
    options: tuple[Option, ...]
    #: Parser options with which :meth:`ingest` reads what :meth:`generate` writes (the
    #: conformance battery and the docs use them).
    example_options: Mapping[str, Any]

    @property
    def generator_options(self) -> tuple[str, ...]:
        """The keyword options :meth:`generate` takes besides ``scale`` and ``seed``."""
        ...

    def validate(self, files: Iterable[str], options: Mapping[str, Any]) -> list[str]:
        """Problems with a dataset's file keys and parser options, each a message starting with
        the key it is about (``files: ...``, ``options: ...``, ``options.<name>: ...``); empty
        if there are none. ``None``-valued options count as not given. Reads no file."""
        ...

    def ingest(self, paths: Mapping[str, str | os.PathLike[str]],
               out_interactions: str | os.PathLike[str], out_attributes: str | os.PathLike[str],
               **options: Any) -> IngestReport:
        """Parse the files ``paths`` (``{file key: path}``) into the interim pair."""
        ...

    def generate(self, out_dir: str | os.PathLike[str], *, scale: int, seed: int,
                 **options: Any) -> dict[str, Path]:
        """Write synthetic files in the real layout into ``out_dir``; ``{file key: path}``.
        ``scale`` is the number of users; the same arguments give the same bytes."""
        ...


@dataclass(frozen=True)
class DatasetSource:
    """A :class:`Source` made of a parser function and a generator function.

    ``parser(paths, out_interactions, out_attributes, **options) -> IngestReport`` takes its own
    options and the common ones as keywords; ``generator(out_dir, *, scale, seed, **options)``
    returns ``{file key: path}``. :meth:`validate` checks the file keys against :attr:`files` (the
    required ones must be there, no unknown ones), then :attr:`check_files`, then every given
    option with its :attr:`Option.check`, then :attr:`check_options`.
    """

    name: str
    description: str
    files: tuple[FileKey, ...]
    parser: Callable[..., IngestReport]
    generator: Callable[..., dict[str, Path]]
    options: tuple[Option, ...] = ()
    example_options: Mapping[str, Any] = field(default_factory=dict)
    #: Further rules on the set of (known) file keys given: messages, without the ``files:``.
    check_files: Callable[[set[str]], list[str]] | None = None
    #: Rules on the given options together (``None`` values left out): raises ``ValueError``.
    check_options: Callable[[Mapping[str, Any]], object] | None = None

    @property
    def generator_options(self) -> tuple[str, ...]:
        params = inspect.signature(self.generator).parameters.values()
        return tuple(p.name for p in params
                     if p.kind is p.KEYWORD_ONLY and p.name not in ("scale", "seed"))

    def validate(self, files: Iterable[str], options: Mapping[str, Any]) -> list[str]:
        errors = []
        keys = [str(k) for k in files]
        known = [f.name for f in self.files]
        for k in keys:
            if k not in known:
                errors.append(f"files: unknown key {k!r} for source {self.name}; "
                              f"expected: {', '.join(known)}")
        for f in self.files:
            if f.required and f.name not in keys:
                errors.append(f"files: missing key {f.name!r} for source {self.name}")
        if self.check_files is not None:
            errors += [f"files: {m}" for m in self.check_files({k for k in keys if k in known})]
        given = {str(k): v for k, v in options.items() if v is not None}
        accepted = {o.name: o for o in (*self.options, *COMMON_OPTIONS)}
        for name, value in given.items():
            option = accepted.get(name)
            if option is None:
                errors.append(f"options: unknown option {name!r} for source {self.name}; "
                              f"expected: {', '.join(accepted)}")
            elif option.check is not None:
                try:
                    option.check(value)
                except (ValueError, TypeError) as exc:
                    errors.append(f"options.{name}: {exc}")
        if self.check_options is not None:
            try:
                self.check_options(given)
            except (ValueError, TypeError) as exc:
                errors.append(f"options: {exc}")
        return errors

    def ingest(self, paths: Mapping[str, str | os.PathLike[str]],
               out_interactions: str | os.PathLike[str], out_attributes: str | os.PathLike[str],
               **options: Any) -> IngestReport:
        return self.parser(paths, out_interactions, out_attributes, **options)

    def generate(self, out_dir: str | os.PathLike[str], *, scale: int, seed: int,
                 **options: Any) -> dict[str, Path]:
        return self.generator(out_dir, scale=scale, seed=seed, **options)


_REGISTRY: dict[str, Source] = {}


def register(source: Source, *, replace: bool = False) -> Source:
    """Register ``source`` under ``source.name`` and return it.

    The name is lower-case letters, digits and ``_``, starting with a letter. Registering a taken
    name raises ``ValueError`` unless ``replace=True``; an object that is not a :class:`Source`
    raises ``TypeError``.
    """
    if not isinstance(source, Source):
        raise TypeError(f"{source!r} is not a dataset source (see tieaudit.sources.base.Source)")
    if not isinstance(source.name, str) or not _NAME.fullmatch(source.name):
        raise ValueError(f"source name {source.name!r}: lower-case letters, digits and '_', "
                         "starting with a letter")
    if source.name in _REGISTRY and not replace and _REGISTRY[source.name] is not source:
        raise ValueError(f"source name {source.name!r} is already registered")
    _REGISTRY[source.name] = source
    return source


def available_sources() -> list[str]:
    """The registered source names, sorted."""
    return sorted(_REGISTRY)


def get_source(name: str) -> Source:
    """The source registered as ``name``; ``ValueError`` naming the choices if there is none."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown source {name!r}; choose one of {available_sources()}") from None

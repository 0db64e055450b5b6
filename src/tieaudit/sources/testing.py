"""The source conformance battery: the checks every dataset source passes.

As scikit-learn's ``check_estimator`` does for estimators, :func:`check_source_conformance` runs
one battery on any :class:`~tieaudit.sources.base.Source`, built-in or your own::

    from tieaudit.sources.testing import check_source_conformance

    check_source_conformance(MY_SOURCE, tmp_path)       # a scratch folder it may fill
    check_source_conformance(MY_SOURCE, tmp_path, scale=100, options={"attributes": ["genre"]})

The checks, in order (the first failure raises :class:`SourceConformanceError` naming the check):

1. ``interface`` -- a :class:`~tieaudit.sources.base.Source`: a registrable name, a one-line
   description, distinct file keys and options (none shadowing a common option), example
   options it accepts;
2. ``generate`` -- ``generate(scale, seed)`` returns ``{file key: path}`` of its own keys, files
   in the folder it was given, and leaves no temporary file there;
3. ``generate-deterministic`` -- the same seed gives the same names and bytes in another folder,
   another seed other bytes;
4. ``validate`` -- the generated keys with ``options`` are accepted (``[]``); an unknown file key
   (``zipp``), each missing required key, an unknown option and a bad ``max_bad_lines`` are each
   refused with a message starting with the key it is about (``files:``, ``options``); and
   whatever file set without one of the keys ``validate`` accepts, ``ingest`` takes too;
5. ``ingest`` -- the generated files parse into the interim pair: the interim schema (extra
   interactions columns allowed after the four), ``tieaudit.source`` and ``tieaudit.timestamp``
   metadata, a report that counts the rows, distinct attribute pairs sorted by item and
   attribute, no empty attribute, no temporary file left beside the outputs;
6. ``ingest-deterministic`` -- ingesting again gives the same bytes;
7. ``corrupt`` -- each file replaced by bytes no parser accepts raises
   :class:`~tieaudit.data.streams.IngestError` naming that file (``err.file`` starts with its
   path) and leaves neither output behind.

``options`` (default: the source's ``example_options``) are the parser options; ``generator``
options go to :meth:`~tieaudit.sources.base.Source.generate`; ``keys`` picks the generated files
to use (default: all of them). Nothing here imports a test
framework: the function raises, a test calls it. The tests run it on every registered source.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from tieaudit.common.parquet import read_table
from tieaudit.data.interim import ATTRIBUTES_SCHEMA, INTERACTIONS_SCHEMA, IngestReport
from tieaudit.data.streams import IngestError
from tieaudit.sources.base import _NAME, COMMON_OPTIONS, FileKey, Option, Source

__all__ = ["SourceConformanceError", "check_source_conformance"]

#: Bytes no parser accepts as any raw file: not UTF-8, not a header, not JSON, not an archive.
CORRUPT = b"\xff\xfe\x00corrupt\x00\n\x9c\x00\xff\n"


class SourceConformanceError(AssertionError):
    """A source failed a check of :func:`check_source_conformance` (the message names it)."""


def check_source_conformance(
    source: Source,
    workdir: str | os.PathLike[str],
    *,
    scale: int = 40,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
    generator: Mapping[str, Any] | None = None,
    keys: list[str] | None = None,
) -> None:
    """Run the conformance battery (module docstring) on ``source`` in the empty or new folder
    ``workdir``; ``scale`` and ``seed`` go to its generator. Returns ``None``; raises
    :class:`SourceConformanceError` at the first failed check."""
    work = Path(workdir)
    options = dict(source.example_options if options is None else options)
    generator = dict(generator or {})
    _check_interface(source, options)
    files = _generate(source, work / "raw", scale, seed, generator)
    _check_generator_determinism(source, files, work, scale, seed, generator)
    files = {k: p for k, p in files.items() if keys is None or k in keys}
    _check_validate(source, files, options, work / "fewer")
    first = _ingest(source, files, work / "interim", options)
    again = _ingest(source, files, work / "again", options)
    for a, b in zip(first, again, strict=True):
        _check(a.read_bytes() == b.read_bytes(), "ingest-deterministic",
               f"ingesting the same files twice gave different bytes in {a.name}")
    _check_corrupt(source, files, work / "corrupt", options)


def _check(condition: bool, check: str, message: str) -> None:
    if not condition:
        raise SourceConformanceError(f"[{check}] {message}")


def _check_interface(source: Source, options: Mapping[str, Any]) -> None:
    ok = isinstance(source, Source)
    _check(ok, "interface", f"{source!r} lacks what tieaudit.sources.base.Source asks for")
    _check(isinstance(source.name, str) and bool(_NAME.fullmatch(source.name)), "interface",
           f"name {source.name!r}: lower-case letters, digits and '_', starting with a letter")
    text = source.description
    _check(isinstance(text, str) and bool(text.strip()) and "\n" not in text, "interface",
           f"description must be one non-empty line, got {text!r}")
    keys = [f.name for f in source.files]
    _check(bool(keys) and all(isinstance(f, FileKey) for f in source.files)
           and len(set(keys)) == len(keys), "interface",
           f"files must be distinct FileKey entries, got {source.files!r}")
    names = [o.name for o in source.options]
    common = {o.name for o in COMMON_OPTIONS}
    _check(all(isinstance(o, Option) for o in source.options) and len(set(names)) == len(names)
           and not common & set(names), "interface",
           f"options must be distinct Option entries, none of {sorted(common)}, got {names}")
    unknown = set(options) - set(names) - common
    _check(not unknown, "interface", f"the parser options {sorted(unknown)} are not declared")
    _check(all(isinstance(o, str) for o in source.generator_options), "interface",
           f"generator_options must be names, got {source.generator_options!r}")


def _generate(source: Source, folder: Path, scale: int, seed: int,
              generator: Mapping[str, Any]) -> dict[str, Path]:
    files = source.generate(folder, scale=scale, seed=seed, **generator)
    known = {f.name for f in source.files}
    _check(isinstance(files, dict) and set(files) <= known and bool(files), "generate",
           f"generate returned {files!r}, not {{file key: path}} of keys {sorted(known)}")
    for key, path in files.items():
        path = Path(path)
        _check(path.is_file() and path.resolve().parent == folder.resolve(), "generate",
               f"{key}: {path} is not a file written into {folder}")
    left = sorted(p.name for p in folder.iterdir() if p.name.endswith((".part", ".tmp")))
    _check(not left, "generate", f"temporary files left behind: {left}")
    return {k: Path(p) for k, p in files.items()}


def _check_generator_determinism(source: Source, files: Mapping[str, Path], work: Path,
                                 scale: int, seed: int, generator: Mapping[str, Any]) -> None:
    same = source.generate(work / "same", scale=scale, seed=seed, **generator)
    other = source.generate(work / "other", scale=scale, seed=seed + 1, **generator)
    for key, path in files.items():
        _check(Path(same[key]).name == path.name
               and Path(same[key]).read_bytes() == path.read_bytes(),
               "generate-deterministic", f"{key}: the same seed wrote other bytes")
    _check(any(Path(other[k]).read_bytes() != p.read_bytes() for k, p in files.items()),
           "generate-deterministic", "another seed wrote the same bytes")


def _check_validate(source: Source, files: Mapping[str, Path], options: Mapping[str, Any],
                    folder: Path) -> None:
    def refused(keys: list[str], opts: Mapping[str, Any], start: str, word: str) -> None:
        problems = source.validate(keys, opts)
        _check(any(p.startswith(start) and word in p for p in problems), "validate",
               f"files {keys}, options {dict(opts)}: no message starting {start!r} naming "
               f"{word!r} in {problems}")

    problems = source.validate(list(files), options)
    _check(problems == [], "validate", f"the generated files with {dict(options)}: {problems}")
    refused([*files, "zipp"], options, "files:", "'zipp'")
    for key in (f.name for f in source.files if f.required):
        refused([k for k in files if k != key], options, "files:", repr(key))
    refused(list(files), {**options, "no_such_option": 1}, "options:", "'no_such_option'")
    refused(list(files), {**options, "max_bad_lines": -1}, "options.max_bad_lines:", "-1")
    for key in files:  # what validate lets through, the parser must take
        fewer = {k: p for k, p in files.items() if k != key}
        if source.validate(list(fewer), options) == []:
            out = folder / key / "interactions.parquet", folder / key / "item_attributes.parquet"
            try:
                source.ingest(fewer, *out, **options)
            except Exception as exc:  # any failure is the finding
                _check(False, "validate", f"validate accepts the files without {key!r}, but "
                       f"ingest refuses them: {type(exc).__name__}: {exc}")


def _ingest(source: Source, files: Mapping[str, Path], folder: Path,
            options: Mapping[str, Any]) -> tuple[Path, Path]:
    out = folder / "interactions.parquet", folder / "item_attributes.parquet"
    report = source.ingest(files, *out, **options)
    _check(isinstance(report, IngestReport), "ingest", f"ingest returned {report!r}")
    inter, attrs = read_table(out[0]), read_table(out[1])
    want = INTERACTIONS_SCHEMA
    head = pa.schema(list(inter.schema.remove_metadata())[: len(want)])
    _check(head == want, "ingest", f"interactions schema {inter.schema} does not start with {want}")
    _check(attrs.schema.remove_metadata() == ATTRIBUTES_SCHEMA, "ingest",
           f"item attributes schema {attrs.schema} is not {ATTRIBUTES_SCHEMA}")
    for table in (inter, attrs):
        meta = table.schema.metadata or {}
        _check(meta.get(b"tieaudit.source") == source.name.encode()
               and meta.get(b"tieaudit.timestamp") in (b"unix-seconds", b"file-order"), "ingest",
               f"metadata {meta} lacks tieaudit.source={source.name} and tieaudit.timestamp")
    _check(report.n_interactions == inter.num_rows > 0
           and report.n_attribute_rows == attrs.num_rows > 0, "ingest",
           f"the report counts {report.n_interactions} / {report.n_attribute_rows} rows, the "
           f"files hold {inter.num_rows} / {attrs.num_rows} (both must be > 0)")
    pairs = list(zip(attrs["item_id"].to_pylist(), attrs["attribute"].to_pylist(), strict=True))
    _check(pairs == sorted(set(pairs)), "ingest",
           "item attributes are not distinct (item_id, attribute) pairs in sorted order")
    _check(all(a for _, a in pairs), "ingest", "an attribute is the empty string")
    left = sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))
    _check(not left, "ingest", f"temporary files left beside the outputs: {left}")
    return out


def _check_corrupt(source: Source, files: Mapping[str, Path], folder: Path,
                   options: Mapping[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "interactions.parquet", folder / "item_attributes.parquet"
    for key, path in files.items():
        bad = folder / path.name
        bad.write_bytes(CORRUPT)
        try:
            source.ingest({**files, key: bad}, *out, **options)
        except IngestError as exc:
            _check(str(exc.file or "").startswith(str(bad)) and str(bad) in str(exc), "corrupt",
                   f"{key}: the error does not name {bad}: {exc} (file={exc.file!r})")
        except Exception as exc:  # any other failure is the finding
            _check(False, "corrupt", f"{key}: {type(exc).__name__}, not IngestError: {exc}")
        else:
            _check(False, "corrupt", f"{key}: a corrupt {path.name} was accepted")
        _check(not out[0].exists() and not out[1].exists(), "corrupt",
               f"{key}: an output was left behind after the error")
        bad.unlink()

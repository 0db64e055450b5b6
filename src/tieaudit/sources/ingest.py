"""Parse a dataset's raw files into the interim pair: an interactions Parquet and an
item-attributes Parquet.

``ingest(source, paths, out_interactions, out_attributes, **options) -> IngestReport`` hands the
files to a registered dataset source (:func:`tieaudit.sources.get_source`; the built-in ones are
:data:`SOURCES`). ``paths`` maps the source's file keys to files; ``options`` are the source's
parser options and the ones every source takes, ``max_bad_lines`` (how many malformed records may
be skipped; default 0) and ``max_line_bytes`` (the longest line accepted; default
:data:`MAX_LINE_BYTES`). Each source's module documents its files, options and rules, and
``config/README.md`` lists them all.

The interim schema, the attribute normalisation and how the outputs are written (both or
neither, atomically) are in :mod:`tieaudit.data.interim`; reading raw files (bounded lines, bad
records) in :mod:`tieaudit.data.streams` and :mod:`tieaudit.data.tables`.

Errors in the data raise :class:`IngestError` (a ``ValueError``) naming the file and, for a bad
record, the line; wrong arguments raise ``ValueError``. On any error neither output exists
afterwards. :func:`normalise_attribute` is the text normalisation of every attribute.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tieaudit.data.interim import (
    ATTRIBUTES_SCHEMA,
    INTERACTIONS_SCHEMA,
    IngestReport,
    normalise_attribute,
)
from tieaudit.data.streams import MAX_LINE_BYTES, IngestError
from tieaudit.sources import COMMON_OPTIONS, available_sources, get_source

__all__ = [
    "ATTRIBUTES_SCHEMA",
    "INTERACTIONS_SCHEMA",
    "MAX_LINE_BYTES",
    "SOURCES",
    "IngestError",
    "IngestReport",
    "ingest",
    "normalise_attribute",
]

#: The built-in dataset sources.
SOURCES = tuple(available_sources())


def ingest(
    source: str,
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    **options: Any,
) -> IngestReport:
    """Parse ``source`` from ``paths`` into the two interim Parquet files.

    Options apply to the sources that declare them and are an error elsewhere; an option given
    as ``None`` counts as not given.
    """
    src = get_source(source)
    given = {k: v for k, v in options.items() if v is not None}
    accepted = {o.name for o in (*src.options, *COMMON_OPTIONS)}
    extra = sorted(set(given) - accepted)
    if extra:
        raise ValueError(f"option(s) {extra} do not apply to source {source!r}")
    return src.ingest(paths, out_interactions, out_attributes, **given)

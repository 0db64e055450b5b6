"""``recbole``: RecBole atomic files (Zhao et al., "RecBole: Towards a Unified, Comprehensive and
Efficient Framework for Recommendation Algorithms", CIKM 2021; format:
https://recbole.io/docs/user_guide/data/atomic_files.html), so a dataset RecBole users already
hold runs here unchanged.

Files: ``inter`` (``<dataset>.inter``) and ``item`` (``<dataset>.item``). Each is tab-separated
UTF-8 text (optionally compressed, by its name) whose first line names the fields as
``name:type``, the type one of ``token``, ``token_seq``, ``float``, ``float_seq``; a sequence's
values are separated by single spaces (RecBole's default ``field_separator`` and
``seq_separator``); a field is quoted with ``"`` only if it has to be, as pandas reads it.

* ``.inter`` needs ``user_id:token`` and ``item_id:token``; ``rating:float`` is optional (without
  it ratings are NaN) and so is ``timestamp:float`` (Unix seconds, floored to whole seconds;
  without it the file order is the time order, as for ``generic``). Other fields are ignored.
  As for ``generic``, the last interaction of a user by time is held out.
* ``.item`` needs ``item_id:token`` and the fields the ``attributes`` option names, each of type
  ``token`` (the whole value is one token) or ``token_seq`` (every space-separated token): each
  token of a named field becomes the attribute ``<field>=<normalised token>``
  (:func:`tieaudit.data.interim.normalise_attribute`); an empty value or token gives none. Other
  fields are ignored. An item on several lines gets the attributes of all of them (RecBole keeps
  the first line).

A header that is not ``name:type`` with a known type, a field that appears twice, a required
field missing or of another type, or a named attribute field that is missing or is not a token
field is an :class:`~tieaudit.data.streams.IngestError` naming the file and line 1; a malformed
record, as for every source, names its file and line (``max_bad_lines`` may skip it).

The generator writes ``<name>.inter`` and ``<name>.item`` in the layout of the MovieLens-1M
atomic files that RecBole's documentation shows: ``user_id:token item_id:token rating:float
timestamp:float`` (integer ratings 1..5, Unix seconds 2000-04-25..2003-02-28 written as
integers, rows by user then item, so file order is not time order; every user >= 20 ratings) and
``item_id:token movie_title:token_seq release_year:token genre:token_seq``. Items belong to taste
clusters whose genres they mostly take, as in the other generators. Scale: items = max(40,
ceil(0.6 * scale)) (3,883 movies / 6,040 users in ml-1m); override with ``n_items=``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from tieaudit.data.gen import (
    _atomic_file,
    _check_scale,
    _choose_counts,
    _cluster_count,
    _ClusterDraws,
    _increasing_times,
    _Lines,
    _stars,
)
from tieaudit.data.interim import (
    INTERACTIONS_SCHEMA,
    IngestReport,
    _attribute,
    _Outputs,
    _PairSorter,
    _require_paths,
    _strings,
    normalise_attribute,
)
from tieaudit.data.streams import MAX_LINE_BYTES, IngestError, _BadLines, _line_limit, _Source
from tieaudit.data.tables import _MAX_SECONDS, _Batch, _CsvReader, _read_header
from tieaudit.common.seeds import make_rng
from tieaudit.sources._movies import _GENRES, _TITLE_WORDS
from tieaudit.sources.base import DatasetSource, FileKey, Option, register

__all__ = ["SOURCE", "generate_recbole", "ingest_recbole"]

#: RecBole's field types.
TYPES = ("token", "token_seq", "float", "float_seq")
_TAB = "\t"
_KEYS = ("inter", "item")
ITEMS_PER_USER = 0.6
_S_START = 956_703_932  # 2000-04-25, the first ml-1m rating
_S_END = 1_046_454_590  # 2003-02-28, the last


# --------------------------------------------------------------------------------------------------
# parser


def _check_attributes(attributes: object) -> list[str]:
    """The ``attributes`` option: a non-empty list of distinct field names."""
    if (not isinstance(attributes, list | tuple) or not attributes
            or not all(isinstance(a, str) and a and ":" not in a for a in attributes)):
        raise ValueError(f"recbole needs attributes=[FIELD, ...], one or more .item field names "
                         f"(of type token or token_seq); got {attributes!r}")
    if len(set(attributes)) < len(attributes):
        raise ValueError(f"recbole: attributes name a field twice: {attributes!r}")
    return list(attributes)


def _check_options(options: Mapping[str, Any]) -> None:
    _check_attributes(options.get("attributes"))


def _fields(src: _Source) -> dict[str, tuple[str, str]]:
    """``{field name: (header text, type)}`` from the ``name:type`` header of an atomic file."""
    header, _ = _read_header(src, _TAB)
    fields: dict[str, tuple[str, str]] = {}
    for text in header:
        name, _, typ = text.partition(":")
        if not name or typ not in TYPES:
            raise IngestError(f"{src.label}, line 1: header field {text!r} is not name:type with "
                              f"a type of {', '.join(TYPES)}", file=src.label, line=1)
        if name in fields:
            raise IngestError(f"{src.label}, line 1: field {name!r} appears twice",
                              file=src.label, line=1)
        fields[name] = (text, typ)
    return fields


def _column(src: _Source, fields: Mapping[str, tuple[str, str]], name: str, types: tuple[str, ...],
            required: bool = True) -> str | None:
    """The header text of field ``name``, checked to have one of ``types``; ``None`` when an
    optional field is absent."""
    if name not in fields:
        if not required:
            return None
        raise IngestError(f"{src.label}, line 1: no field {name!r} (found "
                          f"{', '.join(t for t, _ in fields.values())})", file=src.label, line=1)
    text, typ = fields[name]
    if typ not in types:
        raise IngestError(f"{src.label}, line 1: field {name!r} has type {typ}, not "
                          f"{' or '.join(types)}", file=src.label, line=1)
    return text


def ingest_recbole(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    attributes: list[str] | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """RecBole atomic files: ``paths={"inter": "<dataset>.inter", "item": "<dataset>.item"}``;
    ``attributes`` names the ``.item`` token fields whose tokens become attributes (see the
    module docstring)."""
    with _Outputs("recbole", paths, out_interactions, out_attributes) as out:
        names = _check_attributes(attributes)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        files = _require_paths("recbole", paths, list(_KEYS))
        inter = _Source(files["inter"], max_line_bytes=limit)
        item = _Source(files["item"], max_line_bytes=limit)
        fields = _fields(inter)
        user = _column(inter, fields, "user_id", ("token",))
        item_id = _column(inter, fields, "item_id", ("token",))
        rating = _column(inter, fields, "rating", ("float",), required=False)
        time = _column(inter, fields, "timestamp", ("float",), required=False)
        item_fields = _fields(item)
        columns = {name: _column(item, item_fields, name, ("token", "token_seq"))
                   for name in ["item_id", *names]}
        kinds = {user: "str", item_id: "str"}
        kinds.update({c: kind for c, kind in ((rating, "float?"), (time, "float")) if c})
        reader = _CsvReader(inter, kinds, bad, delimiter=_TAB)
        out.start(INTERACTIONS_SCHEMA, "file-order" if time is None else "unix-seconds")
        for batch in reader:
            if time is not None:
                batch = _whole_seconds(batch, time, bad)
            c = batch.columns
            out.interactions.write({
                "user_id": c[user],
                "item_id": c[item_id],
                "rating": c[rating] if rating else np.full(len(batch), np.nan),
                "timestamp": c[time] if time else batch.lines - reader.first_line,
            })
        _item_attributes(item, columns, item_fields, out.pairs, bad)
    return out.report(bad)


def _whole_seconds(batch: _Batch, column: str, bad: _BadLines) -> _Batch:
    """Float seconds floored to int64; a value more than 230 years from 1970 is a bad record."""
    raw = batch.columns[column]
    batch = batch.reject(
        ~(np.abs(raw) <= _MAX_SECONDS),
        lambda i: f"timestamp {raw[i]} s is after 2200-01-01 or before 1740-01-01 (wrong unit?)",
        bad,
    )
    batch.columns[column] = np.floor(batch.columns[column]).astype(np.int64)
    return batch


def _item_attributes(src: _Source, columns: Mapping[str, str | None],
                     fields: Mapping[str, tuple[str, str]], pairs: _PairSorter,
                     bad: _BadLines) -> None:
    item = columns["item_id"]
    kinds = {c: "str?" for c in columns.values() if c}
    kinds[item] = "str"
    for batch in _CsvReader(src, kinds, bad, delimiter=_TAB):
        items = batch.columns[item]
        for name, column in columns.items():
            if name == "item_id" or column is None:
                continue
            values, owners = batch.columns[column], items
            if fields[name][1] == "token_seq":
                tokens = pc.split_pattern(values, " ")
                owners = items.take(pc.list_parent_indices(tokens))
                values = pc.list_flatten(tokens)
            enc = pc.dictionary_encode(values)
            prefix = normalise_attribute(name) + "="
            local = _strings([_attribute(prefix, v) for v in enc.dictionary.to_pylist()])
            attrs = local.take(enc.indices)
            keep = pc.greater(pc.binary_length(attrs), 0)
            pairs.add(owners.filter(keep), attrs.filter(keep))


# --------------------------------------------------------------------------------------------------
# generator


def generate_recbole(
    out_dir: Path | str, *, scale: int, seed: int, n_items: int | None = None,
    name: str = "synthetic",
) -> dict[str, Path]:
    """RecBole atomic files ``<name>.inter`` and ``<name>.item`` in the layout of MovieLens-1M's
    (see the module docstring); ``n_items`` sets the number of items (default ``max(40,
    ceil(0.6 * scale))``). Returns ``{"inter": path, "item": path}``."""
    _check_scale(scale, minimum=1)
    n = n_items if n_items is not None else max(40, math.ceil(ITEMS_PER_USER * scale))
    if n < 40:
        raise ValueError(f"need at least 40 items, got {n}")
    if not name or any(ch in name for ch in "/\\\0"):
        raise ValueError(f"name must be a file name stem, got {name!r}")
    rng = make_rng(seed, "recbole", "world")
    k = _cluster_count(n)
    item_cluster = rng.integers(0, k, n)
    cluster_genres = np.stack([rng.choice(len(_GENRES), 2, replace=False) for _ in range(k)])
    gaps = rng.geometric(0.8, size=n)
    item_ids = np.cumsum(gaps).tolist()  # increasing, a little sparse (ml-1m: 1..3952)
    out = Path(out_dir)
    paths = {"inter": out / f"{name}.inter", "item": out / f"{name}.item"}

    item_lines = ["item_id:token\tmovie_title:token_seq\trelease_year:token\tgenre:token_seq\n"]
    for i in range(n):
        words = rng.integers(0, len(_TITLE_WORDS), int(rng.integers(1, 4))).tolist()
        genres = {int(g) for g in cluster_genres[item_cluster[i]] if rng.random() < 0.8}
        if rng.random() < 0.3 or not genres:
            genres.add(int(rng.integers(len(_GENRES))))
        item_lines.append(
            f"{item_ids[i]}\t{' '.join(_TITLE_WORDS[w] for w in words)}\t"
            f"{int(rng.integers(1919, 2001))}\t{' '.join(_GENRES[g] for g in sorted(genres))}\n"
        )
    with _atomic_file(paths["item"]) as fh:
        fh.write("".join(item_lines).encode("utf-8"))

    draws = _ClusterDraws(item_cluster, k)
    primary = rng.integers(0, k, scale)
    lengths = np.minimum(_choose_counts(rng, scale, 20, 20.0, 200), n // 2)
    with _atomic_file(paths["inter"]) as fh:
        lines = _Lines(fh)
        lines.add("user_id:token\titem_id:token\trating:float\ttimestamp:float\n")
        for u in range(scale):
            c = int(primary[u])
            items = draws.items(rng, c, int(lengths[u]), 0.85, 0.15)
            times = _increasing_times(rng, len(items), _S_START, _S_END, 2 * 86_400.0, 1)
            stars = [_stars(rng, item_cluster[it] == c) for it in items]
            for p in np.argsort(items, kind="stable").tolist():  # by item: not in time order
                lines.add(f"{u + 1}\t{item_ids[items[p]]}\t{stars[p]}\t{int(times[p])}\n")
        lines.flush()
    return paths


#: The ``recbole`` source, registered: its files, options and reader.
SOURCE = register(DatasetSource(
    name="recbole",
    description="RecBole atomic files: interactions and item token fields as attributes",
    files=(
        FileKey("inter", "interactions (`<dataset>.inter`): `user_id:token`, `item_id:token`, "
                "optional `rating:float`, `timestamp:float`"),
        FileKey("item", "item features (`<dataset>.item`): `item_id:token` and the attribute "
                "fields"),
    ),
    parser=ingest_recbole,
    generator=generate_recbole,
    options=(
        Option("attributes", "which `.item` fields (required; type token or token_seq) give "
               "attributes: each token, written `<field>=<normalised token>`"),
    ),
    example_options={"attributes": ["genre", "release_year"]},
    check_options=_check_options,
))

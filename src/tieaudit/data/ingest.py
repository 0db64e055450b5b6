"""Parse every raw source into one interim form: an interactions Parquet and an item-attributes Parquet.

API
---
``ingest(source, paths, out_interactions, out_attributes, *, attributes=, threshold=, top_n=,
k_core=, timestamp_unit=, max_bad_lines=0, max_line_bytes=MAX_LINE_BYTES) -> IngestReport`` dispatches to :func:`ingest_amazon2023`,
:func:`ingest_movielens`, :func:`ingest_genome2021` or :func:`ingest_generic`. ``paths`` keys:

==============  ===================================================================================
``amazon2023``  ``meta`` and either ``train``, ``valid``, ``test`` (the benchmark CSVs) or ``reviews``
``movielens``   ``zip`` (``ml-25m.zip``)
``genome2021``  ``zip`` (``genome_2021.zip``)
``generic``     ``interactions``, ``item_attributes`` (CSV, optionally compressed, or Parquet)
==============  ===================================================================================

Errors in the data raise :class:`IngestError` (a ``ValueError``); wrong arguments raise
``ValueError``. :func:`normalise_attribute` is the text normalisation of every attribute.

The interim schema (columns, types, file-order timestamps), the attribute normalisation and how
the outputs are written are described in :mod:`tieaudit.data.interim`; reading raw files
(bounded lines, bad records) in :mod:`tieaudit.data.streams` and :mod:`tieaudit.data.tables`.

Units: Amazon timestamps are Unix milliseconds and become seconds by floor division by 1000;
MovieLens is in seconds; ``generic`` takes ``timestamp_unit`` (``"s"`` default, or ``"ms"``; a Parquet
``timestamp[unit]`` column carries its own unit). A converted timestamp after 2200-01-01 is rejected as
a bad record (it almost always means milliseconds read as seconds).

Attribute strings
-----------------
An attribute is ``<field>=<normalised value>`` so equal texts from different fields stay distinct:

* ``amazon2023`` (the ``attributes`` option, one or more of):
  ``store`` -> ``store=l'oreal paris``; ``main_category`` -> ``main_category=all beauty``;
  ``categories`` -> one attribute per list element, ``categories=skin care``;
  ``details.<Key>`` (``Key`` matched exactly, e.g. ``details.Brand``, ``details.Item Form``) ->
  ``details.brand=...``, ``details.item form=...`` (the field part is normalised too).
  A details value may be a string, a number (its Python ``str``) or a list of those (one attribute
  each). ``null`` or an absent field gives no attribute; any other type is a bad record.
* ``movielens`` / ``genome2021``: ``tag=<normalised tag>`` for the selected genome tags.
* ``generic``: the given attribute text, normalised (no prefix added).

Genome tag selection (``threshold`` and/or ``top_n``; at least one is required)
-------------------------------------------------------------------------------
A pair (movie, tag) is kept when its relevance (ml-25m ``genome-scores.csv``) or score (genome 2021
``scores/glmer.csv``) is ``>= threshold``; with ``top_n`` only the ``top_n`` best of a movie's
remaining tags are kept. Ties are broken deterministically: relevance descending, then the attribute
string ascending (code-point order), so the choice never depends on file order. Tags whose texts
normalise to the same attribute are merged first, keeping their highest relevance.

Robustness
----------
No line may be longer than ``max_line_bytes`` (default :data:`MAX_LINE_BYTES`, 64 MiB). A malformed
record raises :class:`IngestError` naming the file and line unless ``max_bad_lines`` allows it; an
empty file is an error. Memory does not grow with the input, except for Amazon raw reviews,
which are held in memory (de-duplication and k-core need them all); genome tags keep only each
movie's current candidates. On any error neither output exists afterwards.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tieaudit.data.interim import (
    ATTRIBUTES_SCHEMA,
    INTERACTIONS_SCHEMA,
    ROW_GROUP_ROWS,
    IngestReport,
    _attribute,
    _Outputs,
    _PairSorter,
    _ParquetSink,
    _require_paths,
    _strings,
    normalise_attribute,
)
from tieaudit.data.streams import (
    MAX_LINE_BYTES,
    IngestError,
    _BadLines,
    _BadRecord,
    _json_batches,
    _json_lines,
    _json_type,
    _line_limit,
    _req_int,
    _req_number,
    _req_str,
    _Source,
    _zip_sources,
)
from tieaudit.data.tables import (
    _MAX_SECONDS,
    _check_seconds,
    _CsvReader,
    _table_reader,
    _to_seconds,
)

__all__ = [
    "ATTRIBUTE_FORMS",
    "ATTRIBUTES_SCHEMA",
    "INTERACTIONS_SCHEMA",
    "MAX_LINE_BYTES",
    "SOURCES",
    "IngestError",
    "IngestReport",
    "ingest",
    "ingest_amazon2023",
    "ingest_generic",
    "ingest_genome2021",
    "ingest_movielens",
    "normalise_attribute",
]


SOURCES = ("amazon2023", "movielens", "genome2021", "generic")
#: The attribute field specs ``amazon2023`` accepts.
ATTRIBUTE_FORMS = ("store", "categories", "main_category", "details.<Key>")

_AMAZON_SPLIT_SCHEMA = INTERACTIONS_SCHEMA.append(pa.field("split", pa.string(), nullable=False))
_REDUCE_ROWS = 1 << 19
_AMAZON_SPLITS = ("train", "valid", "test")


# --------------------------------------------------------------------------------------------------
# normalisation and attribute specs

@dataclass(frozen=True)
class _AttributeSpec:
    field: str  # top-level record field
    key: str | None  # details key
    prefix: str  # normalised spec + "="


def _parse_attribute_specs(specs: Sequence[str] | None) -> tuple[_AttributeSpec, ...]:
    valid = ", ".join(repr(f) for f in ATTRIBUTE_FORMS)
    if specs is None or isinstance(specs, str) or len(specs) == 0:
        raise ValueError(
            f"amazon2023 needs attributes=[...], a list of one or more of {valid} "
            f"(e.g. ['store', 'categories', 'details.Brand']); got {specs!r}"
        )
    parsed: dict[str, _AttributeSpec] = {}
    for spec in specs:
        if spec in ("store", "categories", "main_category"):
            parsed[spec] = _AttributeSpec(spec, None, spec + "=")
        elif isinstance(spec, str) and spec.startswith("details.") and spec[8:].strip():
            parsed[spec] = _AttributeSpec("details", spec[8:], normalise_attribute(spec) + "=")
        else:
            raise ValueError(f"unknown attribute field {spec!r}; valid forms are {valid}")
    return tuple(parsed.values())


def _spec_values(record: dict[str, Any], spec: _AttributeSpec) -> list[str]:
    if spec.key is None:
        value = record.get(spec.field)
        if value is None:
            return []
        if spec.field == "categories":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _BadRecord("field 'categories' must be a list of strings")
            return value
        if not isinstance(value, str):
            raise _BadRecord(f"field {spec.field!r} must be a string or null, got {_json_type(value)}")
        return [value]
    details = record.get("details")
    if details is None:
        return []
    if not isinstance(details, dict):
        raise _BadRecord(f"field 'details' must be an object, got {_json_type(details)}")
    value = details.get(spec.key)
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items:
        if v is None:
            continue
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, int | float) and not isinstance(v, bool):
            out.append(str(v))
        else:
            raise _BadRecord(
                f"details[{spec.key!r}] must be a string, number or list of those, "
                f"got {_json_type(v)}"
            )
    return out


# --------------------------------------------------------------------------------------------------
# amazon2023


def ingest_amazon2023(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    attributes: Sequence[str] | None = None,
    k_core: int = 5,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Amazon Reviews 2023 (one category, e.g. Beauty_and_Personal_Care).

    ``paths``: ``meta`` (``meta_<Category>.jsonl.gz``) and either the benchmark files ``train``,
    ``valid``, ``test`` (``<Category>.{train,valid,test}.csv.gz``; interactions get a ``split``
    column) or ``reviews`` (raw ``<Category>.jsonl.gz``; interactions are de-duplicated, the earliest
    review of a (user, parent_asin) kept, ties by file order, then filtered to the iterative
    ``k_core``: every user and item keeps at least ``k_core`` interactions). Items are
    ``parent_asin``; timestamps are milliseconds, floored to seconds.
    """
    dropped: dict[str, int] = {}
    with _Outputs("amazon2023", paths, out_interactions, out_attributes) as out:
        specs = _parse_attribute_specs(attributes)
        if isinstance(k_core, bool) or not isinstance(k_core, int) or k_core < 1:
            raise ValueError(f"k_core must be an integer >= 1, got {k_core!r}")
        if "reviews" in paths and any(k in paths for k in _AMAZON_SPLITS):
            raise ValueError("amazon2023: give either the benchmark files (train/valid/test) or "
                             "the raw reviews, not both")
        required = ("meta", *_AMAZON_SPLITS) if "reviews" not in paths else ("meta", "reviews")
        files = _require_paths("amazon2023", paths, required)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        out.start(INTERACTIONS_SCHEMA if "reviews" in files else _AMAZON_SPLIT_SCHEMA,
                  "unix-seconds")
        if "reviews" in files:
            reviews = _Source(files["reviews"], max_line_bytes=limit)
            dropped = _amazon_reviews(reviews, out.interactions, k_core, bad)
        else:
            for split in _AMAZON_SPLITS:
                _amazon_split(_Source(files[split], max_line_bytes=limit), split, out.interactions,
                              bad)
        _amazon_meta(_Source(files["meta"], max_line_bytes=limit), specs, out.pairs, bad)
    return out.report(bad, dropped)


def _amazon_split(src: _Source, split: str, sink: _ParquetSink, bad: _BadLines) -> None:
    kinds = {"user_id": "str", "parent_asin": "str", "rating": "float", "timestamp": "int"}
    # ``history`` is not read, but the parser still checks every line has all five columns.
    for batch in _CsvReader(src, kinds, bad):
        batch.columns["timestamp"] = _to_seconds(batch.columns["timestamp"], "ms")
        batch = _check_seconds(batch, bad)
        c = batch.columns
        sink.write(
            {
                "user_id": c["user_id"],
                "item_id": c["parent_asin"],
                "rating": c["rating"],
                "timestamp": c["timestamp"],
                "split": pa.repeat(split, len(batch)),
            }
        )


def _amazon_meta(src: _Source, specs: Sequence[_AttributeSpec], pairs: _PairSorter,
                 bad: _BadLines) -> None:
    def parse(line: int, record: dict[str, Any]) -> tuple[str, list[str]]:
        found = [a for spec in specs for v in _spec_values(record, spec)
                 if (a := _attribute(spec.prefix, v))]
        return _req_str(record, "parent_asin"), found

    for rows in _json_batches(src, bad, parse):
        pairs.add(_strings([asin for asin, found in rows for _ in found]),
                  _strings([a for _, found in rows for a in found]))


def _amazon_reviews(src: _Source, sink: _ParquetSink, k_core: int, bad: _BadLines) -> dict[str, int]:
    def parse(line: int, rec: dict[str, Any]) -> tuple[str, str, float, int]:
        ts = _req_int(rec, "timestamp") // 1000
        if ts > _MAX_SECONDS:
            raise _BadRecord(f"timestamp {rec['timestamp']} ms is after 2200-01-01 (wrong unit?)")
        return _req_str(rec, "user_id"), _req_str(rec, "parent_asin"), _req_number(rec, "rating"), ts

    users: list[pa.Array] = []
    items: list[pa.Array] = []
    ratings: list[np.ndarray] = []
    stamps: list[np.ndarray] = []
    for rows in _json_batches(src, bad, parse):
        u, i, r, t = zip(*rows, strict=True)
        users.append(_strings(u))
        items.append(_strings(i))
        ratings.append(np.asarray(r, np.float64))
        stamps.append(np.asarray(t, np.int64))
    user_arr = pa.chunked_array(users, pa.string())
    item_arr = pa.chunked_array(items, pa.string())
    rating = np.concatenate(ratings) if ratings else np.empty(0)
    ts = np.concatenate(stamps) if stamps else np.empty(0, np.int64)
    user_codes = _codes(user_arr)
    item_codes = _codes(item_arr)
    n = len(ts)
    # Earliest review per (user, item); equal timestamps: the first in the file.
    order = np.lexsort((np.arange(n), ts, item_codes, user_codes))
    su, si = user_codes[order], item_codes[order]
    first = np.ones(n, bool)
    first[1:] = (su[1:] != su[:-1]) | (si[1:] != si[:-1])
    keep = np.sort(order[first])
    n_dedup = len(keep)
    core = _k_core_mask(user_codes[keep], item_codes[keep], k_core)
    keep = keep[core]
    if len(keep) == 0:
        raise IngestError(f"{src.label}: no interactions survive the {k_core}-core filter",
                          file=src.label)
    idx = pa.array(keep)
    for start in range(0, len(keep), ROW_GROUP_ROWS):
        part = idx.slice(start, ROW_GROUP_ROWS)
        sl = keep[start:start + ROW_GROUP_ROWS]
        sink.write({"user_id": user_arr.take(part), "item_id": item_arr.take(part),
                    "rating": rating[sl], "timestamp": ts[sl]})
    return {"duplicate_reviews": n - n_dedup, "k_core": n_dedup - len(keep)}


def _codes(arr: pa.ChunkedArray) -> np.ndarray:
    """Integer codes (first-appearance order) of a string column."""
    enc = pc.dictionary_encode(arr.cast(pa.large_string()).combine_chunks())
    return enc.indices.to_numpy().astype(np.int64)


def _k_core_mask(users: np.ndarray, items: np.ndarray, k: int) -> np.ndarray:
    """Rows kept by the iterative k-core: repeat dropping users and items with < k rows."""
    keep = np.ones(len(users), bool)
    nu = int(users.max()) + 1 if len(users) else 0
    ni = int(items.max()) + 1 if len(items) else 0
    while True:
        cu = np.bincount(users[keep], minlength=nu)
        ci = np.bincount(items[keep], minlength=ni)
        new = keep & (cu[users] >= k) & (ci[items] >= k)
        if np.array_equal(new, keep):
            return keep
        keep = new


# --------------------------------------------------------------------------------------------------
# genome tags (movielens, genome2021)


class _TagSelector:
    """Keeps (item, tag) pairs with score >= threshold and/or each item's top_n, as documented."""

    def __init__(self, attributes: Sequence[str], threshold: float | None, top_n: int | None) -> None:
        self.threshold, self.top_n = threshold, top_n
        # Attribute codes are ranks in sorted order, so "attribute ascending" is "code ascending".
        self.attributes = sorted(set(attributes))
        self.code = {a: k for k, a in enumerate(self.attributes)}
        self.item_code: dict[str, int] = {}
        self._kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._rows = self._reduced = 0

    @staticmethod
    def check(threshold: float | None, top_n: int | None) -> None:
        """Validate the options (before any file is read)."""
        if threshold is None and top_n is None:
            raise ValueError("genome tags need threshold=... and/or top_n=...")
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, int | float)
            or not math.isfinite(threshold)
        ):
            raise ValueError(f"threshold must be a finite number, got {threshold!r}")
        if top_n is not None and (isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1):
            raise ValueError(f"top_n must be an integer >= 1, got {top_n!r}")

    def add(self, items: pa.Array, attr_codes: np.ndarray, scores: np.ndarray) -> None:
        if self.threshold is not None:
            ok = scores >= self.threshold
            items, attr_codes, scores = items.filter(pa.array(ok)), attr_codes[ok], scores[ok]
        enc = pc.dictionary_encode(items)
        local = np.array(
            [self.item_code.setdefault(v, len(self.item_code)) for v in enc.dictionary.to_pylist()],
            np.int64,
        )
        codes = local[enc.indices.to_numpy()] if len(local) else np.empty(0, np.int64)
        self._kept.append((codes, attr_codes, scores))
        self._rows += len(codes)
        # Reduce to the current top_n once the new rows outnumber the kept ones (and a floor):
        # linear time overall, memory bounded by the candidates plus one such stretch.
        if self.top_n is not None and self._rows - self._reduced > max(_REDUCE_ROWS, self._reduced):
            self._reduce()

    def _reduce(self) -> None:
        self._kept = [self._top_n(*map(np.concatenate, zip(*self._kept, strict=True)))]
        self._rows = self._reduced = len(self._kept[0][0])

    def _top_n(self, items: np.ndarray, attrs: np.ndarray, scores: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each item's ``top_n`` distinct attributes by (score desc, attribute asc)."""
        n_attrs = len(self.attributes)
        # Sort on one int64 key where it fits (a single argsort is several times faster than a
        # three-key lexsort): the dense rank of -score stands in for the score.
        _, srank = np.unique(-scores, return_inverse=True)
        n_ranks = int(srank.max()) + 1 if len(srank) else 1
        pair = items * n_attrs + attrs
        fits = (int(items.max(initial=0)) + 1) * n_attrs * n_ranks < 1 << 62
        by_pair = np.argsort(pair * n_ranks + srank) if fits else np.lexsort((srank, pair))
        # Merge equal (item, attribute) pairs, keeping the best score: the first in pair order.
        first = np.ones(len(pair), bool)
        first[1:] = pair[by_pair][1:] != pair[by_pair][:-1]
        kept = by_pair[first]
        i, r, a = items[kept], srank[kept], attrs[kept]
        kept = kept[np.argsort((i * n_ranks + r) * n_attrs + a) if fits else np.lexsort((a, r, i))]
        items, attrs, scores = items[kept], attrs[kept], scores[kept]
        start = np.ones(len(items), bool)
        start[1:] = items[1:] != items[:-1]
        pos = np.arange(len(items))
        rank = pos - np.maximum.accumulate(np.where(start, pos, 0))
        keep = rank < self.top_n
        return items[keep], attrs[keep], scores[keep]

    def write(self, pairs: _PairSorter) -> None:
        if not self._kept:
            return
        if self.top_n is not None:
            self._reduce()
        items, attrs, _ = map(np.concatenate, zip(*self._kept, strict=True))
        names = _strings(list(self.item_code))
        vocab = _strings(self.attributes)
        pairs.add(names.take(pa.array(items)), vocab.take(pa.array(attrs)))


def _tag_batches(reader: _CsvReader, item: str, tag: str, score: str,
                 tag_attr: Mapping[str, str], selector: _TagSelector, bad: _BadLines) -> None:
    for batch in reader:
        keys = batch.columns[tag]
        # Map tag keys to attribute codes through the batch's distinct keys.
        enc = pc.dictionary_encode(keys)
        distinct = enc.dictionary.to_pylist()
        local = np.array([selector.code.get(tag_attr.get(k, ""), -1) for k in distinct], np.int64)
        codes = local[enc.indices.to_numpy()]
        unknown = codes < 0
        if unknown.any():
            batch = batch.reject(unknown, lambda i, keys=keys: f"{tag} {keys[i].as_py()!r} "
                                 "is not in the tag list", bad)
            codes = codes[~unknown]
        selector.add(batch.columns[item], codes, batch.columns[score])


def _tag_vocabulary(records: Iterable[tuple[int, str, str]], label: str,
                    bad: _BadLines) -> dict[str, str]:
    """``{tag key: "tag=<normalised text>"}`` from ``(line, key, text)``; duplicates are bad."""
    vocab: dict[str, str] = {}
    for line, key, text in records:
        attr = _attribute("tag=", text)
        if key in vocab:
            bad(label, line, f"duplicate tag key {key!r}")
        elif not attr:
            bad(label, line, "tag text is empty after normalisation")
        else:
            vocab[key] = attr
    if not vocab:
        raise IngestError(f"{label}: no usable tags", file=label)
    return vocab


def ingest_movielens(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    top_n: int | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """MovieLens 25M: ``paths={"zip": "ml-25m.zip"}``; reads ``ml-25m/ratings.csv`` (seconds),
    ``ml-25m/genome-tags.csv`` and ``ml-25m/genome-scores.csv`` straight from the archive."""
    with _Outputs("movielens", paths, out_interactions, out_attributes) as out:
        _TagSelector.check(threshold, top_n)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        files = _require_paths("movielens", paths, ["zip"])
        ratings, tags, scores = _zip_sources(
            files["zip"], ["ml-25m/ratings.csv", "ml-25m/genome-tags.csv", "ml-25m/genome-scores.csv"],
            limit,
        )
        out.start(INTERACTIONS_SCHEMA, "unix-seconds")
        tag_rows = (
            (int(line), tid.as_py(), text.as_py())
            for b in _CsvReader(tags, {"tagId": "str", "tag": "str"}, bad)
            for line, tid, text in zip(b.lines, b.columns["tagId"], b.columns["tag"], strict=True)
        )
        vocab = _tag_vocabulary(tag_rows, tags.label, bad)
        selector = _TagSelector(list(vocab.values()), threshold, top_n)
        reader = _CsvReader(scores, {"movieId": "str", "tagId": "str", "relevance": "float"}, bad)
        _tag_batches(reader, "movieId", "tagId", "relevance", vocab, selector, bad)
        kinds = {"userId": "str", "movieId": "str", "rating": "float", "timestamp": "int"}
        for batch in _CsvReader(ratings, kinds, bad):
            batch = _check_seconds(batch, bad)
            c = batch.columns
            out.interactions.write({"user_id": c["userId"], "item_id": c["movieId"],
                                    "rating": c["rating"], "timestamp": c["timestamp"]})
        selector.write(out.pairs)
    return out.report(bad)


def ingest_genome2021(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    threshold: float | None = None,
    top_n: int | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Tag Genome 2021: ``paths={"zip": "genome_2021.zip"}``; reads
    ``movie_dataset_public_final/raw/ratings.json`` (no time: file-order timestamps),
    ``raw/tags.json`` (the tag list) and ``scores/glmer.csv`` (``tag,item_id,score``)."""
    with _Outputs("genome2021", paths, out_interactions, out_attributes) as out:
        _TagSelector.check(threshold, top_n)
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        files = _require_paths("genome2021", paths, ["zip"])
        top = "movie_dataset_public_final/"
        ratings, tags, scores = _zip_sources(
            files["zip"], [top + "raw/ratings.json", top + "raw/tags.json", top + "scores/glmer.csv"],
            limit,
        )
        out.start(INTERACTIONS_SCHEMA, "file-order")
        vocab = _tag_vocabulary(_genome2021_tags(tags, bad), tags.label, bad)
        selector = _TagSelector(list(vocab.values()), threshold, top_n)
        reader = _CsvReader(scores, {"tag": "str", "item_id": "str", "score": "float"}, bad)
        _tag_batches(reader, "item_id", "tag", "score", vocab, selector, bad)
        _genome2021_ratings(ratings, out.interactions, bad)
        selector.write(out.pairs)
    return out.report(bad)


def _genome2021_tags(src: _Source, bad: _BadLines) -> Iterator[tuple[int, str, str]]:
    """``(line, tag, tag)`` from ``tags.json`` lines ``{"tag": ..., "id": ...}`` (glmer.csv names
    tags by their text, so the text is the key)."""
    for line, rec in _json_lines(src, bad):
        try:
            text = _req_str(rec, "tag")
            _req_int(rec, "id")
        except _BadRecord as exc:
            bad(src.label, line, str(exc))
            continue
        yield line, text, text


def _genome2021_ratings(src: _Source, sink: _ParquetSink, bad: _BadLines) -> None:
    """genome2021 ``ratings.json`` lines ``{"item_id", "user_id", "rating"}`` without time; ids may
    be strings or integers; timestamp = line number - 1 (file order)."""

    def parse(line: int, rec: dict[str, Any]) -> tuple[str, str, float, int]:
        return (_req_str(rec, "user_id", allow_int=True), _req_str(rec, "item_id", allow_int=True),
                _req_number(rec, "rating"), line - 1)

    for rows in _json_batches(src, bad, parse):
        u, i, r, t = zip(*rows, strict=True)
        sink.write({"user_id": _strings(u), "item_id": _strings(i),
                    "rating": np.asarray(r, np.float64), "timestamp": np.asarray(t, np.int64)})


# --------------------------------------------------------------------------------------------------
# generic


def ingest_generic(
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    timestamp_unit: str = "s",
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Bring your own data: ``paths={"interactions": ..., "item_attributes": ...}``, each CSV
    (optionally compressed, e.g. ``.csv.gz``) or Parquet (recognised by its magic bytes).

    ``interactions`` has ``user_id``, ``item_id`` and optionally ``rating`` (empty -> NaN) and
    ``timestamp`` (integers in ``timestamp_unit``; without the column the file order is the time
    order, see the module docstring). ``item_attributes`` has ``item_id``, ``attribute`` (the text is
    normalised; no field prefix is added). Parquet id columns may be strings or integers.
    """
    with _Outputs("generic", paths, out_interactions, out_attributes) as out:
        if timestamp_unit not in ("s", "ms"):
            raise ValueError(f"timestamp_unit must be 's' or 'ms', got {timestamp_unit!r}")
        files = _require_paths("generic", paths, ["interactions", "item_attributes"])
        bad = _BadLines(max_bad_lines)
        limit = _line_limit(max_line_bytes)
        kinds = {"user_id": "str", "item_id": "str", "rating": "float?", "timestamp": "int"}
        reader = _table_reader(_Source(files["interactions"], max_line_bytes=limit), kinds, bad,
                               ("rating", "timestamp"))
        has_time = "timestamp" in reader.columns
        unit = reader.unit or timestamp_unit
        out.start(INTERACTIONS_SCHEMA, "unix-seconds" if has_time else "file-order")
        for batch in reader:
            if has_time:
                batch.columns["timestamp"] = _to_seconds(batch.columns["timestamp"], unit)
                batch = _check_seconds(batch, bad)
            c = batch.columns
            out.interactions.write({
                "user_id": c["user_id"],
                "item_id": c["item_id"],
                "rating": c["rating"] if "rating" in c else np.full(len(batch), np.nan),
                "timestamp": c["timestamp"] if has_time else batch.lines - reader.first_line,
            })
        _generic_attributes(_Source(files["item_attributes"], max_line_bytes=limit), out.pairs, bad)
    return out.report(bad)


def _generic_attributes(src: _Source, pairs: _PairSorter, bad: _BadLines) -> None:
    reader = _table_reader(src, {"item_id": "str", "attribute": "str"}, bad)
    for batch in reader:
        enc = pc.dictionary_encode(batch.columns["attribute"])
        local = _strings([normalise_attribute(v) for v in enc.dictionary.to_pylist()])
        normalised = local.take(enc.indices)
        empty = pc.equal(pc.binary_length(normalised), 0).to_numpy(zero_copy_only=False)
        if empty.any():
            batch = batch.reject(empty, lambda i: "attribute is empty after normalisation", bad)
            normalised = normalised.filter(pa.array(~empty))
        pairs.add(batch.columns["item_id"], normalised)


# --------------------------------------------------------------------------------------------------
# entry point


def ingest(
    source: str,
    paths: Mapping[str, str | os.PathLike[str]],
    out_interactions: str | os.PathLike[str],
    out_attributes: str | os.PathLike[str],
    *,
    attributes: Sequence[str] | None = None,
    threshold: float | None = None,
    top_n: int | None = None,
    k_core: int | None = None,
    timestamp_unit: str | None = None,
    max_bad_lines: int = 0,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> IngestReport:
    """Parse ``source`` (one of :data:`SOURCES`) from ``paths`` into the two interim Parquet files.

    Options apply to one source each and are an error elsewhere: ``attributes`` and ``k_core``
    (``amazon2023``), ``threshold`` / ``top_n`` (``movielens``, ``genome2021``), ``timestamp_unit``
    (``generic``). ``max_bad_lines`` (all sources) is how many malformed records may be skipped;
    ``max_line_bytes`` (all sources) is the longest line accepted.
    See the module docstring for the schema, the ``paths`` keys and the rules.
    """
    given = {k: v for k, v in dict(attributes=attributes, threshold=threshold, top_n=top_n,
                                    k_core=k_core, timestamp_unit=timestamp_unit).items()
             if v is not None}
    allowed = {
        "amazon2023": {"attributes", "k_core"},
        "movielens": {"threshold", "top_n"},
        "genome2021": {"threshold", "top_n"},
        "generic": {"timestamp_unit"},
    }
    if source not in allowed:
        raise ValueError(f"unknown source {source!r}; choose one of {list(SOURCES)}")
    extra = sorted(set(given) - allowed[source])
    if extra:
        raise ValueError(f"option(s) {extra} do not apply to source {source!r}")
    func = {"amazon2023": ingest_amazon2023, "movielens": ingest_movielens,
            "genome2021": ingest_genome2021, "generic": ingest_generic}[source]
    return func(paths, out_interactions, out_attributes, max_bad_lines=max_bad_lines,
                max_line_bytes=max_line_bytes, **given)

"""The ``amazon2023`` parser: Amazon Reviews 2023 (one category) into the interim pair.

``paths``: ``meta`` (``meta_<Category>.jsonl.gz``) and either the benchmark files ``train``,
``valid``, ``test`` (``<Category>.{train,valid,test}.csv.gz``; interactions get a ``split``
column, rows in the order train, valid, test) or ``reviews`` (raw ``<Category>.jsonl.gz``). Items
are ``parent_asin``; timestamps are Unix milliseconds and become seconds by floor division by
1000. Raw reviews are held in memory (de-duplication and k-core need them all).

Attribute strings (the ``attributes`` option, one or more of :data:`ATTRIBUTE_FORMS`): ``store``
-> ``store=l'oreal paris``; ``main_category`` -> ``main_category=all beauty``; ``categories`` ->
one attribute per list element, ``categories=skin care``; ``details.<Key>`` (``Key`` matched
exactly, e.g. ``details.Brand``, ``details.Item Form``) -> ``details.brand=...``,
``details.item form=...`` (the field part is normalised too). A details value may be a string, a
number (its Python ``str``) or a list of those (one attribute each). ``null`` or an absent field
gives no attribute; any other type is a bad record.

In the real files a details value is a string or a number (no list in the records we read); a
multi-valued field is one comma-joined string (``"Item Form": "Cream,Gel"``, ``"Stick, Pencil,
Powder"``; also Skin Type, Scent, Hair Type, Material). A spec written as a one-key mapping
``{"details.Item Form": {"split": ","}}`` (YAML: ``- details.Item Form: {split: ","}``) splits
each of its values at that separator into one attribute per non-blank part
(``details.item form=cream``, ``details.item form=gel``).

Each requested field is counted (records that give it a value, logged); a field that gives no
value in any record is logged as a warning naming the nearest keys the records have (details
keys vary in case between categories: ``Number of discs``, ``Number Of Discs``), and when no field
gives a value the parse fails naming them.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tieaudit.data.interim import (
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
    _json_type,
    _line_limit,
    _req_int,
    _req_number,
    _req_str,
    _Source,
)
from tieaudit.data.tables import _MAX_SECONDS, _check_seconds, _CsvReader, _to_seconds

#: The attribute field specs ``amazon2023`` accepts.
ATTRIBUTE_FORMS = ("store", "categories", "main_category", "details.<Key>")
#: What a spec's mapping may set (``{"details.Item Form": {"split": ","}}``).
SPEC_SETTINGS = ("split",)
_TOP_FIELDS = ATTRIBUTE_FORMS[:3]

log = logging.getLogger(__name__)

_AMAZON_SPLIT_SCHEMA = INTERACTIONS_SCHEMA.append(pa.field("split", pa.string(), nullable=False))
_AMAZON_SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class _AttributeSpec:
    field: str  # top-level record field
    key: str | None  # details key
    prefix: str  # normalised spec + "="
    split: str | None = None  # separator of several values in one string
    name: str = ""  # the spec as written (``details.Item Form``)


def _spec_settings(spec: object) -> tuple[object, dict[str, Any]]:
    """A spec as (field text, settings): ``"store"`` or ``{"details.Item Form": {"split": ","}}``."""
    if not isinstance(spec, Mapping):
        return spec, {}
    if len(spec) != 1:
        raise ValueError(f"attribute field {dict(spec)!r}: a mapping names one field, e.g. "
                         "{'details.Item Form': {'split': ','}}")  # fmt: skip
    (name, settings), = spec.items()
    if not isinstance(settings, Mapping) or not settings:
        raise ValueError(f"attribute field {name!r}: settings must be a mapping of "
                         f"{', '.join(SPEC_SETTINGS)}, got {settings!r}")  # fmt: skip
    unknown = [k for k in settings if k not in SPEC_SETTINGS]
    if unknown:
        raise ValueError(f"attribute field {name!r}: unknown setting {unknown[0]!r}; known: "
                         f"{', '.join(SPEC_SETTINGS)}")  # fmt: skip
    sep = settings.get("split")
    if not isinstance(sep, str) or not sep.strip():
        raise ValueError(f"attribute field {name!r}: split must be a separator string with a "
                         f"character that is not whitespace (e.g. ','), got {sep!r}")  # fmt: skip
    return name, dict(settings)


def _parse_attribute_specs(specs: Sequence[object] | None) -> tuple[_AttributeSpec, ...]:
    valid = ", ".join(repr(f) for f in ATTRIBUTE_FORMS)
    if specs is None or isinstance(specs, str | Mapping) or len(specs) == 0:
        raise ValueError(
            f"amazon2023 needs attributes=[...], a list of one or more of {valid} "
            f"(e.g. ['store', 'categories', 'details.Brand']); got {specs!r}"
        )
    parsed: dict[object, _AttributeSpec] = {}
    for item in specs:
        spec, settings = _spec_settings(item)
        split = settings.get("split")
        if spec in _TOP_FIELDS:
            new = _AttributeSpec(spec, None, spec + "=", split, spec)
        elif isinstance(spec, str) and spec.startswith("details.") and spec[8:].strip():
            new = _AttributeSpec("details", spec[8:], normalise_attribute(spec) + "=", split, spec)
        else:
            raise ValueError(f"unknown attribute field {spec!r}; valid forms are {valid}")
        if parsed.setdefault(spec, new) != new:
            raise ValueError(f"attribute field {spec!r} is given twice with different settings")
    return tuple(parsed.values())


def _spec_values(record: dict[str, Any], spec: _AttributeSpec) -> list[str]:
    values = _raw_values(record, spec)
    if spec.split is None:
        return values
    return [part for v in values for part in v.split(spec.split)]


def _raw_values(record: dict[str, Any], spec: _AttributeSpec) -> list[str]:
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
        _check_k_core(k_core)
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


def _check_k_core(k_core: object) -> None:
    if isinstance(k_core, bool) or not isinstance(k_core, int) or k_core < 1:
        raise ValueError(f"k_core must be an integer >= 1, got {k_core!r}")


def _amazon_split(src: _Source, split: str, sink: _ParquetSink, bad: _BadLines) -> None:
    kinds = {"user_id": "id", "parent_asin": "id", "rating": "float", "timestamp": "int"}
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
    given: Counter[str] = Counter()  # spec name -> records that give it an attribute
    keys: set[str] = set()  # every details key seen
    records = 0

    def parse(line: int, record: dict[str, Any]) -> tuple[str, list[str]]:
        nonlocal records
        per_spec = [[a for v in _spec_values(record, spec) if (a := _attribute(spec.prefix, v))]
                    for spec in specs]  # fmt: skip
        asin = _req_str(record, "parent_asin")
        records += 1
        given.update(spec.name for spec, found in zip(specs, per_spec, strict=True) if found)
        if isinstance(record.get("details"), dict):
            keys.update(record["details"])
        return asin, [a for found in per_spec for a in found]

    for rows in _json_batches(src, bad, parse):
        pairs.add(_strings([asin for asin, found in rows for _ in found]),
                  _strings([a for _, found in rows for a in found]))
    _report_fields(src.label, specs, given, keys, records)


def _report_fields(label: str, specs: Sequence[_AttributeSpec], given: Mapping[str, int],
                   keys: set[str], records: int) -> None:
    """Log how many records give each field; warn for a field none gives (naming the nearest
    keys the records have); fail when no field gives anything."""
    missing = []
    for spec in specs:
        n = given.get(spec.name, 0)
        log.info("%s: attribute field %r: a value in %d of %d records", label, spec.name, n,
                 records)  # fmt: skip
        if n == 0:
            missing.append(f"{spec.name!r}{_nearest(spec, keys)}")
    for text in missing:
        log.warning("%s: attribute field %s gives no value in any of the %d records", label, text,
                    records)  # fmt: skip
    if missing and len(missing) == len(specs):
        raise IngestError(f"{label}: no attribute field gives a value in any of the {records} "
                          f"records: {'; '.join(missing)}", file=label)  # fmt: skip


def _nearest(spec: _AttributeSpec, keys: set[str]) -> str:
    """`` (nearest details keys: 'Number Of Discs')``: the keys equal but for case first, then
    the closest spellings; empty for a top-level field or when nothing is close."""
    if spec.key is None:
        return ""
    wanted = normalise_attribute(spec.key)
    same = sorted(k for k in keys if normalise_attribute(k) == wanted)
    by_norm: dict[str, list[str]] = {}
    for k in sorted(keys):
        by_norm.setdefault(normalise_attribute(k), []).append(k)
    close = difflib.get_close_matches(wanted, list(by_norm), n=3, cutoff=0.6)
    near = list(dict.fromkeys(same + [k for c in close for k in by_norm[c]]))[:5]
    if not near:
        return f" (no details key is close; the records have {len(keys)} keys)"
    return f" (nearest details keys: {', '.join(repr(k) for k in near)})"


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

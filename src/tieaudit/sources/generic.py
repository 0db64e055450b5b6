"""``generic``: bring your own data, two tables in tieaudit's own simple format.

``interactions`` has ``user_id``, ``item_id`` and optionally ``rating`` (empty -> NaN) and
``timestamp`` (integers in ``timestamp_unit``; without the column the file order is the time
order, see :mod:`tieaudit.data.interim`); ``item_attributes`` has ``item_id``, ``attribute`` (the
text is normalised; no field prefix is added). Each is CSV (optionally compressed, e.g.
``.csv.gz``) or Parquet (recognised by its magic bytes; id columns may be strings or integers, a
``timestamp[unit]`` column carries its own unit).

The generator writes ``interactions.csv`` and ``item_attributes.csv``. Scale: items = max(40,
ceil(0.5 * scale)); override with ``n_items=``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
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
    _Outputs,
    _PairSorter,
    _require_paths,
    _strings,
    normalise_attribute,
)
from tieaudit.data.streams import MAX_LINE_BYTES, _BadLines, _line_limit, _Source
from tieaudit.data.tables import _check_seconds, _table_reader, _to_seconds
from tieaudit.common.seeds import make_rng
from tieaudit.sources.base import DatasetSource, FileKey, Option, register

GENERIC_ITEMS_PER_USER = 0.5
_S_GENERIC_START = 1_420_070_400  # 2015-01-01
_S_GENERIC_END = 1_696_118_400  # 2023-10-01


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
        _check_timestamp_unit(timestamp_unit)
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


def _check_timestamp_unit(unit: object) -> None:
    if unit not in ("s", "ms"):
        raise ValueError(f"timestamp_unit must be 's' or 'ms', got {unit!r}")


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


_GENERIC_ATTRS = {
    "brand": (
        "acme",
        "globex",
        "initech",
        "umbrella",
        "hooli",
        "stark",
        "wayne",
        "wonka",
        "tyrell",
        "cyberdyne",
        "soylent",
        "vandelay",
        "oscorp",
        "gringotts",
        "aperture",
        "massive-dynamic",
    ),
    "category": (
        "skin-care",
        "hair-care",
        "makeup",
        "fragrance",
        "tools",
        "bath",
        "oral-care",
        "nail-care",
        "sun-care",
        "shaving",
        "eye-care",
        "lip-care",
    ),
    "form": ("cream", "gel", "liquid", "powder", "spray", "oil", "stick", "balm", "foam", "bar"),
    "scent": ("unscented", "lavender", "vanilla", "citrus", "rose", "coconut", "mint", "musk"),
}


def generate_generic(
    out_dir: Path | str, *, scale: int, seed: int, n_items: int | None = None
) -> dict[str, Path]:
    """tieaudit's generic input format: two CSV files (UTF-8, header row, LF line ends).

    * ``interactions.csv``: ``user_id,item_id,rating,timestamp``; ids are strings (``U000001``,
      ``I000001``); rating an integer 1..5; timestamp Unix **seconds**; rows ordered by user then
      time; every user has >= 5 interactions (distinct items).
    * ``item_attributes.csv``: ``item_id,attribute``, one line per (item, attribute) pair, 2-4
      attributes per item written ``kind:value`` (``brand:acme``, ``category:skin-care``, ...),
      ordered by item.

    ``n_items`` sets the number of items (default ``max(40, ceil(0.5 * scale))``).
    Returns ``{"interactions": path, "item_attributes": path}``.
    """
    _check_scale(scale, minimum=1)
    n = n_items if n_items is not None else max(40, math.ceil(GENERIC_ITEMS_PER_USER * scale))
    if n < 5:
        raise ValueError(f"need at least 5 items, got {n}")
    rng = make_rng(seed, "generic", "world")
    k = _cluster_count(n)
    item_cluster = rng.integers(0, k, n)
    kinds = list(_GENERIC_ATTRS)
    cluster_values = {kind: rng.integers(0, len(_GENERIC_ATTRS[kind]), k) for kind in kinds}
    item_ids = [f"I{i + 1:06d}" for i in range(n)]
    user_ids = [f"U{u + 1:06d}" for u in range(scale)]
    out = Path(out_dir)
    paths = {
        "interactions": out / "interactions.csv",
        "item_attributes": out / "item_attributes.csv",
    }

    attr_lines = ["item_id,attribute\n"]
    for i in range(n):
        c = int(item_cluster[i])
        chosen = ["brand", "category"] + [kd for kd in kinds[2:] if rng.random() < 0.5]
        for kind in chosen:
            vals = _GENERIC_ATTRS[kind]
            v = (
                vals[int(cluster_values[kind][c])]
                if rng.random() < 0.85
                else vals[int(rng.integers(len(vals)))]
            )
            attr_lines.append(f"{item_ids[i]},{kind}:{v}\n")
    with _atomic_file(paths["item_attributes"]) as fh:
        fh.write("".join(attr_lines).encode("utf-8"))

    draws = _ClusterDraws(item_cluster, k)
    primary = rng.integers(0, k, scale)
    lengths = np.minimum(_choose_counts(rng, scale, 5, 5.0, 60), n)
    with _atomic_file(paths["interactions"]) as fh:
        lines = _Lines(fh)
        lines.add("user_id,item_id,rating,timestamp\n")
        for u in range(scale):
            c = int(primary[u])
            items = draws.items(rng, c, int(lengths[u]), 0.88, 0.12)
            ts = _increasing_times(
                rng, len(items), _S_GENERIC_START, _S_GENERIC_END, 20 * 86_400.0, 1
            ).tolist()
            for it, t in zip(items, ts, strict=True):
                r = _stars(rng, item_cluster[it] == c)
                lines.add(f"{user_ids[u]},{item_ids[it]},{r},{t}\n")
        lines.flush()
    return paths


SOURCE = register(DatasetSource(
    name="generic",
    description="your own files: interactions and item attributes, CSV (optionally "
    "compressed) or Parquet",
    files=(
        FileKey("interactions", "`user_id,item_id[,rating][,timestamp]`, CSV or Parquet"),
        FileKey("item_attributes", "`item_id,attribute`, one row per pair, CSV or Parquet"),
    ),
    parser=ingest_generic,
    generator=generate_generic,
    options=(
        Option("timestamp_unit", "unit of the timestamp column: `s` or `ms` (a Parquet timestamp "
               "column carries its own)", "s", _check_timestamp_unit),
    ),
    check_options=None,
))

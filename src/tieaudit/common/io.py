"""Atomic, deterministic writing of tables and text.

Everything tieaudit writes goes through here: the content is written to a temporary file in the
destination folder and moved into place with ``os.replace`` only when complete, so a failure never
leaves a half-written file at the final path. CSV uses ``\\n`` line endings and full-precision
floats, so the same numbers always give the same bytes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pandas as pd

from . import atomic as _atomic
from .atomic import atomic_path

__all__ = [
    "atomic_write_bytes",
    "atomic_write_many",
    "atomic_write_text",
    "frame_to_markdown",
    "frame_to_text",
    "write_table",
]


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (creating parent folders)."""
    return _atomic.atomic_write_bytes(path, data)


def atomic_write_many(files: dict[str | os.PathLike[str], bytes | str]) -> list[Path]:
    """Write several files so that either all of them appear or none does (as far as the file
    system allows): every temporary file is complete before the first is moved into place."""
    with contextlib.ExitStack() as stack:
        for path, data in files.items():
            tmp = stack.enter_context(atomic_path(path))
            tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return [Path(p) for p in files]


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def frame_to_text(frame: pd.DataFrame, fmt: str = "csv") -> str:
    """A table as CSV, JSON (a list of records, NaN as null) or an aligned text table."""
    if fmt == "csv":
        return frame.to_csv(index=False, lineterminator="\n")
    if fmt == "json":
        return frame.to_json(orient="records", indent=2, double_precision=15) + "\n"
    if fmt == "table":
        shown = frame.copy()
        for c in shown.columns:
            if pd.api.types.is_float_dtype(shown[c]):
                shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else f"{v:.4f}")
            else:
                shown[c] = shown[c].map(lambda v: "" if pd.isna(v) else str(v))
        return shown.to_string(index=False) + "\n"
    raise ValueError(f"unknown format {fmt!r}; use csv, json or table")


def frame_to_markdown(frame: pd.DataFrame, float_format: str = "{:.4f}") -> str:
    """A GitHub-flavoured Markdown table (floats with ``float_format``, NaN as empty)."""

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and pd.isna(v)) or v is pd.NA:
            return ""
        if isinstance(v, float):
            return float_format.format(v)
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(cell(str(c)) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in rec) + " |" for rec in frame.itertuples(False)]
    return "\n".join([head, rule, *body]) + "\n"


def write_table(frame: pd.DataFrame, path: str | os.PathLike[str], fmt: str | None = None,
                metadata: dict[str, str] | None = None) -> Path:  # fmt: skip
    """Write ``frame`` atomically; the format follows ``fmt`` or the extension (.csv, .json,
    .parquet, .md). Parquet carries page checksums and a footer digest, checked by
    :func:`tieaudit.common.parquet.read_parquet` and the other readers there, and ``metadata`` (text
    by key) in its schema's metadata."""
    dest = Path(path)
    fmt = fmt or {".json": "json", ".parquet": "parquet", ".md": "markdown"}.get(
        dest.suffix.lower(), "csv"
    )
    if metadata and fmt != "parquet":
        raise ValueError(f"{dest}: only a Parquet file keeps metadata, not {fmt}")
    if fmt == "parquet":  # with page checksums and a footer digest (tieaudit.common.parquet)
        import pyarrow as pa

        from .parquet import write_table as write_parquet

        table = pa.Table.from_pandas(frame, preserve_index=False)
        if metadata:
            table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
        with atomic_path(dest) as tmp:
            write_parquet(table, tmp)
        return dest
    if fmt == "markdown":
        return atomic_write_text(dest, frame_to_markdown(frame))
    return atomic_write_text(dest, frame_to_text(frame, fmt))

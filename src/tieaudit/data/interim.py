"""The interim form every dataset source writes: an interactions Parquet and an item-attributes
Parquet, written as a pair or not at all.

Interim schema
--------------
**interactions** (row order = input order; for ``amazon2023`` benchmark files: train, valid, test)

====================  ===========  ==========================================================
column                type         meaning
====================  ===========  ==========================================================
``user_id``           string       read as text, never as a number
``item_id``           string       read as text (Amazon: ``parent_asin``)
``rating``            float64      NaN where the source has no rating
``timestamp``         int64        Unix **seconds**; or a synthetic file-order position, below
``split``             string       ``amazon2023`` benchmark files only: train / valid / test
====================  ===========  ==========================================================

**item attributes**: ``item_id`` (string), ``attribute`` (string), one row per distinct pair, sorted
by ``item_id`` then ``attribute`` (code-point order of the UTF-8 text).

The Parquet schema metadata records ``tieaudit.source`` and ``tieaudit.timestamp``: ``unix-seconds``,
or ``file-order`` where the source has no time (genome2021 ratings, generic files without a
``timestamp`` column). A file-order timestamp is the record's 0-based position in its file: its line
number minus the line number of the first record line (blank and skipped lines keep their place), or
for Parquet its 0-based row index. It is strictly increasing in file order, so it is monotone within
every user; only its order means anything.

Attribute strings
-----------------
:func:`normalise_attribute` maps a text to ``" ".join(unicodedata.normalize("NFKC", text).casefold()
.split())``: Unicode NFKC normalisation, then case folding, then every run of whitespace (any Unicode
whitespace, including tabs, newlines and no-break spaces) becomes one space and leading/trailing
whitespace goes. A value that is empty after this gives no attribute. Sources with several attribute
fields write ``<field>=<normalised value>`` (:func:`_attribute`), so equal texts from different
fields stay distinct.

Writing
-------
Outputs go through :class:`tieaudit.common.parquet.ParquetWriter` (zstd, page checksums and a footer
digest) in row groups of ``ROW_GROUP_ROWS`` rows whatever the batch sizes, so equal input gives
byte-identical output. Memory does not grow with the input: attribute pairs are sorted in runs of
``_RUN_ROWS`` that are spilled to a scratch folder beside the outputs and merged
(:class:`_PairSorter`). Both outputs are written to temporary files beside their final paths and
moved into place with :func:`os.replace` only when both are complete (:class:`_Outputs`); on any
error neither final path exists afterwards. The temporary files are removed on any exception,
``KeyboardInterrupt`` included, and on SIGTERM (while an ingest runs in the main thread with the
default SIGTERM handler, it removes them and then ends the process by SIGTERM as before). After
SIGKILL nothing can clean up: the next ingest into the same paths removes what the killed one left
(``.<output name>.*.tmp``), but never what an ingest still running holds (an advisory lock on each).

The names with a leading underscore are shared by the modules of :mod:`tieaudit.sources`; they
are not part of the public API.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import shutil
import signal
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tieaudit.common.arrays import sorted_unique
from tieaudit.common.atomic import file_mode
from tieaudit.common.parquet import ParquetWriter
from tieaudit.data.streams import IngestError, _BadLines

try:
    import fcntl
except ImportError:  # not POSIX: no advisory locks, a stale temporary file is always removed
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ATTRIBUTES_SCHEMA",
    "INTERACTIONS_SCHEMA",
    "IngestReport",
    "normalise_attribute",
]

log = logging.getLogger(__name__)

#: The Arrow schema of a dataset's interim interactions table (``interactions.parquet``).
INTERACTIONS_SCHEMA = pa.schema(
    [
        pa.field("user_id", pa.string(), nullable=False),
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("rating", pa.float64(), nullable=False),
        pa.field("timestamp", pa.int64(), nullable=False),
    ]
)
#: The Arrow schema of a dataset's interim item attributes (one line per item and attribute).
ATTRIBUTES_SCHEMA = pa.schema(
    [
        pa.field("item_id", pa.string(), nullable=False),
        pa.field("attribute", pa.string(), nullable=False),
    ]
)

ROW_GROUP_ROWS = 1 << 20
_RUN_ROWS = 1 << 20
_MERGE_CHUNK_ROWS = 1 << 16


@dataclass(frozen=True)
class IngestReport:
    """What one :func:`ingest` call wrote and what it skipped."""

    source: str
    interactions_path: Path
    attributes_path: Path
    n_interactions: int
    n_attribute_rows: int
    #: Malformed records skipped under ``max_bad_lines``.
    bad_lines: int = 0
    #: The first few skipped records, as ``"<file>, line <n>: <reason>"``.
    bad_line_messages: tuple[str, ...] = ()
    #: Records dropped on purpose, e.g. ``{"duplicate_reviews": 12, "k_core": 3400}``.
    dropped: Mapping[str, int] = field(default_factory=dict)



# --------------------------------------------------------------------------------------------------
# attribute strings


@lru_cache(maxsize=1 << 18)
def normalise_attribute(text: str) -> str:
    """NFKC-normalise, casefold, and collapse whitespace runs to one space (stripped at both ends).

    >>> normalise_attribute("  L'Oréal\\u00a0 PARIS\\t")
    "l'oréal paris"
    """
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return " ".join(text.casefold().split())


@lru_cache(maxsize=1 << 18)
def _attribute(prefix: str, value: str) -> str:
    norm = normalise_attribute(value)
    return prefix + norm if norm else ""


# --------------------------------------------------------------------------------------------------
# outputs


class _ParquetSink:
    """A Parquet file written in row groups of exactly ``ROW_GROUP_ROWS`` rows (the last shorter),
    whatever batch sizes arrive, so the bytes depend only on the rows."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        self.path, self.schema = path, schema
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._n_pending = 0
        self._writer = ParquetWriter(path, schema, compression="zstd")

    def write(self, columns: Mapping[str, Any]) -> None:
        table = pa.Table.from_pydict(dict(columns), schema=self.schema)
        if table.num_rows == 0:
            return
        self._pending.append(table)
        self._n_pending += table.num_rows
        self.rows += table.num_rows
        while self._n_pending >= ROW_GROUP_ROWS:
            self._flush(ROW_GROUP_ROWS)

    def _flush(self, n: int) -> None:
        table = pa.concat_tables(self._pending)
        self._writer.write_table(table.slice(0, n).combine_chunks(), row_group_size=n)
        rest = table.slice(n)
        self._pending = [rest] if rest.num_rows else []
        self._n_pending = rest.num_rows

    def close(self) -> None:
        if self._n_pending:
            self._flush(self._n_pending)
        self._writer.close()

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # the original error matters, not this one
            self._writer.close()


class _Terminated(BaseException):
    """SIGTERM arrived during an ingest (see :meth:`_Outputs.__enter__`)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


def _lock(path: Path) -> int:
    """A descriptor of ``path`` (a file or folder) holding an exclusive advisory lock, released when
    it is closed; :class:`BlockingIOError` if another process holds the lock. Where the file system
    has no locks, the descriptor alone."""
    fd = os.open(path, os.O_RDONLY)
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise
        except OSError:
            pass  # no locks here (some network file systems)
    return fd


def _remove_stale_temporaries(final: Path) -> None:
    """Remove the ``.<final name>.*.tmp`` files and folders a killed ingest left beside ``final``;
    one whose lock is held (an ingest into the same path is running) stays."""
    if not final.parent.is_dir():
        return
    for tmp in final.parent.glob(f".{glob.escape(final.name)}.*.tmp"):
        try:
            os.close(_lock(tmp))
        except BlockingIOError:
            continue  # in use
        except OSError:
            pass  # gone meanwhile, or unreadable: try to remove it all the same
        with contextlib.suppress(OSError):
            if tmp.is_dir() and not tmp.is_symlink():
                shutil.rmtree(tmp)
            else:
                tmp.unlink(missing_ok=True)
            log.info("removed %s, left by an interrupted ingest", tmp)


class _Outputs:
    """Both outputs of one ingest, committed together with :func:`os.replace` or not at all.

    Used as ``with _Outputs(...) as out:`` around the whole ingest, validation included: on any
    error (``KeyboardInterrupt`` and SIGTERM included) the temporary files and both final paths
    are removed. Only an output path that is also an input is refused before anything is touched.
    Temporary files and the scratch folder are ``.<final name>.<random>.tmp`` beside the outputs,
    each held with an advisory lock while in use; those a killed ingest left behind (no lock) are
    removed when the next ingest into the same paths starts.
    """

    def __init__(self, source: str, paths: Mapping[str, Any], interactions: Any,
                 attributes: Any) -> None:
        self.source = source
        self.finals = (Path(interactions), Path(attributes))
        if self.finals[0].resolve() == self.finals[1].resolve():
            raise ValueError("out_interactions and out_attributes must be different files")
        inputs = {Path(p).resolve() for p in paths.values()}
        for final in self.finals:
            if final.resolve() in inputs:
                raise ValueError(f"output {final} is also an input")
        self._sinks: list[_ParquetSink] = []
        self._scratch: Path | None = None
        self._locks: list[int] = []
        self._sigterm: Any = None  # the SIGTERM handler to restore, when we replaced it
        #: The item attributes go here; they are sorted and written on a successful exit.
        self.pairs = _PairSorter(self.scratch)
        for final in self.finals:
            _remove_stale_temporaries(final)

    def scratch(self) -> Path:
        """A temporary folder beside the outputs, removed on exit."""
        if self._scratch is None:
            final = self.finals[1]
            final.parent.mkdir(parents=True, exist_ok=True)
            self._scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp",
                                                  dir=final.parent))
            self._lock(self._scratch)
        return self._scratch

    def _lock(self, path: Path) -> None:
        self._locks.append(_lock(path))

    def __enter__(self) -> _Outputs:
        # SIGTERM (what a scheduler or Snakemake sends to stop a job) normally ends Python without
        # unwinding; raise instead, so the exit below removes the temporary files first.
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
            self._sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
        return self

    def start(self, schema: pa.Schema, timestamp: str) -> None:
        """Open both temporary files; ``timestamp`` is ``unix-seconds`` or ``file-order``."""
        meta = {b"tieaudit.source": self.source.encode(), b"tieaudit.timestamp": timestamp.encode()}
        for final, sch in zip(self.finals, (schema, ATTRIBUTES_SCHEMA), strict=True):
            final.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
            os.close(fd)
            self._lock(Path(tmp))
            self._sinks.append(_ParquetSink(Path(tmp), sch.with_metadata(meta)))

    @property
    def interactions(self) -> _ParquetSink:
        return self._sinks[0]

    @property
    def attributes(self) -> _ParquetSink:
        return self._sinks[1]

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self._commit_or_clean(exc_type)
        except _Terminated:
            self._cleanup()
            exc_type = _Terminated
        finally:
            self._unlock()
            if self._sigterm is not None:
                signal.signal(signal.SIGTERM, self._sigterm)
        if exc_type is _Terminated:  # end as SIGTERM would have, now that nothing is left behind
            os.kill(os.getpid(), signal.SIGTERM)

    def _commit_or_clean(self, exc_type: Any) -> None:
        if exc_type is None:
            try:
                self.pairs.write(self.attributes)
                self._remove_scratch()
                if self.interactions.rows == 0:
                    raise IngestError(f"{self.source}: no interactions left to write")
                if self.attributes.rows == 0:
                    raise IngestError(f"{self.source}: no item attributes left to write "
                                      "(check the attribute options)")
                for sink in self._sinks:
                    sink.close()
                for sink, final in zip(self._sinks, self.finals, strict=True):
                    os.chmod(sink.path, file_mode())  # mkstemp's 0600 -> what the umask gives
                    os.replace(sink.path, final)
                return
            except BaseException:
                self._cleanup()
                raise
        self._cleanup()

    def _unlock(self) -> None:
        for fd in self._locks:
            os.close(fd)  # closing releases the lock
        self._locks = []

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _cleanup(self) -> None:
        self._remove_scratch()
        for sink in self._sinks:
            sink.abort()
            sink.path.unlink(missing_ok=True)
        for final in self.finals:
            final.unlink(missing_ok=True)

    def report(self, bad: _BadLines, dropped: Mapping[str, int] | None = None) -> IngestReport:
        report = IngestReport(
            source=self.source,
            interactions_path=self.finals[0],
            attributes_path=self.finals[1],
            n_interactions=self.interactions.rows,
            n_attribute_rows=self.attributes.rows,
            bad_lines=bad.count,
            bad_line_messages=tuple(bad.messages),
            dropped=dict(dropped or {}),
        )
        log.info("%s: %d interactions, %d attribute rows, %d bad records skipped", self.source,
                 report.n_interactions, report.n_attribute_rows, report.bad_lines)
        return report


class _PairSorter:
    """Distinct (item_id, attribute) pairs, written sorted, in memory that does not grow with them.

    Pairs are buffered; every ``_RUN_ROWS`` of them are sorted and de-duplicated into a run file
    (Arrow IPC) in the scratch folder. :meth:`write` then merges the runs: it takes from each run's
    current chunk the rows up to the smallest of the chunks' last pairs (so every copy of a pair is
    taken in the same step), sorts and de-duplicates those, writes them, and repeats.
    """

    def __init__(self, scratch: Callable[[], Path]) -> None:
        self._scratch = scratch
        self._items: list[pa.Array] = []
        self._attrs: list[pa.Array] = []
        self._rows = 0
        self._runs: list[Path] = []

    def add(self, items: pa.Array, attributes: pa.Array) -> None:
        self._items.append(items)
        self._attrs.append(attributes)
        self._rows += len(items)
        if self._rows >= _RUN_ROWS:
            self._spill()

    def _spill(self) -> None:
        run = self._scratch() / f"run{len(self._runs):05d}.arrows"
        table = pa.table(_distinct_sorted(self._items, self._attrs))
        with pa.OSFile(str(run), "wb") as f, pa.ipc.new_stream(f, table.schema) as writer:
            writer.write_table(table, max_chunksize=_MERGE_CHUNK_ROWS)
        self._runs.append(run)
        self._items, self._attrs, self._rows = [], [], 0

    def write(self, sink: _ParquetSink) -> None:
        if not self._runs:
            if self._rows:
                sink.write(_distinct_sorted(self._items, self._attrs))
            return
        if self._rows:
            self._spill()
        files = [pa.OSFile(str(run), "rb") for run in self._runs]
        try:
            readers = [pa.ipc.open_stream(f) for f in files]
            heads = {k: _next_chunk(r) for k, r in enumerate(readers)}
            heads = {k: h for k, h in heads.items() if h is not None}
            while heads:
                last = min((h["item_id"][-1].as_py(), h["attribute"][-1].as_py())
                           for h in heads.values())
                items, attrs = [], []
                for k, head in list(heads.items()):
                    n = _count_upto(head, *last)
                    items.append(head["item_id"].slice(0, n))
                    attrs.append(head["attribute"].slice(0, n))
                    rest = head.slice(n)
                    if rest.num_rows == 0:
                        rest = _next_chunk(readers[k])
                    if rest is None:
                        del heads[k]
                    else:
                        heads[k] = rest
                sink.write(_distinct_sorted(items, attrs))
        finally:
            for f in files:
                f.close()


def _next_chunk(reader: pa.ipc.RecordBatchStreamReader) -> pa.RecordBatch | None:
    try:
        return reader.read_next_batch()
    except StopIteration:
        return None


def _count_upto(chunk: pa.RecordBatch, item: str, attribute: str) -> int:
    """How many leading rows of a sorted chunk are <= (item, attribute)."""
    items = chunk["item_id"]
    le = pc.or_(pc.less(items, item),
                pc.and_(pc.equal(items, item), pc.less_equal(chunk["attribute"], attribute)))
    return int(pc.sum(le).as_py() or 0)


def _distinct_sorted(items: Sequence[Any], attrs: Sequence[Any]) -> dict[str, pa.Array]:
    """The distinct (item_id, attribute) pairs sorted by item_id, then attribute."""
    item_codes, item_dict = _sorted_codes(items)
    attr_codes, attr_dict = _sorted_codes(attrs)
    n_attrs = max(len(attr_dict), 1)
    key = sorted_unique(item_codes * n_attrs + attr_codes)  # np.unique is slow on numpy 2.4
    return {"item_id": item_dict.take(pa.array(key // n_attrs)),
            "attribute": attr_dict.take(pa.array(key % n_attrs))}


def _sorted_codes(chunks: Sequence[Any]) -> tuple[np.ndarray, pa.Array]:
    """Codes of the values in ``chunks`` into their sorted distinct values (code-point order)."""
    arr = pa.chunked_array(chunks, pa.string()).cast(pa.large_string()).combine_chunks()
    enc = pc.dictionary_encode(arr)
    dictionary = enc.dictionary
    order = pc.sort_indices(dictionary).to_numpy()
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rank[enc.indices.to_numpy()], dictionary.take(pa.array(order)).cast(pa.string())


# --------------------------------------------------------------------------------------------------
# inputs


def _require_paths(source: str, paths: Mapping[str, Any], required: Sequence[str]) -> dict[str, Path]:
    unknown = sorted(set(paths) - set(required))
    missing = [k for k in required if k not in paths]
    if unknown or missing:
        raise ValueError(
            f"{source}: paths needs keys {list(required)}"
            + (f"; missing {missing}" if missing else "")
            + (f"; unknown {unknown}" if unknown else "")
        )
    out = {k: Path(v) for k, v in paths.items()}
    for k, p in out.items():
        if not p.is_file():
            raise IngestError(f"{source}: paths[{k!r}] = {p} is not a file", file=str(p))
    return out


def _strings(values: Sequence[str]) -> pa.Array:
    return pa.array(values, pa.string())

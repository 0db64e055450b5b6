"""Sorted runs of 64-bit keys, each key with the record it was read at: kept in memory up to a
size, spilled to temporary files past it, and merged a block at a time to find a key read in two
runs (:class:`tieaudit.tables.inputs.RowCheck` keeps the rows read so far so).

The keys of one run are distinct, and the runs are added in the order their records were read:
every record of a run comes before those of the next. A merge keeps the first time each key
was read and finds the earliest record at which a key was read again: the smallest record
among all reads of a key that are not its first. Merging in groups keeps that: a read dropped
by the merge of a group is not its key's first, and the first read of each key goes on to the
next merge.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["SortedRuns", "KEPT_BYTES"]

#: Bytes a key in memory takes against the memory of :class:`SortedRuns`: the key and its record
#: (16 bytes), their copy while a chunk's keys are merged in, and the merge's mask.
KEPT_BYTES = 40
#: Runs merged at a time; more are first merged in groups of this many into runs of their own.
FAN_IN = 128
#: Bytes a key of the blocks read from the runs takes while they are merged: the key and its
#: record read (16 bytes), and, for the keys a round of the merge takes (about a block's worth
#: of all the runs' keys, at most all of them), their join, order and sorted copies.
_MERGE_BYTES = 64


class _Run(Protocol):
    n: int

    def read(self, at: int, count: int) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass
class _ArrayRun:
    """A run held in memory."""

    keys: np.ndarray
    records: np.ndarray

    @property
    def n(self) -> int:
        return len(self.keys)

    def read(self, at: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        return self.keys[at:], self.records[at:]  # already in memory: all of it, no copy


@dataclass
class _FileRun:
    """A run spilled to two files, its keys and their records."""

    path: str
    n: int = 0

    def append(self, keys: np.ndarray, records: np.ndarray) -> None:
        """Write ``keys`` and their records after those written."""
        try:
            with open(self.path + ".keys", "ab") as fh:
                keys.astype(np.uint64, copy=False).tofile(fh)
            with open(self.path + ".records", "ab") as fh:
                records.astype(np.int64, copy=False).tofile(fh)
        except OSError as exc:
            raise _unwritable(os.path.dirname(self.path), exc) from None
        self.n += len(keys)

    def read(self, at: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        count = min(count, self.n - at)
        return (np.fromfile(self.path + ".keys", np.uint64, count, offset=8 * at),
                np.fromfile(self.path + ".records", np.int64, count, offset=8 * at))  # fmt: skip


class _Reader:
    """A run read a block at a time."""

    def __init__(self, run: _Run, block: int) -> None:
        self.run, self.block, self.at = run, block, 0
        self.keys = np.zeros(0, dtype=np.uint64)
        self.records = np.zeros(0, dtype=np.int64)

    def fill(self) -> bool:
        """The next block once the one read is used up; whether keys are left."""
        if not len(self.keys) and self.at < self.run.n:
            self.keys, self.records = self.run.read(self.at, self.block)
            self.at += len(self.keys)
        return bool(len(self.keys))

    def take(self, bound: np.uint64) -> tuple[np.ndarray, np.ndarray]:
        """The keys read up to ``bound`` (included) and their records."""
        n = 0 if self.keys[0] > bound else int(np.searchsorted(self.keys, bound, side="right"))
        out = self.keys[:n], self.records[:n]
        self.keys, self.records = self.keys[n:], self.records[n:]
        return out


def _first_again(keys: np.ndarray, records: np.ndarray, new: np.ndarray) -> tuple[int, int] | None:
    """Of sorted ``keys`` (their reads in the order read; ``new``: where a key starts), the
    earliest record at which a key is read again, and the record of a read of it before."""
    again = np.flatnonzero(~new)
    if not len(again):
        return None
    i = int(again[np.argmin(records[again])])
    return int(records[i]), int(records[int(np.flatnonzero(new[: i + 1])[-1])])


def _merge(runs: list[_Run], block: int, out: _FileRun | None = None) -> tuple[int, int] | None:
    """Merge ``runs`` (in the order read) a block of ``block`` keys a run at a time: the earliest
    record at which a key is read again and a record it was read at before (``None``: every key
    once); each key's first read is written to ``out`` when given."""
    live = [r for r in (_Reader(run, block) for run in runs) if r.fill()]
    found = None
    while len(live) > 1 or (live and out is not None):
        # every read of a key up to the smallest last key of the blocks read is in those blocks
        bound = min(r.keys[-1] for r in live)
        parts = [r.take(bound) for r in live]
        live = [r for r in live if r.fill()]
        keys = np.concatenate([k for k, _ in parts])
        records = np.concatenate([p for _, p in parts])
        del parts
        if out is None:  # only the keys read again matter: none, most often
            ordered = np.sort(keys)
            if not np.any(ordered[1:] == ordered[:-1]):
                continue
            del ordered
        order = np.argsort(keys, kind="stable")  # equal keys in the order read
        keys, records = keys[order], records[order]
        del order
        new = np.ones(len(keys), dtype=bool)
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        got = _first_again(keys, records, new)
        if got is not None and (found is None or got[0] < found[0]):
            found = got
        if out is not None:
            out.append(keys[new], records[new])
    return found


class SortedRuns:
    """Distinct 64-bit keys read so far, each with its record, in sorted runs: the last in memory
    (:attr:`keys`, :attr:`records`) while it takes at most ``memory`` bytes (:data:`KEPT_BYTES`
    a key; ``None``: no limit, never spilled), the others spilled to temporary files in a folder
    of their own (``tempfile``: ``TMPDIR``), removed by :meth:`close` (or when the object is
    freed). A merge of the runs (:meth:`first_again`) takes at most about ``memory`` bytes too."""

    def __init__(self, memory: int | None = None) -> None:
        self.memory = memory
        self.keys = np.zeros(0, dtype=np.uint64)
        self.records = np.zeros(0, dtype=np.int64)
        self.spilled: list[_FileRun] = []
        self.folder: str | None = None
        self._remove: weakref.finalize | None = None
        self._made = 0

    @property
    def capacity(self) -> int | None:
        """Keys the run in memory holds at most (``None``: no limit)."""
        return None if self.memory is None else self.memory // KEPT_BYTES

    def where(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where sorted ``keys`` go in the run in memory, and which of them it holds."""
        where = np.searchsorted(self.keys, keys)
        if not len(self.keys):
            return where, np.zeros(len(keys), dtype=bool)
        return where, self.keys[np.minimum(where, len(self.keys) - 1)] == keys

    def add(self, keys: np.ndarray, records: np.ndarray, where: np.ndarray | None = None) -> None:
        """Add sorted keys none of which the run in memory holds (``where``: :meth:`where`'s),
        read after every key added before: merged into the run in memory (one new copy of it)
        while it fits, else that run is spilled and they start the next one (spilled too when
        they alone do not fit)."""
        n, m, cap = len(self.keys), len(keys), self.capacity
        if cap is None or n + m <= cap:
            where = np.searchsorted(self.keys, keys) if where is None else where
            at = where + np.arange(m)  # their places in the merged run
            old = np.ones(n + m, dtype=bool)
            old[at] = False
            for name, new in (("keys", keys), ("records", records)):
                merged = np.empty(n + m, dtype=new.dtype)
                merged[at] = new
                merged[old] = getattr(self, name)
                setattr(self, name, merged)
                del merged
            return
        if n:
            self._spill(self.keys, self.records)
        self.keys, self.records = self.keys[:0], self.records[:0]
        if m <= cap:
            self.keys, self.records = keys, records
        else:
            self._spill(keys, records)

    def first_again(self, *newest: tuple[np.ndarray, np.ndarray]) -> tuple[int, int] | None:
        """The earliest record at which a key of the runs (and of the ``newest`` sorted keys
        and records, read after them) was read again, and a record it was read at before
        (``None``: every key read once)."""
        runs: list[_Run] = [*self.spilled]
        runs += [_ArrayRun(k, r) for k, r in [(self.keys, self.records), *newest] if len(k)]
        found: list[tuple[int, int]] = []
        made: list[_FileRun] = []
        try:
            while len(runs) > FAN_IN:  # merged in groups, into runs of their own
                merged: list[_Run] = []
                for group in _groups(runs, FAN_IN):
                    if len(group) == 1:
                        merged += group
                        continue
                    out = self._new_run()
                    made.append(out)
                    got = _merge(group, self._block(len(group)), out)
                    found += [got] if got is not None else []
                    merged.append(out)
                runs = merged
            got = _merge(runs, self._block(len(runs)))
        finally:
            for run in made:
                _unlink(run)
        found += [got] if got is not None else []
        return min(found) if found else None

    def close(self) -> None:
        """Remove the spilled runs and their folder."""
        if self._remove is not None:
            self._remove()
        self.spilled, self.folder = [], None

    def _block(self, n_runs: int) -> int:
        """Keys read from each of ``n_runs`` runs at a time while they are merged, within what
        the run in memory leaves of :attr:`memory`."""
        if self.memory is None:
            return 1 << 20
        left = self.memory - self.keys.nbytes - self.records.nbytes
        return max(1, left // (_MERGE_BYTES * max(n_runs, 1)))

    def _new_run(self) -> _FileRun:
        if self.folder is None:
            try:
                self.folder = tempfile.mkdtemp(prefix="tieaudit-rows-")
            except OSError as exc:
                raise _unwritable(tempfile.gettempdir(), exc) from None
            self._remove = weakref.finalize(self, shutil.rmtree, self.folder, True)
        self._made += 1
        return _FileRun(os.path.join(self.folder, f"run{self._made}"))

    def _spill(self, keys: np.ndarray, records: np.ndarray) -> None:
        run = self._new_run()
        run.append(keys, records)
        self.spilled.append(run)


def _unwritable(folder: str, exc: OSError) -> OSError:
    return OSError(f"cannot write the keys of the rows read so far to {folder} "
                   f"({exc.strerror or exc}): set TMPDIR to a folder with room, or give a "
                   "larger memory budget")  # fmt: skip


def _groups(runs: list[_Run], size: int) -> Iterator[list[_Run]]:
    for i in range(0, len(runs), size):
        yield runs[i : i + size]


def _unlink(run: _FileRun) -> None:
    for suffix in (".keys", ".records"):
        try:
            os.unlink(run.path + suffix)
        except FileNotFoundError:
            pass

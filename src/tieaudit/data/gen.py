"""Shared machinery of the format-faithful synthetic generators (:mod:`tieaudit.sources`).

Writing: every file is written to a temporary file in the destination folder and renamed into
place (:func:`_atomic_file`), so a reader never sees a partial file; gzip streams carry
``mtime=0`` and no file name (:func:`_gzip_file`); zip entries carry a fixed timestamp, fixed
permissions and a fixed "made by" system (:class:`_Zip`), so the same content gives the same
bytes. (Identical bytes assume the same zlib build: deflate output is fixed for a given zlib
version and level, not across all.) :class:`_Lines` batches text lines into large UTF-8 writes.

Drawing: seeded helpers for the taste-cluster worlds the generators build -- distinct random codes,
Zipf-like popularity, distinct item draws from weighted pools, strictly increasing times, count
distributions -- each taking an explicit :class:`numpy.random.Generator`.

The names with a leading underscore are shared by the source modules; they are not part of the
public API.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from tieaudit.common.atomic import atomic_path

#: Star ratings (1..5) of items in and out of a user's taste cluster.
_RATING_P_IN = np.array([0.04, 0.03, 0.07, 0.16, 0.70])
_RATING_P_OUT = np.array([0.13, 0.08, 0.12, 0.17, 0.50])


# --------------------------------------------------------------------------------------------
# writing: atomic files, deterministic gzip and zip
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _atomic_file(path: Path) -> Iterator[IO[bytes]]:
    """Open a temporary file beside ``path`` for binary writing; rename it onto ``path`` on success
    and delete it on failure. The temporary name ends in ``.part`` (ignored by git)."""
    with atomic_path(path, suffix=".part") as tmp, open(tmp, "wb") as fh:
        yield fh


@contextlib.contextmanager
def _gzip_file(path: Path, compresslevel: int) -> Iterator[IO[bytes]]:
    """A gzip stream onto ``path`` (atomically) whose header has ``mtime=0`` and no file name."""
    with _atomic_file(path) as raw:
        with gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, compresslevel=compresslevel, mtime=0
        ) as gz:
            yield gz


class _Zip:
    """A zip archive whose bytes depend only on what is written: fixed entry timestamps, Unix
    "made by" system, 0644 files / 0755 folders, deflate at zlib's default level."""

    def __init__(self, fh: IO[bytes], date_time: tuple[int, int, int, int, int, int]) -> None:
        self._zf = zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED)
        self._date_time = date_time

    def _info(self, name: str) -> zipfile.ZipInfo:
        info = zipfile.ZipInfo(name, date_time=self._date_time)
        info.create_system = 3
        if name.endswith("/"):
            info.external_attr = (0o40755 << 16) | 0x10
            info.compress_type = zipfile.ZIP_STORED
        else:
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
        return info

    def folder(self, name: str) -> None:
        self._zf.writestr(self._info(name), b"")

    def text(self, name: str, text: str) -> None:
        self._zf.writestr(self._info(name), text.encode("utf-8"))

    @contextlib.contextmanager
    def stream(self, name: str) -> Iterator[IO[bytes]]:
        with self._zf.open(self._info(name), "w") as member:
            yield member

    def close(self) -> None:
        self._zf.close()


@contextlib.contextmanager
def _zip_file(path: Path, date_time: tuple[int, int, int, int, int, int]) -> Iterator[_Zip]:
    with _atomic_file(path) as raw:
        archive = _Zip(raw, date_time)
        try:
            yield archive
        finally:
            archive.close()


class _Lines:
    """Collects text lines and writes them to a binary stream in large UTF-8 chunks."""

    def __init__(self, out: IO[bytes], chunk: int = 1 << 16) -> None:
        self._out = out
        self._buf: list[str] = []
        self._chunk = chunk

    def add(self, line: str) -> None:
        self._buf.append(line)
        if len(self._buf) >= self._chunk:
            self.flush()

    def flush(self) -> None:
        if self._buf:
            self._out.write("".join(self._buf).encode("utf-8"))
            self._buf.clear()


def _csv_line_writer(lines: _Lines) -> Any:
    """A ``csv.writer`` that feeds ``lines`` (minimal quoting, ``"`` doubled, LF line ends)."""

    class _Sink:
        def write(self, s: str) -> None:
            lines.add(s)

    return csv.writer(_Sink(), lineterminator="\n", quoting=csv.QUOTE_MINIMAL)


def _csv_row(fields: list[Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL).writerow(fields)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# drawing
# --------------------------------------------------------------------------------------------


def _random_codes(
    rng: np.random.Generator,
    n: int,
    prefix: bytes,
    alphabet: np.ndarray,
    length: int,
    *,
    unique: bool = True,
) -> list[str]:
    """``n`` strings ``prefix + length random characters of alphabet``, distinct if ``unique``."""
    width = len(prefix) + length
    out = np.empty((n, width), dtype=np.uint8)
    out[:, : len(prefix)] = np.frombuffer(prefix, dtype=np.uint8)
    out[:, len(prefix) :] = alphabet[rng.integers(0, len(alphabet), size=(n, length))]
    if unique:
        while True:
            view = out.view(f"S{width}").ravel()
            _, first = np.unique(view, return_index=True)
            if len(first) == n:
                break
            dup = np.setdiff1d(np.arange(n), first)
            out[dup, len(prefix) :] = alphabet[rng.integers(0, len(alphabet), (len(dup), length))]
    return out.view(f"S{width}").ravel().astype(str).tolist()


def _cluster_count(n_items: int) -> int:
    return int(min(24, max(3, n_items // 10)))


def _zipf_cdf(n: int, exponent: float = 0.7) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** exponent
    return np.cumsum(w) / w.sum()


def _draw(rng: np.random.Generator, pool: np.ndarray, cdf: np.ndarray, k: int) -> np.ndarray:
    """``k`` draws (with replacement) from ``pool`` with the popularity given by ``cdf``."""
    idx = np.searchsorted(cdf, rng.random(k), side="right")
    return pool[np.minimum(idx, len(pool) - 1)]


def _fill_distinct(
    rng: np.random.Generator,
    have: list[int],
    target: int,
    sources: list[tuple[float, np.ndarray, np.ndarray]],
    n_total: int,
) -> list[int]:
    """Extend ``have`` with distinct items up to ``target``: each draw picks a source (probability,
    item pool, popularity cdf) and an item from it; a uniform draw over ``range(n_total)`` fills in
    if the pools run dry."""
    seen = set(have)
    probs = np.array([s[0] for s in sources])
    probs = probs / probs.sum()
    tries = 0
    while len(have) < target and tries < 8:
        need = (target - len(have)) * 3 + 4
        which = rng.choice(len(sources), size=need, p=probs)
        picks = np.empty(need, dtype=np.int64)
        for s, (_, pool, cdf) in enumerate(sources):
            mask = which == s
            picks[mask] = _draw(rng, pool, cdf, int(mask.sum()))
        for item in picks.tolist():  # in draw order, so sources interleave
            if len(have) >= target:
                break
            if item not in seen:
                seen.add(item)
                have.append(item)
        tries += 1
    if len(have) < target:
        for item in rng.permutation(n_total).tolist():
            if len(have) >= target:
                break
            if item not in seen:
                seen.add(item)
                have.append(item)
    return have


class _ClusterDraws:
    """A user's distinct items, drawn mostly from the user's taste cluster (Zipf-like popularity
    within it) and the rest from the whole catalogue (flatter popularity)."""

    def __init__(self, item_cluster: np.ndarray, n_clusters: int) -> None:
        self.n = len(item_cluster)
        self.pools = [np.flatnonzero(item_cluster == c) for c in range(n_clusters)]
        self.cdfs = [_zipf_cdf(len(p)) if len(p) else np.ones(1) for p in self.pools]
        self.everything, self.everything_cdf = np.arange(self.n), _zipf_cdf(self.n, 0.3)

    def items(self, rng: np.random.Generator, cluster: int, length: int, own: float,
              other: float) -> list[int]:
        """``length`` distinct items: from ``cluster`` with weight ``own``, from anywhere with
        weight ``other``."""
        sources = [(other, self.everything, self.everything_cdf)]
        if len(self.pools[cluster]):
            sources.insert(0, (own, self.pools[cluster], self.cdfs[cluster]))
        return _fill_distinct(rng, [], length, sources, self.n)


def _stars(rng: np.random.Generator, in_cluster: bool) -> int:
    """A star rating 1..5, higher for an item of the user's own taste cluster."""
    return int(rng.choice(5, p=_RATING_P_IN if in_cluster else _RATING_P_OUT)) + 1


def _increasing_times(
    rng: np.random.Generator, n: int, start: int, end: int, mean_gap: float, min_gap: int
) -> np.ndarray:
    """``n`` strictly increasing integer times in ``[start, end]`` with exponential gaps."""
    gaps = rng.exponential(mean_gap, size=n).astype(np.int64) + min_gap
    gaps[0] = 0
    span = int(gaps.sum())
    room = end - start
    if span > room:  # squeeze (keeps gaps >= min_gap as long as n * min_gap fits)
        extra = np.maximum(gaps - min_gap, 0).astype(np.float64)
        budget = room - min_gap * (n - 1)
        extra = np.floor(extra * (budget / max(extra.sum(), 1.0))).astype(np.int64)
        gaps = extra + min_gap
        gaps[0] = 0
        span = int(gaps.sum())
    first = start + int(rng.integers(0, max(room - span, 0) + 1))
    return first + np.cumsum(gaps)


def _choose_counts(
    rng: np.random.Generator, n: int, minimum: int, mean_extra: float, cap: int
) -> np.ndarray:
    extra = rng.geometric(1.0 / (mean_extra + 1.0), size=n) - 1
    return np.minimum(minimum + extra, cap).astype(np.int64)


def _check_scale(scale: int, *, minimum: int) -> None:
    if not isinstance(scale, (int, np.integer)) or isinstance(scale, bool) or scale < minimum:
        raise ValueError(f"scale (number of users) must be an integer >= {minimum}, got {scale!r}")

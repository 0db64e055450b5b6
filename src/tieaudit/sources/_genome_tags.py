"""Genome tags as item attributes, shared by the ``movielens`` and ``genome2021`` parsers.

Tag selection (``threshold`` and/or ``top_n``; at least one is required): a pair (movie, tag) is
kept when its relevance (ml-25m ``genome-scores.csv``) or score (genome 2021 ``scores/glmer.csv``)
is ``>= threshold``; with ``top_n`` only the ``top_n`` best of a movie's remaining tags are kept.
Ties are broken deterministically: relevance descending, then the attribute string ascending
(code-point order), so the choice never depends on file order. Tags whose texts normalise to the
same attribute are merged first, keeping their highest relevance. An attribute is
``tag=<normalised tag>``. Memory holds only each movie's current candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tieaudit.data.interim import _attribute, _PairSorter, _strings
from tieaudit.data.streams import IngestError, _BadLines
from tieaudit.data.tables import _CsvReader
from tieaudit.sources.base import Option

_REDUCE_ROWS = 1 << 19

#: The options of both genome sources.
TAG_OPTIONS = (
    Option("threshold", "keep genome tags with relevance >= `threshold` (`threshold` and/or "
           "`top_n` is required)"),
    Option("top_n", "keep at most the `top_n` most relevant tags per movie (ties: relevance, "
           "then tag)"),
)


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


def _check_tag_options(options: Mapping[str, Any]) -> None:
    """The rule on ``threshold`` and ``top_n`` together, as the parsers apply it."""
    _TagSelector.check(options.get("threshold"), options.get("top_n"))

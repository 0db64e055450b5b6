"""Explicit, stable seed derivation.

Every random thing in tieaudit takes an explicit seed. Where one user-facing seed has to feed
several independent streams (one per dataset, per permutation, per chunk, ...), the stream's seed is
derived from the seed and the stream's name with SHA-256, never with Python's ``hash()``, which is
salted per process.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["make_seed", "make_rng"]


def make_seed(*parts: object) -> int:
    """Return a 63-bit seed derived from ``parts``.

    ``make_seed(42, "negatives", "amazon_beauty")`` is the same integer on every machine, process
    and Python version: the parts are joined as ``repr``-free text (``str(part)`` separated by the
    unit separator U+001F) and the first 8 bytes of their SHA-256 digest are read little-endian,
    with the top bit cleared so the value fits a signed 64-bit integer.
    """
    text = "\x1f".join(str(p) for p in parts).encode("utf-8")
    digest = hashlib.sha256(text).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def make_rng(*parts: object) -> np.random.Generator:
    """A ``numpy.random.Generator`` (PCG64) seeded with :func:`make_seed` of ``parts``."""
    return np.random.default_rng(make_seed(*parts))

"""The stable 64-bit tie-breaking key ``key(seed, user_id, item_id)``.

The ``hash:SEED`` tie rule orders the members of a tie group by this key, ascending. It depends only
on the seed and the two id strings, never on where a candidate is stored, so it is row-order
invariant; and it is the same integer on every machine, process and Python version (Python's
built-in ``hash()`` is salted per process and must not be used for this).

Definition (all arithmetic modulo 2**64, ids encoded as UTF-8)::

    H(s)      = int.from_bytes(blake2b(s, digest_size=8).digest(), "little")
    mix(x)    = splitmix64 finaliser:  x ^= x >> 30; x *= 0xBF58476D1CE4E5B9;
                                       x ^= x >> 27; x *= 0x94D049BB133111EB; x ^= x >> 31
    pair(u,i) = mix(H(u) ^ mix(H(i) + 0x9E3779B97F4A7C15))
    salt(s)   = mix(s + 0x9E3779B97F4A7C15)          (s a seed from 0 to 2**64 - 1)
    key       = mix(pair(u, i) ^ salt(seed))

``pair`` is computed once per candidate; each seed then costs a single ``mix`` per tie member,
which is what makes the mean over 100 seeds cheap. :func:`hash_key` is the pure-Python reference
that anyone can re-implement; :func:`pair_keys` and :func:`seeded_keys` are its vectorised form.
Two candidates whose keys are equal (probability about 2**-64 per pair) are ordered by item id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

__all__ = ["hash_key", "string_hashes", "pair_keys", "seeded_keys", "seed_salts", "mix64"]

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_C1 = 0xBF58476D1CE4E5B9
_C2 = 0x94D049BB133111EB


def _h(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _mix_int(x: int) -> int:
    x &= _M64
    x ^= x >> 30
    x = (x * _C1) & _M64
    x ^= x >> 27
    x = (x * _C2) & _M64
    x ^= x >> 31
    return x


def _salt(seed: int) -> int:
    """``salt(seed)``; a seed outside 0 .. 2**64 - 1 is an error (it would wrap silently)."""
    seed = int(seed)
    if not 0 <= seed <= _M64:
        raise ValueError(f"hash seed {seed} is outside 0 .. 2**64 - 1")
    return _mix_int(seed + _GOLDEN)


def hash_key(seed: int, user_id: str, item_id: str) -> int:
    """Reference implementation of the tie-breaking key (see the module docstring)."""
    pair = _mix_int(_h(str(user_id)) ^ _mix_int(_h(str(item_id)) + _GOLDEN))
    return _mix_int(pair ^ _salt(seed))


def mix64(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Vectorised splitmix64 finaliser on a uint64 array (in place when ``out is x``)."""
    if out is None:
        out = x.copy()
    elif out is not x:
        np.copyto(out, x)
    with np.errstate(over="ignore"):
        out ^= out >> np.uint64(30)
        out *= np.uint64(_C1)
        out ^= out >> np.uint64(27)
        out *= np.uint64(_C2)
        out ^= out >> np.uint64(31)
    return out


def string_hashes(values: Sequence[str]) -> np.ndarray:
    """``H(s)`` for each string, as uint64 (one blake2b per string: pass unique values). The
    digests are joined and read as little-endian words: ``_h`` of each, without a Python integer
    per string."""
    b2 = hashlib.blake2b
    raw = b"".join([b2(str(v).encode("utf-8"), digest_size=8).digest() for v in values])
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64)


def pair_keys(user_hash: np.ndarray, item_hash: np.ndarray) -> np.ndarray:
    """``pair(u, i)`` from ``H(u)`` and ``H(i)`` arrays of equal length (uint64)."""
    with np.errstate(over="ignore"):
        inner = item_hash.astype(np.uint64) + np.uint64(_GOLDEN)
    mix64(inner, out=inner)
    inner ^= user_hash.astype(np.uint64)
    return mix64(inner, out=inner)


def seed_salts(seeds: Sequence[int]) -> np.ndarray:
    """``salt(seed)`` of each seed (uint64): ``key = mix(pair ^ salt)`` for many seeds at once."""
    return np.array([_salt(s) for s in seeds], dtype=np.uint64)


def seeded_keys(pairs: np.ndarray, seed: int, out: np.ndarray | None = None) -> np.ndarray:
    """``key(seed, u, i)`` for precomputed ``pair(u, i)`` values (uint64)."""
    salt = np.uint64(_salt(seed))
    if out is None:
        out = np.empty_like(pairs)
    np.bitwise_xor(pairs, salt, out=out)
    return mix64(out, out=out)

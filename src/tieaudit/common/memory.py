"""How a process that evaluates chunk after chunk treats the memory it frees.

Evaluating a chunk allocates arrays of tens of megabytes and frees them; glibc's allocator gives
the top of its heap back to the system as soon as more than 128 KB is free there, so the next
chunk asks for the same pages again and the kernel zeroes each one on first touch: a fifth of
the CPU time of a streamed evaluation was system time (measured with benchmarks/bench_stream.py).
:func:`keep_freed_memory` keeps freed memory in the process for the next chunk instead. The
peak (what a memory budget bounds) is unchanged: the process holds what it held at its peak.

Only processes tieaudit runs call it (the command line, the workers of ``--jobs``): it changes
the allocator of the whole process. Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes

__all__ = ["keep_freed_memory"]

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_TOP_PAD = -2
#: Free memory at the top of the heap kept before any is given back, and the extra asked for
#: each time the heap grows (bytes; address space, not resident until used).
TRIM_THRESHOLD = 2**31 - 1
TOP_PAD = 2**28


def keep_freed_memory() -> bool:
    """Keep memory freed at the top of the heap for later allocations (glibc); whether it
    could be set."""
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(mallopt(_M_TOP_PAD, TOP_PAD))

"""Keep freed memory in the process while it analyses.

An analysis allocates and frees arrays of tens of megabytes (a column, a sort's copy, a mask) one after
another. glibc hands each one back to the kernel when it is freed (every block above its mmap threshold),
and the next one has its pages faulted in and zeroed again: on the 5-million-event benchmark that is a
quarter of the analysis's system time. With a high mmap threshold and trim threshold, freed blocks stay
in the heap and the next array reuses them. The process's peak is the same; it just keeps it until exit.
"""
from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters, from glibc's malloc.h
MMAP_THRESHOLD = 256 * 2**20   # blocks up to this size come from the heap, and go back to it
TRIM_THRESHOLD = 1024 * 2**20  # free memory kept at the heap's top before any is returned

_done = False


def keep_freed_memory() -> bool:
    """Tune glibc's malloc once per process; False where there is no glibc (the analysis is only slower)."""
    global _done
    if _done:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    _done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done

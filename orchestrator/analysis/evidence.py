"""The figures a verdict rests on, measured on one thread over the analysis window."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .trace import Trace


@dataclass(frozen=True)
class Evidence:
    window_ns: int
    thread: str | None             # "name (tid)" of the thread the figures are about
    frame_count: int               # frames inside the window (0 without frames)
    gpu_wait_ns: int               # GPU-wait API time on the thread
    gpu_wait_calls: tuple[str, ...]
    wait_symbol_pct: float         # share of the thread's CPU samples inside wait functions
    wait_symbol: str | None
    blocking_ns: int               # blocking OS runtime time on the thread
    blocking_calls: tuple[str, ...]
    thread_cpu_pct: float | None
    busy_cores: float | None       # sum of per-core busy percentages / 100
    gpu_busy_pct: float | None     # union of GPU work over the window
    hottest_self: str | None
    hottest_self_pct: float | None


def time_in_calls(trace: Trace, table: str, names: tuple[str, ...], global_tid: int,
                  window: tuple[int, int]) -> tuple[int, tuple[str, ...]]:
    """Time the thread spends in the named (outermost) calls, clipped to the window, and which calls those were."""
    found = trace.calls_of_thread(table, names, global_tid, window)
    if found is None:
        return 0, ()
    rows, ids = found
    spent = np.clip(rows["end"], *window) - np.clip(rows["start"], *window)
    by_name: dict[str, int] = {}
    name_ids, slot = np.unique(rows["nameId"], return_inverse=True)
    for name_id, ns in zip(name_ids, np.bincount(slot, weights=spent, minlength=len(name_ids))):
        by_name[ids[int(name_id)]] = by_name.get(ids[int(name_id)], 0) + int(ns)
    ranked = tuple(sorted(by_name, key=lambda n: -by_name[n]))
    return int(spent.sum()), ranked


GPU_WORK_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                   "OPENGL_WORKLOAD")


def gpu_busy_ns(trace: Trace, window: tuple[int, int]) -> int | None:
    """How long any GPU work (CUDA kernels, memory operations, OpenGL workloads) ran inside the window."""
    parts = []
    for table in GPU_WORK_TABLES:
        rows = trace.events(table)
        if rows is not None:
            starts, ends = rows["start"], rows["start"] + rows["dur"]
            inside = (ends > window[0]) & (starts < window[1])
            parts.append(np.c_[np.clip(starts[inside], *window), np.clip(ends[inside], *window)])
    if not parts:
        return None
    return union_length(np.concatenate(parts))


def union_length(intervals: np.ndarray) -> int:
    """Total length covered by a set of [start, end) intervals (overlaps counted once)."""
    if not len(intervals):
        return 0
    intervals = intervals[np.argsort(intervals[:, 0], kind="stable")]  # stable: fast on nearly sorted starts
    reach = np.maximum.accumulate(intervals[:, 1])           # furthest end seen so far
    covered_before = np.r_[intervals[0, 0], reach[:-1]]
    return int(np.clip(reach - np.maximum(intervals[:, 0], covered_before), 0, None).sum())

"""What the verdict weighs beside the shares of the focus thread's time: which thread that is, the GPU's busy time
and work, a software renderer's threads, where the hottest function runs."""
from __future__ import annotations

import re

import numpy as np

from ..export.names import PROFILER_THREAD_PREFIX, string_values
from ..export.sampling import Samples
from ..export.scheduling import CpuUse
from ..export.selection import Window
from ..export.trace import Trace
from ..intervals.coverage import union_ns
from .frames import Frames
from .gpu_frames import GPU_NAMED_TABLES
from .pacing import refresh_pacing
from .verdict import Context
from .where import in_frames_count, where

GPU_WORK_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                   "OPENGL_WORKLOAD")


def gpu_busy_ns(trace: Trace, window: tuple[int, int], tables: tuple[str, ...] = GPU_WORK_TABLES) -> int | None:
    """How long any GPU work (CUDA kernels, memory operations, OpenGL workloads: the tables') ran inside the
    window."""
    sets = []
    for table in tables:
        rows = trace.events(table)
        if rows is not None:
            first, finish = rows["start"], rows["start"] + rows["dur"]
            extent = trace.extent(table)
            within = extent is not None and window[0] <= extent[0] and extent[1] <= window[1]
            if not (within and (rows["dur"] >= 0).all()):  # else every row lies in the window as it is
                inside = (finish > window[0]) & (first < window[1])
                first, finish = np.clip(first[inside], *window), np.clip(finish[inside], *window)
            sets.append((first, finish))
    return None if not sets else union_ns(sets)


# the threads of Mesa's software renderers: their "GPU" work runs on the CPU, in these threads
SOFTWARE_GPU_THREAD = re.compile(r"^(llvmpipe|softpipe|lavapipe|lp)-\d+$")
# the libraries a software renderer's work runs in (Mesa's llvmpipe and softpipe in swrast_dri.so or libgallium,
# lavapipe, SwiftShader): its shaders' JIT code is called from them, so a stack through them is the renderer's work
SOFTWARE_RENDERER_MODULE = re.compile(r"(swrast_dri|libgallium|libvulkan_lvp|swiftshader)[^/]*$", re.IGNORECASE)
RENDERER_WORK_SHARE = 0.5   # of a thread's samples with the renderer's libraries on their stack
RENDERER_MIN_SAMPLES = 5


def renderer_threads_by_work(samples: Samples | None, pid: int, leave_out: set[int]) -> list[int]:
    """The process's threads that run a software renderer's work, known by their samples (most with its libraries
    on their stack: its own code, or its shaders' JIT code it calls), whatever their names: Mesa's compute threads
    have none."""
    if samples is None or not len(samples.ids):
        return []
    codes = np.unique(samples.modules)
    library = [c for c in codes if SOFTWARE_RENDERER_MODULE.search(samples.names[c])]
    if not library:
        return []
    through = np.isin(samples.ids, np.unique(samples.chain_ids[np.isin(samples.modules, library)]))
    mine = ((samples.tids >> 24) & 0xFFFFFF) == pid
    tids, code = np.unique(samples.tids[mine], return_inverse=True)
    totals, in_library = np.bincount(code), np.bincount(code, weights=through[mine], minlength=len(tids))
    return [int(tid) for tid, total, seen in zip(tids, totals, in_library)
            if int(tid) not in leave_out and total >= RENDERER_MIN_SAMPLES and seen >= RENDERER_WORK_SHARE * total]


def gpu_work_names(trace: Trace, window: tuple[int, int]) -> tuple[str, ...]:
    """What GPU work ran inside the window (OpenGL workloads by the call that queued them, CUDA kernels), most
    GPU time first."""
    spent: dict[str, int] = {}
    for table in GPU_NAMED_TABLES:
        rows = trace.events(table)
        if rows is None:
            continue
        inside = (rows["start"] + rows["dur"] > window[0]) & (rows["start"] < window[1])
        if not inside.any():
            continue
        name_ids = rows["nameId"][inside]
        low = int(name_ids.min())  # StringIds ids are small: a count per id, no hashing, no sort
        sums = np.bincount(name_ids - low, weights=rows["dur"][inside])
        ids = np.flatnonzero(np.bincount(name_ids - low)) + low
        names = string_values(trace.local_conn(), ids)
        for name_id in ids:
            name = names.get(int(name_id), f"<string {int(name_id)}>")
            spent[name] = spent.get(name, 0) + int(sums[name_id - low])
    return tuple(sorted(spent, key=lambda name: -spent[name]))


def focus_thread(trace: Trace, frames: Frames | None, use: CpuUse | None,
                 names: dict[int, str]) -> int | None:
    """The thread a verdict is about: the one delimiting frames, else the busiest on a CPU, else the one
    making the most CUDA, OpenGL or (without either) OS runtime calls."""
    if frames is not None:
        return frames.global_tid
    busiest = _busiest_thread(use, names)
    return busiest if busiest is not None else _busiest_api_thread(trace, names)


def _busiest_thread(use: CpuUse | None, names: dict[int, str]) -> int | None:
    if use is None:
        return None
    for gtid in use.threads["globalTid"]:
        if not names.get(int(gtid), "").startswith(PROFILER_THREAD_PREFIX):
            return int(gtid)
    return None


def _busiest_api_thread(trace: Trace, names: dict[int, str]) -> int | None:
    """Without CPU data, the thread that made the most CUDA, OpenGL or OS runtime calls (in an even sample of
    them), nsys's own threads left out."""
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "OPENGL_API", "OSRT_API"):
        tids = trace.sampled_threads(table)
        tids = tids[[not names.get(int(t), "").startswith(PROFILER_THREAD_PREFIX) for t in tids]] if len(tids) else tids
        if len(tids):
            values, counts = np.unique(tids, return_counts=True)
            return int(values[counts.argmax()])
    return None


def leaf_times(samples: Samples, symbol: str) -> np.ndarray | None:
    """When the samples whose leaf is ``symbol`` were taken."""
    if symbol not in samples.names:
        return None
    leaf = (samples.depths == 0) & (samples.symbols == samples.names.index(symbol))
    return samples.starts[np.isin(samples.ids, samples.chain_ids[leaf])]


def verdict_context(trace: Trace, window: Window, frames: Frames | None, use: CpuUse | None,
                    samples: Samples | None, hotspots: dict | None, renderer: str | None,
                    gaps: list[dict], vsync_off: bool = False) -> Context:
    """What the verdict weighs beside the shares, over the window."""
    span = window.as_tuple()
    busy = gpu_busy_ns(trace, span)
    inside = ((frames.starts >= span[0]) & (frames.ends <= span[1])) if frames is not None else None
    hottest = hotspots["self"][0] if hotspots and hotspots["self"] else None
    times = leaf_times(samples, hottest["symbol"]) if hottest and samples is not None else None
    hottest_where = None if times is None else where(span, frames, in_frames_count(frames, times) if frames else None,
                                                     "samples")
    return Context(
        window=span, frame_count=int(inside.sum()) if inside is not None else 0,
        gpu_busy_pct=None if busy is None else busy * 100.0 / (span[1] - span[0]), gpu_busy_ns=busy,
        gpu_work_names=gpu_work_names(trace, span) if busy else (), renderer=renderer,
        busy_cores=None if use is None else float(use.cores["busy_pct"].sum() / 100.0),
        hottest_self=hottest["symbol"] if hottest else None, hottest_self_pct=hottest["pct"] if hottest else None,
        hottest_where=hottest_where,
        pacing=refresh_pacing(frames.durations[inside]) if frames is not None and inside is not None and not vsync_off
        else None,
        gaps=gaps)

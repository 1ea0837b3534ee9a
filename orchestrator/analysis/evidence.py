"""The figures a verdict rests on, measured on one thread (the focus thread) over the analysis window."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .calls import WAIT_SYMBOL, WAIT_TABLES
from .coverage import union_ns
from .frames import Frames
from .gpu_frames import GPU_NAMED_TABLES
from .names import PROFILER_THREAD_PREFIX, string_values, tid_of
from .sampling import Samples, inclusive_hotspots, of_thread
from .scheduling import CpuUse
from .selection import Window
from .trace import Trace
from .where import Where, in_frames_count, in_frames_ns, where


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
    window: tuple[int, int] = (0, 0)
    gpu_wait_where: Where | None = None     # where each finding happens: the window, and its heaviest frames
    wait_symbol_where: Where | None = None
    blocking_where: Where | None = None
    hottest_where: Where | None = None
    gpu_work_names: tuple[str, ...] = ()    # the GPU work nsys recorded in the window, by time (glDispatchCompute...)
    software_gpu: tuple[str, ...] = ()      # a software renderer's threads (llvmpipe-0...): the "GPU" is the CPU
    renderer: str | None = None             # the GPU by name: the GL_RENDERER the app printed, or the board's GPU


@dataclass(frozen=True)
class Calls:
    """A thread's time in some calls over a window: the total, the calls by time, and the clipped intervals."""
    ns: int
    names: tuple[str, ...]
    starts: np.ndarray
    ends: np.ndarray


NO_CALLS = Calls(0, (), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))


def time_in_calls(trace: Trace, table: str, names: tuple[str, ...], global_tid: int,
                  window: tuple[int, int]) -> Calls:
    """Time the thread spends in the named (outermost) calls, clipped to the window, and which calls those were."""
    found = trace.calls_of_thread(table, names, global_tid, window)
    if found is None:
        return NO_CALLS
    rows, ids = found
    starts, ends = np.clip(rows["start"], *window), np.clip(rows["end"], *window)
    spent = ends - starts
    by_name: dict[str, int] = {}
    name_ids, slot = np.unique(rows["nameId"], return_inverse=True)
    for name_id, ns in zip(name_ids, np.bincount(slot, weights=spent, minlength=len(name_ids))):
        by_name[ids[int(name_id)]] = by_name.get(ids[int(name_id)], 0) + int(ns)
    ranked = tuple(sorted(by_name, key=lambda n: -by_name[n]))
    return Calls(int(spent.sum()), ranked, starts, ends)


GPU_WORK_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                   "OPENGL_WORKLOAD")


def gpu_busy_ns(trace: Trace, window: tuple[int, int]) -> int | None:
    """How long any GPU work (CUDA kernels, memory operations, OpenGL workloads) ran inside the window."""
    sets = []
    for table in GPU_WORK_TABLES:
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


def gpu_work_names(trace: Trace, window: tuple[int, int]) -> tuple[str, ...]:
    """What GPU work ran inside the window (OpenGL workloads by the call that queued them, CUDA kernels), most
    GPU time first."""
    spent: dict[str, int] = {}
    for table in GPU_NAMED_TABLES:
        rows = trace.events(table)
        if rows is None:
            continue
        inside = (rows["start"] + rows["dur"] > window[0]) & (rows["start"] < window[1])
        ids, slot = np.unique(rows["nameId"][inside], return_inverse=True)
        names = string_values(trace.local_conn(), ids)
        for name_id, ns in zip(ids, np.bincount(slot, weights=rows["dur"][inside], minlength=len(ids))):
            name = names.get(int(name_id), f"<string {int(name_id)}>")
            spent[name] = spent.get(name, 0) + int(ns)
    return tuple(sorted(spent, key=lambda name: -spent[name]))


def software_gpu(names: dict[int, str]) -> tuple[str, ...]:
    """A software renderer's named threads in the capture (its compute threads may have no name)."""
    return tuple(sorted({n for n in names.values() if SOFTWARE_GPU_THREAD.match(n)}, key=lambda n: (len(n), n)))


def _thread_label(gtid: int, names: dict[int, str]) -> str:
    return f"{names.get(gtid, 'thread')} ({tid_of(gtid)})"


def focus_thread(trace: Trace, frames: Frames | None, use: CpuUse | None,
                 names: dict[int, str]) -> int | None:
    """The thread a verdict is about: the one delimiting frames, else the busiest on a CPU, else the one
    making the most CUDA/OpenGL calls."""
    if frames is not None:
        return frames.global_tid
    busiest = _busiest_thread(use, names)
    return busiest if busiest is not None else _busiest_api_thread(trace)


def gather_evidence(trace: Trace, window: Window, frames: Frames | None, gtid: int | None,
                    use: CpuUse | None, samples: Samples | None, hotspots: dict | None,
                    names: dict[int, str], renderer: str | None = None) -> Evidence:
    """The figures about the focus thread over the window that decide() weighs."""
    span = window.as_tuple()
    gpu_wait, blocking = NO_CALLS, NO_CALLS
    thread_pct = None
    if gtid is not None:
        found = {table: time_in_calls(trace, table, names, gtid, span) for table, names in WAIT_TABLES.items()}
        gl, cu = found["OPENGL_API"], found["CUPTI_ACTIVITY_KIND_RUNTIME"]
        gpu_wait = Calls(gl.ns + cu.ns, gl.names + cu.names, np.r_[gl.starts, cu.starts], np.r_[gl.ends, cu.ends])
        blocking = found["OSRT_API"]
        if use is not None:
            match = use.threads[use.threads["globalTid"] == gtid]["cpu_pct"]
            thread_pct = float(match.iloc[0]) if len(match) else 0.0
    wait_symbol, wait_pct, wait_times = _wait_symbol(samples, gtid)
    busy = gpu_busy_ns(trace, span)
    in_window = frames.count_within(span) if frames is not None else 0
    hottest = hotspots["self"][0] if hotspots and hotspots["self"] else None

    def calls_where(calls: Calls) -> Where | None:
        return where(span, frames, in_frames_ns(frames, calls.starts, calls.ends) if frames else None) \
            if calls.ns else None

    def samples_where(times: np.ndarray | None) -> Where | None:
        return None if times is None else where(span, frames, in_frames_count(frames, times) if frames else None,
                                                "samples")
    return Evidence(
        window_ns=span[1] - span[0], thread=_thread_label(gtid, names) if gtid is not None else None,
        frame_count=in_window, gpu_wait_ns=gpu_wait.ns, gpu_wait_calls=gpu_wait.names, wait_symbol_pct=wait_pct,
        wait_symbol=wait_symbol, blocking_ns=blocking.ns, blocking_calls=blocking.names, thread_cpu_pct=thread_pct,
        busy_cores=None if use is None else float(use.cores["busy_pct"].sum() / 100.0),
        gpu_busy_pct=None if busy is None else busy * 100.0 / (span[1] - span[0]),
        hottest_self=hottest["symbol"] if hottest else None, hottest_self_pct=hottest["pct"] if hottest else None,
        window=span, gpu_wait_where=calls_where(gpu_wait), wait_symbol_where=samples_where(wait_times),
        blocking_where=calls_where(blocking), gpu_work_names=gpu_work_names(trace, span) if busy else (),
        software_gpu=software_gpu(names), renderer=renderer,
        hottest_where=samples_where(_leaf_times(samples, hottest["symbol"]) if hottest and samples else None))


def _busiest_thread(use: CpuUse | None, names: dict[int, str]) -> int | None:
    if use is None:
        return None
    for gtid in use.threads["globalTid"]:
        if not names.get(int(gtid), "").startswith(PROFILER_THREAD_PREFIX):
            return int(gtid)
    return None


def _busiest_api_thread(trace: Trace) -> int | None:
    """Without CPU data, the thread that made the most CUDA or OpenGL calls (in an even sample of them)."""
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "OPENGL_API"):
        tids = trace.sampled_threads(table)
        if len(tids):
            values, counts = np.unique(tids, return_counts=True)
            return int(values[counts.argmax()])
    return None


def _wait_symbol(samples: Samples | None, gtid: int | None) -> tuple[str | None, float, np.ndarray | None]:
    """The wait function (WaitForCompletion...) most present in the focus thread's samples, its share, and
    when the samples inside it were taken."""
    mine = of_thread(samples, gtid) if samples is not None and gtid is not None else None
    if mine is None:
        return None, 0.0, None
    for row in inclusive_hotspots(mine).to_dict(orient="records"):
        if WAIT_SYMBOL.search(row["symbol"]):
            code = mine.names.index(row["symbol"])
            holding = np.unique(mine.chain_ids[mine.symbols == code])
            return row["symbol"], float(row["pct"]), mine.starts[np.isin(mine.ids, holding)]
    return None, 0.0, None


def _leaf_times(samples: Samples, symbol: str) -> np.ndarray | None:
    """When the samples whose leaf is ``symbol`` were taken."""
    if symbol not in samples.names:
        return None
    leaf = (samples.depths == 0) & (samples.symbols == samples.names.index(symbol))
    return samples.starts[np.isin(samples.ids, samples.chain_ids[leaf])]

"""When the GPU worked for the focus thread, from one export: the GPU's recorded work (kernels, copies, OpenGL
workloads) and what of it a CUDA call waited for, and when a software renderer's threads (llvmpipe-0...) worked: on
a CPU (context switches), else outside their blocking calls (OS runtime calls), else around their samples. The
GPU's busy time matters only inside the thread's GPU calls, so only the work that overlaps one is kept.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..export.calls import BLOCKING_CALLS
from ..export.reads import Columns
from ..export.sampling import Samples
from ..export.trace import Trace
from ..intervals.attribution import Sample, Spans, sampled
from .evidence import GPU_WORK_TABLES
from .thread_calls import Calls, calls_of

OWN_WORK_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


# a call shorter than this is a launch, not a wait: its own work's overlap is left unread
OWN_WORK_MIN_NS = 20_000


def of_process(rows: Columns, gtid: int) -> Columns:
    """The GPU rows of the thread's process (by their globalPid; all of them where the export has none)."""
    if "pid" not in rows or not len(rows["pid"]) or not rows["pid"].any():
        return rows
    mine = rows["pid"] == (gtid & PROCESS_MASK)
    return rows if mine.all() else {key: values[mine] for key, values in rows.items()}


PROCESS_MASK = ~0xFFFFFF  # a globalTid's process part: its globalPid


def own_work_waits(calls: Calls, work: dict[str, Columns], gtid: int) -> Spans:
    """Where a CUDA call lasts while the GPU runs the work that call queued (a synchronous copy, a launch that
    waits for room): the call waits for it, on a CPU or not. ``work``: the GPU's rows by table; ``gtid``: the
    calls' thread (its process's rows only: correlationIds are counted per process)."""
    if calls.corr is None or not len(calls.corr):
        return Spans.of([], [])
    long = calls.ends - calls.starts >= OWN_WORK_MIN_NS
    order = np.argsort(calls.corr[long], kind="stable")  # the few long calls, by correlation id
    corr, starts, ends = calls.corr[long][order], calls.starts[long][order], calls.ends[long][order]
    lows, highs = [], []
    for table in OWN_WORK_TABLES:
        rows = work.get(table)
        if rows is None or "corr" not in rows or not len(corr):
            continue
        rows = of_process(rows, gtid)
        at = np.minimum(np.searchsorted(corr, rows["corr"]), len(corr) - 1)
        mine = np.flatnonzero(corr[at] == rows["corr"])
        first, last = rows["start"][mine], rows["start"][mine] + rows["dur"][mine]
        low, high = np.maximum(first, starts[at[mine]]), np.minimum(last, ends[at[mine]])
        lows.append(low[high > low])
        highs.append(high[high > low])
    if not lows:
        return Spans.of([], [])
    return Spans.of(np.concatenate(lows), np.concatenate(highs))


PAGEABLE = 0  # ENUM_CUDA_MEM_KIND


def synchronous_copies(calls: Calls, work: dict[str, Columns], gtid: int) -> np.ndarray:
    """Which CUDA calls queued a copy to or from pageable host memory: synchronous whatever the call (CUDA stages
    pageable memory through its own pinned buffer, waiting for the stream: cudaMemcpyAsync included), so the call
    waits for the GPU. ``work``: the GPU's rows by table; ``gtid``: the calls' thread."""
    found = np.zeros(len(calls.starts), dtype=bool)
    copies = work.get("CUPTI_ACTIVITY_KIND_MEMCPY")
    if calls.corr is None or copies is None or "src" not in copies or not len(calls.starts):
        return found
    copies = of_process(copies, gtid)
    pageable = copies["corr"][(copies["src"] == PAGEABLE) | (copies["dst"] == PAGEABLE)]
    return np.isin(calls.corr, pageable[pageable != 0])


def gpu_work(trace: Trace, span: tuple[int, int], sample: Sample) -> dict[str, Columns]:
    """The GPU's rows (kernels, memory copies and sets, OpenGL workloads) overlapping the span, those the sample
    reads."""
    found = {}
    for table in GPU_WORK_TABLES:
        rows = trace.events(table)
        if rows is None:
            continue
        first, finish = rows["start"], rows["start"] + rows["dur"]
        if sample.every > 1:
            index = sampled(first, finish, sample)
            rows, first, finish = {k: v[index] for k, v in rows.items()}, first[index], finish[index]
        inside = (finish > span[0]) & (first < span[1])
        found[table] = {k: v[inside] for k, v in rows.items()}
    return found


def recorded_spans(work: dict[str, Columns], span: tuple[int, int]) -> Spans:
    """The GPU work as intervals, clipped to the span."""
    if not work:
        return Spans.of([], [])
    starts = np.concatenate([rows["start"] for rows in work.values()])
    ends = np.concatenate([rows["start"] + rows["dur"] for rows in work.values()])
    return Spans.of(np.clip(starts, *span), np.clip(ends, *span))


def gpu_work_count(trace: Trace, span: tuple[int, int]) -> int:
    """How many pieces of GPU work overlap the span."""
    return sum(int(((rows["start"] < span[1]) & (rows["start"] + rows["dur"] > span[0])).sum())
               for table in GPU_WORK_TABLES if (rows := trace.events(table)) is not None)


def within(spans: Spans, pieces: tuple[np.ndarray, np.ndarray]) -> Spans:
    """The spans that overlap one of the (sorted, disjoint) pieces."""
    lows, highs = pieces
    if not len(spans) or not len(lows):
        return Spans.of([], [])
    at = np.searchsorted(highs, spans.starts, side="right")  # the first piece ending after the span begins
    keep = (at < len(lows)) & (lows[np.minimum(at, len(lows) - 1)] < spans.ends)
    return Spans(spans.starts[keep], spans.ends[keep])


def renderer_busy(trace: Trace, tids: list[int], span: tuple[int, int], intervals: pd.DataFrame | None,
                  samples: Samples | None, period: float) -> Spans:
    """When a software renderer's threads worked: on a CPU, else outside their blocking calls, else around
    their samples."""
    if not tids:
        return Spans.of([], [])
    if intervals is not None and len(intervals):
        mine = intervals["globalTid"].isin(tids).to_numpy()
        return Spans.of(intervals["start"].to_numpy()[mine], intervals["end"].to_numpy()[mine])
    starts, ends = [], []
    for tid in tids:  # busy from the end of one blocking call to the start of the next
        calls, _ = calls_of(trace, "OSRT_API", tid, span)
        if not len(calls.starts):
            continue
        blocking = calls.named(BLOCKING_CALLS)
        order = np.argsort(calls.starts[blocking], kind="stable")
        waits_from, waits_to = calls.starts[blocking][order], calls.ends[blocking][order]
        starts.append(np.r_[calls.starts.min(), waits_to])
        ends.append(np.r_[waits_from, calls.ends.max()])
    if starts:
        return Spans.of(np.clip(np.concatenate(starts), *span), np.clip(np.concatenate(ends), *span))
    if samples is not None:
        times = samples.starts[np.isin(samples.tids, tids)]
        return Spans.of(times - int(period / 2), times + int(period / 2))
    return Spans.of([], [])

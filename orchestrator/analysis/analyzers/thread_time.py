"""The focus thread's time as the attribution reads it (attribution.ThreadTime), assembled from one export: its
calls (thread_calls.py), when the GPU or a software renderer worked (gpu_busy.py), when the thread was on a CPU (its
context switches, else estimated from its samples); with what each share is made of (the calls, the threads that
woke it) for the evidence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..export.calls import API_TABLES, WAIT_SYMBOL
from ..export.names import PROFILER_THREAD_PREFIX, pid_of, tid_of
from ..export.sampling import Samples
from ..export.scheduling import sampling_period_ns
from ..export.trace import Trace
from ..intervals.attribution import (
    DISPLAY,
    IO,
    SLEEP,
    THREADS,
    Sample,
    Spans,
    ThreadTime,
    running_from_samples,
    sample_of,
    sampled,
)
from ..intervals.coverage import Coverage
from .evidence import SOFTWARE_GPU_THREAD, renderer_threads_by_work
from .frames import Frames
from .gpu_busy import (
    gpu_work,
    gpu_work_count,
    own_work_waits,
    recorded_spans,
    renderer_busy,
    synchronous_copies,
    within,
)
from .thread_calls import Calls, calls_from, display_in_capture, joined, os_kinds, wakers

CUDA_CALLS = "CUPTI_ACTIVITY_KIND_RUNTIME"


@dataclass(frozen=True)
class Gathered:
    """The thread's time, and what the evidence names: the OS calls (each with the share it counts for, and the
    thread whose call woke it), the GPU and driver calls, the GPU's recorded work, the software renderer."""
    time: ThreadTime
    os_calls: Calls
    kinds: np.ndarray             # per OS call: SLEEP, DISPLAY, THREADS, IO or NOT_BLOCKING
    wakers: np.ndarray            # per OS call: the globalTid whose call woke it, 0 when none did
    api_calls: Calls
    recorded_gpu: Spans           # the GPU work nsys recorded (without a software renderer's threads)
    renderer_threads: tuple[str, ...]
    has_display: bool
    wait_samples: int             # the thread's samples inside a function that waits for the GPU
    sampled: bool                 # the thread has CPU samples
    life: tuple[int, int]         # the part of the span the thread was seen in (it may start late, end early)
    sample: Sample                # what of it the attribution reads
    gpu_traced: bool = False      # the export holds GPU work anywhere (kernels, copies, sets, OpenGL workloads)
    # with a software renderer, the process's other busiest threads on a CPU (context switches): who ran while the
    # thread waited for the renderer (Mesa's compute threads have no name)
    beside: dict[int, Spans] = field(default_factory=dict)


def _wait_samples(samples: Samples | None, gtid: int) -> int:
    """How many of the thread's samples are inside a function that waits for the GPU (WaitForCompletion...)."""
    if samples is None:
        return 0
    codes = [i for i, name in enumerate(samples.names) if WAIT_SYMBOL.search(name)]
    if not codes:
        return 0
    holding = np.unique(samples.chain_ids[np.isin(samples.symbols, codes)])
    return int(((samples.tids == gtid) & np.isin(samples.ids, holding)).sum())


def _picked(spans: Spans, sample: Sample, disjoint: bool = False) -> Spans:
    index = sampled(spans.starts, spans.ends, sample, disjoint)
    return spans if sample.every == 1 else Spans(spans.starts[index], spans.ends[index])


def gather(trace: Trace, gtid: int, span: tuple[int, int], intervals: pd.DataFrame | None,
           samples: Samples | None, names: dict[int, str], frames: Frames | None = None,
           told: list[int] | None = None, software: bool = False) -> Gathered:
    """The thread's time over the span, from every table the export has, for the part of it the attribution
    reads (attribution.sample_of), the frames ``told`` whole besides."""
    raw = {table: trace.calls_of_thread(table, gtid, span) for table in (*API_TABLES, "OSRT_API")}
    on_cpu = None
    if intervals is not None and len(intervals):
        mine = (intervals["globalTid"] == gtid).to_numpy()
        if mine.any():
            on_cpu = Spans.of(intervals["start"].to_numpy()[mine], intervals["end"].to_numpy()[mine])
    period = sampling_period_ns(samples) if samples is not None and len(samples.ids) else 1e6
    mine_samples = samples.starts[samples.tids == gtid] if samples is not None else None
    estimated = on_cpu is None and mine_samples is not None and len(mine_samples) > 0
    if estimated and mine_samples is not None:
        on_cpu = running_from_samples(mine_samples, period)
    # a software renderer's threads are the GPU of a thread that makes OpenGL calls, in its own process
    gl = raw["OPENGL_API"]
    draws = gl is not None and len(gl["start"]) > 0
    named = {t for t, n in names.items() if draws and pid_of(t) == pid_of(gtid) and SOFTWARE_GPU_THREAD.match(n)}
    profiler = {t for t, n in names.items() if n.startswith(PROFILER_THREAD_PREFIX)}
    # known by their work only where a software renderer runs (its named threads, or the app's GL_RENDERER):
    # Mesa's hardware drivers share libgallium with it
    by_work = (renderer_threads_by_work(samples, pid_of(gtid), named | profiler | {gtid})
               if draws and (named or software) else [])
    renderer = sorted(named | set(by_work), key=lambda t: (names.get(t, ""), t))
    rendering = renderer_busy(trace, renderer, span, intervals, samples, period)
    calls_seen = [Spans(c["start"], c["end"]) for c in raw.values() if c is not None and len(c["start"])]
    life = _life(span, calls_seen + ([on_cpu] if on_cpu is not None and not estimated else []), mine_samples, frames)
    count = sum(len(c) for c in calls_seen) + len(rendering) + len(on_cpu or ()) + gpu_work_count(trace, life)
    sample = sample_of(life, count, frames.starts if frames is not None else None,
                       frames.ends if frames is not None else None, also=told)
    found = {table: calls_from(trace, raw[table], span, sample)[0] for table in API_TABLES}
    os_calls, chains = calls_from(trace, raw["OSRT_API"], span, sample)
    api = joined(list(found.values()))
    work = gpu_work(trace, span, sample)
    waits = np.concatenate([calls.named(API_TABLES[table]) | (synchronous_copies(calls, work, gtid)
                                                               if table == CUDA_CALLS else False)
                            for table, calls in found.items()])
    own = own_work_waits(found[CUDA_CALLS], work, gtid)
    has_display = display_in_capture(trace)
    kinds = os_kinds(trace, os_calls, chains, api.spans(), has_display)
    in_calls = Coverage(api.starts, api.ends).pieces() if len(api.starts) else (api.starts, api.ends)
    recorded = recorded_spans(work, span)

    def of_kind(kind: int) -> Spans:
        return os_calls.spans(kinds == kind)
    time = ThreadTime(sleep=of_kind(SLEEP), display=of_kind(DISPLAY), sync=of_kind(THREADS), io=of_kind(IO),
                      api=api.spans() | own, api_waits=api.spans(waits) | own,
                      gpu_busy=within(recorded | _picked(rendering, sample), in_calls),
                      on_cpu=None if on_cpu is None else _picked(on_cpu, sample, disjoint=not estimated),
                      on_cpu_estimated=estimated, calls_traced=_osrt_rows(trace))
    beside = _threads_beside(intervals, gtid, names, sample) if renderer else {}
    return Gathered(time=time, os_calls=os_calls, kinds=kinds, wakers=wakers(trace, os_calls, kinds, gtid, span),
                    api_calls=api, recorded_gpu=recorded,
                    renderer_threads=tuple(names[t] if t in named else f"{names.get(t, 'thread')} ({tid_of(t)})"
                                           for t in renderer),
                    has_display=has_display, wait_samples=_wait_samples(samples, gtid),
                    sampled=mine_samples is not None and len(mine_samples) > 0, life=life, sample=sample,
                    beside=beside, gpu_traced=gpu_work_count(trace, (np.iinfo(np.int64).min,
                                                                     np.iinfo(np.int64).max)) > 0)


BESIDE = 8  # the process's threads busiest on a CPU that the evidence weighs


def _threads_beside(intervals: pd.DataFrame | None, gtid: int, names: dict[int, str],
                    sample: Sample) -> dict[int, Spans]:
    """The focus thread's process's other threads (nsys's left out), the busiest on a CPU first, their times on
    one, as the sample reads them."""
    if intervals is None or not len(intervals):
        return {}
    tids = intervals["globalTid"].to_numpy()
    mine = ((tids >> 24) & 0xFFFFFF) == pid_of(gtid)
    mine &= tids != gtid
    if not mine.any():
        return {}
    starts, ends, tids = intervals["start"].to_numpy()[mine], intervals["end"].to_numpy()[mine], tids[mine]
    busy = pd.Series(ends - starts).groupby(tids).sum().sort_values(ascending=False)
    chosen = [int(t) for t in busy.index if not names.get(int(t), "").startswith(PROFILER_THREAD_PREFIX)][:BESIDE]
    return {tid: _picked(Spans(starts[tids == tid], ends[tids == tid]), sample, disjoint=True) for tid in chosen}


def _life(span: tuple[int, int], seen: list[Spans], samples: np.ndarray | None,
          frames: Frames | None = None) -> tuple[int, int]:
    """The part of the span between the thread's first and last sign of life, the frames inside the span (which the
    thread's calls end) included whole."""
    firsts = [int(part.starts.min()) for part in seen if len(part)]
    lasts = [int(part.ends.max()) for part in seen if len(part)]
    if frames is not None:
        inside = (frames.starts >= span[0]) & (frames.ends <= span[1])
        if inside.any():
            firsts.append(int(frames.starts[inside].min()))
            lasts.append(int(frames.ends[inside].max()))
    if samples is not None and len(samples):
        firsts.append(int(samples.min()))
        lasts.append(int(samples.max()))
    if not firsts:
        return span
    return max(span[0], min(firsts)), min(span[1], max(lasts))


def _osrt_rows(trace: Trace) -> bool:
    rows = trace.events("OSRT_API")
    return rows is not None and len(rows["dur"]) > 0

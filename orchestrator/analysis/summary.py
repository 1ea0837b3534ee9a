"""The analysis facade: one SQLite export in, one summary document (summary.json) out.

API sections cover the whole capture, as `nsys stats` does; hotspots, cores and threads follow the window
(default: the steady frames when there are frames, else the whole capture).
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..documents.attribution import Attribution
from ..documents.summary import SUMMARY_VERSION
from ..errors import ReportError, UsageError
from ..parsers.renderer import is_software
from .analyzers import api_summaries, cuda_work
from .analyzers.content import capture_gaps
from .analyzers.evidence import focus_thread, verdict_context
from .analyzers.frames import Frames, find_frames, steady_stats, warmup_rule
from .analyzers.gpu_frames import gpu_frames_section
from .analyzers.gpu_metrics import gpu_metrics_section
from .analyzers.iterations import iteration_calls_read
from .analyzers.nvtx_gpu import nvtx_gpu_section
from .analyzers.readbacks import readback_words, stalling_readbacks
from .analyzers.shares import attribution_section
from .analyzers.stories import told_frames
from .analyzers.thread_time import gather
from .analyzers.verdict import decide
from .export import sampling, scheduling
from .export.calls import API_TABLES, WAKE_CALLS
from .export.capture import capture_section, cpu_count
from .export.names import PROFILER_THREAD_PREFIX, pid_of, thread_names, tid_of
from .export.schema import Schema
from .export.selection import AnalysisOptions, Window, parse_range, pick_processes, pick_thread
from .export.trace import Trace
from .intervals.attribution import Split

if TYPE_CHECKING:
    from ..symbols import Resolver

API_SECTIONS = {"osrt": api_summaries.osrt, "opengl": api_summaries.opengl, "opengl_gpu": api_summaries.opengl_gpu,
                "nvtx": api_summaries.nvtx, "khr_debug": api_summaries.khr_debug, "cuda_api": api_summaries.cuda_api,
                "memcpy": api_summaries.memcpy}
KERNEL_SECTIONS = ("cuda_kernels", "kernel_functions")  # both from one sort: cuda_work.kernel_tables
SECTION_ORDER = ["osrt", "opengl", "opengl_gpu", "nvtx", "khr_debug", "cuda_api", *KERNEL_SECTIONS, "memcpy"]
COMPUTE_ORDER = ["cuda_api", "osrt", "opengl", "opengl_gpu", "memcpy", "nvtx", "khr_debug"]


def analyze(conn: sqlite3.Connection, schema: Schema, options: AnalysisOptions | None = None,
            path: Path | None = None) -> dict:
    """The summary document of one export; ``path`` (the export's file) lets big tables be read in parallel."""
    return analyze_trace(Trace(conn, schema, path), options)


def analyze_trace(trace: Trace, options: AnalysisOptions | None = None) -> dict:
    try:
        return _sections(trace, options or AnalysisOptions())
    except sqlite3.DatabaseError as exc:
        raise ReportError(f"the export could not be read ({exc})",
                          "export it again from the .nsys-rep with 'nsys export --type sqlite'") from None
    finally:
        trace.close()


@dataclass(frozen=True)
class Scope:
    """What an analysis (or a trace of it) covers: the capture, the processes, frames, window and samples."""
    capture: dict
    pids: list[int] | None
    frames: Frames | None
    window: Window
    threads: dict[int, str]         # globalTid -> thread name
    skip: list[int]                 # nsys's own threads
    resolver: Resolver | None
    samples: sampling.Samples | None


def analysis_scope(trace: Trace, options: AnalysisOptions) -> Scope:
    conn, schema = trace.conn, trace.schema
    trace.start_reading()  # the tables load on the workers while capture, frames and window are found
    trace.prefetch([iteration_calls_read(trace)])  # the calls a CUDA run's iterations may be found by
    capture = capture_section(conn, schema, trace)
    span = (capture["start_ns"], capture["end_ns"])
    if span[1] <= span[0]:
        raise ReportError("the capture is empty (it lasts 0 ns)", "profile again with a longer --duration")
    pids = pick_processes(capture["processes"], options.process)
    frames = find_frames(trace, pids, options.frame_range)
    if options.frame_range and frames is None:
        raise UsageError(f"no frames delimited by '{options.frame_range}' in the capture",
                         "give an NVTX range name from the 'nvtx' section, or eglSwapBuffers/glXSwapBuffers/glFinish")
    window = choose_window(options, span, frames)
    threads = thread_names(conn, schema)
    skip = [gtid for gtid, name in threads.items() if name.startswith(PROFILER_THREAD_PREFIX)]
    resolver = symbol_resolver(options)
    samples = sampling.load_samples(trace, window.as_tuple(), pids, skip, resolver)
    return Scope(capture, pids, frames, window, threads, skip, resolver, samples)


def _sections(trace: Trace, options: AnalysisOptions) -> dict:
    conn, schema = trace.conn, trace.schema
    scope = analysis_scope(trace, options)
    capture, pids, frames, window = scope.capture, scope.pids, scope.frames, scope.window
    threads_by_tid, skip, resolver, samples = scope.threads, scope.skip, scope.resolver, scope.samples
    hotspots = hotspots_section(samples, skip, resolver)
    cpus = cpu_count(conn, schema)
    intervals = scheduling.on_cpu_intervals(trace, window.as_tuple(), pids)
    if intervals is not None and len(intervals):
        use = scheduling.cpu_use_from_sched(intervals, window.as_tuple(), cpus)
    elif samples is not None:
        use = scheduling.cpu_use_from_samples(samples, window.as_tuple(), cpus)
    else:
        use = None
    gtid = pick_thread(threads_by_tid, options.thread) if options.thread else focus_thread(trace, frames, use,
                                                                                            threads_by_tid)
    span = window.as_tuple()
    if gtid is not None:  # the focus thread's calls, read beside the big tables still in flight
        trace.prefetch([trace.thread_calls_read(table, gtid, span) for table in ("OSRT_API", *API_TABLES)]
                       + [trace.named_calls_read("OSRT_API", WAKE_CALLS, span)])
    with ThreadPoolExecutor(max_workers=2) as pool:  # numpy's sorts release the GIL: two sections at once
        kernels = pool.submit(cuda_work.kernel_tables, trace)
        gpu_work = pool.submit(cuda_work.gpu_work_tallies, trace, span)
        done = {name: pool.submit(_section_rows, API_SECTIONS[name], trace) for name in COMPUTE_ORDER}
        tables = dict(zip(KERNEL_SECTIONS, map(_rows, kernels.result() or (None, None))))
        apis = {name: tables[name] if name in tables else done[name].result() for name in SECTION_ORDER}
    frames_json = _frames_section(frames, window)
    gpu_frames = gpu_frames_section(trace, frames, options.renderer)
    told = told_frames(frames, (frames_json or {}).get("steady", {}).get("p50_ns"),
                       list((gpu_frames or {}).get("incomplete_frames") or []))
    attribution = None
    if gtid is not None:
        gathered = gather(trace, gtid, span, intervals, samples, threads_by_tid, frames, list(told),
                          is_software(options.renderer))
        split = Split(gathered.time, gathered.life, gathered.sample)
        attribution = attribution_section(split, gathered, gtid, threads_by_tid, frames, samples, options.renderer,
                                          told)
    threads = _threads_section(use, samples, threads_by_tid)
    if use is not None and attribution is not None and gtid is not None and not attribution.sources.context_switches:
        _estimated_focus(threads or [], gtid, attribution, window)
    gaps = capture_gaps(trace, options.traces, options.sampled) if options.traces is not None else []
    readbacks = None
    if attribution is not None and gtid is not None:
        found = stalling_readbacks(trace, gtid, (attribution.start_ns, attribution.end_ns), frames)
        readbacks = None if found is None else (readback_words(found, attribution.thread), tuple(found["calls"]))
    context = replace(verdict_context(trace, window, frames, use, samples, hotspots, options.renderer, gaps,
                                      options.vsync_off), readbacks=readbacks)
    return {
        "summary_version": SUMMARY_VERSION,
        "capture": capture,
        "window": window.to_json(),
        "frames": frames_json,
        "gpu_frames": gpu_frames,
        "gpu_metrics": gpu_metrics_section(trace.local_conn(), trace.schema, window.as_tuple(), frames),
        "gpu_work": cuda_work.with_busy(gpu_work.result(), trace, span, None if trace.events("OPENGL_WORKLOAD")
                                        is not None else context.gpu_busy_ns),  # the same union then
        "nvtx_gpu": nvtx_gpu_section(trace),
        "hotspots": hotspots,
        "cores": None if use is None else _rows(use.cores),
        "cpu_source": None if use is None else use.source,
        "threads": threads,
        **apis,
        "attribution": attribution.as_json() if attribution is not None else None,
        "capture_gaps": gaps,
        "verdict": decide(attribution, context),
    }


def symbol_resolver(options: AnalysisOptions) -> Resolver | None:
    """The resolver for --symbols (pyelftools loads only when it is asked for)."""
    if not options.symbols:
        return None
    from ..symbols import Resolver, SymbolFiles
    return Resolver(SymbolFiles(list(options.symbols)))


def choose_window(options: AnalysisOptions, span: tuple[int, int], frames: Frames | None) -> Window:
    if options.window and options.window != "all":
        return parse_range(options.window, span)
    if options.window == "all":
        return Window("all", *span)
    if options.frame is not None:
        if frames is None:
            raise UsageError("--frame: the capture has no frames (no buffer swaps, no 'frame' NVTX range)",
                             "use --frame-range NAME for the NVTX range that marks a frame, or --window")
        if not 0 <= options.frame < len(frames.starts):
            raise UsageError(f"--frame {options.frame}: the capture has frames 0 to {len(frames.starts) - 1}",
                             f"pick a frame between 0 and {len(frames.starts) - 1}")
        return Window("frame", *frames.span(options.frame))
    if frames is not None and len(frames.starts) > 1:
        return Window("steady", *frames.steady_span())
    if options.steady:
        raise UsageError("--steady: the capture has no frames to find a steady state in",
                         "use --frame-range NAME for the NVTX range that marks a frame, or --window all")
    return Window("all", *span)


def hotspots_section(samples: sampling.Samples | None, skip: list[int],
                     resolver: Resolver | None = None) -> dict | None:
    if samples is None:
        return None
    return {"samples": int(len(samples.ids)), "excluded_threads": len(skip),
            "modules": _rows(sampling.module_hotspots(samples)),
            "self": _rows(sampling.self_hotspots(samples)),
            "inclusive": _rows(sampling.inclusive_hotspots(samples)),
            "tree": sampling.top_down_tree(samples), "grouped_addresses": samples.grouped_addresses,
            "symbols": None if resolver is None else resolver.report()}


def _frames_section(frames: Frames | None, window: Window) -> dict | None:
    if frames is None:
        return None
    durations = frames.durations
    return {"source": frames.source, "kind": frames.kind, "rule": frames.rule, "unit": frames.unit,
            "count": int(len(durations)),
            "first_ns": int(durations[0]), "first_start_ns": int(frames.starts[0]),
            "warmup": {"frames": frames.warmup, "rule": warmup_rule(frames.unit)},
            "steady": steady_stats(frames), "in_window": frames.count_within(window.as_tuple()),
            "per_frame_ns": [int(d) for d in durations], "frame_starts_ns": [int(s) for s in frames.starts]}


FOCUS_CPU_FROM = "its OS runtime calls and CPU samples (outside blocking calls it ran; inside, where sampled)"


def _estimated_focus(threads: list[dict], gtid: int, attribution: Attribution, window: Window) -> None:
    """Without context switches, the focus thread's CPU figure is the attribution's estimate (which reads its OS
    runtime calls as well as its samples: samples miss the time in the kernel), so the page says one figure."""
    pct = attribution.on_cpu_pct
    if pct is None or not attribution.sources.os_runtime:
        return
    for row in threads:
        if row["tid"] == tid_of(gtid) and row["pid"] == pid_of(gtid):
            row.update(cpu_pct=pct, cpu_ns=int(pct / 100.0 * (window.end_ns - window.start_ns)),
                       cpu_from=FOCUS_CPU_FROM)
    threads.sort(key=lambda row: -row["cpu_ns"])


def _threads_section(use: scheduling.CpuUse | None, samples: sampling.Samples | None,
                     names: dict[int, str]) -> list[dict] | None:
    if use is None:
        return None
    top: dict[int, str] = {}
    if samples is not None:
        leaf = samples.depths == 0
        frame = pd.DataFrame({"id": samples.chain_ids[leaf], "symbol": samples.symbols[leaf]})
        owner = pd.Series(samples.tids, index=samples.ids)
        frame["tid"] = owner.reindex(frame["id"]).to_numpy()
        best = frame.groupby(["tid", "symbol"]).size().reset_index(name="n").sort_values("n", ascending=False)
        best = best.drop_duplicates("tid")
        top = {int(t): samples.names[int(s)] for t, s in zip(best["tid"], best["symbol"])}
    rows = []
    for gtid, cpu_ns, pct in use.threads[["globalTid", "cpu_ns", "cpu_pct"]].itertuples(index=False):
        rows.append({"tid": tid_of(gtid), "pid": pid_of(gtid), "name": names.get(int(gtid), ""),
                     "cpu_ns": int(cpu_ns), "cpu_pct": float(pct), "top_symbol": top.get(int(gtid))})
    return rows


def _section_rows(section: Callable[[Trace], pd.DataFrame | None], trace: Trace) -> list[dict] | None:
    return _rows(section(trace))


def _rows(table: pd.DataFrame | None) -> list[dict] | None:
    """DataFrame -> JSON-ready rows: numpy scalars become int/float, NaN becomes None."""
    if table is None:
        return None
    rows = []
    for row in table.to_dict(orient="records"):
        rows.append({k: _plain(v) for k, v in row.items()})
    return rows


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if math.isnan(value) else float(value)
    return value

"""A report's events in the Chrome trace event format, the JSON Perfetto UI, chrome://tracing and speedscope
open: ``{"traceEvents": [...]}`` with times in microseconds on the report's own clock.

Threads are tracks (OpenGL, OS runtime, NVTX and CUDA API calls as complete events), each GPU is a process
whose streams (CUDA kernels, memory operations) and OpenGL contexts are tracks, CPU samples are instant
events on their thread with the stack in ``args``, and frames are complete events on a "Frames" track of the
process that draws them. Each link from an API call to the GPU work it queued (the ones the report page's timeline
draws as arrows: analysis/analyzers/flows.py's, from the first call of the run of calls that queued it) is a flow
event pair, "s" on the call's thread at its start and "f" bound to the GPU work's slice ("bp": "e"), which Perfetto
UI and chrome://tracing draw as arrows. Names and times are the report's own. The span is the analysis window (steady
frames, else the whole capture) unless --window/--frame says otherwise, and past ``max_events`` the trace
stops at the event that would exceed it, which ``otherData`` says.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..analysis import UNREADABLE
from ..analysis.analyzers.flows import flows, offsets
from ..analysis.analyzers.frames import Frames
from ..analysis.analyzers.run_events import GPU_TABLES, LANE_SHIFT, EventRow, run_events
from ..analysis.analyzers.timeline import SpanEvent, span_events
from ..analysis.export.names import pid_of, tid_of
from ..analysis.export.report_input import open_report, report_of
from ..analysis.export.sampling import Samples
from ..analysis.export.selection import AnalysisOptions
from ..analysis.export.trace import Trace
from ..analysis.summary import analysis_scope
from ..errors import ReportError
from ..files import replacing

MAX_EVENTS = 200_000  # about 30 MB of JSON: what a browser tab opens without a fight
GPU_PID = 1 << 30     # GPUs are processes of their own, numbered past any real pid (nsys's pids are < 2^24)
FRAMES_TID = 0        # the Frames track sits in the drawing process at tid 0, which no thread has
CONTEXT_TID = 1 << 20  # OpenGL contexts of a GPU, apart from its CUDA streams
STACK_FRAMES = 32     # frames of a sample's stack kept in its args, leaf first
FLOW = {"name": "queued GPU work", "cat": "flow"}  # every flow's name and category; its id tells it apart
CATEGORIES = {"nvtx": "NVTX", "opengl": "OpenGL", "osrt": "OS runtime", "cuda_api": "CUDA API",
              "cuda_kernel": "CUDA kernel", "memcpy": "CUDA memory", "opengl_gpu": "OpenGL GPU"}


@dataclass(frozen=True)
class TraceFile:
    path: Path
    events: int
    window: tuple[int, int]
    truncated_at_ns: int | None


def default_trace_path(source: Path) -> Path:
    """trace.json in a run folder, else <report>.trace.json beside the report."""
    return source / "trace.json" if source.is_dir() else source.with_name(f"{source.stem}.trace.json")


def write_chrome_trace(source: Path, output: Path, options: AnalysisOptions | None = None,
                       nsys_hint: str | None = None, max_events: int = MAX_EVENTS) -> TraceFile:
    report = report_of(source)
    conn, schema, export = open_report(report, nsys_hint)
    trace = Trace(conn, schema, export)
    try:
        document = chrome_trace(trace, options or AnalysisOptions(), max_events)
    except UNREADABLE as exc:
        raise ReportError(f"{export} holds values the trace cannot be made of ({type(exc).__name__}: {exc})",
                          "export it again from the .nsys-rep with 'nsys export --type sqlite'") from None
    finally:
        trace.close()
        conn.close()
    with replacing(output) as partial, partial.open("w", encoding="utf-8") as handle:
        json.dump(document, handle, separators=(",", ":"))
    other = document["otherData"]
    return TraceFile(output, other["events"], (other["start_ns"], other["end_ns"]), other["truncated_at_ns"])


def chrome_trace(trace: Trace, options: AnalysisOptions, max_events: int = MAX_EVENTS) -> dict:
    conn, schema = trace.conn, trace.schema
    scope = analysis_scope(trace, options)  # the same capture, processes, frames, window and samples as analyze
    pids, frames, window, threads, skip = scope.pids, scope.frames, scope.window, scope.threads, set(scope.skip)
    timed = [(e.start_ns, _span_event(e)) for e in span_events(conn, schema, window.as_tuple())
             if e.global_tid not in skip and (pids is None or e.global_tid is None or pid_of(e.global_tid) in pids)]
    timed += _frame_events(frames, window.as_tuple())
    timed += _sample_events(scope.samples)
    timed.sort(key=lambda pair: pair[0])
    truncated_at = timed[max_events][0] if len(timed) > max_events else None
    events = [event for _, event in timed[:max_events]]
    kept = {(event["pid"], event["tid"], start) for start, event in timed[:max_events] if event["ph"] == "X"}
    linked = _flow_events(trace, kept)
    names = {p["pid"]: p["name"] for p in scope.capture["processes"]}
    return {"traceEvents": _metadata(events, names, threads, frames) + events + linked, "displayTimeUnit": "ms",
            "otherData": {"source": "orchestrate trace", "nsys_version": schema.exporter_version,
                          "window": window.kind, "start_ns": window.start_ns, "end_ns": window.end_ns,
                          "events": len(events), "flows": len(linked) // 2, "truncated_at_ns": truncated_at,
                          "clock": "the report's own, in microseconds (ns / 1000)"}}


def _us(ns: int) -> float:
    return ns / 1000


def _span_event(event: SpanEvent) -> dict:
    pid, tid = _track(event)
    return {"name": event.name, "cat": CATEGORIES[event.kind], "ph": "X", "ts": _us(event.start_ns),
            "dur": _us(event.end_ns - event.start_ns), "pid": pid, "tid": tid}


def _track(event: SpanEvent) -> tuple[int, int]:
    if event.global_tid is not None:
        return pid_of(event.global_tid), tid_of(event.global_tid)
    return _gpu_track(int(event.device or 0), int(event.stream or 0), event.kind)


def _gpu_track(device: int, lane: int, kind: str) -> tuple[int, int]:
    """A GPU lane's track: its GPU's process, its stream (or, apart from them, its OpenGL context)."""
    return GPU_PID + device, (CONTEXT_TID + lane) if kind == "opengl_gpu" else lane


def _flow_events(trace: Trace, kept: set[tuple[int, int, int]]) -> list[dict]:
    """A flow (its "s" and "f" events) per link from a call to the GPU work it queued whose two slices the trace
    holds (``kept``: (pid, tid, start ns) of its complete events), in order of the calls."""
    rows = [row for row in run_events(trace).rows if len(row.starts) and len(row.correlation)]
    links, at = flows(rows), offsets(rows)
    found: list[dict] = []
    for gpu, first in zip(links.gpu.tolist(), links.first.tolist()):
        ends = [_end(rows, at, place) for place in (first, gpu)]
        if all(end in kept for end in ends):
            (call_pid, call_tid, call_ns), (gpu_pid, gpu_tid, gpu_ns) = ends
            flow = len(found) // 2 + 1
            found += [{**FLOW, "ph": "s", "id": flow, "ts": _us(call_ns), "pid": call_pid, "tid": call_tid},
                      {**FLOW, "ph": "f", "bp": "e", "id": flow, "ts": _us(gpu_ns), "pid": gpu_pid, "tid": gpu_tid}]
    return found


def _end(rows: list[EventRow], at: np.ndarray, place: int) -> tuple[int, int, int]:
    """The track and start of the event at a place among the rows' events, as the trace writes its slice."""
    index = int(np.searchsorted(at, place, side="right")) - 1
    row, start = rows[index], int(rows[index].starts[place - at[index]])
    if row.kind not in GPU_TABLES:  # a thread's row, keyed by its globalTid
        return pid_of(row.key), tid_of(row.key), start
    return *_gpu_track(row.key >> LANE_SHIFT, row.key & ((1 << LANE_SHIFT) - 1), row.kind), start


def _frame_events(frames: Frames | None, window: tuple[int, int]) -> list[tuple[int, dict]]:
    if frames is None:
        return []
    pid = pid_of(frames.global_tid)
    found = []
    for index, (start, end) in enumerate(zip(frames.starts.tolist(), frames.ends.tolist())):
        if end > window[0] and start < window[1]:
            kind = "first" if index == 0 else "warm-up" if index < frames.steady_first else "steady"
            found.append((start, {"name": f"frame {index}", "cat": "frame", "ph": "X", "ts": _us(start),
                                  "dur": _us(end - start), "pid": pid, "tid": FRAMES_TID,
                                  "args": {"index": index, "kind": kind, "delimiter": frames.source}}))
    return found


def _sample_events(samples: Samples | None) -> list[tuple[int, dict]]:
    if samples is None:
        return []
    names = samples.names
    stacks: dict[int, list[str]] = {}
    for chain_id, symbol in zip(samples.chain_ids.tolist(), samples.symbols.tolist()):
        stack = stacks.setdefault(chain_id, [])
        if len(stack) < STACK_FRAMES:
            stack.append(names[symbol])
    found = []
    for sample_id, start, gtid, cpu in zip(samples.ids.tolist(), samples.starts.tolist(), samples.tids.tolist(),
                                          samples.cpus.tolist()):
        stack = stacks.get(sample_id, [])
        found.append((start, {"name": stack[0] if stack else "[no stack]", "cat": "CPU sample", "ph": "i", "s": "t",
                              "ts": _us(start), "pid": pid_of(gtid), "tid": tid_of(gtid),
                              "args": {"stack": stack, "cpu": cpu}}))
    return found


def _metadata(events: list[dict], processes: dict[int, str], threads: dict[int, str],
              frames: Frames | None) -> list[dict]:
    """process_name and thread_name of every track the events use."""
    tracks = sorted({(e["pid"], e["tid"]) for e in events})
    named_threads = {(pid_of(g), tid_of(g)): name for g, name in threads.items()}
    meta: list[dict] = []
    for pid in sorted({pid for pid, _ in tracks}):
        if pid >= GPU_PID:
            name = f"GPU {pid - GPU_PID}"
        else:
            name = processes.get(pid) or f"process {pid}"
        meta.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
    for pid, tid in tracks:
        if pid >= GPU_PID:
            name = f"OpenGL context {tid - CONTEXT_TID}" if tid >= CONTEXT_TID else f"stream {tid}"
        elif tid == FRAMES_TID and frames is not None:
            name = f"Frames ({frames.source})"
        else:
            name = named_threads.get((pid, tid)) or f"thread {tid}"
        meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
        if tid == FRAMES_TID:
            meta.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": -1}})
    return meta

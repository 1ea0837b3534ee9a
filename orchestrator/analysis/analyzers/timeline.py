"""The events of one short span, thread by thread: what the GUI's timeline shows for one frame.

Lanes are threads (OpenGL, OS runtime, NVTX and CUDA API calls) and GPU streams (CUDA kernels and memory
operations). Each event keeps its real start and end; ``level`` stacks nested or overlapping events of
one kind in one lane (NVTX ranges inside ranges, a call made while another is open).
"""
from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from ..export.names import PROFILER_THREAD_PREFIX, pid_of, string_values, thread_names, tid_of
from ..export.reads import OSRT_CALL_CLASS
from ..export.schema import Schema
from .api_summaries import memop_name
from .frames import NVTX_RANGE_TYPES

MAX_EVENTS = 3000  # past this the longest events are kept: a frame's structure, not its noise

# kind -> (table, columns that must exist, name id column or None)
THREAD_SOURCES = {
    "nvtx": ("NVTX_EVENTS", ("start", "end", "globalTid", "eventType"), None),
    "opengl": ("OPENGL_API", ("start", "end", "globalTid", "nameId"), "nameId"),
    "osrt": ("OSRT_API", ("start", "end", "globalTid", "nameId"), "nameId"),
    "cuda_api": ("CUPTI_ACTIVITY_KIND_RUNTIME", ("start", "end", "globalTid", "nameId"), "nameId"),
}
GPU_KINDS = ("cuda_kernel", "memcpy", "opengl_gpu")
# what the page's timeline draws
KIND_ORDER = ("nvtx", "opengl", "cuda_api", "osrt", "cuda_kernel", "memcpy", "opengl_gpu")
ALL_KINDS = (*THREAD_SOURCES, *GPU_KINDS)


@dataclass(frozen=True)
class SpanEvent:
    """One event of the report overlapping a span, with where it ran: a thread, or a GPU's stream/context."""
    kind: str
    name: str
    start_ns: int
    end_ns: int
    global_tid: int | None = None
    device: int | None = None
    stream: int | None = None   # CUDA stream, or OpenGL context for opengl_gpu


@dataclass(frozen=True)
class Event:
    lane: str
    kind: str
    name: str
    start_ns: int
    end_ns: int


def span_events(conn: sqlite3.Connection, schema: Schema, span: tuple[int, int],
                kinds: tuple[str, ...] = ALL_KINDS) -> list[SpanEvent]:
    """Every event of the given kinds that overlaps the span, with its real start, end and name."""
    events: list[SpanEvent] = []
    for kind, (table, columns, name_column) in THREAD_SOURCES.items():
        if kind in kinds and schema.has(table, *columns):
            events += _thread_events(conn, schema, kind, table, name_column, span)
    return events + _gpu_events(conn, schema, span, kinds)


def frame_timeline(conn: sqlite3.Connection, schema: Schema, span: tuple[int, int],
                   max_events: int = MAX_EVENTS) -> dict:
    """{start_ns, end_ns, lanes: [{name, events: [{kind, name, start_ns, end_ns, level}]}], events, dropped}."""
    threads = thread_names(conn, schema)
    events = [Event(_lane(e, threads), e.kind, e.name, e.start_ns, e.end_ns)
              for e in span_events(conn, schema, span, KIND_ORDER)]
    events = [e for e in events if not e.lane.startswith(PROFILER_THREAD_PREFIX)]
    dropped = max(0, len(events) - max_events)
    if dropped:
        events = sorted(events, key=lambda e: e.end_ns - e.start_ns, reverse=True)[:max_events]
    return {"start_ns": span[0], "end_ns": span[1], "lanes": _lanes(events), "events": len(events),
            "dropped": dropped}


def _lane(event: SpanEvent, threads: dict[int, str]) -> str:
    if event.global_tid is not None:
        return _thread_label(event.global_tid, threads)
    if event.kind == "opengl_gpu":
        return f"GPU {event.device} OpenGL context {event.stream}"
    return f"GPU {event.device} stream {event.stream}"


def _thread_events(conn: sqlite3.Connection, schema: Schema, kind: str, table: str, name_column: str | None,
                   span: tuple[int, int]) -> list[SpanEvent]:
    where = 'start < :end AND "end" > :start AND globalTid IS NOT NULL'
    if kind == "nvtx":
        text = "text" if schema.has(table, "text") else "NULL"
        text_id = "textId" if schema.has(table, "textId") else "NULL"
        query = (f'SELECT start, "end", globalTid, {text_id}, {text} FROM NVTX_EVENTS WHERE {where} '
                 f'AND eventType IN ({",".join(map(str, NVTX_RANGE_TYPES))})')
    else:
        if table == "OSRT_API" and schema.has(table, "eventClass"):
            where += f" AND eventClass = {OSRT_CALL_CLASS}"
        query = f'SELECT start, "end", globalTid, {name_column}, NULL FROM "{table}" WHERE {where}'
    rows = conn.execute(query, {"start": span[0], "end": span[1]}).fetchall()
    names = string_values(conn, [r[3] for r in rows if r[3] is not None])
    return [SpanEvent(kind, names.get(name_id, text) if name_id is not None else text or "", int(start), int(end),
                      int(gtid)) for start, end, gtid, name_id, text in rows]


def _gpu_events(conn: sqlite3.Connection, schema: Schema, span: tuple[int, int],
                kinds: tuple[str, ...]) -> list[SpanEvent]:
    found: list[SpanEvent] = []
    params = {"start": span[0], "end": span[1]}
    overlap = 'WHERE start < :end AND "end" > :start'
    if "cuda_kernel" in kinds and schema.has("CUPTI_ACTIVITY_KIND_KERNEL", "start", "end", "deviceId", "streamId",
                                             "shortName"):
        rows = conn.execute('SELECT start, "end", deviceId, streamId, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL '
                            + overlap, params).fetchall()
        names = string_values(conn, [r[4] for r in rows])
        found += [SpanEvent("cuda_kernel", names.get(name, "[kernel]"), start, end, None, device, stream)
                  for start, end, device, stream, name in rows]
    for table, kind_column in (("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind"), ("CUPTI_ACTIVITY_KIND_MEMSET", None)):
        if "memcpy" not in kinds or not schema.has(table, "start", "end", "deviceId", "streamId"):
            continue
        kind = kind_column if kind_column and schema.has(table, kind_column) else "NULL"
        rows = conn.execute(f'SELECT start, "end", deviceId, streamId, {kind} FROM {table} ' + overlap,
                            params).fetchall()
        found += [SpanEvent("memcpy", "[CUDA memset]" if copy_kind is None else memop_name(int(copy_kind)),
                            start, end, None, device, stream) for start, end, device, stream, copy_kind in rows]
    if "opengl_gpu" in kinds and schema.has("OPENGL_WORKLOAD", "start", "end", "nameId"):
        gpu = "coalesce(gpu, 0)" if schema.has("OPENGL_WORKLOAD", "gpu") else "0"
        context = "coalesce(contextId, 0)" if schema.has("OPENGL_WORKLOAD", "contextId") else "0"
        rows = conn.execute(f'SELECT start, "end", {gpu}, {context}, nameId FROM OPENGL_WORKLOAD ' + overlap,
                            params).fetchall()
        names = string_values(conn, [r[4] for r in rows])
        found += [SpanEvent("opengl_gpu", names.get(name, "[OpenGL workload]"), start, end, None, device, ctx)
                  for start, end, device, ctx, name in rows]
    return found


def _thread_label(gtid: int, threads: dict[int, str]) -> str:
    name = threads.get(int(gtid), "")
    return f"{name} ({tid_of(gtid)})" if name else f"thread {tid_of(gtid)} of {pid_of(gtid)}"


def _lanes(events: list[Event]) -> list[dict]:
    """Lanes in order of first activity; in each, events by kind, stacked into levels."""
    by_lane: dict[str, list[Event]] = defaultdict(list)
    for event in sorted(events, key=lambda e: (e.start_ns, -e.end_ns)):
        by_lane[event.lane].append(event)
    lanes = []
    for lane, mine in by_lane.items():
        rows = []
        for kind in KIND_ORDER:
            rows += stack_levels([e for e in mine if e.kind == kind])
        lanes.append({"name": lane, "events": rows})
    gpu_last = sorted(lanes, key=lambda lane: str(lane["name"]).startswith("GPU "))
    return gpu_last


def stack_levels(events: list[Event]) -> list[dict]:
    """Each event on the lowest level free at its start (events come sorted by start)."""
    level_ends: list[int] = []
    placed = []
    for event in events:
        level = next((i for i, end in enumerate(level_ends) if end <= event.start_ns), len(level_ends))
        if level == len(level_ends):
            level_ends.append(event.end_ns)
        else:
            level_ends[level] = event.end_ns
        placed.append({"kind": event.kind, "name": event.name, "start_ns": event.start_ns, "end_ns": event.end_ns,
                       "level": level})
    return placed


def representative_frame(per_frame_ns: list[int], first_steady: int, p50_ns: float,
                         incomplete: Collection[int] = ()) -> int:
    """The steady frame whose time is closest to the steady median: the frame that tells the usual story.
    Frames whose GPU work nsys did not wholly record (``incomplete``) only when no other is steady."""
    steady = np.asarray(per_frame_ns[first_steady:], dtype=np.float64)
    if not len(steady):
        return 0
    distance = np.abs(steady - p50_ns)
    partial = [i - first_steady for i in incomplete if first_steady <= i < len(per_frame_ns)]
    if len(partial) < len(steady):
        distance[partial] = np.inf
    return first_steady + int(np.argmin(distance))


def busy_span(conn: sqlite3.Connection, schema: Schema, window: tuple[int, int], length_ns: int) -> tuple[int, int]:
    """A slice for a capture without frames: around the median kernel launch when the GPU ran kernels (in
    the window when any ran there: some re-exported reports put them all before the capture's start),
    else around the middle of the window."""
    low, high = window
    if high - low <= length_ns:
        return low, high
    centre = _median_kernel_start(conn, schema, window)
    if centre is None:
        centre = (low + high) // 2
    start = centre - length_ns // 2
    if low <= centre <= high:  # keep the slice inside the window
        start = min(max(low, start), high - length_ns)
    return start, start + length_ns


def _median_kernel_start(conn: sqlite3.Connection, schema: Schema, window: tuple[int, int]) -> int | None:
    if not schema.has("CUPTI_ACTIVITY_KIND_KERNEL", "start"):
        return None
    for where, args in (("WHERE start BETWEEN ? AND ?", window), ("", ())):
        row = conn.execute(f"SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL {where} ORDER BY start LIMIT 1 "
                           f"OFFSET (SELECT count(*) / 2 FROM CUPTI_ACTIVITY_KIND_KERNEL {where})",
                           (*args, *args)).fetchone()
        if row:
            return int(row[0])
    return None

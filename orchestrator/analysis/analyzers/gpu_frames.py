"""The GPU's side of each frame, from what nsys records: the step a user otherwise takes in Nsight Graphics.

Per frame, the GPU time of each kind of work: OpenGL's GPU workload by the call that queued it
(glDispatchCompute, glDrawArrays, glClear...) and CUDA kernels by name; how many pieces there were, and the
longest single one. A piece of work counts in the frame whose CPU queued it: the frame holding the API call
with the work's correlationId (glDispatchCompute, cudaLaunchKernel), as Nsight Graphics counts a frame's
calls, even when the GPU ran it after the frame ended. Work no call matches counts in the frame the GPU
started it in. A frame runs from its start to the next frame's start, the last one to its end.

nsys reads OpenGL's GPU timings some calls after they were queued, so the calls of a capture's last frame
often have no GPU record at all (es2gears: its last 4 calls; posebench --delegate gl: the last 14
dispatches): a frame holding calls queued after the last record is incomplete, said so, and left out of the
medians.
"""
from __future__ import annotations

import numpy as np

from ..export.bulk import int_columns
from ..export.names import string_values
from ..export.trace import Trace
from .frames import Frames

# the tables of GPU work that name what ran, and how a summary calls each
GPU_NAMED_TABLES = {"OPENGL_WORKLOAD": "OpenGL", "CUPTI_ACTIVITY_KIND_KERNEL": "CUDA"}
# the calls that queue each table's work, matched by correlationId
QUEUING_CALLS = {"OPENGL_WORKLOAD": "OPENGL_API", "CUPTI_ACTIVITY_KIND_KERNEL": "CUPTI_ACTIVITY_KIND_RUNTIME"}


def queued_at(trace: Trace, table: str, corr: np.ndarray, gpu_start: np.ndarray) -> tuple[np.ndarray, int]:
    """When the CPU queued each piece of work (its call's start), the GPU's start where no call matches; and how
    many matched. Correlation ids that more than one call carries (several processes) match none."""
    calls = QUEUING_CALLS[table]
    if not len(corr) or not trace.has(calls, "correlationId", "start"):
        return gpu_start, 0
    found = int_columns(trace.local_conn(), calls, {"corr": "correlationId", "start": "start"},
                        "correlationId > 0 AND correlationId BETWEEN :lo AND :hi",
                        {"lo": int(corr.min()), "hi": int(corr.max())})
    rows = np.stack([found["corr"], found["start"]], axis=1) if len(found["corr"]) else np.empty((0, 2), np.int64)
    if not len(rows):
        return gpu_start, 0
    ids, first, seen = np.unique(rows[:, 0], return_index=True, return_counts=True)
    slot = np.minimum(np.searchsorted(ids, corr), len(ids) - 1)
    matched = (corr > 0) & (ids[slot] == corr) & (seen[slot] == 1)
    return np.where(matched, rows[first, 1][slot], gpu_start), int(matched.sum())


def unrecorded_calls(trace: Trace, table: str) -> np.ndarray:
    """The start of every call queued after the last one a GPU record of the table covers (its records name a
    range of calls, correlationId to endCorrelationId): work nsys did not read before the capture ended."""
    calls = QUEUING_CALLS[table]
    if not trace.has(table, "endCorrelationId") or not trace.has(calls, "correlationId", "start"):
        return np.empty(0, dtype=np.int64)
    conn = trace.local_conn()
    [[last]] = conn.execute(f"SELECT max(max(coalesce(endCorrelationId, 0), coalesce(correlationId, 0))) "
                            f"FROM {table}").fetchall()
    if not last:
        return np.empty(0, dtype=np.int64)
    starts = conn.execute(f"SELECT start FROM {calls} WHERE correlationId > ?", (int(last),)).fetchall()
    return np.array([row[0] for row in starts], dtype=np.int64)


def frame_of(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The index of the frame each time falls in, -1 outside every frame. Frame i holds the times from its
    start to frame i+1's start; the last frame holds them to its end."""
    index = np.searchsorted(starts, at, side="right") - 1
    last = len(starts) - 1
    outside = (index < 0) | ((index == last) & (at >= ends[last])) if len(starts) else np.ones(len(at), bool)
    return np.where(outside, -1, index)


def per_frame(frame_count: int, frame: np.ndarray, durations: np.ndarray, kinds: np.ndarray,
              kind_names: list[str]) -> dict:
    """GPU time and pieces of work per frame, in total and per kind (kinds index kind_names)."""
    inside = frame >= 0
    frame, durations, kinds = frame[inside], durations[inside], kinds[inside]
    total = np.bincount(frame, weights=durations, minlength=frame_count).astype(np.int64)
    pieces = np.bincount(frame, minlength=frame_count).astype(np.int64)
    by_kind: list[dict] = []
    for k, name in enumerate(kind_names):
        mine = kinds == k
        if not mine.any():
            continue
        ns = np.bincount(frame[mine], weights=durations[mine], minlength=frame_count).astype(np.int64)
        count = np.bincount(frame[mine], minlength=frame_count).astype(np.int64)
        longest = int(np.argmax(durations[mine]))
        by_kind.append({"name": name, "per_frame_ns": [int(x) for x in ns], "count_per_frame": [int(x) for x in count],
                        "longest_ns": int(durations[mine][longest]), "longest_frame": int(frame[mine][longest])})
    by_kind.sort(key=lambda entry: -sum(entry["per_frame_ns"]))
    return {"per_frame_ns": [int(x) for x in total], "count_per_frame": [int(x) for x in pieces], "kinds": by_kind}


def steady_median(values: list[int], first_steady: int, incomplete: frozenset[int] = frozenset()) -> float | None:
    """The median over the steady frames (all frames when none is steady), without the incomplete ones."""
    start = first_steady if len(values) > first_steady else 0
    steady = [v for i, v in enumerate(values) if i >= start and i not in incomplete]
    return float(np.median(steady)) if steady else None


def gpu_frames_section(trace: Trace, frames: Frames | None, renderer: str | None = None) -> dict | None:
    """The GPU's side of each frame, or None without frames or without named GPU work. ``renderer`` names
    the GPU (the app's GL_RENDERER, the board's GPU)."""
    if frames is None or not len(frames.starts):
        return None
    sources: list[str] = []
    kind_names: list[str] = []
    at: list[np.ndarray] = []
    matched = 0
    unrecorded: list[np.ndarray] = []
    durations: list[np.ndarray] = []
    kinds: list[np.ndarray] = []
    for table, api in GPU_NAMED_TABLES.items():
        rows = trace.events(table)
        if rows is None or not len(rows["start"]):
            continue
        sources.append(api)
        ids, slot = np.unique(rows["nameId"], return_inverse=True)
        names = string_values(trace.local_conn(), ids)
        offset = len(kind_names)
        kind_names += [names.get(int(i), f"<string {int(i)}>") for i in ids]
        queued, found = queued_at(trace, table, rows["corr"], rows["start"])
        at.append(queued)
        matched += found
        unrecorded.append(unrecorded_calls(trace, table))
        durations.append(rows["dur"])
        kinds.append(slot + offset)
    if not sources:
        return None
    frame = frame_of(frames.starts, frames.ends, np.concatenate(at))
    section = per_frame(len(frames.starts), frame, np.concatenate(durations), np.concatenate(kinds), kind_names)
    first = frames.steady_first
    late = np.concatenate(unrecorded)
    late_frames = frame_of(frames.starts, frames.ends, late)
    incomplete = frozenset(int(i) for i in np.unique(late_frames[late_frames >= 0]))
    for entry in section["kinds"]:
        entry["steady_median_ns"] = steady_median(entry["per_frame_ns"], first, incomplete)
        entry["steady_median_count"] = steady_median(entry["count_per_frame"], first, incomplete)
    pieces = sum(len(d) for d in durations)
    return {"sources": sources, "frame_source": frames.source, "steady_first": first, "renderer": renderer,
            "by_queuing_call": matched, "by_gpu_start": pieces - matched,
            "unrecorded_calls": len(late), "incomplete_frames": sorted(incomplete),
            "steady_median_ns": steady_median(section["per_frame_ns"], first, incomplete), **section}

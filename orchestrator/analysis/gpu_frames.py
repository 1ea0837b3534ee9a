"""The GPU's side of each frame, from what nsys records: the step a user otherwise takes in Nsight Graphics.

Per frame, the GPU time of each kind of work: OpenGL's GPU workload by the call that queued it
(glDispatchCompute, glDrawArrays, glClear...) and CUDA kernels by name; how many pieces there were, and the
longest single one. A piece of work counts in the frame during which the GPU started it (a frame runs from
its start to the next frame's start, the last one to its end), so work a frame queued that the GPU ran
later counts where it ran, as a timeline shows it.
"""
from __future__ import annotations

import numpy as np

from .frames import Frames
from .names import string_values
from .trace import Trace

# the tables of GPU work that name what ran, and how a summary calls each
GPU_NAMED_TABLES = {"OPENGL_WORKLOAD": "OpenGL", "CUPTI_ACTIVITY_KIND_KERNEL": "CUDA"}


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


def steady_median(values: list[int], first_steady: int) -> float | None:
    steady = values[first_steady:] if len(values) > first_steady else values
    return float(np.median(steady)) if steady else None


def gpu_frames_section(trace: Trace, frames: Frames | None) -> dict | None:
    """The GPU's side of each frame, or None without frames or without named GPU work."""
    if frames is None or not len(frames.starts):
        return None
    sources: list[str] = []
    kind_names: list[str] = []
    at: list[np.ndarray] = []
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
        at.append(rows["start"])
        durations.append(rows["dur"])
        kinds.append(slot + offset)
    if not sources:
        return None
    starts = np.concatenate(at)
    frame = frame_of(frames.starts, frames.ends, starts)
    section = per_frame(len(frames.starts), frame, np.concatenate(durations), np.concatenate(kinds), kind_names)
    first = frames.steady_first
    for entry in section["kinds"]:
        entry["steady_median_ns"] = steady_median(entry["per_frame_ns"], first)
        entry["steady_median_count"] = steady_median(entry["count_per_frame"], first)
    return {"sources": sources, "frame_source": frames.source, "steady_first": first,
            "steady_median_ns": steady_median(section["per_frame_ns"], first), **section}

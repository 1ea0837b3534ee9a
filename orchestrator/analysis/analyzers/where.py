"""Where a finding happens: its time window and the frames that carry most of it, in ns on the report's clock.

A finding about time spent in calls is attributed to frames by how much of each call falls inside each frame;
one about CPU samples, by how many of its samples land in each frame.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frames import Frames

TOP_FRAMES = 3


@dataclass(frozen=True)
class Where:
    start_ns: int
    end_ns: int
    frames: tuple[tuple[int, int, int, int], ...] = ()  # (index, start_ns, end_ns, amount), largest first
    unit: str = "ns"                                     # what amount counts: ns of the calls, or samples

    def to_json(self) -> dict:
        return {"start_ns": self.start_ns, "end_ns": self.end_ns,
                "frames": [{"index": i, "start_ns": s, "end_ns": e, self.unit: amount}
                           for i, s, e, amount in self.frames]}


def covered_before(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each time t, how much of the (disjoint) intervals lies before t."""
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    whole = np.r_[0, np.cumsum(ends - starts)]
    k = np.searchsorted(starts, times, side="right")  # intervals starting at or before t
    last = np.maximum(k - 1, 0)  # the interval t may be in: all before it are whole
    partial = np.where(k > 0, np.clip(times - starts[last], 0, ends[last] - starts[last]), 0)
    return whole[last] * (k > 0) + partial


def in_frames_ns(frames: Frames, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Time of the intervals inside each frame (the intervals of one thread's outermost calls do not overlap)."""
    if not len(starts):
        return np.zeros(len(frames.starts), dtype=np.int64)
    return (covered_before(starts, ends, frames.ends) - covered_before(starts, ends, frames.starts)).astype(np.int64)


def in_frames_count(frames: Frames, times: np.ndarray) -> np.ndarray:
    """How many of the instants fall inside each frame."""
    index = np.searchsorted(frames.starts, times, side="right") - 1
    inside = (index >= 0) & (times < frames.ends[np.maximum(index, 0)])
    return np.bincount(index[inside], minlength=len(frames.starts)).astype(np.int64)


def where(window: tuple[int, int], frames: Frames | None, per_frame: np.ndarray | None = None,
          unit: str = "ns") -> Where:
    """The window, plus the frames inside it with the most of the finding."""
    if frames is None or per_frame is None or not len(per_frame):
        return Where(*window)
    inside = (frames.ends > window[0]) & (frames.starts < window[1]) & (per_frame > 0)
    ranked = [int(i) for i in np.flatnonzero(inside)[np.argsort(-per_frame[inside], kind="stable")][:TOP_FRAMES]]
    return Where(*window, tuple((i, int(frames.starts[i]), int(frames.ends[i]), int(per_frame[i])) for i in ranked),
                 unit)

"""Each frame's calls and GPU work by name, from the run's export (its whole-run events, as the page's timeline holds
them): an event belongs to the frame it starts in, on whichever thread or GPU lane it ran. A run folder without its
export (report.sqlite) has no such rows."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..figures.run_analysis import run_events_of

FRAME_CALL_KINDS = ("nvtx", "opengl", "cuda_api", "osrt", "cuda_kernel", "memcpy", "opengl_gpu")
EXPORT = "report.sqlite"


def frame_calls(run_dir: Path, starts: list[int], durations: list[int]) -> list[dict[str, Any]]:
    """Per frame, kind and name: how many events started in the frame and their time, frame by frame."""
    export = run_dir / EXPORT
    if not starts or len(starts) != len(durations) or not export.is_file():
        return []
    begins = np.asarray(starts, dtype=np.int64)
    ends = begins + np.asarray(durations, dtype=np.int64)
    events = run_events_of(export)
    rows: list[dict[str, Any]] = []
    for row in events.rows:
        if row.kind not in FRAME_CALL_KINDS or not len(row.starts):
            continue
        frame = np.searchsorted(begins, row.starts, side="right") - 1
        inside = frame >= 0
        inside[inside] &= row.starts[inside] < ends[frame[inside]]
        if not inside.any():
            continue
        frames, names = frame[inside], row.names[inside].astype(np.int64)
        spans = (row.ends[inside] - row.starts[inside]).astype(np.int64)
        keys = frames * (len(events.names) + 1) + names
        unique, which = np.unique(keys, return_inverse=True)
        calls = np.bincount(which)
        totals = np.bincount(which, weights=spans)
        for key, count, total in zip(unique.tolist(), calls.tolist(), totals.tolist()):
            index, name = divmod(key, len(events.names) + 1)
            rows.append({"frame": index, "kind": row.kind, "name": events.names[name], "calls": count,
                         "total_ns": int(total)})
    return _merged(rows)


def _merged(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per frame, kind and name (the same name on several threads or lanes added up), frame by frame."""
    merged: dict[tuple[int, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["frame"], row["kind"], row["name"])
        if key in merged:
            merged[key]["calls"] += row["calls"]
            merged[key]["total_ns"] += row["total_ns"]
        else:
            merged[key] = dict(row)
    return [merged[key] for key in sorted(merged)]

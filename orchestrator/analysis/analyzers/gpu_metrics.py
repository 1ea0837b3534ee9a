"""The GPU's hardware metrics nsys sampled (``--gpu-metrics``): per GPU and metric, the mean over the analysis
window and, with frames, over each frame and the median of the steady frames. This is the seed's question of
what holds a frame back on the GPU (SMs active, SM issue, tensor, DRAM bandwidth, where the set has them;
Jetson's ga10b set has no DRAM or L2 metric).

Read from the tables exports of nsys 2023.4 and later hold, as NVIDIA's exporter documents them:
``GPU_METRICS(timestamp, typeId, metricId, value)`` and ``TARGET_INFO_GPU_METRICS(typeId, sourceId, typeName,
metricId, metricName)``; a metric is (typeId, metricId), its GPU ``typeId & 0xFF``. Percentages ("[Throughput
%]") and clocks ("[MHz]") are kept; counts with a display multiplier nsys applies itself (the warps' "[Avg]")
are left out rather than shown wrong. Clocks that nsys 2025 exports in Hz (signed 32-bit) are read as MHz.
nsys 2022 kept these samples as JSON in GENERIC_EVENTS: not read here.
"""
from __future__ import annotations

import re
import sqlite3

import numpy as np

from ..export.schema import Schema
from .frames import Frames
from .gpu_frames import frame_of

UNIT = re.compile(r"\[([^\]]+)\]\s*$")
KEPT_UNITS = {"Throughput %": "%", "MHz": "MHz"}
HZ_AS_MHZ = 100_000  # no GPU clock reaches 100 GHz: a larger "MHz" value is Hz


def metric_unit(name: str) -> str | None:
    """'SMs Active [Throughput %]' -> '%', 'GPC Clock Frequency [MHz]' -> 'MHz', other units -> None."""
    match = UNIT.search(name)
    return KEPT_UNITS.get(match.group(1).strip()) if match else None


def as_shown(values: np.ndarray, unit: str) -> np.ndarray:
    values = values.astype(np.float64)
    if unit == "MHz" and len(values) and (np.abs(values) > HZ_AS_MHZ).any():
        return (values.astype(np.int64) & 0xFFFFFFFF) / 1e6
    return values


def per_frame_means(times: np.ndarray, values: np.ndarray, frames: Frames) -> list[float | None]:
    """The mean of the samples inside each frame (None for a frame no sample fell in)."""
    frame = frame_of(frames.starts, frames.ends, times)
    inside = frame >= 0
    sums = np.bincount(frame[inside], weights=values[inside], minlength=len(frames.starts))
    counts = np.bincount(frame[inside], minlength=len(frames.starts))
    return [float(s / c) if c else None for s, c in zip(sums, counts)]


def gpu_metrics_section(conn: sqlite3.Connection, schema: Schema, window: tuple[int, int],
                        frames: Frames | None) -> dict | None:
    if not (schema.has("GPU_METRICS", "timestamp", "typeId", "metricId", "value")
            and schema.has("TARGET_INFO_GPU_METRICS", "typeId", "metricId", "metricName")):
        return None
    names = {(int(t), int(m)): str(n) for t, m, n in conn.execute(
        "SELECT DISTINCT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS")}
    kept = {key: (name, unit) for key, name in names.items() if (unit := metric_unit(name))}
    rows = np.array(conn.execute("SELECT timestamp, typeId, metricId, value FROM GPU_METRICS WHERE timestamp "
                                 "IS NOT NULL ORDER BY timestamp").fetchall(), dtype=np.int64).reshape(-1, 4)
    metrics = []
    for (type_id, metric_id), (name, unit) in sorted(kept.items()):
        mine = rows[(rows[:, 1] == type_id) & (rows[:, 2] == metric_id)]
        values = as_shown(mine[:, 3], unit)
        in_window = (mine[:, 0] >= window[0]) & (mine[:, 0] < window[1])
        if not in_window.any():
            continue
        entry: dict = {"gpu": type_id & 0xFF, "name": name, "unit": unit, "samples": int(in_window.sum()),
                       "mean": float(values[in_window].mean())}
        if frames is not None and len(frames.starts):
            means = per_frame_means(mine[:, 0], values, frames)
            steady = [m for m in means[frames.steady_first:] if m is not None]
            entry["per_frame_mean"] = means
            entry["steady_median"] = float(np.median(steady)) if steady else None
        metrics.append(entry)
    if not metrics:
        return None
    return {"source": "GPU_METRICS", "gpus": sorted({m["gpu"] for m in metrics}),
            "left_out": sorted(set(names.values()) - {name for name, _ in kept.values()}), "metrics": metrics}

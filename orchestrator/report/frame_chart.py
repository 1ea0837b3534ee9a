"""The frame-time chart: each frame's time over the run (or the GPU's time per frame), on a scale that fits the
steady frames, its levels labelled apart from each other, in the unit its values read in. Pure geometry, as
report/charts.py's."""
from __future__ import annotations

import numpy as np

from ..analysis.analyzers.frames import first_steady_index
from .charts import WIDTH, Chart, Line, Rect, Text, decimate, nice_ticks
from .units import format_ns

TIME_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0))
LABEL_GAP = 12.0  # px between the baselines of two level labels


def time_unit(top_ns: float) -> tuple[str, float]:
    """The unit an axis up to ``top_ns`` reads best in: the largest whose ticks are at least 1."""
    return next(((unit, size) for unit, size in TIME_UNITS if top_ns >= size), TIME_UNITS[-1])


def spread(ys: list[float], gap: float = LABEL_GAP, low: float = 0.0) -> list[float]:
    """Label baselines as close to ``ys`` as they can be with ``gap`` between neighbours (in their order, top
    down), none above ``low``: labels that would print on top of each other are pushed apart."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed = [0.0] * len(ys)
    last = low - gap
    for i in order:
        placed[i] = max(ys[i], last + gap)
        last = placed[i]
    return placed


def frame_series(per_frame_ns: list[int], warmup: int, lines_ns: dict[str, float],
                 findings: dict[int, list[str]] | None = None, name: str = "frame-series",
                 counted: str = "frame") -> Chart:
    """Frame time over the run: one point per frame (decimated), warm-up shaded, horizontal lines at the given
    levels (p50, p90, p99) labelled with their values apart from each other, and a marker on each frame that
    carries most of a verdict finding (``findings``: frame index -> the findings' kinds); ``counted``: what a
    point is, "frame" or "iteration". The scale fits the
    steady frames: a first frame or warm-up above them (a first inference is often ten times a steady one) is
    drawn at the top edge with its value, marked apart. The unit suits the values (ms, µs or ns)."""
    height, left, right, top, bottom = 260.0, 56.0, 96.0, 14.0, 30.0  # the levels' labels right of the plot
    raw = np.asarray(per_frame_ns, dtype=np.float64)
    steady = raw[first_steady_index(len(raw), warmup):] if len(raw) else raw
    highest = float(steady.max()) if len(steady) else float(raw.max()) if len(raw) else 1.0
    highest = max([highest, *(float(v) for v in lines_ns.values())], default=1.0) or 1.0
    unit, size = time_unit(highest)
    values = raw / size
    top_value = highest / size * 1.05
    ticks = nice_ticks(0.0, top_value)
    top_value = max(top_value, ticks[-1])
    kept = decimate(values)
    plot_w, plot_h = WIDTH - left - right, height - top - bottom

    def x_of(index: float) -> float:
        return left + plot_w * (index / max(len(values) - 1, 1))

    def y_of(value: float) -> float:
        return top + plot_h * (1 - min(value, top_value) / top_value)
    chart = Chart(name, WIDTH, height)
    for tick in ticks:
        chart.lines.append(Line(left, y_of(tick), WIDTH - right, y_of(tick), "grid"))
        chart.texts.append(Text(left - 6, y_of(tick) + 4, f"{tick:g}", "axis", "end"))
    chart.texts.append(Text(4, top + 8, unit, "axis"))
    for tick in nice_ticks(0, max(len(values) - 1, 1), 6):
        chart.texts.append(Text(x_of(tick), height - 10, f"{tick:g}", "axis", "middle"))
    chart.texts.append(Text(WIDTH - right + 6, height - 10, counted, "axis"))
    if warmup:
        chart.rects.append(Rect(x_of(1), top, x_of(1 + warmup) - x_of(1), plot_h, "warmup",
                                f"warm-up: {counted}s 1 to {warmup}"))
    levels = list(lines_ns.items())
    label_ys = spread([y_of(level / size) - 3 for _, level in levels], low=top)
    for (label, level), label_y in zip(levels, label_ys):
        y = y_of(level / size)
        chart.lines.append(Line(left, y, WIDTH - right, y, f"level level-{label}", f"{label} {format_ns(level)}"))
        chart.texts.append(Text(WIDTH - right + 6, label_y + 7, f"{label} {level / size:.3g} {unit}",
                                f"level-label level-{label}"))
    chart = Chart(chart.name, chart.width, chart.height, chart.rects, chart.lines, chart.texts,
                  " ".join(f"{x_of(i):.1f},{y_of(values[i]):.1f}" for i in kept),
                  f"{len(values)} {counted}s" + (f", {len(kept)} drawn" if len(kept) < len(values) else ""),
                  f"{x_of(0):.2f},{x_of(max(len(values) - 1, 1)):.2f},{len(values)}")
    if len(values):
        above = values[0] > top_value
        first = f"first {counted}: {format_ns(per_frame_ns[0])}"
        chart.rects.append(Rect(x_of(0) - 3, y_of(values[0]) - 3, 6, 6, "first",
                                first + (", above the scale" if above else "")))
        if above:
            chart.texts.append(Text(x_of(0) + 6, top - 3, f"first {counted} {format_ns(per_frame_ns[0])} ↑",
                                    "first-label"))
        over = int((values[1:] > top_value).sum())
        if over:
            chart.texts.append(Text(WIDTH - right - 2, top - 3,
                                    f"{over} more {counted}s above the scale, at its top edge", "axis", "end"))
    for index, kinds in sorted((findings or {}).items()):
        if 0 <= index < len(values):
            chart.rects.append(Rect(x_of(index) - 4, y_of(values[index]) - 4, 8, 8, "finding",
                                    f"{counted} {index} ({format_ns(per_frame_ns[index])}): most of "
                                    + ", ".join(k.replace("_", " ") for k in kinds)))
    return chart

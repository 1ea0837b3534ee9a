"""Chart geometry: numbers in, shapes out. Pure; the templates draw the shapes as inline SVG.

Every data shape carries the class ``mark`` and each chart says how many it drew (``marks``), so a page
can be checked for charts that drew what they were given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..analysis.analyzers.timeline import KIND_ORDER
from ..documents.summary_sections import CallTreeNode
from .units import format_ns

WIDTH = 960.0
MAX_SERIES_POINTS = 2000
LABEL_CHARS = 58


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    cls: str
    tip: str = ""
    label: str = ""
    count: int | None = None  # how many data items the mark stands for (histogram bins)
    frame: int | None = None  # the frame a click on it shows (a bar of frames: the slowest of them)
    fill: str | None = None   # its own colour (an event's: its name's), else its class's


@dataclass(frozen=True)
class Text:
    x: float
    y: float
    text: str
    cls: str = ""
    anchor: str = "start"


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    cls: str
    tip: str = ""


@dataclass(frozen=True)
class Area:
    """A filled shape ("x,y x,y ..."), e.g. one share stacked under the others."""
    points: str
    cls: str
    tip: str = ""


@dataclass(frozen=True)
class Chart:
    name: str                  # what the chart shows: the page's data-chart attribute
    width: float
    height: float
    rects: list[Rect] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    polyline: str = ""         # "x,y x,y ..." of a series
    polyline_tip: str = ""
    index_axis: str = ""       # "x of the first, x of the last, count": a chart whose x axis counts frames
    areas: list[Area] = field(default_factory=list)  # drawn under the rects

    @property
    def marks(self) -> int:
        """Data shapes drawn: each rect of class mark, each point of the series."""
        points = len(self.polyline.split()) if self.polyline else 0
        return sum(1 for r in self.rects if r.cls.startswith("mark")) + points


def shorten(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def value_axis(values: list[float], count: int = 5) -> tuple[float, float, list[float]]:
    """A chart's value axis over ``values``: its low and high ends (the values with a margin, out to the ticks) and
    round ticks."""
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
    ticks = nice_ticks(low - pad, high + pad, count)
    return min(low - pad, ticks[0]), max(high + pad, ticks[-1]), ticks


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round axis values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [round(first + i * step, 12) for i in range(int((high - first) / step) + 1)]


def decimate(values: np.ndarray, max_points: int = MAX_SERIES_POINTS) -> np.ndarray:
    """Indices of at most ``max_points`` values that keep each bucket's lowest and highest: spikes survive."""
    n = len(values)
    if n <= max_points:
        return np.arange(n)
    buckets = max_points // 2
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    keep = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        part = values[lo:hi]
        keep += [lo + int(np.argmin(part)), lo + int(np.argmax(part))]
    return np.unique(np.array(keep, dtype=np.int64))


def board_line(name: str, points_ns: list[list[float]], unit: str, span_ns: tuple[int, int]) -> Chart:
    """One of the board's figures during the capture (a clock, a load, a temperature, the power) over the
    report's time in seconds: a small chart drawn under the frame chart (its title carries the unit)."""
    height, left, right, top, bottom = 110.0, 56.0, 16.0, 10.0, 24.0
    start, end = span_ns
    if end <= start:
        end = start + 1
    values = [float(v) for _, v in points_ns]
    high = max(values, default=1.0) * 1.05 or 1.0
    ticks = nice_ticks(0.0, high, 3)
    high = max(high, ticks[-1])
    plot_w, plot_h = WIDTH - left - right, height - top - bottom

    def x_of(ns: float) -> float:
        return left + plot_w * min(max((ns - start) / (end - start), 0.0), 1.0)

    def y_of(value: float) -> float:
        return top + plot_h * (1 - value / high)
    chart = Chart(name, WIDTH, height)
    for tick in ticks:
        chart.lines.append(Line(left, y_of(tick), WIDTH - right, y_of(tick), "grid"))
        chart.texts.append(Text(left - 6, y_of(tick) + 4, f"{tick:g}", "axis", "end"))
    for tick in nice_ticks(start / 1e9, end / 1e9, 6):
        if start <= tick * 1e9 <= end:
            chart.texts.append(Text(x_of(tick * 1e9), height - 8, f"{tick:g}", "axis", "middle"))
    chart.texts.append(Text(WIDTH - right, height - 8, "s", "axis", "end"))
    inside = [(ns, v) for ns, v in points_ns if start <= ns <= end]
    return Chart(chart.name, chart.width, chart.height, chart.rects, chart.lines, chart.texts,
                 " ".join(f"{x_of(ns):.1f},{y_of(float(v)):.1f}" for ns, v in inside),
                 f"{len(inside)} samples")


def histogram(steady_ns: list[int] | np.ndarray, bins: int = 30, counted: str = "frame") -> Chart:
    """How steady frame times spread: one bar per non-empty bin, its count in ``count``. A few hitches far
    out would squeeze every other frame into one bar: past 1.5x the 99.5th percentile they share the last
    bar, which says so. A bin that has frames is never drawn thinner than a line. ``counted``: "frame" or
    "iteration"."""
    height, left, bottom, top = 220.0, 56.0, 30.0, 12.0
    values = np.asarray(steady_ns, dtype=np.float64) / 1e6
    chart = Chart("frame-histogram", WIDTH, height)
    if not len(values):
        return chart
    low, high = float(values.min()), float(values.max())
    tail = float(np.quantile(values, 0.995))
    clipped = high > 1.5 * tail
    if clipped:
        high = tail
    if high <= low:
        high = low + max(low * 0.01, 1e-3)
    counts, edges = np.histogram(np.minimum(values, high), bins=bins, range=(low, high))
    beyond = int((values > high).sum())
    plot_w, plot_h = WIDTH - left - 16, height - top - bottom
    tallest = int(counts.max())
    bar_w = plot_w / bins
    for i, count in enumerate(counts):
        if count:
            h = max(plot_h * count / tallest, 2.0)
            tip = f"{edges[i]:.2f}-{edges[i + 1]:.2f} ms: {count} {counted}{'s' if count != 1 else ''}"
            if clipped and i == bins - 1:
                tip += f", {beyond} of them above {high:.2f} ms (up to {values.max():.2f} ms)"
            chart.rects.append(Rect(left + i * bar_w + 1, top + plot_h - h, bar_w - 2, h, "mark bar", tip,
                                    count=int(count)))
    for tick in nice_ticks(low, high, 6):
        x = left + plot_w * (tick - low) / (high - low)
        chart.texts.append(Text(x, height - 10, f"{tick:g}", "axis", "middle"))
    if clipped:
        chart.texts.append(Text(WIDTH - 16, top + 10, f"last bar: also {beyond} {counted}s above {high:.1f} ms, up to "
                                f"{values.max():.1f} ms", "axis", "end"))
    chart.texts.append(Text(left - 6, top + 10, str(tallest), "axis", "end"))
    return chart


def hbars(name: str, rows: list[tuple[str, float, str]], scale_max: float | None = None,
          value_format: str = "{:.1f} %") -> Chart:
    """Horizontal bars: (label, value, tooltip) each; the label sits left of its bar, the value right."""
    row_h, label_w = 22.0, 380.0
    bar_room = WIDTH - label_w - 80
    top_value = scale_max or max((value for _, value, _ in rows), default=1.0) or 1.0
    chart = Chart(name, WIDTH, row_h * len(rows) + 8)
    for i, (label, value, tip) in enumerate(rows):
        y = 4 + i * row_h
        w = max(bar_room * value / top_value, 1.0)
        chart.rects.append(Rect(label_w, y + 3, w, row_h - 6, "mark bar", tip))
        chart.texts.append(Text(label_w - 8, y + 15, shorten(label), "label", "end"))
        chart.texts.append(Text(label_w + w + 6, y + 15, value_format.format(value), "value"))
    return chart


def flame_graph(tree: CallTreeNode, max_depth: int = 80) -> Chart:
    """Top-down icicle: the root on top, each call under its caller, width = share of samples."""
    row_h = 17.0
    rects: list[Rect] = []
    deepest = 0
    stack = [(tree, 0.0, 0)]
    while stack:
        node, x, depth = stack.pop()
        width = WIDTH * node.pct / 100.0
        if depth > max_depth:
            continue
        deepest = max(deepest, depth)
        tip = f"{node.symbol} ({node.module}): {node.samples} samples, {node.pct:.1f} %" \
            if node.module else f"{node.symbol}: {node.samples} samples"
        label = node.symbol if width > 40 else ""
        rects.append(Rect(x, depth * row_h, max(width - 0.5, 0.5), row_h - 1, f"mark flame d{depth % 6}", tip,
                          shorten(label, max(int(width / 7), 1))))
        offset = x
        for child in node.children:
            stack.append((child, offset, depth + 1))
            offset += WIDTH * child.pct / 100.0
    return Chart("flame-graph", WIDTH, (deepest + 1) * row_h, rects)


def timeline_chart(timeline: dict, name: str = "frame-timeline",
                   marked: frozenset[tuple[str, str]] = frozenset()) -> Chart:
    """One lane per thread or GPU stream, rows inside a lane by kind and nesting level; events whose
    (lane, name) is ``marked`` (a verdict finding's calls on its thread) are outlined."""
    label_w, row_h, gap = 190.0, 14.0, 8.0
    start, end = timeline["start_ns"], timeline["end_ns"]
    plot_w = WIDTH - label_w - 8
    scale = plot_w / max(end - start, 1)
    chart = Chart(name, WIDTH, 0)
    y = 22.0
    for tick in nice_ticks(0, (end - start) / 1e6, 8):
        x = label_w + tick * 1e6 * scale
        chart.lines.append(Line(x, 16, x, 10_000, "grid"))
        chart.texts.append(Text(x, 11, f"{tick:g} ms", "axis", "end" if x > WIDTH - 30 else "middle"))
    for lane in timeline["lanes"]:
        rows = sorted({(kind_rank(e["kind"]), e["level"]) for e in lane["events"]})
        row_of = {key: i for i, key in enumerate(rows)}
        chart.texts.append(Text(label_w - 8, y + 11, shorten(lane["name"], 26), "label", "end"))
        for event in lane["events"]:
            x0 = label_w + (max(event["start_ns"], start) - start) * scale
            x1 = label_w + (min(event["end_ns"], end) - start) * scale
            row_y = y + row_of[(kind_rank(event["kind"]), event["level"])] * row_h
            duration = format_ns(event["end_ns"] - event["start_ns"])
            finding = " finding" if (lane["name"], event["name"]) in marked else ""
            chart.rects.append(Rect(x0, row_y, max(x1 - x0, 0.8), row_h - 2, f"mark ev k-{event['kind']}{finding}",
                                    f"{event['name']} ({event['kind']}, {duration})",
                                    shorten(event["name"], int((x1 - x0) / 6.5)) if x1 - x0 > 30 else "",
                                    fill=name_colour(event["name"])))
        y += len(rows) * row_h + gap
        chart.lines.append(Line(0, y - gap / 2, WIDTH, y - gap / 2, "lane-rule"))
    return Chart(chart.name, WIDTH, y, chart.rects, [
        Line(line.x1, line.y1, line.x2, min(line.y2, y), line.cls) for line in chart.lines], chart.texts)


def name_colour(name: str) -> str:
    """A name's colour, the one the whole-run timeline gives it (templates/timeline_tools.js's colourOf: FNV-1a of
    its UTF-16 code units), so that one name has one colour on every chart and page; light enough for dark text."""
    h = 0x811C9DC5
    units = name.encode("utf-16-le")
    for k in range(0, len(units), 2):
        h = ((h ^ (units[k] | units[k + 1] << 8)) * 0x01000193) & 0xFFFFFFFF
    return f"hsl({h % 360},{45 + (h >> 9) % 25}%,{62 + (h >> 17) % 12}%)"


KIND_RANK = {kind: rank for rank, kind in enumerate(KIND_ORDER)}  # lanes' rows in the order the analysis sorts them


def kind_rank(kind: str) -> int:
    return KIND_RANK.get(kind, len(KIND_RANK))


@dataclass(frozen=True)
class Interval:
    """A median and its interval, for one bar with whiskers."""
    median: float
    low: float
    high: float


def grouped_bars(name: str, groups: list[str], series: list[str], values: dict[tuple[str, str], Interval | str],
                 unit: str, interval: str = "95 % interval") -> Chart:
    """Horizontal bars grouped by row (groups), one per column (series), each with its 95 % interval as
    whiskers. A value that is a text (a failed cell's reason) is drawn as that text, never as a bar of 0.
    The scale turns logarithmic when one bar is more than ten times another (as the seed's 16,066 ms cell
    made its author do)."""
    row_h, label_w, gap = 20.0, 300.0, 10.0
    bar_room = WIDTH - label_w - 120
    numbers = [v for v in values.values() if isinstance(v, Interval)]
    positive = [x for v in numbers for x in (v.low, v.median, v.high) if x > 0]
    log = bool(positive) and max(positive) > 10 * min(positive)
    if log:
        low_exp, high_exp = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
        high_exp = max(high_exp, low_exp + 1)

        def x_of(value: float) -> float:
            if value <= 0:
                return label_w
            return label_w + bar_room * (math.log10(value) - low_exp) / (high_exp - low_exp)
        ticks = [10.0 ** e for e in range(low_exp, high_exp + 1)]
    else:
        top = max((v.high for v in numbers), default=1.0) or 1.0
        ticks = nice_ticks(0.0, top)
        top = max(ticks[-1], top)

        def x_of(value: float) -> float:
            return label_w + bar_room * max(value, 0.0) / top
    rows = len(groups) * len(series)
    height = rows * row_h + len(groups) * gap + 30
    chart = Chart(name, WIDTH, height)
    y = 4.0
    for group in groups:
        chart.texts.append(Text(8, y + 14, shorten(group, 36), "group"))
        for column in series:
            found = values.get((group, column))
            chart.texts.append(Text(label_w - 8, y + 14, shorten(column, 40), "label", "end"))
            if isinstance(found, Interval):
                width = max(x_of(found.median) - label_w, 1.0)
                tip = f"{group} · {column}: {found.median:.4g} {unit} ({interval} {found.low:.4g}–{found.high:.4g})"
                chart.rects.append(Rect(label_w, y + 3, width, row_h - 6, "mark bar", tip))
                chart.lines.append(Line(x_of(found.low), y + row_h / 2, x_of(found.high), y + row_h / 2, "whisker"))
                for end in (found.low, found.high):
                    chart.lines.append(Line(x_of(end), y + 5, x_of(end), y + row_h - 5, "whisker"))
                chart.texts.append(Text(max(x_of(found.high), label_w + width) + 6, y + 14, f"{found.median:.4g}",
                                        "value"))
            elif isinstance(found, str):
                chart.rects.append(Rect(label_w, y + 3, 4.0, row_h - 6, "failed", found))
                chart.texts.append(Text(label_w + 10, y + 14, shorten("failed: " + found, 70), "failed"))
            y += row_h
        y += gap
    for tick in ticks:
        x = x_of(tick)
        chart.lines.append(Line(x, y, x, y + 5, "axis"))
        chart.texts.append(Text(x, y + 18, f"{tick:g}", "tick", "middle"))
    chart.texts.append(Text(WIDTH - 8, y + 18, f"{unit}{' (log scale)' if log else ''}", "axis-unit", "end"))
    return chart

"""The shares of a run's page: where the focus thread's time goes over the window and in each frame (a stacked
bar per frame, in the verdict's section), and what to do next (at the top of the page). Pure."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..analysis.analyzers.verdict import ordinal
from ..documents.attribution import FrameStory
from ..documents.shares import SHARES
from ..documents.summary import Attribution
from .charts import WIDTH, Area, Chart, Line, Rect, Text, nice_ticks
from .units import format_ms

MAX_BARS = 240  # past this many frames, a bar stands for consecutive frames (their mean)


@dataclass(frozen=True)
class ShareRow:
    key: str
    title: str
    pct: str
    per_frame: str
    made_of: str


@dataclass(frozen=True)
class SharesPart:
    caption: str
    rows: list[ShareRow]
    chart: Chart | None
    legend: list[tuple[str, str]]   # (share key, its title) of the shares the chart draws
    amount: str                     # what the rows' amounts are: per frame, or over the window
    chart_note: str = ""            # what a bar stands for, when not one frame
    on_cpu: str = ""                # the thread on a CPU, as the CPU section counts it


def made_of(found: Attribution, key: str) -> str:
    share = found.share(key)
    words = ", ".join(share.calls[:3])
    if share.inside:
        words += f" inside {', '.join(share.inside[:2])}"
    if share.threads:
        words += ("; " if words else "") + ("renderer threads " if key == "gpu" else "woken by ") + \
            ", ".join(share.threads[:3])
    return words


def story_sentence(found: Attribution, story: FrameStory) -> str:
    """'On es2gears_x11 (7188), this frame's 9.37 ms: running on a CPU 7.56 ms (81 %), ...; its longest calls:
    writev 6.73 ms inside eglSwapBuffers, ...': the frame's own figures, never the run's averages."""
    ordered = sorted((name for name in SHARES if story.shares.get(name)), key=lambda n: -story.shares[n])
    parts = [f"{found.title(name)} {format_ms(story.shares[name])} ({story.shares[name] * 100.0 / story.ns:.0f} %)"
             for name in ordered if story.shares[name] * 100.0 / story.ns >= 0.5]
    calls = [f"{call.name} {format_ms(call.ns)}" + (f" inside {call.inside}" if call.inside else "")
             for call in story.calls]
    return (f"On {found.thread}, this {found.unit}'s {format_ms(story.ns)}: " + ", ".join(parts)
            + (f"; its longest calls: {', '.join(calls)}" if calls else ""))


def shares_part(found: Attribution | None) -> SharesPart | None:
    if found is None or found.window_ns <= 0:
        return None
    ordered = sorted((k for k in SHARES if found.share(k).pct >= 0.05), key=lambda k: -found.share(k).ns)
    rows = []
    for key in ordered:
        share = found.share(key)
        per_frame = found.ms_per_frame(key)
        rows.append(ShareRow(key, found.title(key), f"{share.pct:.1f} %",
                             f"{per_frame:.3g} ms" if per_frame is not None else format_ms(share.ns),
                             made_of(found, key)))
    frames = found.frame_count
    every = found.sampled_every
    unit = found.unit
    what = (f"{frames:,} {unit}s" + (f" (every {ordinal(every)} {unit} of the window: the rest were not read)"
                                     if every > 1 else "")) if frames else \
        (f"the window, every {ordinal(every)} of its slices" if every > 1 else "the window")
    chart = frame_shares_chart(found) if frames else None
    legend = [(k, found.title(k)) for k in SHARES if found.share(k).per_frame_ns and found.share(k).pct >= 0.05]
    group = math.ceil(frames / MAX_BARS) if frames else 1
    note = f" (a bar is the mean of {group} {unit}s read one after the other)" if group > 1 else ""
    return SharesPart(f"{found.thread} over {what}", rows, chart, legend, f"per {unit}" if frames else "time", note,
                      on_cpu_words(found))


def on_cpu_words(found: Attribution) -> str:
    """'es2gears_x11 (7188) was on a CPU 43.2 % of this time: running 41.0 %, spinning in calls that wait for the
    GPU 2.2 % (context switches)'"""
    pct = found.on_cpu_pct
    if pct is None:
        return ""
    running = found.share("cpu").pct
    spin = f": running {running:.1f} %, spinning in calls that wait for the GPU {pct - running:.1f} %" \
        if pct - running >= 0.05 else ""
    how = ("context switches" if found.sources.context_switches else
           "estimated from its OS runtime calls and CPU samples" if found.sources.os_runtime else
           "estimated from its CPU samples")
    return f"{found.thread} was on a CPU {pct:.1f} % of this time{spin} ({how})"


def frame_shares_chart(found: Attribution, name: str = "frame-shares") -> Chart | None:
    """The shares stacked, a bar per frame (past MAX_BARS frames, per run of consecutive frames read: their
    mean): one filled shape per share, bar by bar, and a see-through mark per bar that says its figures."""
    first, count, every = found.first_frame, found.frame_count, found.sampled_every
    unit = found.unit
    present = [k for k in SHARES if len(found.share(k).per_frame_ns) == count and found.share(k).pct >= 0.05]
    if first is None or not count or not present:
        return None
    values = np.array([found.share(k).per_frame_ns for k in present], dtype=np.float64) / 1e6  # (shares, frames)
    group = math.ceil(count / MAX_BARS)
    bars = math.ceil(count / group)
    padded = np.zeros((len(present), bars * group))
    padded[:, :count] = values
    sizes = np.minimum(group, count - np.arange(bars) * group)
    means = padded.reshape(len(present), bars, group).sum(axis=2) / sizes
    height, left, right, top, bottom = 240.0, 56.0, 16.0, 12.0, 30.0
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    ticks = nice_ticks(0.0, float(means.sum(axis=0).max()) * 1.05 or 1.0)
    top_ms = ticks[-1]
    chart = Chart(name, WIDTH, height)
    for tick in ticks:
        y = top + plot_h * (1 - tick / top_ms)
        chart.lines.append(Line(left, y, WIDTH - right, y, "grid"))
        chart.texts.append(Text(left - 6, y + 4, f"{tick:g}", "axis", "end"))
    chart.texts.append(Text(4, top + 8, "ms", "axis"))
    width = plot_w / bars
    xs = left + np.arange(bars + 1) * width
    below = np.zeros(bars)

    def y_of(ms: np.ndarray) -> np.ndarray:
        return top + plot_h * (1 - ms / top_ms)
    for i, key in enumerate(present):
        above = below + means[i]
        upper = " ".join(f"{x:.1f},{y:.1f}" for b, y in enumerate(y_of(above)) for x in (xs[b], xs[b + 1]))
        lower = " ".join(f"{x:.1f},{y:.1f}" for b, y in reversed(list(enumerate(y_of(below))))
                         for x in (xs[b + 1], xs[b]))
        chart.areas.append(Area(f"{upper} {lower}", f"share share-{key}", f"{key}: {found.share(key).pct:.1f} %"))
        below = above
    for bar in range(bars):
        low, high = first + bar * group * every, first + (bar * group + int(sizes[bar]) - 1) * every
        frames = f"{unit} {low}" if low == high else f"{unit}s {low}-{high} (mean)"
        tip = f"{frames}: " + ", ".join(f"{k} {means[i, bar]:.3g}" for i, k in enumerate(present)
                                         if means[i, bar] > 0) + " ms"
        totals = padded[:, bar * group:bar * group + int(sizes[bar])].sum(axis=0)  # the group's frames' times
        slowest = first + (bar * group + int(np.argmax(totals))) * every
        chart.rects.append(Rect(float(xs[bar]), top, width, plot_h, "mark bar-hit", tip, frame=slowest))
    for tick in nice_ticks(0, bars - 1, 6) if bars > 1 else [0.0]:
        index = first + int(tick) * group * every
        chart.texts.append(Text(left + (tick + 0.5) * width, height - 10, f"{index}", "axis", "middle"))
    chart.texts.append(Text(WIDTH - right, height - 10, unit, "axis", "end"))
    return chart

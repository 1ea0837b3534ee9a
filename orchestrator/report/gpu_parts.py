"""The GPU's parts of a run's page: its side of each frame (the step a user takes in Nsight Graphics) and the
hardware metrics nsys sampled."""
from __future__ import annotations

from dataclasses import dataclass

from ..documents.summary import Summary
from ..documents.summary_sections import GpuKind, GpuMetrics, SummaryGpuFrames
from ..parsers.renderer import is_software
from .charts import Chart
from .frame_chart import frame_series
from .render import Fact
from .units import format_ms


@dataclass(frozen=True)
class GpuFrames:
    """The GPU's side of each frame (the step a user takes in Nsight Graphics): its figures and its chart; a
    software renderer's side is said to be the CPU's."""
    heading: str
    stats: list[Fact]
    series: Chart
    legend: str


def plural(count: float, word: str) -> str:
    """'1 call', '2 calls', '1.5 calls'."""
    return f"{count:g} {word}" + ("" if count == 1 else "s")


def _kind_words(kind: GpuKind, steady_first: int, unit: str = "frame") -> str:
    """'1.2 ms per frame over 3 calls, the longest 2.0 ms (frame 41)'; for work in fewer than half the steady
    frames (a median of none), in how many of them it was recorded. ``unit``: "frame" or "iteration"."""
    longest = f"the longest {format_ms(kind.longest_ns)} ({unit} {kind.longest_frame})"
    if kind.steady_median_count:
        return (f"{format_ms(kind.steady_median_ns)} per {unit} over {plural(kind.steady_median_count, 'call')}, "
                f"{longest}")
    steady = kind.count_per_frame[steady_first:]
    seen = sum(1 for count in steady if count)
    return f"recorded in {seen:,} of {plural(len(steady), f'steady {unit}')} (a median of none), {longest}"


def software_renderer(summary: Summary) -> str | None:
    """The software renderer the run drew with, by the first word of its GL_RENDERER or else of its threads' names
    ("llvmpipe" of "llvmpipe-0"; "software renderer" when neither names it), or None when its GPU is one."""
    renderer = summary.gpu_frames.renderer if summary.gpu_frames else None
    if not (summary.attribution.software_renderer if summary.attribution else is_software(renderer)):
        return None
    threads = summary.attribution.software_threads if summary.attribution else []
    return renderer.split()[0] if renderer else threads[0].split("-")[0] if threads else "software renderer"


def gpu_frames_part(gpu: SummaryGpuFrames | None, warmup: int, software: bool = False,
                    unit: str = "frame") -> GpuFrames | None:
    """Per steady frame or iteration (medians): the GPU time of each kind of work, how many pieces, the longest."""
    if not gpu or not gpu.kinds:
        return None
    who = "the software renderer" if software else "the GPU"
    stats = [Fact(f"{'renderer' if software else 'GPU'} time per {unit}",
                  f"{format_ms(gpu.steady_median_ns)} ({', '.join(gpu.sources)}; median of the steady {unit}s)")]
    if software:
        named = f"{gpu.renderer}: a software renderer" if gpu.renderer else "a software renderer"
        stats.insert(0, Fact("renderer", f"{named}, its work runs on the CPU"))
    elif gpu.renderer:
        stats.insert(0, Fact("GPU", gpu.renderer))
    for kind in gpu.kinds[:6]:
        stats.append(Fact(kind.name, _kind_words(kind, gpu.steady_first or 0, unit)))
    if gpu.incomplete_frames:
        frames = ", ".join(str(i) for i in gpu.incomplete_frames)
        stats.append(Fact("not recorded", f"{gpu.unrecorded_calls:,} calls queued after nsys's last GPU record "
                                          f"({unit} {frames}): left out of the medians"))
    level = {"p50": float(gpu.steady_median_ns or 0.0)}
    heading = (f"The software renderer's side of each {unit} (on the CPU)" if software
               else f"The GPU's side of each {unit}")
    legend = (f"Time {who} worked per {unit} as nsys recorded it (work counted in the {unit} whose call queued "
              "it)")
    return GpuFrames(heading, stats, frame_series(gpu.per_frame_ns, warmup, level, name="gpu-frame-series",
                                                  counted=unit), legend)


def gpu_metrics_facts(section: GpuMetrics | None) -> list[Fact] | None:
    """Per metric: the median of the steady frames' means (with frames), and the mean over the window."""
    if not section:
        return None
    facts = []
    several = len(section.gpus) > 1
    for metric in section.metrics:
        name = f"GPU {metric.gpu}: {metric.name}" if several else metric.name
        unit = " %" if metric.unit == "%" else f" {metric.unit}"
        steady = metric.steady_median
        per_frame = f"{steady:.1f}{unit} per steady frame (median), " if steady is not None else ""
        facts.append(Fact(name, f"{per_frame}{metric.mean:.1f}{unit} over the window "
                                f"({metric.samples:,} samples)"))
    if section.left_out:
        facts.append(Fact("not shown", ", ".join(section.left_out) + " (counts nsys scales for display)"))
    return facts

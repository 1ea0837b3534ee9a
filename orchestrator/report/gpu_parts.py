"""The GPU's parts of a run's page: its side of each frame (the step a user takes in Nsight Graphics) and the
hardware metrics nsys sampled."""
from __future__ import annotations

from dataclasses import dataclass

from ..documents.summary_sections import GpuMetrics, SummaryGpuFrames
from .charts import Chart
from .frame_chart import frame_series
from .render import Fact
from .units import format_ms


@dataclass(frozen=True)
class GpuFrames:
    """The GPU's side of each frame (the step a user takes in Nsight Graphics): its figures and its chart."""
    stats: list[Fact]
    series: Chart


def gpu_frames_part(gpu: SummaryGpuFrames | None, warmup: int) -> GpuFrames | None:
    """Per steady frame (medians): the GPU time of each kind of work, how many pieces, the longest one."""
    if not gpu or not gpu.kinds:
        return None
    stats = [Fact("GPU time per frame", f"{format_ms(gpu.steady_median_ns)} ({', '.join(gpu.sources)}; "
                                        "median of the steady frames)")]
    if gpu.renderer:
        stats.insert(0, Fact("GPU", gpu.renderer))
    for kind in gpu.kinds[:6]:
        stats.append(Fact(kind.name, f"{format_ms(kind.steady_median_ns)} per frame over "
                                     f"{kind.steady_median_count:g} calls, the longest "
                                     f"{format_ms(kind.longest_ns)} (frame {kind.longest_frame})"))
    if gpu.incomplete_frames:
        frames = ", ".join(str(i) for i in gpu.incomplete_frames)
        stats.append(Fact("not recorded", f"{gpu.unrecorded_calls:,} calls queued after nsys's last GPU record "
                                          f"(frame {frames}): left out of the medians"))
    level = {"p50": float(gpu.steady_median_ns or 0.0)}
    return GpuFrames(stats, frame_series(gpu.per_frame_ns, warmup, level, name="gpu-frame-series"))


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

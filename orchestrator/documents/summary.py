"""summary.json: the analysis of one report (frames, hotspots, cores, API tables, verdict, the board's samples).

``Summary`` is the analysis's own document, a Record whose sections are typed to their leaves (summary_sections.py,
attribution.py); what the layers above read of it (a frame time, the verdict, cores busy, energy) is a property
here. ``read_summary``/``write_summary`` are its only reader and writer; the file keeps its keys in the order they
were read or made (it is written unsorted).

Versions: ``summary_version`` 1 is the only one written so far; a newer one is refused with what to do.
"""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from .attribution import Attribution, AttributionFrames, AttributionSources, Share
from .record import Record, read_record, write_object
from .summary_sections import (
    ApiRow,
    BoardSeries,
    Capture,
    CaptureGap,
    CoreUse,
    Energy,
    FunctionHotspot,
    GpuMetrics,
    GpuWork,
    Hotspots,
    NvtxGpuRow,
    SteadyFrames,
    SummaryFrames,
    SummaryGpuFrames,
    SummaryVerdict,
    SummaryWindow,
    ThreadUse,
)

__all__ = ["Attribution", "AttributionFrames", "AttributionSources", "NextStep", "Share", "Summary", "read_summary",
           "summary_file", "warmup_of", "write_summary"]

SUMMARY_FILE = "summary.json"
SUMMARY_VERSION = 1


class NextStep(Record):
    """What to do next: the rule that chose it, why (from the run's evidence), and the command to run."""
    rule: str = ""
    why: str = ""
    command: str = ""


class Summary(Record):
    """summary.json: each section its type, in the order the file holds them, and the figures other layers read."""
    VERSION_KEY: ClassVar[str | None] = "summary_version"
    VERSION: ClassVar[int] = SUMMARY_VERSION
    capture: Capture = Capture()
    window: SummaryWindow = SummaryWindow()
    frames: SummaryFrames | None = None
    gpu_frames: SummaryGpuFrames | None = None
    gpu_metrics: GpuMetrics | None = None
    gpu_work: GpuWork | None = None       # the CUDA GPU's busy time over the window (None: no CUDA GPU work)
    hotspots: Hotspots | None = None
    cores: list[CoreUse] | None = None
    cpu_source: str | None = None
    threads: list[ThreadUse] | None = None
    osrt: list[ApiRow] | None = None      # the API tables, as `nsys stats` reports them (None: not traced)
    opengl: list[ApiRow] | None = None
    opengl_gpu: list[ApiRow] | None = None
    nvtx: list[ApiRow] | None = None
    khr_debug: list[ApiRow] | None = None
    nvtx_gpu: list[NvtxGpuRow] | None = None       # GPU time per NVTX range, a tree (None: no range queued GPU work)
    cuda_api: list[ApiRow] | None = None
    cuda_kernels: list[ApiRow] | None = None       # by launch shape (gpukernsum)
    kernel_functions: list[ApiRow] | None = None   # by function (gpukernsum:base summed by name)
    memcpy: list[ApiRow] | None = None
    attribution: Attribution | None = None  # summaries written before it have none
    capture_gaps: list[CaptureGap] = []    # the traces the capture was asked for that recorded nothing
    verdict: SummaryVerdict | None = None   # None: not analysed (a summary made empty)
    board: BoardSeries | None = None       # the board's samples during the capture (a run's, not the export's)
    energy: Energy | None = None
    next_steps: list[NextStep] = []

    def api_rows(self, table: str) -> list[ApiRow] | None:
        """An API table by its key (osrt, opengl, ... memcpy: API_TABLES' keys)."""
        rows: list[ApiRow] | None = getattr(self, table)
        return rows

    @property
    def steady(self) -> SteadyFrames | None:
        return None if self.frames is None else self.frames.steady

    @property
    def unit(self) -> str:
        """What the run's frames are: "frame", or "iteration" (a CUDA or TensorRT run's)."""
        return self.frames.unit if self.frames is not None else "frame"

    @property
    def first_frame_ns(self) -> float | None:
        return None if self.frames is None else self.frames.first_ns

    @property
    def per_frame_ns(self) -> list[int]:
        return [] if self.frames is None else list(self.frames.per_frame_ns)

    @property
    def gpu_ns_per_frame(self) -> float | None:
        """The GPU time of a steady frame (the median), from what nsys recorded of the GPU's work."""
        return None if self.gpu_frames is None else self.gpu_frames.steady_median_ns

    @property
    def incomplete_gpu_frames(self) -> list[int]:
        """Frames holding calls whose GPU work nsys did not record (it reads GPU timings late)."""
        return [] if self.gpu_frames is None else list(self.gpu_frames.incomplete_frames)

    @property
    def warmup_frames(self) -> int:
        return warmup_of(self.frames)

    @property
    def verdict_kind(self) -> str | None:
        return None if self.verdict is None else self.verdict.kind

    @property
    def board_series_ns(self) -> dict[str, list[list[float]]]:
        """Each of the board's series as [report ns, value] points ({} without the report's clock)."""
        return (self.board.series_ns if self.board is not None else None) or {}

    @property
    def self_hotspots(self) -> list[FunctionHotspot]:
        """The functions by their own samples, hottest first."""
        return [] if self.hotspots is None else list(self.hotspots.self_)

    @property
    def top_function(self) -> str | None:
        hot = self.self_hotspots
        return hot[0].symbol if hot else None

    @property
    def energy_median_mj(self) -> float | None:
        return None if self.energy is None or self.energy.median_mj is None else float(self.energy.median_mj)

    @property
    def cores_busy(self) -> float | None:
        """Cores kept busy on average over the window: per-core use when known, else the threads' CPU added up."""
        if self.cores:
            return float(sum(c.busy_pct for c in self.cores)) / 100.0
        if self.threads:
            return float(sum(t.cpu_pct for t in self.threads)) / 100.0
        return None

    @property
    def export(self) -> Path:
        """The export the analysis read."""
        return Path(self.capture.export)


def warmup_of(frames: SummaryFrames | None) -> int:
    """The warm-up frames the frames section left out of the steady ones."""
    return 0 if frames is None else frames.warmup.frames


def summary_file(run_dir: Path) -> Path:
    return run_dir / SUMMARY_FILE


def read_summary(run_dir: Path) -> Summary | None:
    """The folder's summary.json, or None when it has none; UsageError when it is there but not one."""
    path = summary_file(run_dir)
    if not path.is_file():
        return None
    return read_record(Summary, path, "a summary", f"run 'orchestrate analyze' on the report again, or remove {path}")


def write_summary(run_dir: Path, summary: Summary) -> Path:
    return write_object(summary_file(run_dir), summary.as_json(), indent=1)

"""summary.json's sections, each a Record typed to its leaves: what the analysis found in one export (the capture,
the window, frames, the GPU's frames and metrics, hotspots, cores and threads, the API tables, the verdict) and what a
run adds (the board's samples, energy). The attribution and its shares are in attribution.py.

A section is read as every document is (a key it does not know kept, a value of the wrong kind read as missing and
written back as it was), and written with its keys in the order it read them: summary.json is written unsorted."""
from __future__ import annotations

from typing import ClassVar

from .record import Record


class Platform(Record):
    """What nsys recorded of the machine (TARGET_INFO_SYSTEM_ENV's names), and its GPUs."""
    _wire_keys: ClassVar[dict[str, str]] = {
        "cpu_cores": "CpuCores", "cpu_speed_mhz": "CpuSpeedMhz", "cpu_architecture": "CpuArchitecture",
        "cpu_description": "CpuDescription", "driver_version": "NvDriverVersion",
        "hardware_platform": "HardwarePlatform", "software_platform": "SoftwarePlatform",
        "os_description": "OsDescription", "software_release": "SoftwareReleaseVersion", "hostname": "Hostname"}
    cpu_cores: str | None = None
    cpu_speed_mhz: str | None = None
    cpu_architecture: str | None = None
    cpu_description: str | None = None
    driver_version: str | None = None
    hardware_platform: str | None = None
    software_platform: str | None = None
    os_description: str | None = None
    software_release: str | None = None
    hostname: str | None = None
    gpus: list[str] = []


class CapturedProcess(Record):
    pid: int = 0
    name: str = ""
    aliases: list[str] = []


class Capture(Record):
    """The capture as a whole: its span on the report's clock, the exporter, the machine, the traced processes."""
    duration_ns: int = 0
    start_ns: int = 0
    end_ns: int = 0
    utc_epoch_ns: int | None = None   # when the report's time 0 was (None: the export does not say)
    nsys_version: str | None = None
    export_schema: str = ""           # "current", or "legacy" (nsys before 2021)
    platform: Platform = Platform()
    processes: list[CapturedProcess] = []
    tables: list[str] = []
    export: str = ""                  # the export the analysis read


class SummaryWindow(Record):
    """What hotspots, cores, threads and the attribution cover: steady frames, one frame, a range or all."""
    kind: str = ""
    start_ns: int = 0
    end_ns: int = 0
    duration_ns: int = 0


class Warmup(Record):
    frames: int = 0
    rule: str = ""


class SteadyFrames(Record):
    """The steady frames' times (after the warm-up)."""
    count: int = 0
    mean_ns: float = 0.0
    p50_ns: float = 0.0
    p90_ns: float = 0.0
    p99_ns: float = 0.0
    max_ns: float = 0.0
    min_ns: float = 0.0


class SummaryFrames(Record):
    """The frames the capture holds (buffer swaps or an NVTX range), or a CUDA run's iterations: each one's time and
    start."""
    source: str = ""
    kind: str = ""
    rule: str | None = None        # which rule found them, in words (summaries before it: None)
    unit: str = "frame"            # "frame", or "iteration" (a CUDA or TensorRT run's)
    count: int = 0
    first_ns: float | None = None
    first_start_ns: int = 0
    warmup: Warmup = Warmup()
    steady: SteadyFrames | None = None
    in_window: int = 0
    per_frame_ns: list[int] = []
    frame_starts_ns: list[int] = []


class GpuKind(Record):
    """One kind of GPU work (a queue's name) frame by frame."""
    name: str = ""
    per_frame_ns: list[int] = []
    count_per_frame: list[int] = []
    longest_ns: int = 0
    longest_frame: int = 0
    steady_median_ns: float | None = None
    steady_median_count: float | None = None


class SummaryGpuFrames(Record):
    """The GPU's work of each frame, from what nsys recorded of it."""
    sources: list[str] = []
    frame_source: str = ""
    steady_first: int = 0
    renderer: str | None = None
    by_queuing_call: int = 0
    by_gpu_start: int = 0
    unrecorded_calls: int = 0
    incomplete_frames: list[int] = []   # frames holding calls whose GPU work nsys did not record
    steady_median_ns: float | None = None
    per_frame_ns: list[int] = []
    count_per_frame: list[int] = []
    kinds: list[GpuKind] = []


class GpuMetric(Record):
    gpu: int = 0
    name: str = ""
    unit: str = ""
    samples: int = 0
    mean: float = 0.0
    per_frame_mean: list[float | None] = []
    steady_median: float | None = None


class GpuMetrics(Record):
    """nsys's GPU metrics sampling (GPU_METRICS): each metric over the window and frame by frame."""
    source: str = ""
    gpus: list[int] = []
    left_out: list[str] = []
    metrics: list[GpuMetric] = []


class ModuleHotspot(Record):
    module: str = ""
    path: str = ""
    samples: int = 0
    pct: float = 0.0


class FunctionHotspot(Record):
    symbol: str = ""
    module: str = ""
    samples: int = 0
    pct: float = 0.0


class CallTreeNode(FunctionHotspot):
    """A function of the top-down call tree and what it called."""
    children: list[CallTreeNode] = []


class SymbolModule(Record):
    """How --symbols resolved one module's addresses."""
    module: str = ""
    file: str | None = None
    build_id: str | None = None
    load_address: str | None = None
    named_frames: int = 0
    resolved: int = 0
    unresolved: int = 0
    why: str | None = None


class Hotspots(Record):
    """The CPU samples over the window: by module, by function (self and inclusive) and as a call tree."""
    samples: int = 0
    excluded_threads: int = 0
    modules: list[ModuleHotspot] = []
    self_: list[FunctionHotspot] = []
    inclusive: list[FunctionHotspot] = []
    tree: CallTreeNode | None = None
    grouped_addresses: int = 0
    symbols: list[SymbolModule] | None = None


class CoreUse(Record):
    cpu: int = 0
    busy_pct: float = 0.0


class ThreadUse(Record):
    tid: int = 0
    pid: int = 0
    name: str = ""
    cpu_ns: int = 0
    cpu_pct: float = 0.0
    top_symbol: str | None = None
    cpu_from: str | None = None   # where its figure comes from, when not the section's source (the focus thread's)


class ApiRow(Record):
    """A row of an API table (as `nsys stats` reports it): the calls of one name, with the columns its table has."""
    name: str = ""
    style: str | None = None       # nvtx: push/pop or start/end
    calls: int = 0
    total_ns: int = 0
    avg_ns: float | None = None
    med_ns: float | None = None
    min_ns: int = 0
    max_ns: int = 0
    std_ns: float | None = None
    pct: float | None = None
    grid: str | None = None        # cuda_kernels: a launch shape
    block: str | None = None
    function: str | None = None    # cuda_kernels: the kernel's function (kernel_functions' name)
    shapes: int | None = None      # kernel_functions: how many launch shapes (cuda_kernels rows) it ran with
    bytes: int | None = None       # memcpy
    direction: str | None = None


class GpuWorkTotals(Record):
    """CUDA GPU work over the window: each kind's count and time, and the time any of it ran (overlaps once)."""
    kernels: int = 0
    kernels_ns: int = 0
    copies: int = 0
    copies_ns: int = 0
    sets: int = 0
    sets_ns: int = 0
    busy_ns: int = 0
    busy_pct: float = 0.0


class GpuStream(GpuWorkTotals):
    """One device, context and stream's CUDA work over the window."""
    device: int = 0
    context: int = 0
    stream: int = 0


class GpuWork(GpuWorkTotals):
    """How busy the CUDA GPU was over the window (kernels, copies, sets; overlaps counted once), per kind, and per
    device, context and stream (the busiest first)."""
    span_ns: int = 0
    streams: list[GpuStream] = []


class NvtxGpuRow(Record):
    """GPU time per NVTX range: the ranges at one path of names (the outermost first), their projection on the GPU
    summed (nsys's nvtxgpuproj: from the first to the last GPU operation the calls inside each range queued)."""
    name: str = ""
    path: list[str] = []
    depth: int = 0
    ranges: int = 0         # the ranges at this path that queued GPU work
    gpu_ops: int = 0
    gpu_ns: int = 0         # their projections summed
    gpu_avg_ns: float = 0.0
    gpu_med_ns: float = 0.0
    range_ns: int = 0       # the ranges' own time on the CPU, summed


class WhereFrame(Record):
    """A frame that carries a finding or a share: its place and how much of it (ns of calls, or samples)."""
    index: int = 0
    start_ns: int = 0
    end_ns: int = 0
    ns: int | None = None
    samples: int | None = None


class CaptureGap(Record):
    """A trace the capture was asked for that recorded nothing."""
    code: str = ""
    trace: str = ""
    what: str = ""
    why: str = ""


class VerdictFinding(Record):
    text: str = ""
    kind: str = ""
    start_ns: int = 0
    end_ns: int = 0
    frames: list[WhereFrame] = []
    names: list[str] = []
    thread: str | None = None


class SummaryVerdict(Record):
    """What the frame time is spent on, in words, with its evidence and the findings the page links to."""
    kind: str | None = None
    confidence: str = ""
    share: str | None = None
    summary: str = ""
    evidence: list[str] = []
    findings: list[VerdictFinding] = []
    gaps: list[CaptureGap] = []


class BoardSeries(Record):
    """The board's samples during the capture: each series as [time, value] points, on the report's clock (ns)
    when the export says when its time 0 was, else in seconds from the first sample."""
    source: str | None = None
    samples: int = 0
    series_ns: dict[str, list[list[float]]] | None = None
    series_s: dict[str, list[list[float]]] | None = None


class Energy(Record):
    """The energy of each steady frame, where the board reports power."""
    rail: str = ""
    frames: int = 0
    median_mj: float | None = None
    mean_power_mw: float | None = None
    per_frame_mj: list[float | None] = []

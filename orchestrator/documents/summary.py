"""summary.json: the analysis of one report (frames, hotspots, cores, API tables, verdict, the board's samples).

``Summary`` is the analysis's own document: the report page renders its sections as they are (it is the JSON
object), and what the layers above read of it (a frame time, the verdict, cores busy, energy) is a property
here. ``read_summary``/``write_summary`` are its only reader and writer.

Versions: ``summary_version`` 1 is the only one written so far; a newer one is refused with what to do.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .record import Record, read_object, write_object
from .shares import SHARE_TITLES

SUMMARY_FILE = "summary.json"
SUMMARY_VERSION = 1



class Share(Record):
    """One share of the focus thread's time: over the window, per frame, and what it is made of. Lists are read item
    by item: an item of the wrong kind (a hand-edited file) reads as missing."""
    ns: int = 0
    pct: float = 0.0
    per_frame_ns: list[int] = []        # the frames inside the window, from Attribution's first
    frames: list[dict[str, Any]] = []   # the frames carrying most of it (index, start, end, ns)
    calls: list[str] = []               # its calls (the hottest functions for cpu), most time first
    inside: list[str] = []              # the GPU or window-system calls they were made in
    threads: list[str] = []             # the threads that woke it, or the software renderer's

    @classmethod
    def from_wire(cls, wire: Any, strict: bool = False) -> Share:
        """per_frame_ns is read whole or not at all: without an item of the wrong kind the frames after it would
        shift (it is kept as it was, as any value of the wrong kind)."""
        found: Share = super().from_wire(wire, strict)
        raw = wire.get("per_frame_ns") if isinstance(wire, dict) else None
        if isinstance(raw, list) and len(found.per_frame_ns) != len(raw):
            found.per_frame_ns = []
            found.extra["per_frame_ns"] = raw
            found.as_read.pop("per_frame_ns", None)
        return found


class Attribution(Record):
    """summary.json's "attribution": the focus thread's time split by what it waits for."""
    thread: str = ""
    start_ns: int = 0
    end_ns: int = 0
    window_ns: int = 0                      # the time attributed: the window, or the sample of it read
    frames: dict[str, Any] | None = None    # first, count, every: the frames read (every k-th inside the window)
    sampled_every: int = 1                  # 1: all of the window; k: every k-th frame (or slice) of it
    shares: dict[str, Share] = {}       # by name, in SHARES' order
    largest: str = ""
    gpu_recorded: float | None = None       # of the GPU share, what the GPU's recorded work covers
    software_renderer: bool = False
    wait_function_samples: int = 0
    sources: dict[str, Any] = {}        # os_runtime, context_switches, gpu_work, samples, ...
    missing: list[str] = []             # the sources it lacks, in words
    confidence: str = "low"

    def share(self, name: str) -> Share:
        return self.shares.get(name) or Share()

    @property
    def software_threads(self) -> list[str]:
        """The software renderer's named threads the capture holds (llvmpipe-0...)."""
        found = self.sources.get("software_renderer")
        return [name for name in found if isinstance(name, str)] if isinstance(found, list) else []

    @property
    def largest_share(self) -> Share:
        return self.share(self.largest)

    @property
    def first_frame(self) -> int | None:
        first = (self.frames or {}).get("first")
        return first if isinstance(first, int) else None

    @property
    def frame_count(self) -> int:
        count = (self.frames or {}).get("count")
        return count if isinstance(count, int) else 0

    def title(self, name: str) -> str:
        """The share's name in words; a software renderer's "GPU" is the CPU."""
        if name == "gpu" and self.software_renderer:
            return "waiting for the software renderer (the CPU)"
        return SHARE_TITLES[name]

    def ms_per_frame(self, name: str) -> float | None:
        """The share's time in a frame of the window, on average; None without frames."""
        return self.share(name).ns / self.frame_count / 1e6 if self.frame_count else None


class NextStep(Record):
    """What to do next: the rule that chose it, why (from the run's evidence), and the command to run."""
    rule: str = ""
    why: str = ""
    command: str = ""


class Summary(dict[str, Any]):
    """summary.json's object, with the figures other layers read of it."""

    @property
    def frames(self) -> dict[str, Any]:
        return self.get("frames") or {}

    @property
    def steady(self) -> dict[str, Any]:
        return self.frames.get("steady") or {}

    @property
    def first_frame_ns(self) -> float | None:
        return self.frames.get("first_ns")

    @property
    def per_frame_ns(self) -> list[int]:
        return list(self.frames.get("per_frame_ns") or [])

    @property
    def gpu_ns_per_frame(self) -> float | None:
        """The GPU time of a steady frame (the median), from what nsys recorded of the GPU's work."""
        return (self.get("gpu_frames") or {}).get("steady_median_ns")

    @property
    def incomplete_gpu_frames(self) -> list[int]:
        """Frames holding calls whose GPU work nsys did not record (it reads GPU timings late)."""
        return list((self.get("gpu_frames") or {}).get("incomplete_frames") or [])

    @property
    def warmup_frames(self) -> int:
        return warmup_of(self.frames)

    @property
    def verdict(self) -> dict[str, Any]:
        return _section(self, "verdict")

    @property
    def verdict_kind(self) -> str | None:
        return self.verdict.get("kind")

    @property
    def hotspots(self) -> dict[str, Any]:
        return _section(self, "hotspots")

    @property
    def capture(self) -> dict[str, Any]:
        return _section(self, "capture")

    @property
    def board(self) -> dict[str, Any]:
        """The board's samples during the capture (figures.board's section): source, samples, series."""
        return _section(self, "board")

    @property
    def board_series_ns(self) -> dict[str, list[list[float]]]:
        """Each of the board's series as [report ns, value] points ({} without the report's clock)."""
        return _section(self.board, "series_ns")

    @property
    def attribution(self) -> Attribution | None:
        """The focus thread's time by what it waits for (summaries written before it have none)."""
        found = self.get("attribution")
        return Attribution.from_json(found) if isinstance(found, dict) else None

    @property
    def next_steps(self) -> list[NextStep]:
        steps = self.get("next_steps")
        return [NextStep.from_json(step) for step in steps] if isinstance(steps, list) else []

    @property
    def capture_gaps(self) -> list[dict[str, Any]]:
        """The traces the capture was asked for that recorded nothing (content.py's flags)."""
        gaps = self.get("capture_gaps")
        return [gap for gap in gaps if isinstance(gap, dict)] if isinstance(gaps, list) else []

    @property
    def self_hotspots(self) -> list[dict[str, Any]]:
        """The functions by their own samples, hottest first (symbol, samples, pct, module)."""
        return list(self.hotspots.get("self") or [])

    @property
    def top_function(self) -> str | None:
        hot = self.self_hotspots
        return hot[0]["symbol"] if hot else None

    @property
    def energy_median_mj(self) -> float | None:
        value = (self.get("energy") or {}).get("median_mj")
        return None if value is None else float(value)

    @property
    def cores_busy(self) -> float | None:
        """Cores kept busy on average over the window: per-core use when known, else the threads' CPU added up."""
        cores, threads = self.get("cores"), self.get("threads")
        if cores:
            return float(sum(c["busy_pct"] for c in cores)) / 100.0
        if threads:
            return float(sum(t["cpu_pct"] for t in threads)) / 100.0
        return None

    @property
    def export(self) -> Path:
        """The export the analysis read."""
        return Path(self["capture"]["export"])


def _section(found: dict[str, Any], key: str) -> dict[str, Any]:
    """A section that is an object, or {} (missing, or of another kind in a hand-edited file)."""
    value = found.get(key)
    return value if isinstance(value, dict) else {}


def warmup_of(frames: dict[str, Any]) -> int:
    """The warm-up frames the frames section left out of the steady ones."""
    return int(_section(frames, "warmup").get("frames") or 0)


def summary_file(run_dir: Path) -> Path:
    return run_dir / SUMMARY_FILE


def read_summary(run_dir: Path) -> Summary | None:
    """The folder's summary.json, or None when it has none; UsageError when it is there but not one."""
    path = summary_file(run_dir)
    if not path.is_file():
        return None
    return Summary(read_object(path, "summary_version", SUMMARY_VERSION, "a summary",
                               f"run 'orchestrate analyze' on the report again, or remove {path}"))


def write_summary(run_dir: Path, summary: Summary) -> Path:
    return write_object(summary_file(run_dir), summary, indent=1)

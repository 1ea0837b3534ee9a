"""summary.json: the analysis of one report (frames, hotspots, cores, API tables, verdict, the board's samples).

``Summary`` is the analysis's own document: the report page renders its sections as they are (it is the JSON
object), and what the layers above read of it (a frame time, the verdict, cores busy, energy) is a property
here. ``read_summary``/``write_summary`` are its only reader and writer.

Versions: ``summary_version`` 1 is the only one written so far; a newer one is refused with what to do.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._json import read_object, write_object

SUMMARY_FILE = "summary.json"
SUMMARY_VERSION = 1


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
        return int((self.frames.get("warmup") or {}).get("frames") or 0)

    @property
    def verdict_kind(self) -> str | None:
        return (self.get("verdict") or {}).get("kind")

    @property
    def self_hotspots(self) -> list[dict[str, Any]]:
        """The functions by their own samples, hottest first (symbol, samples, pct, module)."""
        return list((self.get("hotspots") or {}).get("self") or [])

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
            return sum(c["busy_pct"] for c in cores) / 100.0
        if threads:
            return sum(t["cpu_pct"] for t in threads) / 100.0
        return None

    @property
    def export(self) -> Path:
        """The export the analysis read."""
        return Path(self["capture"]["export"])


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

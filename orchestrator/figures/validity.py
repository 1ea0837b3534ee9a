"""Whether a run's figures can be trusted: flags from the board's samples during the capture (board.jsonl), from
what run.json recorded of the board before and after it, and from what the capture holds (a trace asked for that
recorded nothing, from the summary). Pure."""
from __future__ import annotations

from typing import Any

from remote_agent.messages import PowerMode

from ..documents.run import RunDocument
from ..documents.run_sections import Flag
from ..documents.summary import Summary
from .board_samples import cpu_top_mhz

# a clock this far under the run's own highest one has dropped (throttling, a governor, a power cap)
CLOCK_DROP = 0.9
# the GPU's clock counts only while it works: idle, its governor lowers it as it should
GPU_BUSY_PCT = 10
# without the zone's own passive trip point, this close to Jetson's throttling temperatures counts
DEFAULT_THERMAL_LIMIT_C = 95.0
THERMAL_MARGIN_C = 2.0


def validity_flags(run: RunDocument, samples: list[dict[str, Any]] | None = None,
                   summary: Summary | None = None) -> list[Flag]:
    """A flag for each thing that makes the run's figures doubtful; [] when nothing does."""
    flags = [Flag(code=gap.code, what=f"{gap.what}: {gap.why}") for gap in
             (summary.capture_gaps if summary is not None else [])]
    mode_before, mode_after = run.power_modes
    if mode_before and mode_after and mode_before != mode_after:
        flags.append(Flag(code="power_mode_changed",
                          what=f"the power mode changed during the run: {_mode(mode_before)} -> {_mode(mode_after)}"))
    if samples:
        flags += clock_drops(samples)
        flags += thermal_limits(samples, run.thermal_trips_c)
    return flags


def clock_drops(samples: list[dict[str, Any]]) -> list[Flag]:
    t0 = samples[0]["t"]
    cpu = [(s["t"], mhz) for s in samples if (mhz := cpu_top_mhz(s)) is not None]
    gpu = [(s["t"], s["gr3d_freq_mhz"]) for s in samples
           if s.get("gr3d_freq_mhz") is not None and (s.get("gr3d_pct") or 0) >= GPU_BUSY_PCT]
    found = (_drop(cpu, "the CPU clock", "", t0), _drop(gpu, "the GPU clock", " while busy", t0))
    return [flag for flag in found if flag is not None]


def _drop(points: list[tuple[float, float]], name: str, when: str, t0: float) -> Flag | None:
    """A flag when the clock fell under CLOCK_DROP of its own highest value in the capture."""
    if not points:
        return None
    top = max(mhz for _, mhz in points)
    at, low = min(points, key=lambda point: point[1])
    if low >= CLOCK_DROP * top:
        return None
    return Flag(code="clocks_dropped",
                what=f"{name} dropped from {top:g} to {low:g} MHz{when}, {at - t0:.1f} s into the capture")


def thermal_limits(samples: list[dict[str, Any]], trips: dict[str, float]) -> list[Flag]:
    """A zone at (or within 2 C of) its passive trip point, where the kernel starts throttling."""
    for sample in samples:
        for zone, temp in sample["temps_c"].items():
            if not isinstance(temp, (int, float)) or zone.upper().startswith("PMIC"):
                continue
            limit = _trip(zone, trips)
            if temp >= limit - THERMAL_MARGIN_C:
                return [Flag(code="thermal_limit", what=f"{zone} reached {temp:g} C (its limit: {limit:g} C), "
                                                        f"{sample['t'] - samples[0]['t']:.1f} s into the capture")]
    return []


def _trip(zone: str, trips: dict[str, float]) -> float:
    """tegrastats names zones 'GPU' where sysfs says 'GPU-therm' or 'gpu-thermal'."""
    for name, limit in trips.items():
        if name == zone or name.split("-")[0].lower() == zone.lower():
            return float(limit)
    return DEFAULT_THERMAL_LIMIT_C


def _mode(mode: PowerMode) -> str:
    return f"{mode.name} ({mode.id})"

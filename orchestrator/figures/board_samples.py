"""The board's samples during a capture (board.jsonl, written by the agent's sampler): each line a time and
either a tegrastats line or the same fields read from sysfs. Pure: text in, samples out, and the few
series the report draws and the validity checks read."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..parsers.tegrastats import empty_sample, parse_line

# the rail that carries the whole module's power, by board generation; without one, every rail added up
TOTAL_RAILS = ("VDD_IN", "POM_5V_IN")
UNUSED_RAILS = ("NC",)
MAPPINGS = ("temps_c", "rails_mw", "other")  # a sample's keys whose values are objects


def parse_board_samples(text: str) -> list[dict[str, Any]]:
    """Every sample with its time ('t', seconds since 1970 on the board's clock), in time order."""
    samples = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("t"), (int, float)):
            continue
        if isinstance(entry.get("line"), str):
            sample = parse_line(entry["line"])
        elif isinstance(entry.get("record"), dict):
            sample = {**empty_sample(), **entry["record"]}
        else:
            sample = None
        if sample is not None:  # the mappings are mappings, whatever a record said
            objects = {key: value if isinstance(value, dict) else {} for key in MAPPINGS
                       for value in (sample.get(key),)}
            samples.append({**sample, **objects, "t": float(entry["t"])})
    return sorted(samples, key=lambda s: s["t"])


def read_board_samples(run_dir: Path) -> list[dict[str, Any]]:
    try:
        return parse_board_samples((run_dir / "board.jsonl").read_text(errors="replace"))
    except OSError:
        return []


def total_power_mw(sample: dict[str, Any]) -> tuple[str, float] | None:
    """(which rail, mW now): the module's input rail where the board has one, else the sum of its rails."""
    rails: dict[str, float] = {name: float(values["current"]) for name, values in sample["rails_mw"].items()
                               if isinstance(values, dict) and isinstance(values.get("current"), (int, float))}
    for name in TOTAL_RAILS:
        if name in rails:
            return name, rails[name]
    used = {n: v for n, v in rails.items() if n.split("#")[0] not in UNUSED_RAILS}
    if not used:
        return None
    return "sum of " + ", ".join(sorted(used)), float(sum(used.values()))


def cpu_top_mhz(sample: dict[str, Any]) -> float | None:
    """The highest clock among the online cores: what the busiest core could run at."""
    clocks = [c["freq_mhz"] for c in sample.get("cpus") or [] if c and c.get("freq_mhz") is not None]
    return float(max(clocks)) if clocks else None


def cpu_load_pct(sample: dict[str, Any]) -> float | None:
    """Mean load of the online cores."""
    loads = [c["load_pct"] for c in sample.get("cpus") or [] if c and c.get("load_pct") is not None]
    return sum(loads) / len(loads) if loads else None


def hottest_c(sample: dict[str, Any], skip: tuple[str, ...] = ("PMIC",)) -> tuple[str, float] | None:
    """The hottest zone, leaving out the PMIC's (the Nano's reads 100 C whatever happens)."""
    temps = [(zone, t) for zone, t in sample["temps_c"].items()
             if isinstance(t, (int, float)) and not zone.upper().startswith(skip)]
    return max(temps, key=lambda zt: zt[1]) if temps else None


def series(samples: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """What the report draws under the frame chart: (seconds since the first sample, value) per metric."""
    if not samples:
        return {}
    t0 = samples[0]["t"]
    found: dict[str, list[tuple[float, float]]] = {"cpu_mhz": [], "cpu_load_pct": [], "gpu_pct": [], "gpu_mhz": [],
                                                   "temp_c": [], "power_mw": []}
    for sample in samples:
        at = round(sample["t"] - t0, 3)
        power, hot = total_power_mw(sample), hottest_c(sample)
        for key, value in (("cpu_mhz", cpu_top_mhz(sample)), ("cpu_load_pct", cpu_load_pct(sample)),
                           ("gpu_pct", sample.get("gr3d_pct")), ("gpu_mhz", sample.get("gr3d_freq_mhz")),
                           ("temp_c", hot[1] if hot else None), ("power_mw", power[1] if power else None)):
            if isinstance(value, (int, float)):
                found[key].append((at, float(value)))
    return {key: points for key, points in found.items() if points}

"""How much of a published log the parsers read, against a labelling made by hand.

Each log in tests/data/parsers has beside it ``<name>.truth.json``: every figure the tool printed (a measurement
of the run: a time, a rate, a statistic, a score, a size, the count of measured runs), in print order, each with
its value and unit as printed, labelled by reading the log and not from the parsers' output (SOURCES.md says
what counts). A labelled figure is read when the parser returns its value, as a top-level figure or in one of
its records, in the same kind of unit (times compared in ms); each value the parser returns is matched once, and the
summary's figures worked out from its records (Parsed.from_records) are not matched at all.
Figures the parser works out (a mean over reports, a count of steps) are not in the labelling and count
nothing.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from orchestrator.parsers import PARSERS, Parsed

DATA = Path(__file__).parent / "data" / "parsers"
TOOLS = {"trtexec": "trtexec", "jetson-inference": "jetson-inference", "glmark2": "glmark2", "tftrt": "tftrt-bench",
         "benchmark_model": "benchmark_model"}
TIME_MS = {"ms": 1.0, "us": 1e-3, "µs": 1e-3, "s": 1e3, "sec": 1e3, "msec": 1.0, "microseconds": 1e-3,
           "milliseconds": 1.0, "seconds": 1e3}


def tool_of(log: Path) -> str:
    return next(name for prefix, name in TOOLS.items() if log.name.startswith(prefix))


def key(value: float, unit: str) -> tuple[str, float]:
    """A value in a comparable form: times in ms, rounded to what printf's %g and %f keep."""
    scale = TIME_MS.get(unit.strip().lower())
    kind, number = ("time", value * scale) if scale is not None else ("other", value)
    if not math.isfinite(number):
        return kind, number
    return kind, float(f"{number:.6g}")


def returned(parsed: Parsed) -> Counter[tuple[str, float]]:
    """The values the parser returns: its records', and its summary's that it read from a line of their own (not
    worked out from the records: a copy of the last run's matches no second printed figure)."""
    found = Counter(key(f.value, f.unit) for name, f in parsed.figures.items() if name not in parsed.from_records)
    for record in parsed.records:
        found.update(key(f.value, f.unit) for f in record.figures.values())
    return found


@dataclass(frozen=True)
class Score:
    log: str
    tool: str
    labelled: int
    read: int
    missed: tuple[str, ...]


def score(log: Path) -> Score:
    truth = json.loads(log.with_suffix(".truth.json").read_text())
    parsed = PARSERS[tool_of(log)](log.read_text(errors="replace"))
    left = returned(parsed)
    missed = []
    for figure in truth["figures"]:
        value = figure["value"] if figure["value"] is not None else float(figure.get("printed", "nan"))
        unit = str(figure["unit"])
        # a figure printed without its unit (TensorRT 6's percentile: ms) is matched by its value alone
        wanted = next((k for k in (key(float(value), unit or "ms"), key(float(value), unit)) if left[k] > 0), None)
        if wanted is not None:
            left[wanted] -= 1
        else:
            missed.append(f"{figure['what']} = {figure['value']} {figure['unit']}")
    total = len(truth["figures"])
    return Score(log.name, tool_of(log), total, total - len(missed), tuple(missed))


def scores() -> list[Score]:
    return [score(log) for log in sorted(DATA.glob("*.txt")) if log.with_suffix(".truth.json").is_file()]


def shares(found: list[Score]) -> dict[str, tuple[int, int]]:
    """tool -> (read, labelled), and 'all'."""
    totals: dict[str, tuple[int, int]] = {}
    for s in found:
        read, labelled = totals.get(s.tool, (0, 0))
        totals[s.tool] = (read + s.read, labelled + s.labelled)
    totals["all"] = (sum(r for r, _ in totals.values()), sum(n for _, n in totals.values()))
    return totals

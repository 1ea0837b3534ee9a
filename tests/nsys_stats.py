"""Run the real `nsys stats` and hold our summaries against its numbers."""
from __future__ import annotations

import io
import math
import subprocess
from pathlib import Path

import pandas as pd

# summary section -> nsys 2022.4 report name
REPORTS = {"osrt": "osrtsum", "nvtx": "nvtxsum", "cuda_api": "cudaapisum", "cuda_kernels": "gpukernsum",
           "memcpy": "gpumemtimesum", "khr_debug": "khrdebugsum"}


def nsys_stats(nsys: str, report: str, export: Path) -> pd.DataFrame | None:
    """The report as a DataFrame, or None when nsys says the export lacks its data."""
    done = subprocess.run([nsys, "stats", "--report", report, "--format", "csv", "--output", "-", str(export)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.strip() and not line.startswith("Processing [")]
    if not lines or not lines[0].startswith("Time ("):
        assert "does not contain" in done.stdout, done.stdout
        return None
    return pd.read_csv(io.StringIO("\n".join(lines)), keep_default_na=False)


def nsys_projection(nsys: str, export: Path) -> pd.DataFrame:
    """`nsys stats -r nvtxgpuproj`'s rows, by RangeId."""
    done = subprocess.run([nsys, "stats", "--report", "nvtxgpuproj", "--format", "csv", "--output", "-", str(export)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.strip() and not line.startswith("Processing [")]
    assert lines and lines[0].startswith("Name,"), done.stdout
    return pd.read_csv(io.StringIO("\n".join(lines)), keep_default_na=False).set_index("RangeId")


def _sqlite_round(value: float) -> float:
    """round(x, 1) as SQLite does it: halves away from zero (Python rounds halves to even)."""
    return math.floor(value * 10 + 0.5) / 10 if value >= 0 else -math.floor(-value * 10 + 0.5) / 10


def assert_same_numbers(section: str, ours: list[dict] | None, theirs: pd.DataFrame | None) -> int:
    """Every nsys row has exactly one row of ours with equal count, total, min, max, mean, median."""
    if theirs is None:
        assert ours is None, f"{section}: nsys has no data, we have {len(ours or [])} rows"
        return 0
    assert ours is not None and len(ours) == len(theirs), f"{section}: {len(ours or [])} rows vs nsys {len(theirs)}"
    name_column = next(c for c in ("Name", "Range", "Operation") if c in theirs.columns)
    count_column = next(c for c in ("Num Calls", "Instances", "Count") if c in theirs.columns)
    for _, row in theirs.iterrows():
        matches = [o for o in ours if o["name"] == str(row[name_column])
                   and ("Style" not in row or o["style"] == row["Style"])
                   and ("GridXYZ" not in row or (o["grid"], o["block"]) == (" ".join(row["GridXYZ"].split()),
                                                                           " ".join(row["BlockXYZ"].split())))]
        assert len(matches) == 1, f"{section}: {row[name_column]!r} matched {len(matches)} of our rows"
        mine = matches[0]
        label = f"{section} {row[name_column]!r}"
        assert mine["calls"] == row[count_column], label
        assert mine["total_ns"] == row["Total Time (ns)"], label
        assert mine["min_ns"] == row["Min (ns)"] and mine["max_ns"] == row["Max (ns)"], label
        assert _sqlite_round(mine["avg_ns"]) == row["Avg (ns)"], label
        assert _sqlite_round(mine["med_ns"]) == row["Med (ns)"], label
        assert abs(mine["std_ns"] - row["StdDev (ns)"]) <= 0.051 + 1e-9 * mine["std_ns"], label
        assert _sqlite_round(mine["pct"]) == row["Time (%)"], label
    return len(theirs)

"""A board's result from what its run (or study) folder holds: the board's facts, and per app or study
cell the frame time, the verdict and the run's validity flags. Pure over the folder's files."""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..runs.folder import read_json_object
from ..runs.validity import validity_flags
from ..targets.facts import board_summary


@dataclass
class BoardResult:
    """One board's line of the recap and its row of the page: small, whatever the run measured."""

    target: str
    status: str                 # "ok", "failed" or "unreachable"
    reason: str | None = None   # one line: the run's own error, or why a cell failed
    exit_code: int = 0
    folder: str | None = None   # the run (or study) folder, relative to the fleet folder
    seconds: float = 0.0
    board: dict[str, Any] = field(default_factory=dict)   # kind, model, L4T, JetPack, nsys, fingerprint
    cells: list[dict[str, Any]] = field(default_factory=list)  # per app or study cell: figures, verdict, flags

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def frame_spread_ms(summary: dict[str, Any]) -> dict[str, float] | None:
    """The steady frames' median with their 10th and 90th percentiles (ms): one run's frame time and how
    much it varies from frame to frame."""
    import numpy as np

    from ..analysis.frames import first_steady_index
    frames = summary.get("frames") or {}
    per_frame = frames.get("per_frame_ns") or []
    warmup = frames.get("warmup") or {}
    steady = per_frame[first_steady_index(len(per_frame), int(warmup.get("frames") or 0)):]
    if not steady:
        return None
    low, median, high = np.percentile(np.asarray(steady, dtype=float) / 1e6, [10, 50, 90])
    return {"median": round(float(median), 4), "low": round(float(low), 4), "high": round(float(high), 4),
            "frames": len(steady)}


def run_flags(record: dict[str, Any]) -> list[dict[str, str]]:
    """The flags the run recorded when it came back (its board's samples included), else what run.json says."""
    stored = (record.get("validity") or {}).get("flags")
    return stored if isinstance(stored, list) else validity_flags(record)


def run_cell(run_dir: Path, label: str, fleet_folder: Path) -> dict[str, Any]:
    record, summary = read_json_object(run_dir / "run.json"), read_json_object(run_dir / "summary.json")
    frames = summary.get("frames") or {}
    return {
        "label": label, "status": record.get("status"), "reason": (record.get("error") or {}).get("message"),
        "frame_ms": frame_spread_ms(summary),
        "interval": "p10-p90 of the steady frames",
        "first_frame_ms": round(frames["first_ns"] / 1e6, 4) if frames.get("first_ns") is not None else None,
        "verdict": (summary.get("verdict") or {}).get("kind"), "flags": run_flags(record),
        "energy_mj": (summary.get("energy") or {}).get("median_mj"),
        "report": os.path.relpath(run_dir / "report.html", fleet_folder),
    }


def board_result_from_run(target: str, run_dir: Path, fleet_folder: Path) -> BoardResult:
    record = read_json_object(run_dir / "run.json")
    app = (record.get("app") or {}).get("name") or "app"
    cell = run_cell(run_dir, app, fleet_folder)
    error = record.get("error") or {}
    status = "ok" if record.get("status") == "ok" else "failed"
    return BoardResult(target, status, error.get("message"), int(error.get("exit_code") or 0),
                       os.path.relpath(run_dir, fleet_folder), board=board_summary(record.get("facts")), cells=[cell])


def board_result_from_study(target: str, study_dir: Path, fleet_folder: Path) -> BoardResult:
    """One cell per study cell: the median of its runs' steady means with its 95 % interval."""
    study = read_json_object(study_dir / "study.json")
    cells, facts = [], None
    for entry in study.get("cells") or []:
        metric = (entry.get("metrics") or {}).get("steady_mean_ms") or {}
        flags: list[dict[str, str]] = []
        for name in entry.get("runs") or []:
            record = read_json_object(study_dir / name / "run.json")
            facts = facts or record.get("facts")
            flags.extend(f for f in run_flags(record) if f not in flags)
        interval = metric.get("ci95") or [None, None]
        cells.append({
            "label": entry.get("label") or study.get("study") or "cell", "status": entry.get("status"),
            "reason": entry.get("reason"),
            "frame_ms": {"median": metric["median"], "low": interval[0], "high": interval[1],
                         "runs": len(metric.get("values") or [])} if metric.get("median") is not None else None,
            "interval": "95 % interval of the median over the runs", "verdict": entry.get("verdict"),
            "flags": flags, "report": os.path.relpath(study_dir / "study.html", fleet_folder),
        })
    failed = [c for c in cells if c["status"] != "ok"]
    reason = f"{len(failed)} of {len(cells)} cells failed; the first: {failed[0]['reason']}" if failed else None
    return BoardResult(target, "failed" if failed or not cells else "ok", reason or (None if cells else "no cell ran"),
                       20 if failed else 0, os.path.relpath(study_dir, fleet_folder), board=board_summary(facts),
                       cells=cells)


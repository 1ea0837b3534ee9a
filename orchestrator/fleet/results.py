"""A board's result from what its run (or study) folder holds: the board's facts, and per app or study
cell the frame time, the verdict and the run's validity flags. Pure over the folder's files."""
from __future__ import annotations

import os
from pathlib import Path

from ..documents.fleet import FleetBoard, FleetCell, FrameSpread
from ..documents.run import read_run_or_none
from ..documents.run_sections import Flag
from ..documents.study import read_study
from ..documents.summary import Summary, read_summary
from ..errors import UsageError
from ..figures.measured import frame_spread_ms, run_flags
from ..targets.facts import board_summary


def run_cell(run_dir: Path, label: str, fleet_folder: Path) -> FleetCell:
    run = read_run_or_none(run_dir)
    try:
        summary = read_summary(run_dir) or Summary()
    except UsageError:
        summary = Summary()
    first = summary.first_frame_ns
    return FleetCell(
        label=label, status=run.status if run else None, reason=run.error_message if run else None,
        frame_ms=frame_spread_ms(summary), interval="p10-p90 of the steady frames",
        first_frame_ms=round(first / 1e6, 4) if first is not None else None,
        verdict=summary.verdict_kind, flags=run_flags(run) if run else [], energy_mj=summary.energy_median_mj,
        report=os.path.relpath(run_dir / "report.html", fleet_folder))


def board_result_from_run(target: str, run_dir: Path, fleet_folder: Path) -> FleetBoard:
    run = read_run_or_none(run_dir)
    cell = run_cell(run_dir, run.app_name if run else "app", fleet_folder)
    status = "ok" if run and run.status == "ok" else "failed"
    return FleetBoard(target, status, run.error_message if run else None, run.exit_code if run else 0,
                      os.path.relpath(run_dir, fleet_folder), board=board_summary(run.facts if run else None),
                      cells=[cell])


def board_result_from_study(target: str, study_dir: Path, fleet_folder: Path) -> FleetBoard:
    """One cell per study cell: the median of its runs' steady means with its 95 % interval."""
    study = read_study(study_dir)
    cells, facts = [], None
    for entry in study.cells:
        metric = entry.metric("steady_mean_ms")
        flags: list[Flag] = []
        for name in entry.runs:
            run = read_run_or_none(study_dir / name)
            if run is None:
                continue
            facts = facts or run.facts
            flags.extend(f for f in run_flags(run) if f not in flags)
        cells.append(FleetCell(
            label=entry.label or study.name or "cell", status=entry.status, reason=entry.reason,
            frame_ms=FrameSpread(median=metric.median, low=metric.ci95[0], high=metric.ci95[1],
                                 runs=len(metric.values)) if metric is not None and len(metric.ci95) == 2 else None,
            interval="95 % interval of the median over the runs", verdict=entry.verdict,
            flags=flags, report=os.path.relpath(study_dir / "study.html", fleet_folder)))
    failed = [c for c in cells if c.status != "ok"]
    reason = f"{len(failed)} of {len(cells)} cells failed; the first: {failed[0].reason}" if failed else None
    return FleetBoard(target, "failed" if failed or not cells else "ok", reason or (None if cells else "no cell ran"),
                      20 if failed else 0, os.path.relpath(study_dir, fleet_folder), board=board_summary(facts),
                      cells=cells)


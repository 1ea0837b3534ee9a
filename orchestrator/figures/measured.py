"""Whether a run's figures count, and how one run's frame time reads: pure over its documents."""
from __future__ import annotations

from pathlib import Path

from ..documents.fleet import FrameSpread
from ..documents.run import RunDocument, read_run_or_none
from ..documents.run_sections import Flag
from ..documents.summary import Summary, summary_file
from .validity import validity_flags

NSYS_TARGETS = ("nsys", "nsys daemon", "nsys helpers")
NSYS_STALLS = ("stalled", "hung_after_report", "unfinished")  # the watchdog's steps for nsys's stalls, by kind


def nsys_alone_stalled(run: RunDocument) -> bool:
    """The run's watchdog stopped nsys alone, for one of nsys 2022.4's stalls around its report, after the
    app had been stopped as planned (whether nsys had written a report or not)."""
    capture = run.capture
    if capture is None:
        return False
    actions = capture.watchdog
    return (run.status == "watchdog" and bool(actions)
            and all(a.target in NSYS_TARGETS for a in actions)
            and any(a.kind in NSYS_STALLS for a in actions)
            and capture.app_stopped_after_s is not None)


def measured_despite_nsys(run: RunDocument) -> bool:
    """nsys alone stalled, and the report came back: the capture measured what it was meant to (the run
    still ends with exit 11, saying so)."""
    return (nsys_alone_stalled(run) and run.stage == "pulled"
            and any(name.startswith("report.") for name in run.files or {}))


def measured_run(run_dir: Path, run: RunDocument | None = None) -> bool:
    """A run whose figures count: it ended well, or nsys alone stalled after a complete capture; a run
    without nsys (--no-nsys) has its app's figures and no summary."""
    run = run or read_run_or_none(run_dir)
    if run is None:
        return False
    if run.without_nsys:
        return run.status == "ok" and run.stage == "pulled"
    return summary_file(run_dir).is_file() and (run.status == "ok" or measured_despite_nsys(run))


def run_flags(run: RunDocument) -> list[Flag]:
    """The flags the run recorded when it came back (its board's samples included), else what run.json says."""
    stored = run.stored_flags
    return stored if stored is not None else validity_flags(run)


def frame_spread_ms(summary: Summary) -> FrameSpread | None:
    """The steady frames' median with their 10th and 90th percentiles (ms): one run's frame time and how
    much it varies from frame to frame."""
    import numpy as np

    from ..analysis.analyzers.frames import first_steady_index
    per_frame = summary.per_frame_ns
    steady = per_frame[first_steady_index(len(per_frame), summary.warmup_frames):]
    if not steady:
        return None
    low, median, high = np.percentile(np.asarray(steady, dtype=float) / 1e6, [10, 50, 90])
    return FrameSpread(median=round(float(median), 4), low=round(float(low), 4), high=round(float(high), 4),
                       frames=len(steady))

"""What a report page is made from: a run folder (run.json, summary.json, the report and its export) or a
report file alone, plus the timeline of one representative frame read from the export."""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ..analysis import AnalysisOptions, analyze_report
from ..analysis.analyzers.frames import first_steady_index
from ..analysis.analyzers.run_events import run_events
from ..analysis.analyzers.timeline import busy_span, frame_timeline, representative_frame
from ..analysis.export.report_input import RUN_REPORT_NAMES
from ..analysis.export.schema import open_export, probe
from ..analysis.export.trace import Trace
from ..analysis.summary import symbol_resolver
from ..documents.run import RunDocument, is_run_folder, read_run
from ..documents.summary import Summary, read_summary
from ..documents.summary_sections import Capture, SummaryFrames
from ..errors import OrchestratorError, ReportError, UsageError
from ..figures.board import board_section
from ..figures.board_samples import read_board_samples
from ..figures.run_analysis import run_options, with_next_steps
from ..figures.run_metrics import run_metrics
from .board_part import BOARD_LINES
from .gpu_parts import software_renderer
from .run_timeline import TimelineData, timeline_data
from .units import format_ms, format_ns

REPORT_NAMES = (*RUN_REPORT_NAMES[1:], RUN_REPORT_NAMES[0])  # Nsight Systems' report first: the page links to it
NO_FRAME_SLICE_NS = 50_000_000


@dataclass(frozen=True)
class WithoutNsys:
    """What the page of a run without nsys shows: the board's samples (as summary.json's "board" and "capture" would
    hold them, on a clock from the first sample) and the app's own figures (name, value, unit)."""
    summary: Summary
    app_figures: list[tuple[str, float, str]]
    notes: list[str]


@dataclass(frozen=True)
class RunData:
    source: Path                  # the run folder or report file it came from
    summary: Summary | None       # summary.json's document
    document: RunDocument | None  # run.json's, for a run folder
    timeline: dict | None         # analysis.timeline's lanes plus a caption
    timeline_missing: str | None  # why there is no timeline
    analysis_error: str | None
    report_name: str | None       # the Nsight Systems report's file name
    report_href: str | None       # that report, relative to the page's folder
    without_nsys: WithoutNsys | None = None  # a run without nsys (--no-nsys)
    run_timeline: TimelineData | None = None  # the whole run's events, levels of detail and all, for the page
    run_timeline_missing: str | None = None


def load_run(path: Path, page_dir: Path, nsys_hint: str | None = None, symbols: tuple[Path, ...] = ()) -> RunData:
    """A run folder or a report file -> RunData. A run without a summary (or, with ``symbols``, any run) is
    analysed here when its report is still there; one whose app crashed before any report still gives a page
    that says so."""
    if path.is_dir():
        return _load_run_dir(path, page_dir, nsys_hint, symbols)
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder", "give a run folder (runs/<run>) or a report file")
    summary = with_next_steps(analyze_report(path, AnalysisOptions(symbols=symbols), nsys_hint), None, path)
    export = summary.export
    report = path if path.suffix in (".nsys-rep", ".qdrep") else _beside(export)
    timeline, why = timeline_of(export, summary)
    whole, whole_why = whole_run_of(export, summary, symbols)
    return RunData(path, summary, None, timeline, why, None, report.name if report else None,
                   _href(report, page_dir) if report else None, None, whole, whole_why)


def _load_run_dir(run_dir: Path, page_dir: Path, nsys_hint: str | None, symbols: tuple[Path, ...] = ()) -> RunData:
    document, summary = _read_documents(run_dir)
    reports = [run_dir / name for name in REPORT_NAMES if (run_dir / name).is_file()]
    if document is None and summary is None and not reports:
        raise UsageError(f"{run_dir} is not a run folder (no run.json, summary.json or report in it)",
                         "give a folder that 'orchestrate profile' made, or a .nsys-rep/.sqlite report")
    analysis_error = document.analysis_error if document else None
    if (summary is None or symbols) and reports and analysis_error is None:
        options = run_options(run_dir, document, AnalysisOptions(symbols=symbols))
        try:
            summary = with_next_steps(analyze_report(reports[0], options, nsys_hint), document, run_dir)
        except OrchestratorError as exc:
            analysis_error = exc.one_line()
    report = next((r for r in reports if r.suffix != ".sqlite"), None)
    export = run_dir / "report.sqlite"
    timeline: dict | None
    why: str | None
    whole: TimelineData | None = None
    whole_why: str | None
    if summary is None:
        timeline, why = None, analysis_error or "the run left no report"
        whole_why = why
    elif export.is_file():
        timeline, why = timeline_of(export, summary)
        whole, whole_why = whole_run_of(export, summary, symbols)
    else:
        timeline, why = None, "the run folder has no report.sqlite to read the frame's events from"
        whole_why = why
    return RunData(run_dir, summary, document, timeline, why, analysis_error, report.name if report else None,
                   _href(report, page_dir) if report else None,
                   _without_nsys(run_dir, document) if document is not None and document.without_nsys else None,
                   whole, whole_why)


def _without_nsys(run_dir: Path, document: RunDocument) -> WithoutNsys:
    """What the page of a run without nsys shows instead of a report's analysis."""
    samples = read_board_samples(run_dir)
    board = board_section(samples, document.board_samples_source, int(samples[0]["t"] * 1e9)) if samples else None
    seen = Summary(board=board)
    seen.capture = Capture(start_ns=0, end_ns=int(max((at for points in seen.board_series_ns.values()
                                                       for at, _ in points), default=0)))
    figures = run_metrics(run_dir, document.parser)
    return WithoutNsys(seen, [(name, value, figures.units[name][0]) for name, value in figures.values.items()],
                       figures.notes)


def timeline_of(export: Path, summary: Summary) -> tuple[dict | None, str | None]:
    """The events of the representative frame (else of a busy slice), with a caption saying which."""
    try:
        conn = open_export(export)
    except ReportError as exc:
        return None, f"the export could not be read for the timeline: {exc.one_line()}"
    try:
        schema = probe(conn)
        frames, steady = summary.frames, summary.steady
        slowest = None
        if frames and frames.count and steady:
            first_steady = first_steady_index(frames.count, frames.warmup.frames)
            incomplete = summary.incomplete_gpu_frames
            index = representative_frame(frames.per_frame_ns, first_steady, steady.p50_ns, incomplete)
            span = _frame_span(frames, index)
            whole = " whose GPU work nsys recorded whole" if incomplete else ""
            unit = frames.unit
            caption = (f"{unit} {index} of {frames.count}: {format_ms(span[1] - span[0])}, the steady {unit}{whole} "
                       f"closest to the median ({format_ms(steady.p50_ns)})")
            slow = slowest_frame(frames.per_frame_ns, first_steady)
            if slow != index:
                slow_span = _frame_span(frames, slow)
                slowest = {**frame_timeline(conn, schema, slow_span), "frame": slow,
                           "caption": f"{unit} {slow} of {frames.count}: {format_ms(slow_span[1] - slow_span[0])}, "
                                      f"the slowest steady {unit}"}
        else:
            index = None
            window = (summary.window.start_ns, summary.window.end_ns)
            span = busy_span(conn, schema, window, NO_FRAME_SLICE_NS)
            caption = (f"no frames: {format_ns(span[1] - span[0])} of the capture, around "
                       f"{'the median kernel launch' if summary.cuda_kernels else 'its middle'}")
        timeline = frame_timeline(conn, schema, span)
    except (ReportError, OSError, sqlite3.Error) as exc:
        return None, f"the export could not be read for the timeline: {exc}"
    finally:
        conn.close()
    if not timeline["lanes"]:
        return None, f"nothing traced in that span ({caption})"
    return {**timeline, "caption": caption, "frame": index,
            "slowest": slowest if slowest and slowest["lanes"] else None}, None


def whole_run_of(export: Path, summary: Summary,
                 symbols: tuple[Path, ...] = ()) -> tuple[TimelineData | None, str | None]:
    """Every event of the run for the page's whole-run timeline, with the frames, the findings' heaviest frames
    and the board's series; its samples' frames named from ``symbols`` as the hotspots are."""
    try:
        conn = open_export(export)
    except ReportError as exc:
        return None, f"the export could not be read for the timeline: {exc.one_line()}"
    trace = Trace(conn, probe(conn), export)
    renderer = software_renderer(summary)
    try:
        events = run_events(trace, symbol_resolver(AnalysisOptions(symbols=symbols)), renderer)
    except (ReportError, OSError, sqlite3.Error) as exc:
        return None, f"the export could not be read for the timeline: {exc}"
    finally:
        trace.close()
        conn.close()
    if not events.count:
        return None, "no traced calls, ranges, samples or GPU work in the report"
    frames = summary.frames
    starts, lengths = (frames.frame_starts_ns, frames.per_frame_ns) if frames else ([], [])
    spans = []
    for finding in summary.verdict.findings if summary.verdict else []:
        for frame in finding.frames:
            if 0 <= frame.index < len(lengths):
                start = starts[frame.index]
                spans.append({"title": finding.kind.replace("_", " "), "frame": frame.index,
                              "start_ns": start, "end_ns": start + lengths[frame.index]})
    drawn = summary.board_series_ns
    board = {f"{title} ({unit})": drawn[key] for key, title, unit in BOARD_LINES if drawn.get(key)}
    return timeline_data(events, list(zip(starts, (s + n for s, n in zip(starts, lengths)))), spans, board,
                         renderer, summary.unit), None


def _frame_span(frames: SummaryFrames, index: int) -> tuple[int, int]:
    start = frames.frame_starts_ns[index]
    return start, start + frames.per_frame_ns[index]


def slowest_frame(per_frame_ns: list[int], first_steady: int) -> int:
    """The slowest steady frame (the first of equals): the frame that tells what goes wrong."""
    steady = per_frame_ns[first_steady:]
    return first_steady + max(range(len(steady)), key=lambda i: (steady[i], -i)) if steady else 0


def _read_documents(run_dir: Path) -> tuple[RunDocument | None, Summary | None]:
    """run.json and summary.json, each None when missing; a damaged one is a ReportError saying which."""
    try:
        return (read_run(run_dir) if is_run_folder(run_dir) else None), read_summary(run_dir)
    except UsageError as exc:
        raise ReportError(exc.message, "run 'orchestrate analyze' on the report again") from None


def _beside(export: Path) -> Path | None:
    for suffix in (".nsys-rep", ".qdrep"):
        if export.with_suffix(suffix).is_file():
            return export.with_suffix(suffix)
    return None


def _href(target: Path, page_dir: Path) -> str:
    return Path(os.path.relpath(target.resolve(), page_dir.resolve())).as_posix()

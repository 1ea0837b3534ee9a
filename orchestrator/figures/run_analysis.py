"""The analysis of a run folder as its run asked for it: the frame delimiter of its app spec, the GPU its app named,
what it traced (to check the capture holds it), and what to do next from it all; a bare report gets the analysis
alone, with the next steps its own figures choose."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..analysis import AnalysisOptions, analyze_report
from ..analysis.analyzers.run_events import RunEvents, run_events
from ..analysis.analyzers.span_stats import SPAN_KINDS, SpanStat, chosen_rows, span_stats
from ..analysis.export.report_input import report_of, sqlite_for
from ..analysis.export.schema import open_export, probe
from ..analysis.export.trace import Trace
from ..documents.run import RunDocument, read_run_or_none
from ..documents.summary import Summary
from ..invocation import program
from .next_steps import next_steps, vsync_off_in
from .renderer import run_renderer


def run_options(run_dir: Path, run: RunDocument | None, options: AnalysisOptions) -> AnalysisOptions:
    """The options the user gave, completed from run.json where they gave none."""
    if run is None:
        return options
    app = run.app
    return replace(options, frame_range=options.frame_range or app.frame_delimiter,
                   renderer=options.renderer or run_renderer(run_dir, run.facts),
                   traces=tuple(app.trace) if options.traces is None and app.nsys else options.traces,
                   sampled=options.sampled or app.sample not in (None, "none"),
                   vsync_off=options.vsync_off or vsync_off_in(app))


def with_next_steps(summary: Summary, run: RunDocument | None, folder: Path) -> Summary:
    return summary.set(next_steps=next_steps(summary, run, str(folder), program()))


def analyze_source(source: Path, options: AnalysisOptions, nsys: str | None = None) -> Summary:
    """`orchestrate analyze`: a run folder or a report, summarised, with what to do next."""
    run = read_run_or_none(source) if source.is_dir() else None
    summary = analyze_report(report_of(source), run_options(source, run, options), nsys)
    return with_next_steps(summary, run, source)


def span_figures(source: Path, span: tuple[int, int], nsys: str | None = None) -> list[SpanStat]:
    """Per name, the events of the span on every thread and GPU lane: the page's range selection, as
    `analyze --window` prints it under the summary (analysis/analyzers/span_stats.py)."""
    events = run_events_of(sqlite_for(report_of(source), nsys))
    return span_stats(events, span, chosen_rows(events, None, SPAN_KINDS))


def run_events_of(export: Path, renderer: str | None = None) -> RunEvents:
    """Every event of an export, row by row, as the page's whole-run timeline holds them (run_events)."""
    conn = open_export(export)
    trace = Trace(conn, probe(conn, str(export)), export)
    try:
        return run_events(trace, None, renderer)
    finally:
        trace.close()
        conn.close()

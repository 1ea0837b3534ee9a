"""The report page's typed context, built from a run's summary.json, run.json and frame timeline. Pure.

Each section is a picture first and a table second; a section with no data is ``None`` and
``missing[section]`` says why, so a page of a partial capture explains itself instead of breaking.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace

import numpy as np

from ..analysis.analyzers.frames import first_steady_index
from ..documents.shares import VERDICT_TITLES
from ..documents.summary import Attribution, NextStep, Summary
from ..documents.summary_sections import (
    CallTreeNode,
    FunctionHotspot,
    Hotspots,
    SteadyFrames,
    SummaryFrames,
    SummaryGpuFrames,
    SummaryVerdict,
    SummaryWindow,
    VerdictFinding,
)
from ..figures.next_steps import next_steps
from ..invocation import program
from . import charts
from .board_part import BoardSection, board_part
from .charts import Chart
from .frame_chart import frame_series
from .gpu_parts import GpuFrames, gpu_frames_part, gpu_metrics_facts, software_renderer
from .header_part import Header, header_section, page_title
from .render import Fact
from .run_data import RunData, WithoutNsys
from .run_timeline import TimelineData
from .share_parts import SharesPart, shares_part, story_sentence
from .tables import (
    API_HINTS,
    API_TITLES,
    Table,
    api_table,
    gpu_streams_table,
    hotspot_table,
    modules_table,
    nvtx_gpu_table,
    threads_table,
)
from .units import format_ms, format_ns

HOT_BARS = 15
THREAD_BARS = 20


@dataclass(frozen=True)
class Verdict:
    kind: str
    title: str
    confidence: str
    sentence: str
    evidence: list[str]
    where: list[str] = field(default_factory=list)  # per evidence line: where it happens, in words ("" if nowhere)


@dataclass(frozen=True)
class FramesSection:
    stats: list[Fact]
    series: Chart
    histogram: Chart
    notes: list[str]
    gpu: GpuFrames | None = None
    unit: str = "frame"    # or "iteration": a CUDA or TensorRT run's


@dataclass(frozen=True)
class TreeItem:
    depth: int
    symbol: str
    module: str
    pct: float
    samples: int
    is_leaf: bool
    opened: bool
    closes: int  # how many enclosing branches end after this item


@dataclass(frozen=True)
class HotspotsSection:
    window: str
    samples: int
    modules_chart: Chart | None
    modules_table: Table | None
    notes: list[str]
    self_chart: Chart
    inclusive_chart: Chart
    flame: Chart
    tree: list[TreeItem]
    self_table: Table
    inclusive_table: Table


@dataclass(frozen=True)
class CpuSection:
    source: str
    window: str
    cores_busy: str
    cores: Chart | None
    threads: Chart
    threads_table: Table
    notes: list[str] = field(default_factory=list)  # a figure from elsewhere than the section's source


@dataclass(frozen=True)
class TimelineSection:
    caption: str
    chart: Chart
    kinds: list[str]
    note: str
    story: str = ""         # the frame's own shares and longest calls


@dataclass(frozen=True)
class ReportPage:
    title: str
    header: Header
    verdict: Verdict | None
    frames: FramesSection | None
    hotspots: HotspotsSection | None
    cpu: CpuSection | None
    timeline: TimelineSection | None
    api_tables: list[Table]
    api_missing: list[Fact]
    missing: dict[str, str] = field(default_factory=dict)
    slowest_timeline: TimelineSection | None = None  # the slowest steady frame's, beside the representative one
    board: BoardSection | None = None  # the board's clocks, loads, temperature and power during the capture
    gpu_metrics: list[Fact] | None = None  # the GPU's hardware metrics nsys sampled
    app_figures: list[Fact] | None = None  # a run without nsys: what the app's output parser found
    run_timeline: TimelineData | None = None  # the whole run's events, drawn by the page's script
    run_timeline_href: str | None = None      # where they are instead: a page of their own beside this one
    run_timeline_events: int = 0
    shares: SharesPart | None = None          # where the focus thread's time goes, per frame
    next_steps: list[NextStep] = field(default_factory=list)  # what to do next, at the top of the page
    unit: str = "frame"                       # what the run's frames are: "frame", or "iteration"
    trace_command: str | None = None          # the command that writes the same events for Perfetto UI


SECTIONS = ("verdict", "frames", "hotspots", "cpu", "run-timeline", "timeline", "api")


def report_page(run: RunData) -> ReportPage:
    summary, missing = run.summary, {}
    if summary is None and run.without_nsys is not None:
        return without_nsys_page(run, run.without_nsys)
    if summary is None:
        reason = (f"the report could not be analysed: {run.analysis_error}" if run.analysis_error
                  else "the run left no report to analyse (the problem above says why)")
        for section in SECTIONS:
            missing[section] = reason
        return ReportPage(page_title(run), header_section(run), None, None, None, None, None, [], [], missing)
    window = window_words(summary.window, summary.unit)
    verdict = summary.verdict or SummaryVerdict()
    findings = verdict.findings  # summaries from before findings have none
    software = software_renderer(summary) is not None
    frames = frames_section(summary.frames, findings, summary.gpu_frames, software)
    if frames is None:
        missing["frames"] = no_frames_reason(summary)
    hotspots = hotspots_section(summary.hotspots, window)
    if hotspots is None and summary.hotspots is None:
        missing["hotspots"] = ("no CPU samples in this report: it was captured without CPU sampling "
                               "(profile with --sample cpu)")
    elif hotspots is None:
        missing["hotspots"] = f"no CPU samples fell in {window} (analyse another window: orchestrate analyze --window)"
    cpu = cpu_section(summary, window)
    if cpu is None:
        missing["cpu"] = ("no context switches and no CPU samples: per-core and per-thread use are unknown "
                          "(profile with --sample cpu)")
    timeline = timeline_section(run.timeline, findings, found=summary.attribution)
    if timeline is None:
        missing["timeline"] = run.timeline_missing or f"no traced calls or ranges in the {summary.unit}"
    slowest = timeline_section((run.timeline or {}).get("slowest"), findings, "slowest-frame-timeline",
                               summary.attribution)
    tables = [api_table(key, rows) for key in API_TITLES if (rows := summary.api_rows(key))]
    if summary.nvtx_gpu:
        tables.insert(0, nvtx_gpu_table(summary.nvtx_gpu))
    if summary.gpu_work is not None and summary.gpu_work.streams:
        tables.insert(0, gpu_streams_table(summary.gpu_work))
    absent = [Fact(API_TITLES[key], API_HINTS[key]) for key in API_TITLES if not summary.api_rows(key)]
    if run.run_timeline is None:
        missing["run-timeline"] = run.run_timeline_missing or "no events in the report"
    return ReportPage(page_title(run), header_section(run), verdict_section(verdict, summary.unit), frames,
                      hotspots, cpu, timeline, tables, absent, missing, slowest, board_part(summary),
                      gpu_metrics_facts(summary.gpu_metrics), run_timeline=run.run_timeline,
                      shares=shares_part(summary.attribution), next_steps=steps_of(run, summary), unit=summary.unit,
                      trace_command=f"{program()} trace {shlex.quote(str(run.source))}")


def steps_of(run: RunData, summary: Summary) -> list[NextStep]:
    """What to do next, chosen as the page is written: each command runs as printed from where the page is read
    (this program, the run folder by its full path), whichever summary it was written from."""
    return next_steps(summary, run.document, str(run.source), program())


NO_NSYS_REASON = ("the app ran without nsys (--no-nsys): there is no trace; its own figures and the board's samples "
                  "are here")


def without_nsys_page(run: RunData, seen: WithoutNsys) -> ReportPage:
    """A run without nsys: the app's figures in place of the verdict, the board's samples under the frames."""
    missing = {section: NO_NSYS_REASON for section in SECTIONS}
    figures = [Fact(name, f"{value:.4g} {unit}") for name, value, unit in seen.app_figures]
    figures += [Fact("no figures", note) for note in seen.notes]
    if not figures:
        figures = [Fact("no figures", "the app spec names no output parser (parser:)")]
    return ReportPage(page_title(run), header_section(run), None, None, None, None, None, [], [], missing,
                      board=board_part(seen.summary), app_figures=figures)


def window_words(window: SummaryWindow, unit: str = "frame") -> str:
    kind = {"steady": f"the steady {unit}s", "all": "the whole capture", "frame": f"one {unit}",
            "range": "the chosen range"}.get(window.kind, window.kind)
    return f"{kind} ({format_ns(window.duration_ns)})"


def verdict_section(verdict: SummaryVerdict, unit: str = "frame") -> Verdict:
    kind = verdict.kind or ""
    return Verdict(kind, VERDICT_TITLES.get(kind, kind), verdict.confidence, verdict.summary, list(verdict.evidence),
                   [where_words(f, unit) for f in verdict.findings])


def where_words(finding: VerdictFinding, unit: str = "frame") -> str:
    """'most in frame 716 (8.28 ms of it, at 1.032 s), frame 101 (...)' for a finding with frames (or
    iterations: ``unit``), else ''."""
    if not finding.frames:
        return ""
    parts = []
    for frame in finding.frames:
        amount = f"{frame.samples} samples" if frame.samples is not None else f"{format_ms(frame.ns)} of it"
        parts.append(f"{unit} {frame.index} ({amount}, at {frame.start_ns / 1e9:.3f} s)")
    return "most in " + ", ".join(parts)


def heaviest_frames(findings: list[VerdictFinding]) -> dict[int, list[str]]:
    """frame index -> the kinds of the findings whose heaviest frame it is."""
    marks: dict[int, list[str]] = {}
    for finding in findings:
        if finding.frames:
            marks.setdefault(finding.frames[0].index, []).append(finding.kind)
    return marks


def no_frames_reason(summary: Summary) -> str:
    if summary.opengl is None and summary.nvtx is None:
        return ("no frames: the capture has no OpenGL calls and no NVTX ranges (trace opengl, or mark each frame "
                "with an NVTX range named 'frame', or set frame_delimiter in the app spec)")
    return ("no frames: no buffer swaps, no glFinish and no NVTX range named 'frame' (give the range that marks a "
            "frame with --frame-range, or frame_delimiter in the app spec)")


def frames_section(frames: SummaryFrames | None, findings: list[VerdictFinding] | None = None,
                   gpu: SummaryGpuFrames | None = None, software: bool = False) -> FramesSection | None:
    if frames is None:
        return None
    steady, warmup = frames.steady or SteadyFrames(), frames.warmup.frames
    per_frame = frames.per_frame_ns
    unit = frames.unit
    stats = [Fact(f"{unit}s", f"{frames.count:,} ({frames.source})"),
             *([Fact("found by", frames.rule)] if frames.rule else []),
             Fact(f"first {unit}", format_ms(frames.first_ns)),
             Fact("warm-up", f"{warmup} {unit}{'s' if warmup != 1 else ''}" if warmup else "none"),
             Fact("steady mean", format_ms(steady.mean_ns)),
             Fact("p50", format_ms(steady.p50_ns)), Fact("p90", format_ms(steady.p90_ns)),
             Fact("p99", format_ms(steady.p99_ns)), Fact("max", format_ms(steady.max_ns))]
    if steady.mean_ns:
        stats.append(Fact("rate", f"{1e9 / steady.mean_ns:.1f} {unit}s/s"))
    levels = {"p50": steady.p50_ns, "p90": steady.p90_ns, "p99": steady.p99_ns}
    steady_values = np.asarray(per_frame[first_steady_index(len(per_frame), warmup):])
    notes = [frames.warmup.rule + "."]
    if len(per_frame) > charts.MAX_SERIES_POINTS:
        notes.append(f"{len(per_frame):,} {unit}s: the series keeps each stretch's fastest and slowest {unit} "
                     f"({charts.MAX_SERIES_POINTS:,} points at most), the histogram counts them all.")
    series = frame_series(per_frame, warmup, levels, heaviest_frames(findings or []), counted=unit)
    return FramesSection(stats, series, charts.histogram(steady_values, counted=unit), notes,
                         gpu_frames_part(gpu, warmup, software, unit), unit)


def hotspots_section(hotspots: Hotspots | None, window: str) -> HotspotsSection | None:
    if hotspots is None or not hotspots.samples:
        return None

    def bars(name: str, rows: list[FunctionHotspot]) -> Chart:
        return charts.hbars(name, [(r.symbol, r.pct, f"{r.symbol} ({r.module}): {r.samples} samples, "
                                   f"{r.pct:.1f} %") for r in rows[:HOT_BARS]], 100.0)
    modules = hotspots.modules  # summaries written before modules were counted have none
    modules_chart = None if not modules else charts.hbars(
        "hotspots-modules", [(r.module, r.pct, f"{r.module} ({r.path}): {r.samples} samples, "
                             f"{r.pct:.1f} %") for r in modules[:HOT_BARS]], 100.0)
    tree = hotspots.tree or CallTreeNode()
    return HotspotsSection(window, hotspots.samples, modules_chart, modules_table(modules) if modules else None,
                           symbol_notes(hotspots),
                           bars("hotspots-self", hotspots.self_),
                           bars("hotspots-inclusive", hotspots.inclusive), charts.flame_graph(tree),
                           tree_items(tree),
                           hotspot_table("hotspots_self", "Self time (bottom-up)", hotspots.self_),
                           hotspot_table("hotspots_inclusive", "Inclusive time (top-down)", hotspots.inclusive))


def symbol_notes(hotspots: Hotspots) -> list[str]:
    """What became of the addresses nsys could not name: grouped per module, or resolved from --symbols."""
    notes = []
    grouped = hotspots.grouped_addresses
    if grouped:
        notes.append(f"{grouped:,} addresses nsys could not name are shown as their module's one frame, "
                     "e.g. [swrast_dri.so]; give the unstripped libraries with --symbols DIR to name them.")
    for module in hotspots.symbols or []:  # modules without a file in the folders: in the JSON only
        if module.file:
            notes.append(f"{module.module}: {module.resolved:,} addresses named from {module.file} "
                         f"(loaded at {module.load_address}, from {module.named_frames} frames nsys named).")
        elif not (module.why or "").startswith("no file"):
            notes.append(f"{module.module}: not resolved ({module.why}).")
    return notes


def tree_items(tree: CallTreeNode, open_share: float = 20.0) -> list[TreeItem]:
    """The call tree flattened in page order; each item says how many branches end right after it."""
    items: list[TreeItem] = []
    stack: list[tuple[CallTreeNode | None, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node is None:  # every descendant of a branch is out: the branch ends after the last one
            items[-1] = replace(items[-1], closes=items[-1].closes + 1)
            continue
        kids = node.children
        items.append(TreeItem(depth, node.symbol, node.module, node.pct, node.samples, not kids,
                              node.pct >= open_share, 0))
        if kids:
            stack.append((None, depth))
            stack += [(kid, depth + 1) for kid in reversed(kids)]
    return items


def cpu_section(summary: Summary, window: str) -> CpuSection | None:
    threads, cores = summary.threads, summary.cores
    if threads is None:
        return None
    busy = summary.cores_busy or 0.0
    core_chart = None
    if cores:
        rows = [(f"CPU {c.cpu}", c.busy_pct, f"CPU {c.cpu}: {c.busy_pct:.1f} % busy") for c in cores]
        core_chart = charts.hbars("cores", rows, 100.0)
    shown = sorted(threads, key=lambda t: -t.cpu_pct)
    bars = [(f"{t.name or 'thread'} ({t.tid})", t.cpu_pct,
             f"{t.name} ({t.tid}): {t.cpu_pct:.1f} % of a core, {format_ns(t.cpu_ns)}; "
             f"hottest: {t.top_symbol or '–'}") for t in shown[:THREAD_BARS]]
    thread_chart = charts.hbars("threads", bars, max([100.0] + [t.cpu_pct for t in shown]))
    notes = [f"{t.name or 'thread'} ({t.tid}): estimated from {t.cpu_from}" for t in shown if t.cpu_from]
    return CpuSection(summary.cpu_source or "", window, f"{busy:.2f}", core_chart, thread_chart, threads_table(shown),
                      notes)


def timeline_section(timeline: dict | None, findings: list[VerdictFinding] | None = None,
                     name: str = "frame-timeline", found: Attribution | None = None) -> TimelineSection | None:
    if not timeline or not timeline["lanes"]:
        return None
    kinds = sorted({e["kind"] for lane in timeline["lanes"] for e in lane["events"]}, key=charts.kind_rank)
    note = f"{timeline['dropped']:,} shorter events left out" if timeline["dropped"] else ""
    frame = timeline.get("frame")
    here = [f for f in findings or [] if any(fr.index == frame for fr in f.frames)]
    marked = frozenset((f.thread, call) for f in here if f.thread for call in f.names)
    story = found.story(frame) if found is not None else None
    return TimelineSection(timeline["caption"], charts.timeline_chart(timeline, name, marked), kinds, note,
                           story_sentence(found, story) if found and story else "")

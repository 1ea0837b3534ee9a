"""Rich tables of an analysis summary, for `orchestrate analyze` without --json. Builds, never prints."""
from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..analysis.analyzers.span_stats import SpanStat
from ..documents.shares import SHARES
from ..documents.summary import Summary
from ..documents.summary_sections import (
    ApiRow,
    GpuWork,
    Hotspots,
    NvtxGpuRow,
    SteadyFrames,
    SummaryFrames,
    SummaryVerdict,
    SummaryWindow,
)

API_TITLES = {"osrt": "OS runtime", "opengl": "OpenGL API (CPU)", "opengl_gpu": "OpenGL workload (GPU)",
              "nvtx": "NVTX ranges", "khr_debug": "KHR_debug groups", "cuda_api": "CUDA API",
              "kernel_functions": "CUDA kernels by function (their launch shapes in --json)",
              "memcpy": "GPU memory operations"}
ROWS = 10
SPAN_ROWS = 20


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:,.3f}"


def summary_view(summary: Summary) -> Group:
    parts: list = [_header(summary)]
    if summary.attribution is not None:
        parts.append(_shares(summary))
    if summary.frames:
        parts.append(_frames(summary.frames))
    if summary.hotspots:
        if summary.hotspots.modules:
            parts.append(_modules(summary.hotspots))
        parts.append(_hotspots(summary.hotspots))
    if summary.threads:
        parts.append(_cpu(summary))
    if summary.gpu_work is not None:
        parts.append(_gpu_work(summary.gpu_work))
    if summary.nvtx_gpu:
        parts.append(_nvtx_gpu(summary.nvtx_gpu))
    for key, title in API_TITLES.items():
        rows = summary.api_rows(key)
        if rows:
            parts.append(_api(title, rows))
    missing = [API_TITLES[k] for k in API_TITLES if summary.api_rows(k) is None]
    parts.append(Text(f"not in this report: {', '.join(missing)}", style="dim"))
    parts += next_steps_view(summary)
    return Group(*parts)


def next_steps_view(summary: Summary) -> list[Text]:
    """What to do next, at the end of what a command prints."""
    steps = summary.next_steps
    lines = [Text("next steps:", style="bold")] if steps else []
    for number, step in enumerate(steps, 1):
        lines.append(Text(f"{number}. {step.command}", style="bold"))
        lines.append(Text(f"   {step.why}"))
    return lines


def _shares(summary: Summary) -> Table:
    found = summary.attribution
    assert found is not None
    per = f"per {found.unit} ms" if found.frame_count else "ms"
    table = Table("share", "%", per, "in", title=f"Where {found.thread}'s time goes")
    for name in sorted(SHARES, key=lambda n: -found.share(n).ns):
        share = found.share(name)
        if share.pct < 0.05:
            continue
        ms = found.ms_per_frame(name) if found.frame_count else share.ns / 1e6
        what = ", ".join(share.calls[:3]) + (f" inside {', '.join(share.inside[:2])}" if share.inside else "")
        table.add_row(found.title(name), f"{share.pct:.1f}", f"{ms:,.3f}", Text(what))
    return table


def _header(summary: Summary) -> Table:
    capture, window, verdict = summary.capture, summary.window, summary.verdict or SummaryVerdict()
    table = Table.grid(padding=(0, 2))
    table.add_row("capture", f"{capture.duration_ns / 1e9:.3f} s, exported by nsys "
                             f"{capture.nsys_version or '?'}, {len(capture.processes)} processes seen")
    table.add_row("window", f"{window.kind}: {window.start_ns / 1e9:.3f} s to {window.end_ns / 1e9:.3f} s")
    table.add_row("verdict", Text(f"{verdict.kind} ({verdict.confidence}): {verdict.summary}", style="bold"))
    for line in verdict.evidence:
        table.add_row("", f"- {line}")
    return table


def _frames(frames: SummaryFrames) -> Table:
    steady = frames.steady or SteadyFrames()
    table = Table(f"{frames.unit}s", "count", "first ms", "steady mean ms", "p50", "p90", "p99", "max", "warm-up",
                  title=f"{frames.unit.capitalize()}s delimited by {frames.source}"
                        + (f" ({frames.rule})" if frames.rule else ""))
    table.add_row(frames.kind, str(frames.count), _ms(frames.first_ns), _ms(steady.mean_ns),
                  _ms(steady.p50_ns), _ms(steady.p90_ns), _ms(steady.p99_ns), _ms(steady.max_ns),
                  str(frames.warmup.frames))
    return table


def _gpu_work(work: GpuWork) -> Text:
    return Text(f"CUDA GPU busy {work.busy_pct:.1f} % of the window ({_ms(work.busy_ns)} ms): kernels "
                f"{_ms(work.kernels_ns)} ms ({work.kernels:,}), copies {_ms(work.copies_ns)} ms ({work.copies:,}), "
                f"sets {_ms(work.sets_ns)} ms ({work.sets:,}), on {len(work.streams)} streams")


def _nvtx_gpu(rows: list[NvtxGpuRow]) -> Table:
    table = Table("range", "ranges", "GPU ops", "GPU ms", "GPU avg ms", "range ms (CPU)",
                  title="GPU time per NVTX range (through the CUDA or OpenGL calls inside each)")
    for row in rows[:ROWS * 2]:
        table.add_row(Text("  " * row.depth + row.name), str(row.ranges), str(row.gpu_ops), _ms(row.gpu_ns),
                      _ms(row.gpu_avg_ns), _ms(row.range_ns))
    if len(rows) > ROWS * 2:
        table.caption = f"{len(rows) - ROWS * 2} more in --json"
    return table


def _modules(hotspots: Hotspots) -> Table:
    table = Table("self %", "samples", "module", title="CPU time by module (self samples)")
    for row in hotspots.modules[:ROWS]:
        table.add_row(f"{row.pct:.1f}", str(row.samples), Text(row.module))
    return table


def _hotspots(hotspots: Hotspots) -> Table:
    table = Table("self %", "self function", "incl. %", "inclusive function",
                  title=f"CPU hotspots ({hotspots.samples} samples in the window)")
    own_rows, inclusive = hotspots.self_, hotspots.inclusive
    for i in range(min(ROWS, max(len(own_rows), len(inclusive)))):
        own = own_rows[i] if i < len(own_rows) else None
        inc = inclusive[i] if i < len(inclusive) else None
        table.add_row(f"{own.pct:.1f}" if own else "", Text(own.symbol) if own else "",
                      f"{inc.pct:.1f}" if inc else "", Text(inc.symbol) if inc else "")
    return table


def _cpu(summary: Summary) -> Table:
    cores = " ".join(f"cpu{c.cpu} {c.busy_pct:.0f}%" for c in summary.cores or [])
    table = Table("thread", "tid", "cpu %", "top function", title=f"CPU use ({summary.cpu_source}): {cores}")
    for row in (summary.threads or [])[:ROWS]:
        table.add_row(Text(row.name or "?"), str(row.tid), f"{row.cpu_pct:.1f}", Text(row.top_symbol or ""))
    return table


def _api(title: str, rows: list[ApiRow]) -> Table:
    table = Table("name", "calls", "total ms", "avg ms", "med ms", "min ms", "max ms", "%", title=title)
    for row in rows[:ROWS]:
        table.add_row(Text(row.name), str(row.calls), _ms(row.total_ns), _ms(row.avg_ns),
                      _ms(row.med_ns), _ms(row.min_ns), _ms(row.max_ns), f"{row.pct or 0.0:.1f}")
    if len(rows) > ROWS:
        table.caption = f"{len(rows) - ROWS} more in --json"
    return table


def span_view(stats: list[SpanStat], window: SummaryWindow) -> Table:
    """The window's events per name, heaviest first: what the page's range selection shows for the same span."""
    table = Table("kind", "name", "count", "total ms", "self ms", "mean ms", "min ms", "max ms",
                  title=f"{window.start_ns / 1e9:.3f} s to {window.end_ns / 1e9:.3f} s, every thread, per name (as the "
                        "page's range selection; the MCP server's window tool gives each row's SQL)")
    for stat in stats[:SPAN_ROWS]:
        table.add_row(stat.kind, Text(stat.name), str(stat.count), _ms(stat.total_ns), _ms(stat.self_ns),
                      _ms(stat.mean_ns), _ms(stat.min_ns), _ms(stat.max_ns))
    if len(stats) > SPAN_ROWS:
        table.caption = f"{len(stats) - SPAN_ROWS} more names"
    return table

"""The commands that read reports and tools' output (`analyze`, `report`, `trace`, `compare`, `parse`):
parse, call the library, render. No board is needed unless --export-on names one."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .options import (
    DB_HELP,
    add_inventory_options,
    add_ssh_options,
    connect_options,
    existing_folder,
    show,
    stderr,
    vault_options,
    whole,
)

MAX_TOOL_OUTPUT = 256 * 2**20  # `parse` reads at most this much (a day of tegrastats at 10 Hz is ~100 MB)


def add_parsers(sub: Any) -> None:
    analyze = sub.add_parser("analyze", help="summarise an nsys report: frames, hotspots, cores, APIs, verdict",
                             description="Analyse a .sqlite, .nsys-rep or .qdrep report (exported first with the "
                                         "nsys found here when needed). API tables cover the whole capture; "
                                         "hotspots, cores and threads follow the window (default: the steady "
                                         "frames, else the whole capture). Times are in ns in --json.")
    analyze.add_argument("report", type=Path, help="run folder (runs/<run>) or report: .sqlite, .nsys-rep or .qdrep")
    analyze.add_argument("--json", action="store_true", help="print the summary as one JSON document")
    span = analyze.add_mutually_exclusive_group()
    span.add_argument("--window", help="'all', or START:END on the report's clock (e.g. 2s:3.5s, 200ms:1s, ns)")
    span.add_argument("--frame", type=whole(0, 10**9), help="analyse frame N only (0 is the first frame)")
    span.add_argument("--steady", action="store_true", help="analyse the steady frames (the default with frames)")
    analyze.add_argument("--process", help="only this process: any name it had in the capture, or its pid")
    analyze.add_argument("--thread", help="where this thread's time goes (its tid, or its name): the shares and "
                                          "the verdict are about it (default: the thread that ends the frames)")
    analyze.add_argument("--frame-range", help="NVTX range (or OpenGL call) that marks one frame (default: buffer "
                                               "swaps, else glFinish, else an NVTX range named 'frame')")
    _add_symbols_option(analyze)
    _add_nsys_option(analyze)

    report = sub.add_parser("report", help="write the HTML report of a run folder or a report file",
                            description="Render one self-contained HTML page (no network needed to open it): verdict, "
                                        "frames, hotspots, CPU, the whole run's timeline (every event, zoomed, "
                                        "searched and linked to by its view), a typical and the slowest frame thread "
                                        "by thread, and the API tables. A run folder without summary.json is analysed "
                                        "first.")
    report.add_argument("source", type=Path, help="run folder (runs/<run>) or report (.nsys-rep, .qdrep, .sqlite)")
    report.add_argument("-o", "--output", type=Path, help="HTML file (default: report.html in the run folder, "
                                                          "else NAME.html beside the report)")
    _add_symbols_option(report)
    _add_nsys_option(report)

    trace = sub.add_parser("trace", help="write a report's events as a Chrome trace (Perfetto UI, speedscope)",
                           description="Write the Chrome trace event format ({\"traceEvents\": [...]}, times in "
                                       "microseconds on the report's clock): threads with their OpenGL, OS runtime, "
                                       "NVTX and CUDA API calls, GPU streams with kernels and memory operations, CPU "
                                       "samples as instant events, frames on a Frames track, and each call's link to "
                                       "the GPU work it queued as a flow (an arrow in Perfetto UI and "
                                       "chrome://tracing). Covers the analysis window (steady frames, else the whole "
                                       "capture) unless told otherwise.")
    trace.add_argument("source", type=Path, help="run folder (runs/<run>) or report (.nsys-rep, .qdrep, .sqlite)")
    trace.add_argument("-o", "--output", type=Path, help="JSON file (default: trace.json in the run folder, else "
                                                         "NAME.trace.json beside the report)")
    span = trace.add_mutually_exclusive_group()
    span.add_argument("--window", help="'all', or START:END on the report's clock (e.g. 2s:3.5s)")
    span.add_argument("--frame", type=whole(0, 10**9), help="frame N only (0 is the first frame)")
    trace.add_argument("--process", help="only this process: any name it had in the capture, or its pid")
    trace.add_argument("--frame-range", help="NVTX range (or OpenGL call) that marks one frame")
    trace.add_argument("--max-events", type=int, default=200_000,
                       help="stop after this many events, in time order (default 200000: ~30 MB)")
    _add_symbols_option(trace)
    _add_nsys_option(trace)

    compare = sub.add_parser("compare", help="put two or more runs side by side, with deltas",
                             description="Compare runs (folders or reports) against the first: frame times, first "
                                         "frame, cores busy, top functions, verdict. Writes an HTML page and the same "
                                         "figures as JSON beside it, or prints the JSON with --json.")
    compare.add_argument("sources", type=Path, nargs="+", metavar="RUN", help="run folders or report files; the "
                                                                              "first is the baseline")
    compare.add_argument("-o", "--output", type=Path, default=Path("compare.html"),
                         help="HTML file (default compare.html; the JSON goes beside it as .json)")
    compare.add_argument("--label", action="append", help="name of each run, in order (default: app names, else "
                                                          "what differs in their commands)")
    compare.add_argument("--json", action="store_true", help="print the comparison as JSON instead of writing files")
    compare.add_argument("--db", help=DB_HELP + "; where the baseline run's jobs are stored, each run gets the gate's "
                                                "verdict against them")
    _add_nsys_option(compare)

    parse = sub.add_parser("parse", help="read a benchmark tool's or a board's output and print what it says",
                           description="Parse the console output of trtexec, the TF-TRT benchmark (tftrt-bench), "
                                       "glmark2 or jetson-inference into named figures (a failed run prints its "
                                       "reason), or what a Jetson prints about itself: a tegrastats log (one JSON "
                                       "object per line with --json), 'nvpmodel -q', 'jetson_clocks --show', "
                                       "/etc/nv_tegra_release.")
    parse.add_argument("parser", help="trtexec, tftrt-bench, glmark2, jetson-inference; tegrastats, nvpmodel, "
                                      "jetson-clocks, nv-tegra-release")
    parse.add_argument("file", type=Path, help="the tool's output, e.g. runs/<run>/app.stdout.log")
    parse.add_argument("--json", action="store_true", help="print the figures as one JSON document")


def _add_symbols_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--symbols", type=existing_folder, action="append", default=[], metavar="DIR",
                        help="folder of unstripped copies or .debug files of the board's libraries, to name the "
                             "addresses nsys could not (repeatable; matched by build id, else by file name)")


def _add_nsys_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nsys", help="nsys to export .nsys-rep/.qdrep with (default: found on PATH)")
    parser.add_argument("--export-on", metavar="TARGET",
                        help="export the .nsys-rep/.qdrep with this target's nsys (for reports newer than the nsys "
                             "here); the SQLite comes back verified, beside the report")
    add_inventory_options(parser, "Ansible inventory for --export-on (as for profile)")
    add_ssh_options(parser)


def _export_first(args: argparse.Namespace, source: Path) -> None:
    """With --export-on, export the source's report with that target's nsys before anything reads it."""
    if not args.export_on:
        return
    from ..analysis.export.report_input import nsys_report_of
    from ..inventory.hosts import find_host
    from ..runs.remote_export import export_on_target
    report = nsys_report_of(source)
    host = find_host(args.inventory, args.export_on, vault_options(args))
    done = export_on_target(report, host, connect_options(args))
    stderr().print(f"exported on {done.target} with nsys {done.nsys_version}: {done.sqlite}", markup=False,
                   highlight=False)


def cmd_analyze(args: argparse.Namespace) -> int:
    from ..analysis import AnalysisOptions  # imported here: pandas and numpy load slowly
    from ..figures.run_analysis import analyze_source
    _export_first(args, args.report)
    options = AnalysisOptions(window=args.window, frame=args.frame, steady=args.steady, process=args.process,
                              thread=args.thread, frame_range=args.frame_range, symbols=tuple(args.symbols))
    summary = analyze_source(args.report, options, args.nsys)
    if args.json:
        print(json.dumps(summary.as_json()))
        return 0
    from .analysis_view import span_view, summary_view
    show(summary_view(summary))
    if args.window:  # the span's calls per name on every thread, as the page's range selection shows them
        from ..figures.run_analysis import span_figures
        window = summary.window
        show(span_view(span_figures(args.report, (window.start_ns, window.end_ns), nsys=args.nsys), window))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..report import write_report  # imported here: pandas, numpy and jinja load slowly
    _export_first(args, args.source)
    print(write_report(args.source, args.output, args.nsys, tuple(args.symbols)))
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    from ..analysis import AnalysisOptions
    from ..report.chrome_trace import default_trace_path, write_chrome_trace
    if args.max_events < 1:
        raise UsageError(f"--max-events {args.max_events}: needs at least one event", "e.g. --max-events 200000")
    output = args.output or default_trace_path(args.source)
    options = AnalysisOptions(window=args.window, frame=args.frame, process=args.process,
                              frame_range=args.frame_range, symbols=tuple(args.symbols))
    _export_first(args, args.source)
    written = write_chrome_trace(args.source, output, options, args.nsys, args.max_events)
    if written.truncated_at_ns is not None:
        stderr().print(f"[yellow]note:[/] {written.events:,} events reach --max-events; the trace stops at "
                       f"{written.truncated_at_ns / 1e9:.6f} s (of {written.window[1] / 1e9:.6f} s): "
                       "give a --window or a --frame", highlight=False)
    print(written.path)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..report import write_comparison
    from ..report.compare import gate_lines, work_lines
    from ..results.compare_gate import compare_with_gate
    if len(args.sources) < 2:
        raise UsageError("compare needs two runs or more", "e.g. orchestrate compare runs/A runs/B")
    document = compare_with_gate(args.sources, args.label, args.nsys, args.output.parent, args.db)
    if args.json:
        print(json.dumps(document))
        return 0
    for path in write_comparison(document, args.output):
        print(path)
    # the verdict on each variant's iterations and its movers, then the gate's
    for line in work_lines(document["work"]["variants"]) + gate_lines(document["gate"]):
        stderr().print(line, markup=False, highlight=False, soft_wrap=True)
    return 0


def cmd_parse(args: argparse.Namespace) -> int:
    from ..parsers import PARSERS, parse
    from ..parsers.board_text import BOARD_PARSERS
    if args.parser not in PARSERS and args.parser not in BOARD_PARSERS:
        raise UsageError(f"no parser named {args.parser!r}", f"known: {', '.join([*PARSERS, *BOARD_PARSERS])}")
    try:
        with args.file.open("rb") as handle:  # a tool's output, not /dev/zero: a bounded read
            raw = handle.read(MAX_TOOL_OUTPUT + 1)
        if len(raw) > MAX_TOOL_OUTPUT:
            raise UsageError(f"{args.file} is larger than {MAX_TOOL_OUTPUT // 2**20} MB: not a tool's output",
                             "give the file the tool's output was saved to")
        text = raw.decode("utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror}", "give the path of the tool's output") from None
    if args.parser in BOARD_PARSERS:
        return _print_board_text(args, text)
    parsed = parse(args.parser, text, str(args.file))
    if args.json:
        print(json.dumps(parsed.as_json()))
        return 0
    from rich.table import Table
    table = Table("figure", "value", title=f"{args.parser}: {args.file}")
    for name, figure in parsed.figures.items():
        table.add_row(name, f"{figure.value:g} {figure.unit}")
    show(table)
    if parsed.records:
        names = list(dict.fromkeys(name for record in parsed.records for name in record.figures))
        records = Table("record", *names, title=f"{len(parsed.records)} records, in the order printed")
        for record in parsed.records:
            cells = (record.figures.get(name) for name in names)
            records.add_row(record.label, *(f"{cell.value:g} {cell.unit}" if cell else "" for cell in cells))
        show(records)
    if parsed.failure:
        show(f"failed: {parsed.failure}")
    return 0


def _print_board_text(args: argparse.Namespace, text: str) -> int:
    from ..parsers.board_text import parse_board_text
    found = parse_board_text(args.parser, text, str(args.file))
    if args.parser == "tegrastats":
        if args.json:
            for sample in found:
                print(json.dumps(sample))
            return 0
        from rich.table import Table
        table = Table("time", "RAM MB", "CPU load % (per core)", "EMC %", "GPU %@MHz", "hottest", "power mW",
                      title=f"tegrastats: {args.file}")
        for r in found:
            cores = " ".join("off" if c is None else str(c["load_pct"]) for c in r["cpus"] or [])
            temps = {k: v for k, v in r["temps_c"].items() if v is not None}
            hottest = max(temps.items(), key=lambda kv: kv[1]) if temps else None
            rails = r["rails_mw"]
            table.add_row(r["time"] or "–", f"{r['ram_used_mb']}/{r['ram_total_mb']}", cores or "–",
                          str(r["emc_pct"] if r["emc_pct"] is not None else "–"),
                          f"{r['gr3d_pct'] if r['gr3d_pct'] is not None else '–'}@{r['gr3d_freq_mhz'] or '–'}",
                          f"{hottest[0]} {hottest[1]:g} C" if hottest else "–",
                          " ".join(f"{k}={v['current']}" for k, v in rails.items()) or "–")
        show(table)
        return 0
    print(json.dumps(found, indent=None if args.json else 2))
    return 0

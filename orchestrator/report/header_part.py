"""The header of a run's page: what ran where, with which nsys, how long, the report and the command that opens
it, how the run went wrong when it did, and why its figures are doubtful. Pure."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from datetime import datetime, timezone

from remote_agent.messages import CurrentClocks, Facts

from ..documents.run_sections import RunApp
from ..documents.summary import Summary
from .render import Fact
from .run_data import RunData
from .units import format_ns


@dataclass(frozen=True)
class Header:
    title: str
    facts: list[Fact]
    report_href: str | None   # the .nsys-rep, relative to the page
    open_command: str | None  # the nsys-ui command that opens it
    problems: list[str]       # how the run went wrong, when it did
    doubts: list[str] = field(default_factory=list)  # why the board was not in a fit state to be measured


def header_section(run: RunData) -> Header:
    document, summary = run.document, run.summary or Summary()
    facts_in = (document.facts if document else None) or Facts()
    board, system, nsys = facts_in.board, facts_in.system, facts_in.nsys
    capture = summary.capture
    facts: list[Fact] = []

    def add(label: str, value) -> None:
        if value not in (None, "", []):
            facts.append(Fact(label, str(value)))
    if document is not None:
        address = f"({document.target.address})" if document.target.address else ""
        add("target", " ".join(filter(None, [document.target.name, address])))
    cpu = capture.platform.cpu_description
    add("board", board.model or (f"not a Jetson ({cpu})" if cpu else None))
    if board.l4t:
        add("L4T / JetPack", f"{board.l4t} / {board.jetpack or 'unknown'}")
    add("power mode", board.power_mode.name if board.power_mode else None)
    add("clocks", clock_words(board.clocks))
    add("system", " · ".join(filter(None, [system.os or capture.platform.os_description,
                                          system.kernel, system.arch])))
    app = document.app if document else RunApp()
    add("app", app.name or None)
    add("command", " ".join(shlex.quote(a) for a in app.command))
    add("nsys", nsys.version or capture.nsys_version)
    add("date", _when(document.started_at if document else None))
    if capture.duration_ns:
        add("traced", f"{format_ns(capture.duration_ns)} (the report's span)")
    phases = document.phases if document else {}
    if phases:
        add("run took", f"{sum(phases.values()):.1f} s, {phases.get('capture', 0):.1f} s of it in nsys "
                        "(starting, tracing, stopping)")
    add("report", run.report_name)
    problems = []
    if document and document.error_message:
        problems.append(document.error_message)
    if document and document.app_ending and document.status != "ok":
        problems.append(f"the app {document.app_ending} (exit status {document.app_exit_status})")
    if run.analysis_error:
        problems.append(f"the report could not be analysed: {run.analysis_error}")
    command = f"nsys-ui {shlex.quote(run.report_href)}" if run.report_href else None
    doubts = [flag.what for flag in (document.stored_flags if document else None) or []]
    return Header(page_title(run), facts, run.report_href, command, problems, doubts)


def _when(iso: str | None) -> str | None:
    """'2026-11-30T03:20:51.238+00:00' -> '2026-11-30 03:20:51 UTC'."""
    if not iso:
        return None
    try:
        return datetime.fromisoformat(iso).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except ValueError:
        return iso


def clock_words(clocks: CurrentClocks | None) -> str | None:
    if not clocks:
        return None
    parts = []
    if clocks.cpu_mhz:
        low, high = min(clocks.cpu_mhz), max(clocks.cpu_mhz)
        parts.append(f"CPU {low}-{high} MHz" if low != high else f"CPU {low} MHz")
    if clocks.gpu_mhz:
        parts.append(f"GPU {clocks.gpu_mhz} MHz")
    return ", ".join(parts) or None


def page_title(run: RunData) -> str:
    document = run.document
    app = (document.app.name if document else None) or run.source.stem
    target = document.target.name if document and document.target.name != "unknown" else None
    return f"{app} on {target}" if target else app

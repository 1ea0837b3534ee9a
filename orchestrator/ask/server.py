"""`orchestrate mcp`: the runs under a root and the results database, asked through the Model Context Protocol.

Each tool is a thin call into the answers (answers.py, work.py, across.py), its reply JSON bounded (bounds.py); an
orchestrate error is the tool's error, in its one line and what to do. Over stdio by default; over streamable HTTP
on loopback with --http, behind a bearer token and an Origin check (http_guard.py).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from .. import __version__
from ..errors import OrchestratorError
from .across import compare_answer, compare_cells, compare_commits, history_answer, runs_answer
from .answers import frames_answer, summary_answer, window_answer
from .bounds import bounded
from .capture import CaptureSettings, profile_args, run_command, study_args
from .root import OpenRun, Root
from .work import gpu_work_answer, hotspots_answer

INSTRUCTIONS = (
    "orchestrate's runs: Nsight Systems captures of apps on NVIDIA Jetson boards (OpenGL frames, CUDA and TensorRT "
    "iterations), studies of variants, and a results database of runs over commits. Start with 'runs', then "
    "'summary' of a run. Times are in ns on the report's clock; a window is 'all' or START:END (2s:3.5s, 200ms:1s). "
    "Every figure carries its evidence: the SQL that recomputes it from the run's export (run it with sqlite3 on "
    "the answer's 'export'), or the document field it was read from.")
WHY_SLOW = (
    "Why is the app of run {run} slow? Call 'summary' with run={run}: read the verdict and the shares of the focus "
    "thread's time. Then call 'frames' with run={run} for the slowest steady frames, and 'frames' with that frame's "
    "index for its own shares and calls. Call 'window' over the slowest frame's span (start_ns:end_ns, in ns) on the "
    "focus thread for its calls, 'hotspots' for its CPU functions, and 'gpu_work' for the GPU work its calls queued. "
    "Say which figure each conclusion rests on, with the SQL of its evidence.")


def answered(make: Callable[[], dict[str, Any]]) -> str:
    """The answer as bounded JSON, or the tool's error in orchestrate's one line."""
    try:
        answer = make()
    except OrchestratorError as exc:
        raise ToolError(exc.one_line()) from None
    return json.dumps(bounded(answer), separators=(",", ":"), default=plain)  # as bounds.size counts it


def plain(value: Any) -> Any:
    """What JSON cannot hold as it is: numpy's numbers as Python's, tuples as lists; anything else is a defect."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} in an answer")


def build_server(root_path: Path, db: str | None = None, capture: CaptureSettings | None = None) -> MCPServer:
    """The server and its tools, resources and prompt, over the runs under ``root_path``; with ``capture``, the
    tools that profile and run studies too, their folders made under the root."""
    root = Root(root_path)
    server: MCPServer = MCPServer("orchestrate", instructions=INSTRUCTIONS, version=__version__)

    @server.tool(structured_output=False)
    def runs(app: str | None = None, target: str | None = None, board: str | None = None,
             since: str | None = None, verdict: str | None = None, valid: bool | None = None,
             kind: str | None = None, offset: int = 0, limit: int = 50) -> str:
        """The runs, studies, fleets and reports under the root, newest first: filter by app (or study), target,
        board kind (a part of its name), since (a date), verdict (cpu_bound, gpu_bound, ...), valid, kind (run,
        study, fleet, report). Names are what the other tools take as 'run'."""
        return answered(lambda: runs_answer(root, app, target, board, since, verdict, valid, kind, offset, limit))

    @server.tool(structured_output=False)
    def summary(run: str) -> str:
        """A run's verdict (what its frame time waits for), the focus thread's shares, its frames' figures, next
        steps, validity flags and board."""
        return answered(lambda: summary_answer(root, root.run(run)))

    @server.tool(structured_output=False)
    def frames(run: str, frame: int | None = None, slowest: int = 5) -> str:
        """Frame (or iteration) statistics and the slowest steady frames; with 'frame', that frame's own shares
        and longest calls."""
        return answered(lambda: frames_answer(root, root.run(run), frame, slowest))

    @server.tool(structured_output=False)
    def window(run: str, window: str | None = None, thread: str | None = None, name: str | None = None,
               kinds: list[str] | None = None, offset: int = 0, limit: int = 20) -> str:
        """Per name, the events of a span on the threads or GPU lanes 'thread' names (a label as the page shows it,
        whole, e.g. 'GPU 0 stream 15'; a thread id; else a part of the labels) whose names hold 'name': count,
        total, self (less the events of its kind nested in it on its thread), mean, min, max in ns, whole events
        overlapping the span, as the report page's range selection shows them. window: 'all', 'steady', or
        START:END on the report's clock (2s:3.5s; a bare number is ns); none: the steady frames. kinds: among nvtx,
        opengl, cuda_api, osrt, sample (CPU samples, counted), cuda_kernel, memcpy (copies and memsets),
        opengl_gpu."""
        return answered(lambda: window_answer(root, root.run(run), window, thread, name, kinds, offset, limit))

    @server.tool(structured_output=False)
    def hotspots(run: str, window: str | None = None, thread: str | None = None, top: int = 25) -> str:
        """The CPU samples of a span on the threads holding 'thread': functions bottom-up (their own samples),
        by the samples whose stacks hold them, and the top-down call tree."""
        return answered(lambda: hotspots_answer(root, root.run(run), window, thread, top))

    @server.tool(structured_output=False)
    def gpu_work(run: str, window: str | None = None, call: str | None = None, gpu: str | None = None,
                 limit: int = 20) -> str:
        """The GPU work that ran in a span (overlapping it) with the calls that queued it, by the correlation ids
        nsys records: per (call, GPU work) pair, the GPU events and their time, for calls whose names hold 'call'
        and GPU work whose names hold 'gpu'; the first links themselves; and how long the GPU was busy in the span
        (CUDA kernels and copies, OpenGL workloads apart)."""
        return answered(lambda: gpu_work_answer(root, root.run(run), window, call, gpu, limit))

    @server.tool(structured_output=False)
    def compare(runs: list[str] | None = None, labels: list[str] | None = None, study: str | None = None,
                cells: list[str] | None = None, app: str | None = None, commits: list[str] | None = None,
                metric: str = "steady_mean_ms", board: str | None = None) -> str:
        """Two things compared, the base first. runs: run folders, as `orchestrate compare` compares them (each
        metric's values and change, the steady frames' three-way verdict: faster, slower, same; the gate's verdict
        where the results database holds the baseline run). study and cells: two cells of a study folder (index or
        label), their medians, intervals and rounds' verdict. app and commits: two commits' runs in the results
        database (metric, on a board kind), judged as the CI gate judges a job against its baseline."""
        given = [runs is not None, study is not None, commits is not None]
        if sum(given) != 1:
            raise ToolError("compare takes one of runs, study (with cells) and commits (with app)")
        if study is not None:
            return answered(lambda: compare_cells(root, study, cells or []))
        if commits is not None:
            if not app:
                raise ToolError("compare with commits needs the app (or study) whose runs they are")
            return answered(lambda: compare_commits(db, app, commits, metric, board))
        return answered(lambda: compare_answer(root, runs or [], labels, db))

    @server.tool(structured_output=False)
    def history(app: str, metric: str = "steady_mean_ms", board: str | None = None, cell: str | None = None,
                branch: str | None = None, last: int = 50) -> str:
        """A metric of an app (or study) over its runs in the results database, oldest first, on a kind of board
        ('board': its name or fingerprint), each job judged against the valid jobs before it, as
        `orchestrate results history --judge` judges them."""
        return answered(lambda: history_answer(db, app, metric, board, cell, branch, last))

    @server.resource("orchestrate://runs/{name}/summary.json", mime_type="application/json")
    def summary_document(name: str) -> str:
        """A run folder's summary.json (its name as 'runs' gives it, '/' written as '%2F')."""
        run = resource_run(root, name)
        written = kept_file(run, "summary.json")
        return written.read_text() if written else json.dumps(run.summary.as_json())

    @server.resource("orchestrate://runs/{name}/report", mime_type="text/plain")
    def report_link(name: str) -> str:
        """Where a run folder's report page is (a file: link), or how to make it."""
        run = resource_run(root, name)
        page = kept_file(run, "report.html")
        return page.as_uri() if page else f"no report page yet: orchestrate report {run.source}"

    @server.prompt()
    def why_slow(run: str) -> str:
        """Why is this app slow? The questions to ask of a run, in order."""
        return WHY_SLOW.format(run=run)

    if capture is not None:
        add_capture_tools(server, root, capture)
    return server


def resource_run(root: Root, name: str) -> OpenRun:
    """The run a resource's URI names ('/' written as '%2F'), or the resource's error in orchestrate's one line."""
    try:
        return root.run(name.replace("%2F", "/"))
    except OrchestratorError as exc:
        raise ResourceError(exc.one_line()) from None


def kept_file(run: OpenRun, name: str) -> Path | None:
    """A file the run's folder holds (Root.run checked that it stays inside the root), or None."""
    found = run.source / name
    return found if run.source.is_dir() and found.is_file() else None


def add_capture_tools(server: MCPServer, root: Root, settings: CaptureSettings) -> None:
    @server.tool(structured_output=False)
    async def profile(target: str, ctx: Context, app: str | None = None, app_cmd: str | None = None,
                      duration: float | None = None, trace: str | None = None, sample: str | None = None,
                      cpuctxsw: str | None = None, retries: int | None = None, needs_display: bool = False,
                      no_nsys: bool = False) -> str:
        """Profile one app (a catalog name, or app_cmd: a command line) on one target of the server's inventory, as
        `orchestrate profile` does, its progress as progress notifications; a cancel ends the capture early and
        keeps the report. Answers with the new run's name under the root and its summary."""
        try:
            args = profile_args(settings, target, app, app_cmd, duration, trace, sample, cpuctxsw, retries,
                                needs_display, no_nsys)
        except OrchestratorError as exc:
            raise ToolError(exc.one_line()) from None
        return await _captured(root, settings, args, ctx, with_summary=True)

    @server.tool(structured_output=False)
    async def study(file: str, ctx: Context, target: str | None = None, repeat: int | None = None,
                    values: list[str] | None = None) -> str:
        """Run a study file (a path on the server's machine) as `orchestrate study` does; values: NAME=V1,V2 as
        --set takes them. Answers with the study folder's name under the root and its runs."""
        path = Path(file)
        if not path.is_file():
            raise ToolError(f"{file}: no such study file (give the path of a study YAML on the server's machine)")
        return await _captured(root, settings, study_args(settings, path, target, repeat, values), ctx,
                               with_summary=False)


async def _captured(root: Root, settings: CaptureSettings, args: list[str], ctx: Context, with_summary: bool) -> str:
    said = 0

    async def report(line: str) -> None:
        nonlocal said
        said += 1
        await ctx.report_progress(said, None, line)
    ran = await run_command(args, report, settings.environment())
    if ran.code:
        raise ToolError(ran.error or f"orchestrate {args[0]} ended with exit code {ran.code}")
    if ran.folder is None:
        raise ToolError(f"orchestrate {args[0]} printed no folder")
    try:
        name = root.name_of(Path(ran.folder))
    except ValueError:
        raise ToolError(f"orchestrate {args[0]} printed {ran.folder!r}, not a folder under the root") from None
    if with_summary:
        return answered(lambda: {"run": name, "summary": summary_answer(root, root.run(name))})
    return answered(lambda: {"study": name, "runs": [entry for entry in runs_answer(root, kind="run", limit=10**6)[
        "entries"] if entry["name"].startswith(name + "/")]})

"""What to do next: one to three commands chosen from a run's evidence, the one that matters most first, none
that the run already did. Pure over summary.json and run.json.

Each rule says when it applies (its evidence), why, and the command; its weight orders the steps:
  on_the_board      the renderer is a software one on a machine that is not a Jetson: profile on a board
  lock_clocks       a clock dropped during the capture and the run did not lock them: --lock-clocks
  context_switches  the capture has none (the time on a CPU is an estimate from samples, or not known), and the
                    kernel did not refuse perf events (CPU sampling): --cpuctxsw process-tree
  os_runtime        the capture has no OS runtime calls and time is unexplained: --trace ...,osrt
  gpu_trace         the thread waits for the GPU (in its calls, or its samples sit in a function that waits) while no
                    GPU work was recorded: --trace ...,cuda (or opengl)
  vsync_off         the display's refresh paces the frames: run with vsync off
  symbols           the hottest functions are unnamed addresses (nsys's own libraries left out): orchestrate report
                    RUN --symbols DIR, so the page the user reads names them
  display_server    the largest share waits on the display server: the run again with system-wide sampling and
                    context switches, which record what the X server (or the compositor) did meanwhile
  waking_thread     the largest share waits on the app's other threads: orchestrate analyze RUN --thread WAKER,
                    where the thread that ends the waits spends its own time
  io_calls          the largest share waits on I/O: orchestrate analyze RUN --thread TID --frame-range DELIMITER
                    --frame N, the frame that waits most, its calls and their durations
  sleep_calls       the largest share sleeps: the same, the frame that sleeps most
  readbacks         the thread stalls on small synchronous copies (analysis/analyzers/readbacks.py): read back less
                    often or asynchronously into pinned memory; a steady iteration's calls
Each command runs as printed from any folder: the program as it was started (``orchestrate`` when that is the one
on PATH, else its full path), the run folder or report by its full path. Capitalised words in a command (BOARD,
DIR) are for the user to fill in; the step's words say with what.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..documents.run import RunDocument
from ..documents.run_sections import RunApp
from ..documents.summary import Attribution, NextStep, Summary
from ..documents.summary_sections import SummaryFrames
from ..inventory.catalog import APP_CMD_SOURCE, BUILTIN_DIR, CAPTURE_OPTION_FIELDS

MAX_STEPS = 3
UNNAMED_PCT = 20.0          # of the samples in unnamed hottest functions before --symbols is worth it
WAIT_SHARE_PCT = 10.0       # of the thread's time waiting on threads or unexplained, to be named in the step
UNEXPLAINED_PCT = 10.0
# frames nsys names in brackets that no symbol file can name
NAMELESS_FOR_GOOD = re.compile(r"^\[(JIT|vdso|kernel\.kallsyms|Unknown|Max depth|Broken backtraces)")
# nsys's own libraries, injected into the app: its overhead, never the app's to name
PROFILER_LIBRARY = re.compile(r"^\[(libToolsInjection|libInterceptorInjection|libcupti|libnvperf|libQuiver|"
                              r"libnvtx|libNvtx)", re.IGNORECASE)
DEBUG_FILES = ("DIR: a folder of unstripped copies or .debug files of the board's libraries, such as /usr/lib/debug "
               "copied from a board with the -dbgsym packages installed (Debian's from the debian-debug archive; "
               "Ubuntu's, L4T's included, from ddebs.ubuntu.com); NVIDIA's own L4T libraries ship stripped")
SHARE_STEP_PCT = 20.0  # of the thread's time in the largest share before a step aims at it
VSYNC_OFF = {"vblank_mode": "0", "__GL_SYNC_TO_VBLANK": "0"}  # Mesa's and NVIDIA's drivers' switches


def vsync_off_in(app: RunApp) -> bool:
    """Whether an app's environment turns vsync off."""
    return any(VSYNC_OFF.get(name) == value for name, value in app.env_pairs)


@dataclass(frozen=True)
class Evidence:
    """What the rules read: the summary's figures and, for a run folder, how the run was made."""
    summary: Summary
    run: RunDocument | None
    folder: str               # the run folder or report to name in an analyze command, by its full path
    program: str = "orchestrate"  # the words that run orchestrate

    @property
    def attribution(self) -> Attribution | None:
        return self.summary.attribution

    @property
    def traces(self) -> list[str]:
        return list(self.run.app.trace) if self.run else []

    def pct(self, *names: str) -> float:
        found = self.attribution
        return sum(found.share(name).pct for name in names) if found else 0.0


# what a rerun of an app given by its command says again of how it was captured
RERUN_OPTIONS = ("--trace", "--sample", "--duration", "--delay")


def rerun(evidence: Evidence, *extra: str, command: list[str] | None = None) -> str:
    """The run's own profile command with more options; without run.json, one with TARGET and APP to fill in. An
    app given by its command (--app-cmd, or ``command`` in place of the spec's) keeps its environment, display,
    traces, sampling and capture length."""
    run = evidence.run
    words = ["profile"]
    if run is None:
        words += ["--target", "TARGET", "--app-cmd", "APP"]
        return " ".join([evidence.program] + words + [shlex.quote(w) for w in extra])
    words += ["--target", run.target.name]
    app = run.app
    source = app.source
    if command is not None or source == APP_CMD_SOURCE:
        env = [f"{name}={value}" for name, value in app.env_pairs]
        argv = command or list(app.command)
        words += ["--app-cmd", shlex.join((["env", *env] if env and argv[:1] != ["env"] else []) + argv)]
        if app.needs_display:
            words.append("--needs-display")
        for option in RERUN_OPTIONS:
            value = getattr(app, CAPTURE_OPTION_FIELDS[option])
            if value and option not in extra:
                words += [option, ",".join(value) if isinstance(value, list) else f"{value:g}"
                          if isinstance(value, float) else str(value)]
    else:
        words += ["--app", run.app_name]
        folder = Path(source).parent if source and source != "<built-in>" else None
        # the built-in catalog wherever that run's orchestrate was installed: --app alone names it here too
        if folder is not None and folder.parts[-3:] != BUILTIN_DIR.parts[-3:]:
            words += ["--apps-dir", str(folder)]
    if run.inventory:
        words += ["--inventory", run.inventory]
    return " ".join([evidence.program] + [shlex.quote(w) for w in words + list(extra)])


def _traces_with(evidence: Evidence, name: str) -> str:
    traces = evidence.traces or ["osrt"]
    return ",".join(traces + [name] if name not in traces else traces)


Rule = Callable[[Evidence], "tuple[float, NextStep] | None"]


def on_the_board(ev: Evidence) -> tuple[float, NextStep] | None:
    found = ev.attribution
    model = ev.run.facts.board.model if ev.run and ev.run.facts else None
    if found is None or not found.software_renderer or "jetson" in str(model or "").lower():
        return None
    if ev.run and ev.run.app.source != APP_CMD_SOURCE:
        command = rerun(ev).replace(f" --target {shlex.quote(ev.run.target.name)} ", " --target BOARD ", 1)
    else:
        command = f"{ev.program} profile --target BOARD --app-cmd APP"
    return 100.0, NextStep("on_the_board", "the renderer is a software one: its GPU work runs on this machine's CPU, "
                           "so the GPU's figures say nothing of a Jetson's; BOARD: a Jetson of the inventory "
                           f"({ev.program} targets)", command)


def lock_clocks(ev: Evidence) -> tuple[float, NextStep] | None:
    run = ev.run
    dropped = [flag for flag in (run.stored_flags or []) if flag.code == "clocks_dropped"] if run else []
    if not dropped or run is None or run.request.lock_clocks:
        return None
    return 90.0, NextStep("lock_clocks", f"{dropped[0].what}: the figures drift with the clocks",
                          rerun(ev, "--lock-clocks"))


def context_switches(ev: Evidence) -> tuple[float, NextStep] | None:
    found = ev.attribution
    if found is None or found.sources.context_switches or _perf_events_refused(ev):
        return None
    if ev.run is not None and ev.run.app.cpuctxsw in ("process-tree", "system-wide"):
        return None
    waiting = ev.pct("threads", "unexplained")
    known = ("estimated from its OS runtime calls and CPU samples" if found.sources.samples and found.sources.os_runtime
             else "estimated from its CPU samples" if found.sources.samples
             else "estimated from its OS runtime calls" if found.sources.os_runtime
             else "not known (no context switches, no CPU samples)")
    what = f"; {waiting:.0f} % of it waits on other threads or is unexplained" if waiting >= WAIT_SHARE_PCT else ""
    return max(waiting, 20.0), NextStep(
        "context_switches", f"when {found.thread} ran is {known}{what}: context switches record when it was on a "
                            "CPU, inside which call, and the thread that ends each wait",
        rerun(ev, "--cpuctxsw", "process-tree"))


def _perf_events_refused(ev: Evidence) -> bool:
    """The kernel refused CPU sampling: context switches would be refused alike (both are perf events)."""
    return any(gap.trace == "sample" for gap in ev.summary.capture_gaps)


def os_runtime(ev: Evidence) -> tuple[float, NextStep] | None:
    found = ev.attribution
    if found is None or found.sources.os_runtime or "osrt" in ev.traces:
        return None
    unexplained = ev.pct("unexplained")
    if unexplained < UNEXPLAINED_PCT:
        return None
    return unexplained, NextStep("os_runtime", f"{unexplained:.0f} % of {found.thread}'s time is unexplained: without "
                                 "OS runtime calls, what it blocks in is not recorded",
                                 rerun(ev, "--trace", _traces_with(ev, "osrt")))


def gpu_trace(ev: Evidence) -> tuple[float, NextStep] | None:
    found = ev.attribution
    if found is None or found.sources.gpu_work or found.software_renderer:
        return None
    waits = ev.pct("gpu")
    if not found.wait_function_samples and waits < SHARE_STEP_PCT:
        return None
    calls = " ".join(found.share("gpu").calls + found.share("cpu").calls)
    api = "cuda" if re.search(r"\bcu", calls) else "opengl"
    if api in ev.traces:
        return None
    calls_named = ", ".join(found.share("gpu").calls[:2])
    why = (f"{waits:.0f} % of {found.thread}'s time waits for the GPU in {calls_named}" if waits >= SHARE_STEP_PCT
           else f"{found.wait_function_samples} of {found.thread}'s samples wait for the GPU")
    return 60.0 + waits, NextStep("gpu_trace", f"{why}, and no GPU work was recorded to set against it: the GPU's "
                                  "work records what it waits for", rerun(ev, "--trace", _traces_with(ev, api)))


def vsync_off(ev: Evidence) -> tuple[float, NextStep] | None:
    verdict = ev.summary.verdict
    if verdict is None or verdict.kind != "vsync" or ev.run is None or vsync_off_in(ev.run.app):
        return None
    env = dict(ev.run.app.env_pairs, **VSYNC_OFF)
    command = ["env", *(f"{k}={v}" for k, v in env.items()), *ev.run.app.command]
    share = (ev.attribution.share(verdict.share or "").pct if ev.attribution else 0.0)
    return share, NextStep("vsync_off", "the display's refresh likely paces the frames: with vsync off, the frame "
                           "time is the app's own", rerun(ev, command=command))


def symbols(ev: Evidence) -> tuple[float, NextStep] | None:
    hotspots = ev.summary.hotspots
    if not hotspots or hotspots.symbols is not None:
        return None
    unnamed = [row for row in hotspots.self_ if _unnamed(row.symbol)]
    share = sum(row.pct for row in unnamed)
    if share < UNNAMED_PCT:
        return None
    names = ", ".join(row.symbol for row in unnamed[:3])
    return share, NextStep("symbols", f"{share:.0f} % of the samples are in functions nsys could not name ({names}): "
                           f"the page again, with their names; {DEBUG_FILES}",
                           f"{ev.program} report {shlex.quote(ev.folder)} --symbols DIR")


def display_server(ev: Evidence) -> tuple[float, NextStep] | None:
    found = ev.attribution
    if found is None or found.largest != "display" or found.largest_share.pct < SHARE_STEP_PCT:
        return None
    if (ev.run is not None and ev.run.app.sample == "system-wide") or _perf_events_refused(ev):
        return None
    return found.largest_share.pct, NextStep(
        "display_server", f"{found.largest_share.pct:.0f} % of {found.thread}'s time is blocked on the display "
                          "server: sampled system-wide, with every process's context switches, the capture records "
                          "what the X server (or the compositor) did meanwhile",
        rerun(ev, "--sample", "system-wide", "--cpuctxsw", "system-wide"))


def waking_thread(ev: Evidence) -> tuple[float, NextStep] | None:
    found = ev.attribution
    if found is None or found.largest != "threads" or found.largest_share.pct < SHARE_STEP_PCT:
        return None
    woke = found.largest_share.threads
    if not woke:
        return None
    tid = _tid(woke[0])
    return found.largest_share.pct, NextStep(
        "waking_thread", f"{found.largest_share.pct:.0f} % of {found.thread}'s time waits on {woke[0]}, which ends "
                         "most of its waits: where that thread's own time goes",
        f"{ev.program} analyze {shlex.quote(ev.folder)} --thread {tid}")


def io_wait(ev: Evidence) -> tuple[float, NextStep] | None:
    return _heaviest_frame(ev, "io", "waits on I/O or other blocking calls",
                           "its calls and their durations (nsys records the calls, not their files: strace -y on the "
                           "board names the file of each)")


def sleep(ev: Evidence) -> tuple[float, NextStep] | None:
    return _heaviest_frame(ev, "sleep", "sleeps", "which calls sleep and for how long, and what runs around them")


def _heaviest_frame(ev: Evidence, name: str, verb: str, shows: str) -> tuple[float, NextStep] | None:
    """A step aimed at the largest share when it is ``name``: the frame that holds most of it, analysed alone, for
    the same thread and the same frames (by their delimiter); none when the analysis was of one frame already."""
    found = ev.attribution
    if found is None or found.largest != name or found.largest_share.pct < SHARE_STEP_PCT:
        return None
    share, frames = found.largest_share, ev.summary.frames
    if not share.frames or frames is None or (ev.summary.window and ev.summary.window.kind == "frame"):
        return None
    calls = f" in {', '.join(share.calls[:3])}" if share.calls else ""
    frame, tid = share.frames[0].index, _tid(found.thread)
    return share.pct, NextStep(
        f"{name}_calls", f"{share.pct:.0f} % of {found.thread}'s time {verb}{calls}: {frames.unit} {frame}, where it "
                         f"{verb} most, with {shows}",
        f"{ev.program} analyze {shlex.quote(ev.folder)} --thread {tid}{_delimiter(frames)} --frame {frame}")


def _delimiter(frames: SummaryFrames) -> str:
    """--frame-range for frames another analysis finds again by their delimiter; a CUDA run's iterations are found
    again by the same rule without it."""
    return f" --frame-range {shlex.quote(frames.source)}" if frames.unit == "frame" else ""


def readbacks(ev: Evidence) -> tuple[float, NextStep] | None:
    """The thread stalls on small synchronous copies: read less often, or asynchronously into pinned memory."""
    verdict, found, frames = ev.summary.verdict, ev.attribution, ev.summary.frames
    finding = next((f for f in verdict.findings if f.kind == "readbacks"), None) if verdict else None
    if finding is None or found is None:
        return None
    frame = f" --frame {frames.warmup.frames + 1}" if frames is not None and frames.count > 1 else ""
    window = ev.summary.window
    if not frame and window is not None and window.kind == "range":  # the same stretch again
        frame = f" --window {window.start_ns}:{window.end_ns}"
    return 55.0, NextStep("readbacks", f"{finding.text}: read the value back every few iterations, or copy it into "
                          "pinned memory (cudaMallocHost) with cudaMemcpyAsync and wait on an event only where it is "
                          "needed, so the GPU's queue keeps running; a steady iteration's calls:",
                          f"{ev.program} analyze {shlex.quote(ev.folder)} --thread {_tid(found.thread)}"
                          f"{_delimiter(frames) if frames is not None else ''}{frame}")


def _tid(thread: str) -> str:
    """The tid of a thread as the attribution labels it ("es2gears_x11 (7188)"), as --thread takes it."""
    return thread.rsplit("(", 1)[-1].rstrip(")")


def _unnamed(symbol: str) -> bool:
    if NAMELESS_FOR_GOOD.match(symbol) or PROFILER_LIBRARY.match(symbol):
        return False
    return (symbol.startswith("[") and symbol.endswith("]")) or bool(re.fullmatch(r"0x[0-9a-fA-F]+", symbol))


RULES: tuple[Rule, ...] = (on_the_board, lock_clocks, context_switches, os_runtime, gpu_trace, vsync_off, symbols,
                           display_server, waking_thread, io_wait, sleep, readbacks)


def next_steps(summary: Summary, run: RunDocument | None, folder: str, program: str = "orchestrate") -> list[NextStep]:
    """At most three steps, the heaviest first (a tie keeps the rules' order); ``folder`` by its full path."""
    evidence = Evidence(summary, run, os.path.abspath(folder), program)
    found = [(weight, index, step) for index, rule in enumerate(RULES)
             if (chosen := rule(evidence)) is not None for weight, step in [chosen]]
    found.sort(key=lambda item: (-item[0], item[1]))
    return [step for _, _, step in found[:MAX_STEPS]]

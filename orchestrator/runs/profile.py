"""One profile run, end to end: connect, deploy, preflight, capture (detached on the board), then
collect (pull, import, export, analyze).

Everything here is domain logic over a ``Transport`` and the agent; nothing prints. run.json says at
every moment where the run stands (``documents.run.STAGES``). An interrupt or a lost link never costs the
capture: the board finishes it on its own and keeps the report for ``orchestrate fetch``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol

from remote_agent.commands import BOARD_STATE, PREFLIGHT
from remote_agent.messages import (
    BoardState,
    CaptureProgress,
    CaptureResult,
    ClocksUsed,
    LaunchRequest,
    PreflightAnswer,
    PreflightRequest,
)

from .. import __version__
from ..documents.run import BoardStates, RunDocument, RunTarget
from ..documents.run_sections import AgentUsed, BoardFolders, RunApp, RunError, RunFleet, RunRequest, RunStudy
from ..errors import AgentError, ConnectionLostError, InterruptedRunError, OrchestratorError
from ..inventory.catalog import AppSpec
from ..inventory.hosts import Host
from ..nsys.commands import RemoteRunPaths, launch_argv, profile_argv
from ..targets.agent import RemoteAgent, deploy_agent, deploy_and_call
from ..targets.connect import open_transport
from ..targets.facts import board_fingerprint
from ..targets.settings import ConnectOptions
from ..targets.shell import ShellCommand, masked_env
from ..targets.transport import Transport
from . import remote_capture
from .app_files import program_to_find, stage_app_files
from .folder import create_run_dir, run_id
from .outcome import raise_for_findings
from .preload import Preparation
from .progress import Progress
from .run_log import RunLog
from .run_settings import RunSettings, capture_settings

PYTHON_PLACEHOLDER = "{python}"


class LeaseWatch(Protocol):
    """What a run tells the lease on its board."""

    def capturing(self, capture: str | None) -> None:
        """A capture is about to run in the board's folder ``capture`` (the lease lasts as long); None: it ended on
        the board, or never began."""

    def checked(self, error: OrchestratorError | None) -> None:
        """The run got past the board's connection and preflight (None), or ended with ``error`` (the lease
        counts it against the board when it says something of the board)."""


@dataclass(frozen=True)
class ProfileRequest:
    host: Host
    app: AppSpec
    out_dir: Path
    connect: ConnectOptions = field(default_factory=ConnectOptions)
    settings: RunSettings = field(default_factory=RunSettings)
    inventory: str | None = None
    study: RunStudy | None = None  # the study and cell a run belongs to, kept in run.json
    fleet: RunFleet | None = None  # the fleet run it belongs to, kept in run.json
    stop: remote_capture.HostStop | None = None  # another thread's wish to end the capture early (a fleet's)
    lease: LeaseWatch | None = None  # the board's lease: told of the run's capture and of the board's preflight


@dataclass(frozen=True)
class Board:
    """An open connection with its checked agent, shared by the runs of a study."""
    transport: Transport
    agent: RemoteAgent


@dataclass(frozen=True)
class ProfileOutcome:
    run_dir: Path
    status: str
    run: RunDocument


def preflight_request(host: Host, app: AppSpec, settings: RunSettings, work_dir: str | None) -> PreflightRequest:
    """What a run of ``app`` on ``host`` asks the board's preflight (a task's --check asks the same)."""
    return PreflightRequest(
        nsys=host.nsys, with_nsys=app.nsys, argv0=program_to_find(app.command[0], app.files, app.workdir),
        cwd=app.workdir, needs_display=app.needs_display, display=host.display, xvfb=app.xvfb or host.xvfb,
        sample=app.sample, gpu_metrics=app.gpu_metrics, capture_s=app.capture_s, work_dir=work_dir,
        lock_clocks=settings.lock_clocks, nvpmodel_mode=settings.nvpmodel)


def app_section(app: AppSpec) -> RunApp:
    """The app spec as run.json keeps it: environment values that look like secrets masked."""
    return RunApp(name=app.name, command=list(app.command), description=app.description, workdir=app.workdir,
                  env=[list(pair) for pair in masked_env(app.env)], trace=list(app.trace), sample=app.sample,
                  cpuctxsw=app.cpuctxsw, duration_s=app.duration_s, delay_s=app.delay_s,
                  needs_display=app.needs_display, xvfb=app.xvfb, frame_delimiter=app.frame_delimiter,
                  nsys_args=list(app.nsys_args), gpu_metrics=app.gpu_metrics, parser=app.parser, files=list(app.files),
                  nsys=app.nsys, source=app.source)


def profile(request: ProfileRequest, progress: Progress, board: Board | None = None) -> ProfileOutcome:
    """One run. It connects and deploys the agent itself, or runs over ``board`` (a study's)."""
    app, host = request.app, request.host
    run_dir = create_run_dir(request.out_dir, run_id(host.name, app.name))
    run = RunDocument(
        run_id=run_dir.name, orchestrate_version=__version__, started_at=datetime.now(timezone.utc).isoformat(),
        target=RunTarget(host.name, host.connection, list(host.groups)), inventory=request.inventory,
        app=app_section(app),
        request=RunRequest(**request.settings.section(), with_nsys=app.nsys),
        study=request.study, fleet=request.fleet)
    log = RunLog(run_dir, run, progress)
    log.stage("preparing")
    failure: OrchestratorError | None = None
    try:
        try:
            if board is not None:
                run.target.address = board.transport.description
                run.agent = agent_section(board.agent).set(shared=True)
                failure = _run_on_target(request, board.agent, log)
            else:
                with log.phase("connect"):
                    transport = open_transport(host, request.connect)
                progress.finish("connect", transport.description)
                run.target.address = transport.description
                try:
                    agent, checked = deploy_and_preflight(transport, request, log)
                    failure = _run_on_target(request, agent, log, checked)
                finally:
                    transport.close()
        except KeyboardInterrupt:
            raise interrupted(log) from None
    except OrchestratorError as exc:
        exc.run_dir = run_dir
        if run.status in ("started", "ok"):
            run.status = "interrupted" if isinstance(exc, InterruptedRunError) else "failed"
        run.error = error_section(exc)
        if run.stage == "preparing" and not (isinstance(exc, InterruptedRunError) and run.remote):
            run.stage = "failed"
        elif run.stage == "preparing":  # the capture may have started: fetch finds out
            run.stage = "capturing"
        if request.lease is not None:  # a failure the lease counts against the board when it is the board's
            request.lease.checked(exc)
        raise
    finally:
        if failure is not None:
            run.error = error_section(failure)
            if request.lease is not None:
                request.lease.checked(failure)
        finish(log)
    if failure is not None:
        failure.run_dir = run_dir
        raise failure
    return ProfileOutcome(run_dir=run_dir, status=run.status, run=run)


def error_section(exc: OrchestratorError) -> RunError:
    return RunError(type=type(exc).__name__, message=exc.one_line(), exit_code=exc.exit_code)


def finish(log: RunLog) -> None:
    log.run.finished_at = datetime.now(timezone.utc).isoformat()
    log.save()
    with log.phase("report"):  # also for a failed run: the page says what is missing and why
        _write_report_page(log.run_dir, log.progress)
    log.save()


def interrupted(log: RunLog) -> InterruptedRunError:
    """A second interrupt, or one outside the capture: say what is kept where."""
    stage, run_dir = log.run.stage, log.run_dir
    if stage in ("capturing", "on_board"):
        log.stage("on_board" if stage == "on_board" else "capturing")
        return InterruptedRunError(f"interrupted; the board {'ends the capture and ' if stage == 'capturing' else ''}"
                                   f"keeps the report", f"get it with 'orchestrate fetch {run_dir}'")
    if stage == "preparing" and log.run.remote:  # between asking for the capture and hearing back
        return InterruptedRunError("interrupted as the capture started; the board ends it on its own after "
                                   f"{log.run.heartbeat_timeout_s:g} s without a heartbeat and keeps "
                                   "the report", f"get it with 'orchestrate fetch {run_dir}'")
    if stage == "pulled":
        return InterruptedRunError(f"interrupted after the pull; the report is here: {run_dir}",
                                   f"'orchestrate report {run_dir}' writes its page")
    return InterruptedRunError("interrupted before the capture; nothing to keep", "")


def agent_section(agent: RemoteAgent) -> AgentUsed:
    return AgentUsed(version=agent.version, sha256=agent.sha256, reused=agent.reused, python=agent.python,
                     path=agent.archive)


def deploy_agent_logged(transport: Transport, host: Host, log: RunLog) -> RemoteAgent:
    with log.phase("deploy"):
        agent = deploy_agent(transport, host)
    log.run.agent = agent_section(agent)
    log.progress.finish("deploy", f"agent {agent.version} {'already there, checked' if agent.reused else 'uploaded'}")
    return agent


def deploy_and_preflight(transport: Transport, request: ProfileRequest, log: RunLog) -> tuple[RemoteAgent,
                                                                                              PreflightAnswer]:
    """The agent deployed (or found there) and preflight's answer: one round trip when it is there already."""
    app = with_python(request.app, request.host.python)
    with log.phase("deploy"):  # the preflight's work dir: the work dir the agent is started in
        asked = preflight_request(request.host, app, request.settings, None)
        agent, checked = deploy_and_call(transport, request.host, PREFLIGHT, asked)
    log.run.agent = agent_section(agent)
    log.progress.finish("deploy", f"agent {agent.version} {'already there, checked' if agent.reused else 'uploaded'}"
                                  ", preflight answered")
    return agent, checked


def _write_report_page(run_dir: Path, progress: Progress) -> None:
    from ..report import write_report  # loaded during the capture (preload), or here for a run that failed first
    try:
        page = write_report(run_dir)
    except (OrchestratorError, OSError) as exc:
        message = exc.one_line() if isinstance(exc, OrchestratorError) else str(exc)
        progress.note("warning", f"report.html could not be written ({message}); "
                                 f"try again with 'orchestrate report {run_dir}'")
        return
    progress.finish("report", str(page))


def _run_on_target(request: ProfileRequest, agent: RemoteAgent, log: RunLog,
                   checked: PreflightAnswer | None = None) -> OrchestratorError | None:
    """The run over a deployed agent; ``checked``: preflight's answer when the deploy made it."""
    app, run, progress = with_python(request.app, agent.python), log.run, log.progress
    with log.phase("preflight"):  # 0 s when its answer came in the deploy's round trip
        if checked is None:
            asked = preflight_request(request.host, app, request.settings, agent.work_dir)
            checked = agent.call(PREFLIGHT, asked)
    run.facts, run.preflight = checked.facts, checked.findings
    run.board_fingerprint = board_fingerprint(checked.facts)  # the board's kind, and its software
    for found in checked.findings:  # what the run handles itself (level info) stays in run.json and doctor
        if found.level != "info":
            progress.note(found.level, f"{found.what}: {found.why}. Fix: {found.fix}")
    raise_for_findings(checked.findings)
    if request.lease is not None:
        request.lease.checked(None)
    nsys = checked.facts.nsys
    progress.finish("preflight", f"nsys {nsys.version} at {nsys.path}" if app.nsys else "without nsys")
    run.board_state = BoardStates(before=checked.board_state)
    with agent.session():  # the run's further calls: one agent process on the board, one channel
        return _capture_and_collect(request, agent, log, app, checked)


def _capture_and_collect(request: ProfileRequest, agent: RemoteAgent, log: RunLog, app: AppSpec,
                         checked: PreflightAnswer) -> OrchestratorError | None:
    run, progress, nsys = log.run, log.progress, checked.facts.nsys
    paths = RemoteRunPaths(f"{agent.work_dir}/runs/{log.run_dir.name}")
    if app.files:
        run.app_files = stage_app_files(agent, app.files, paths.run_dir)
        if app.workdir is None:
            app = replace(app, workdir=paths.run_dir)
    argv = profile_argv(str(nsys.path), app, paths, nsys.profile_options, str(nsys.version),
                        nsys.gpu_metrics_option) if app.nsys else launch_argv(app, paths)
    run.remote = BoardFolders(run_dir=paths.run_dir, work_dir=agent.work_dir)
    run.remote_command = ShellCommand(tuple(argv), masked_env(app.env), app.workdir).render()
    launch = LaunchRequest(
        argv=list(argv), with_nsys=app.nsys, cwd=app.workdir, env=dict(app.env), run_dir=paths.run_dir,
        work_dir=agent.work_dir, pid_file=paths.pid_file, report_base=paths.report_base,
        settings=capture_settings(request.settings, app), display=checked.display,
        importer=None if nsys.imports_itself or not app.nsys else nsys.importer,
        requested_by=run.target.address)
    if request.stop is not None and request.stop.interrupt.is_set():
        raise InterruptedRunError("interrupted before the capture; nothing to keep", "")
    with log.phase("capture", total=app.capture_s, unit="s"):
        if request.lease is not None:  # before it begins: the lease must outlive this process if the capture does
            request.lease.capturing(paths.run_dir)
        try:
            launched = remote_capture.launch(agent, launch)
        except BaseException:
            if request.lease is not None:
                request.lease.capturing(None)
            raise
        if launched.recovered_clocks:  # an earlier capture's supervisor died with the clocks locked
            run.recovered_clocks = launched.recovered_clocks
            progress.note("warning", "the board's clocks were still locked by an earlier capture whose supervisor "
                                     "died; they were restored before this one")
        log.stage("capturing")
        preparation = Preparation(agent.transport, during_capture=not request.host.is_local, large_pull=app.nsys)
        try:
            capture = follow_capture(agent, paths.run_dir, request.settings.heartbeat_timeout_s, log, request.stop,
                                     preparation.on_progress, app.capture_s)
        except (InterruptedRunError, ConnectionLostError, KeyboardInterrupt):
            raise  # this machine stopped following a capture that may run on: the lease lasts until it ends
        except BaseException:
            if request.lease is not None:
                request.lease.capturing(None)
            raise
    if request.lease is not None:
        request.lease.capturing(None)
    preparation.finish()
    from .collect import collect  # loaded by now
    after, capture.board_state_after = capture.board_state_after or board_state(agent), None
    run.board_state = (run.board_state or BoardStates()).set(after=after)
    note_clocks(capture.clocks, log)
    run.capture_attempts = capture.previous_attempts
    capture.previous_attempts = []
    # the exact command as it ran: the spec's environment plus what the agent added (display, scratch)
    run_env = tuple(sorted({**dict(masked_env(app.env)), **capture.env_added}.items()))
    run.remote_command = ShellCommand(tuple(argv), run_env, app.workdir).render()
    failure = collect(agent, capture, app, paths, log, request.settings.keep_remote, request.host.symbols)
    return interruption_outcome(capture, log, failure) or failure


def note_clocks(clocks: ClocksUsed | None, log: RunLog) -> None:
    """What --lock-clocks did on the board, in run.json; a restore that failed is said loudly."""
    if clocks is None:
        return
    log.run.clocks = clocks
    if clocks.restore is not None and clocks.restore.restored:
        log.progress.note("info", "the board's clocks were locked for the capture and are restored")
    else:
        stored = clocks.locked.stored if clocks.locked else None
        steps = clocks.restore.steps if clocks.restore else None
        log.progress.note("error", f"the board's clocks could not be restored ({steps}); run "
                                   f"'jetson_clocks --restore {stored}' on the board")


def with_python(app: AppSpec, python: str) -> AppSpec:
    """'{python}' in an app's command is the board's Python, the one the agent runs with
    (orchestrate_python)."""
    if PYTHON_PLACEHOLDER not in app.command:
        return app
    return replace(app, command=tuple(python if word == PYTHON_PLACEHOLDER else word for word in app.command))


def board_state(agent: RemoteAgent) -> BoardState:
    """Clocks, power mode, temperatures and load now: what explains a fast run that could not be
    reproduced. A board that cannot say does not fail the run: run.json says why instead."""
    try:
        return agent.call(BOARD_STATE)
    except OrchestratorError as exc:
        return BoardState(at=datetime.now(timezone.utc).isoformat(), error=exc.one_line())


def interruption_outcome(capture: CaptureResult, log: RunLog,
                         then: OrchestratorError | None = None) -> OrchestratorError | None:
    """The user asked the board to end the capture early: the run ends as interrupted, whatever nsys did
    after the request (a stall, a watchdog), and says where the report is."""
    early = capture.ended_early
    if early is None or early.kind != "interrupted":
        return None
    log.run.status = "interrupted"
    if not capture.with_nsys:
        kept = f"the app's output kept: {log.run_dir}"
    else:
        kept = f"report kept: {log.run_dir}" if capture.reports else "nsys wrote no report"
    after = f" ({then.message})" if then is not None and then.message not in kept else ""
    return InterruptedRunError(f"interrupted after {early.after_s:.1f} s; {kept}{after}", "")


def follow_capture(agent: RemoteAgent, remote_run_dir: str, heartbeat_timeout_s: float,
                   log: RunLog, stop: remote_capture.HostStop | None = None,
                   on_event: Callable[[CaptureProgress], None] | None = None,
                   planned_s: float | None = None) -> CaptureResult:
    """The board's capture result once it ended; stage and errors recorded when the host cannot wait."""
    progress = log.progress

    def on_interrupt() -> None:
        progress.note("warning", "interrupted: the board ends the capture now and nsys writes its report "
                                 "(interrupt again to stop waiting; the board then keeps the report)")
    attempt = [1]

    def on_progress(event: CaptureProgress) -> None:
        if event.attempt > attempt[0]:
            attempt[0] = event.attempt
            progress.note("warning", f"nsys gave no report on attempt {attempt[0] - 1} (it stalled writing it, "
                                     "or failed before starting the app); capturing again")
        progress.update("capture", event.elapsed_s)
        if on_event is not None:
            on_event(event)
    try:
        state = remote_capture.follow(agent, remote_run_dir, heartbeat_timeout_s, on_progress, on_interrupt, stop=stop,
                                      planned_s=planned_s)
    except remote_capture.StoppedFollowing:
        log.stage("capturing")
        raise InterruptedRunError("interrupted twice; the board ends the capture on its own and keeps the report",
                                  f"get it with 'orchestrate fetch {log.run_dir}'") from None
    except remote_capture.LostContact as lost:
        log.run.lost_contact = lost.detail
        log.stage("capturing")
        raise ConnectionLostError(
            f"lost contact with {agent.transport.description} during the capture ({lost.detail})",
            f"the board ends the capture on its own after {heartbeat_timeout_s:g} s without a heartbeat and "
            f"keeps the report: 'orchestrate fetch {log.run_dir}' gets it") from None
    if state.result is None:
        raise AgentError(f"the capture supervisor failed on the board: {state.error or 'it gave no result'}",
                         "see agent.log in the run folder on the board")
    return state.result

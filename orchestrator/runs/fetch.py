"""``orchestrate fetch RUN_DIR``: re-attach to a run the host lost (interrupt, broken link, closed laptop).

It reconnects to the run's target, waits for a capture still running (renewing its heartbeat), then
collects as ``profile`` would: a partial download resumes from the bytes already here, and the sha256
of both sides still has to agree. Running it again is always safe.
"""
from __future__ import annotations

from pathlib import Path

from remote_agent.commands import STATUS
from remote_agent.messages import StatusRequest

from ..documents.run import RunDocument, kinds_of_old_capture, read_run_or_none
from ..documents.run_sections import RunApp
from ..errors import AgentError, InterruptedRunError, OrchestratorError, TransferError, UsageError
from ..inventory.catalog import AppSpec
from ..inventory.hosts import Inventory, VaultOptions, find_host
from ..nsys.commands import RemoteRunPaths
from ..targets.connect import open_transport
from ..targets.settings import ConnectOptions
from .collect import collect
from .profile import ProfileOutcome, deploy_agent_logged, error_section, finish, follow_capture, note_clocks
from .progress import Progress
from .run_log import RunLog


def app_from_section(app: RunApp) -> AppSpec:
    """The app spec back from run.json (masked values stay masked: only the analysis options and the capture's
    timing are needed after the capture; what a run.json of before did not say is the spec's default)."""
    default = AppSpec(name=app.name, command=tuple(app.command))
    return AppSpec(name=app.name, command=tuple(app.command), description=app.description, workdir=app.workdir,
                   env=tuple(app.env_pairs), trace=tuple(app.trace), sample=app.sample or default.sample,
                   cpuctxsw=app.cpuctxsw, duration_s=default.duration_s if app.duration_s is None else app.duration_s,
                   delay_s=app.delay_s or 0.0, needs_display=app.needs_display, xvfb=app.xvfb,
                   frame_delimiter=app.frame_delimiter, nsys_args=tuple(app.nsys_args), gpu_metrics=app.gpu_metrics,
                   parser=app.parser, files=tuple(app.files), nsys=app.nsys, source=app.source or default.source)


def run_to_fetch(run_dir: Path) -> RunDocument:
    """The run fetch re-attaches to: a run folder whose report is here, or whose capture began on the board."""
    run = read_run_or_none(run_dir)
    if run is None:
        raise UsageError(f"{run_dir} is not a run folder (no readable run.json)",
                         "pass a folder that 'orchestrate profile' made, e.g. runs/<run>")
    if run.stage != "pulled" and run.remote_run_dir is None:
        raise UsageError(f"{run_dir} never reached the capture; there is nothing on the board to fetch",
                         "profile again")
    return run


def fetch(run_dir: Path, inventory_path: str | None, connect: ConnectOptions, progress: Progress,
          vault: VaultOptions | None = None, hosts: Inventory | None = None) -> ProfileOutcome:
    """``inventory_path`` None: the inventory the run came from when its file is still there, else the default;
    ``hosts``: the run's target from these instead (the host a play resolved)."""
    run = run_to_fetch(run_dir)
    if run.stage == "pulled":
        progress.note("info", f"the report is already here, verified: {run_dir}")
        return ProfileOutcome(run_dir, run.status, run)
    remote_run_dir = run.remote_run_dir
    assert remote_run_dir is not None  # run_to_fetch: a run not pulled reached the capture
    if inventory_path is None and run.inventory and all(Path(p).exists() for p in run.inventory.split(",") if p):
        inventory_path = run.inventory
    host = hosts.host(run.target.name) if hosts is not None else find_host(inventory_path, run.target.name, vault)
    app = app_from_section(run.app)
    keep_remote, heartbeat_timeout_s = run.keep_remote, run.heartbeat_timeout_s
    log = RunLog(run_dir, run, progress)
    run.error = run.lost_contact = None
    failure: OrchestratorError | None = None
    try:
        with log.phase("connect"):
            transport = open_transport(host, connect)
        progress.finish("connect", transport.description)
        try:
            agent = deploy_agent_logged(transport, host, log)
            paths = RemoteRunPaths(remote_run_dir)
            board = agent.call(STATUS, StatusRequest(run_dir=paths.run_dir))
            state = board.state
            if not board.present or state is None:
                raise TransferError(f"{transport.description} no longer has {paths.run_dir}",
                                    "its copy was removed after a verified pull, or by hand; profile again")
            if board.supervisor_alive:
                progress.note("info", "the capture is still running on the board; following it")
                with log.phase("capture", total=app.capture_s, unit="s"):
                    log.stage("capturing")
                    capture = follow_capture(agent, paths.run_dir, heartbeat_timeout_s, log)
            elif state.result is not None:
                capture = state.result
            else:
                raise AgentError(f"the capture on {transport.description} ended without a result "
                                 f"({state.error or 'its supervisor died'})",
                                 "see agent.log in the run folder on the board")
            kinds_of_old_capture(capture)  # a capture an agent of before started
            run.capture_attempts = capture.previous_attempts
            capture.previous_attempts = []
            note_clocks(capture.clocks, log)
            early = capture.ended_early
            if early:
                progress.note("warning", f"the capture was ended early, after {early.after_s:.1f} s: {early.reason}")
            failure = collect(agent, capture, app, paths, log, keep_remote, host.symbols)
        finally:
            transport.close()
    except KeyboardInterrupt:
        stopped = InterruptedRunError("interrupted during fetch; what the board kept stays there (a partial "
                                      "download resumes)", f"run 'orchestrate fetch {run_dir}' again")
        stopped.run_dir = run_dir
        run.error = error_section(stopped)
        finish(log)
        raise stopped from None
    except OrchestratorError as exc:
        run.error = error_section(exc)
        finish(log)
        raise
    if failure is not None:
        run.error = error_section(failure)
    finish(log)
    if failure is not None:
        raise failure
    return ProfileOutcome(run_dir, run.status, run)

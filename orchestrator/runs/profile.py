"""One profile run, end to end: connect, deploy, preflight, capture, import, pull, export.

Everything here is domain logic over a ``Transport`` and the agent; nothing prints. Whatever
happens, the run folder gets a run.json saying how far the run got and why it stopped.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .. import __version__
from ..analysis import AnalysisOptions, analyze_report, write_summary
from ..errors import (
    AppFailedError,
    AppNotFoundError,
    DiskFullError,
    NsysMissingError,
    OrchestratorError,
    PreflightError,
    ReportError,
    WatchdogError,
)
from ..inventory.catalog import AppSpec
from ..inventory.hosts import Host
from ..nsys.commands import RemoteRunPaths, export_sqlite_argv, profile_argv
from ..nsys.host import HostNsys, export_on_host, find_host_nsys, import_on_host
from ..report import write_report
from ..targets.agent import RemoteAgent, deploy_agent
from ..targets.shell import ShellCommand
from ..targets.transport import ConnectOptions, Transport, open_transport
from .folder import create_run_dir, run_id, write_run_json
from .progress import Progress
from .pull import board_checksums, pull_verified, sha256_file

# Exit statuses of an app stopped at the end of the capture (SIGTERM, SIGINT, SIGKILL), as nsys reports them.
STOPPED_AT_END = {128 + 15, 128 + 2, 128 + 9, -15, -2, -9}
FINDING_ERRORS: dict[str, type[OrchestratorError]] = {
    "nsys_missing": NsysMissingError,
    "nsys_too_old": NsysMissingError,
    "app_not_found": AppNotFoundError,
    "low_disk": DiskFullError,
}


@dataclass(frozen=True)
class ProfileRequest:
    host: Host
    app: AppSpec
    out_dir: Path
    connect: ConnectOptions = field(default_factory=ConnectOptions)
    grace_s: float = 30.0
    keep_remote: bool = False
    retries: int = 1


@dataclass(frozen=True)
class ProfileOutcome:
    run_dir: Path
    status: str
    record: dict[str, Any]


def preflight_request(request: ProfileRequest, work_dir: str) -> dict[str, Any]:
    app = request.app
    return {
        "nsys": request.host.nsys,
        "argv0": app.command[0],
        "cwd": app.workdir,
        "needs_display": app.needs_display,
        "display": request.host.display,
        "xvfb": app.xvfb or request.host.xvfb,
        "sample": app.sample,
        "duration_s": app.duration_s + app.delay_s,
        "work_dir": work_dir,
    }


def raise_for_findings(findings: list[dict[str, Any]]) -> None:
    errors = [f for f in findings if f["level"] == "error"]
    if not errors:
        return
    first = errors[0]
    kind = FINDING_ERRORS.get(first["code"], PreflightError)
    more = f" (+{len(errors) - 1} more problem(s), listed above)" if len(errors) > 1 else ""
    raise kind(f"preflight: {first['what']}{more}", first["fix"])


def app_ending(capture: dict[str, Any], status: str) -> str:
    """How the app's run ended, in words for run.json."""
    if any(action["target"] == "app" for action in capture["watchdog"]):
        return "killed by the watchdog"
    if capture.get("app_stopped_after_s") is not None and status == "ok":
        return f"stopped by the agent after {capture['app_stopped_after_s']:.1f} s, as planned"
    if capture.get("app_pid") is None:
        return "never started"
    return "exited by itself"


def classify_capture(capture: dict[str, Any], app: AppSpec) -> tuple[str, OrchestratorError | None]:
    """Turn the agent's capture result into a status and, when the run failed, the error to raise."""
    log_hint = "see nsys.log in the run folder"
    if capture["program_not_found"]:
        return "app_not_found", AppNotFoundError(f"nsys could not start '{app.command[0]}'",
                                                 "check 'command' and 'workdir' in the app spec")
    code = capture["nsys_exit"]
    # The app ending by itself before the planned end with a failure status is the news, even when
    # nsys then hung (nsys 2022.4 does, now and then, when the app ends soon after starting).
    ended_early = capture.get("app_gone_after_s") is not None and capture.get("app_stopped_after_s") is None
    if ended_early and code != 0 and code not in STOPPED_AT_END:
        after = f" after {capture['app_gone_after_s']:.1f} s"
        if capture["watchdog"]:
            return "app_failed", AppFailedError(
                f"the app exited with status {code}{after}; nsys then hung and was stopped by the watchdog",
                "its output is in app.stdout.log / app.stderr.log in the run folder; " + log_hint)
        return "app_failed", AppFailedError(
            f"the app exited with status {code}{after}",
            "its output is in app.stdout.log / app.stderr.log in the run folder; the report was kept")
    if capture["watchdog"] and not finished_when_nudged(capture):
        steps = ", ".join(f"{a['signal']} to {a['target']}" for a in capture["watchdog"])
        return "watchdog", WatchdogError(f"watchdog: {capture['watchdog'][0]['reason']} ({steps})",
                                         "the report, if any, was still pulled; try a shorter --duration or a larger --grace")
    if not capture["reports"]:
        if capture.get("app_pid") is None:
            return "nsys_failed", ReportError(f"nsys exited with {code} before starting the app", log_hint)
        return "no_report", ReportError("nsys wrote no report", log_hint)
    ran_full = capture.get("app_stopped_after_s") is not None or \
        capture["nsys_elapsed_s"] >= app.delay_s + app.duration_s - 0.5
    if code != 0 and not (ran_full and code in STOPPED_AT_END):
        return "app_failed", AppFailedError(
            f"the app exited with status {code} after {capture['nsys_elapsed_s']:.1f} s",
            "its output is in app.stdout.log / app.stderr.log in the run folder; the report was kept")
    return "ok", None


def finished_when_nudged(capture: dict[str, Any]) -> bool:
    """The app ended (as planned, or by itself with success), nsys stalled while writing its report, and one
    SIGINT made it finish normally (exit 0, report written): nothing was lost, the run is a success (with a
    warning). The watchdog touched nothing but nsys's SIGINT and the clean-up of its orphaned daemon."""
    nudges = [a for a in capture["watchdog"] if a["target"] != "nsys daemon"]
    return (bool(capture["reports"]) and capture["nsys_exit"] == 0
            and [(a["target"], a["signal"]) for a in nudges] == [("nsys", "SIGINT")])


class _Phases:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str, total: float | None = None, unit: str = "") -> Iterator[None]:
        self.progress.start(name, total, unit)
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(time.monotonic() - started, 3)


def profile(request: ProfileRequest, progress: Progress) -> ProfileOutcome:
    app, host = request.app, request.host
    run_dir = create_run_dir(request.out_dir, run_id(host.name, app.name))
    phases = _Phases(progress)
    record: dict[str, Any] = {
        "run_id": run_dir.name,
        "orchestrate_version": __version__,
        "started_at": datetime.now(timezone.utc).isoformat(),
        "target": {"name": host.name, "connection": host.connection, "groups": list(host.groups)},
        "app": {k: v for k, v in asdict(app).items()},
        "status": "started",
        "phases": phases.seconds,
    }
    failure: OrchestratorError | None = None
    try:
        with phases("connect"):
            transport = open_transport(host, request.connect)
        progress.finish("connect", transport.description)
        record["target"]["address"] = transport.description
        try:
            failure = _run_on_target(request, transport, run_dir, record, phases, progress)
        finally:
            transport.close()
    except OrchestratorError as exc:
        record["status"] = record["status"] if record["status"] not in ("started", "ok") else "failed"
        record["error"] = {"type": type(exc).__name__, "message": exc.one_line(), "exit_code": exc.exit_code}
        raise
    finally:
        if failure is not None:
            record["error"] = {"type": type(failure).__name__, "message": failure.one_line(),
                               "exit_code": failure.exit_code}
        record["finished_at"] = datetime.now(timezone.utc).isoformat()
        write_run_json(run_dir, record)
        with phases("report"):  # also for a failed run: the page says what is missing and why
            _write_report_page(run_dir, progress)
    if failure is not None:
        raise failure
    return ProfileOutcome(run_dir=run_dir, status=record["status"], record=record)


def _write_report_page(run_dir: Path, progress: Progress) -> None:
    try:
        page = write_report(run_dir)
    except (OrchestratorError, OSError) as exc:
        message = exc.one_line() if isinstance(exc, OrchestratorError) else str(exc)
        progress.note("warning", f"report.html could not be written ({message}); "
                                 f"try again with 'orchestrate report {run_dir}'")
        return
    progress.finish("report", str(page))


def _run_on_target(request: ProfileRequest, transport: Transport, run_dir: Path, record: dict[str, Any],
                   phases: _Phases, progress: Progress) -> OrchestratorError | None:
    app, host = request.app, request.host
    with phases("deploy"):
        agent = deploy_agent(transport, host)
    record["agent"] = {"version": agent.version, "sha256": agent.sha256, "reused": agent.reused,
                       "python": agent.python, "path": agent.archive}
    progress.finish("deploy", f"agent {agent.version} {'already there' if agent.reused else 'uploaded'}")

    with phases("preflight"):
        checked = agent.call("preflight", preflight_request(request, agent.work_dir))
    record["facts"], record["preflight"] = checked["facts"], checked["findings"]
    for found in checked["findings"]:
        progress.note(found["level"], f"{found['what']}: {found['why']}. Fix: {found['fix']}")
    raise_for_findings(checked["findings"])
    nsys = checked["facts"]["nsys"]
    progress.finish("preflight", f"nsys {nsys['version']} at {nsys['path']}")

    paths = RemoteRunPaths(f"{agent.work_dir}/runs/{run_dir.name}")
    argv = profile_argv(nsys["path"], app, paths)
    record["remote_command"] = ShellCommand(tuple(argv), app.env, app.workdir).render()
    budget = app.delay_s + app.duration_s + request.grace_s
    attempts: list[dict[str, Any]] = []
    with phases("capture", total=app.delay_s + app.duration_s, unit="s"):
        while True:
            capture = agent.call("capture", {
                "argv": argv, "cwd": app.workdir, "env": dict(app.env), "run_dir": paths.run_dir,
                "pid_file": paths.pid_file, "report_base": paths.report_base, "duration_s": app.duration_s,
                "delay_s": app.delay_s, "grace_s": request.grace_s, "display": checked["display"],
            }, on_event=lambda e: progress.update("capture", e["elapsed_s"]) if e.get("event") == "heartbeat" else None,
                timeout=budget + 180)
            attempts.append(capture)
            # nsys 2022.4 now and then stalls for good while writing its report; a second try usually works
            if capture["reports"] or not capture.get("stalled") or len(attempts) > request.retries:
                break
            progress.note("warning", f"nsys stalled while writing its report (attempt {len(attempts)}); "
                                     "capturing again")
    record["capture_attempts"] = attempts[:-1]
    status, failure = classify_capture(capture, app)
    # the exact command as it ran: the spec's environment plus what the agent added (display, scratch)
    run_env = tuple(sorted({**dict(app.env), **capture.get("env_added", {})}.items()))
    record["remote_command"] = ShellCommand(tuple(argv), run_env, app.workdir).render()
    record["app_exit"] = {"status": capture["nsys_exit"], "ended": app_ending(capture, status)}
    record["capture"] = capture
    record["status"] = status
    if status == "ok" and capture["watchdog"]:
        progress.note("warning", "nsys stalled while writing its report and finished it once interrupted (exit 0); "
                                 "run.json lists the signals")
    progress.finish("capture", f"{capture['nsys_elapsed_s']:.1f} s, nsys exit {capture['nsys_exit']}, {status}")
    if not capture["reports"]:
        _pull_logs(agent, paths, run_dir, record)
        return failure

    remote_report = _import_on_board(agent, capture["reports"], nsys, record, phases, progress)
    local_report = run_dir / ("report" + Path(remote_report).suffix)
    wanted = {remote_report: local_report, paths.app_stdout: run_dir / "app.stdout.log",
              paths.app_stderr: run_dir / "app.stderr.log", paths.nsys_log: run_dir / "nsys.log"}
    with phases("checksum"):
        expected = board_checksums(agent, list(wanted))
    progress.finish("checksum", "sha256 computed on the target")
    with phases("pull"):
        pulled = pull_verified(agent, wanted, expected, lambda done, total: progress.update("pull", done, total))
    record["files"] = {p.local.name: {"sha256": p.sha256, "size": p.size} for p in pulled}
    seconds = phases.seconds["pull"] or 1e-9
    size = sum(p.size for p in pulled)
    record["pull"] = {"bytes": size, "seconds": seconds, "mb_per_s": round(size / 2**20 / seconds, 1)}
    progress.finish("pull", f"{size / 2**20:.1f} MB verified")

    host_nsys = find_host_nsys()
    if local_report.suffix == ".qdstrm":
        with phases("import"):
            if host_nsys is None:
                raise ReportError("the target left a raw .qdstrm and this machine has no nsys to import it",
                                  f"install Nsight Systems here, then run QdstrmImporter -i {local_report}")
            raw = local_report
            local_report = import_on_host(host_nsys, raw)
        # QdstrmImporter appends to the raw file it reads: keep the pulled checksum, record the new one
        pulled_raw = record["files"][raw.name]
        record["files"][raw.name] = {"sha256": sha256_file(raw), "size": raw.stat().st_size,
                                     "pulled_sha256": pulled_raw["sha256"], "pulled_size": pulled_raw["size"]}
        record["files"][local_report.name] = {"sha256": sha256_file(local_report), "size": local_report.stat().st_size}
        record["import"] = {"where": "host", "importer": host_nsys.importer}
        progress.finish("import", f"imported on this machine to {local_report.name}")
    with phases("export"):
        sqlite = _export(agent, host_nsys, local_report, remote_report, record)
    record["files"][sqlite.name] = {"sha256": sha256_file(sqlite), "size": sqlite.stat().st_size}
    progress.finish("export", f"{sqlite.name} ({record['export']['where']})")

    if not request.keep_remote:
        agent.call("remove", {"paths": [paths.run_dir], "root": agent.work_dir})
    record["remote_removed"] = not request.keep_remote
    with phases("analyze"):  # on this machine only, once the board is tidy
        _summarize(sqlite, app, run_dir, record, progress)
    return failure


def _summarize(sqlite: Path, app: AppSpec, run_dir: Path, record: dict[str, Any], progress: Progress) -> None:
    """summary.json beside the report; a report we cannot summarise is still kept, with the reason."""
    try:
        summary = analyze_report(sqlite, AnalysisOptions(frame_range=app.frame_delimiter))
    except OrchestratorError as exc:
        record["analysis"] = {"error": exc.one_line()}
        progress.note("warning", f"the report was kept but could not be summarised: {exc.one_line()}")
        return
    path = write_summary(summary, run_dir / "summary.json")
    record["files"][path.name] = {"sha256": sha256_file(path), "size": path.stat().st_size}
    verdict, frames = summary["verdict"], summary["frames"]
    record["analysis"] = {"verdict": verdict["kind"], "frames": frames["count"] if frames else None}
    timing = f"{frames['steady']['mean_ns'] / 1e6:.2f} ms per frame, " if frames else ""
    progress.finish("analyze", f"{timing}{verdict['kind']}: {verdict['summary']}")


def _pull_logs(agent: RemoteAgent, paths: RemoteRunPaths, run_dir: Path, record: dict[str, Any]) -> None:
    """A failed capture still brings back what explains it; the target keeps its copy."""
    pulled = pull_verified(agent, {paths.nsys_log: run_dir / "nsys.log", paths.app_stdout: run_dir / "app.stdout.log",
                                   paths.app_stderr: run_dir / "app.stderr.log"})
    record["files"] = {p.local.name: {"sha256": p.sha256, "size": p.size} for p in pulled}


def _import_on_board(agent: RemoteAgent, reports: dict[str, str], nsys: dict[str, Any], record: dict[str, Any],
                     phases: _Phases, progress: Progress) -> str:
    """A finished report is pulled as is; a raw .qdstrm is imported on the target when it has an importer
    (the .nsys-rep is ~50x smaller to pull), else pulled raw for the host to import."""
    for suffix in (".nsys-rep", ".qdrep"):
        if suffix in reports:
            record["import"] = {"where": "nsys"}
            return reports[suffix]
    qdstrm = reports[".qdstrm"]
    if nsys.get("importer"):
        with phases("import"):
            done = agent.call("import", {"importer": nsys["importer"], "qdstrm": qdstrm}, timeout=1800)
        if done["report"]:
            record["import"] = {"where": "target", "importer": nsys["importer"]}
            progress.finish("import", f"imported on the target with {nsys['importer']}")
            return done["report"]
        progress.note("warning", f"importing on the target failed ({done['output'][-200:]}); pulling the raw capture")
    return qdstrm


def _export(agent: RemoteAgent, host_nsys: HostNsys | None, local_report: Path, remote_report: str,
            record: dict[str, Any]) -> Path:
    """Prefer this machine (boards are slow); fall back to the target's nsys."""
    sqlite = local_report.with_suffix(".sqlite")
    host_error = None
    if host_nsys is not None:
        try:
            export_on_host(host_nsys, local_report, sqlite)
            record["export"] = {"where": "host", "nsys": host_nsys.path, "nsys_version": host_nsys.version}
            return sqlite
        except ReportError as exc:
            host_error = exc.one_line()
    nsys = record["facts"]["nsys"]
    if not remote_report.endswith((".nsys-rep", ".qdrep")):
        raise ReportError(host_error or "cannot export a raw capture on the target", "install Nsight Systems here")
    remote_sqlite = remote_report.rsplit(".", 1)[0] + ".sqlite"
    done = agent.transport.run(ShellCommand(tuple(export_sqlite_argv(nsys["path"], remote_report, remote_sqlite))),
                               timeout=1800)
    if done.exit_status != 0:
        raise ReportError(f"exporting to SQLite failed here ({host_error or 'no nsys here'}) and on the target",
                          (done.stdout + done.stderr).strip().splitlines()[-1:][0] if (done.stdout + done.stderr).strip() else "see nsys.log")
    pull_verified(agent, {remote_sqlite: sqlite})
    record["export"] = {"where": "target", "nsys": nsys["path"], "nsys_version": nsys["version"],
                        "host_error": host_error}
    return sqlite

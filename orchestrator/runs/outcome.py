"""What a capture's result means: a status for run.json and, when the run failed, the error to raise."""
from __future__ import annotations

from remote_agent.messages import CaptureResult, Finding

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
from ..figures.measured import NSYS_TARGETS
from ..inventory.catalog import AppSpec

# Exit statuses of an app stopped at the end of the capture (SIGTERM, SIGINT, SIGKILL), as nsys reports them.
STOPPED_AT_END = {128 + 15, 128 + 2, 128 + 9, -15, -2, -9}
FINDING_ERRORS: dict[str, type[OrchestratorError]] = {
    "nsys_missing": NsysMissingError,
    "nsys_too_old": NsysMissingError,
    "app_not_found": AppNotFoundError,
    "low_disk": DiskFullError,
}


def raise_for_findings(findings: list[Finding]) -> None:
    errors = [f for f in findings if f.level == "error"]
    if not errors:
        return
    first = errors[0]
    kind = FINDING_ERRORS.get(first.code, PreflightError)
    more = f" (+{len(errors) - 1} more problem(s), listed above)" if len(errors) > 1 else ""
    error = kind(f"preflight: {first.what}{more}", first.fix)
    error.finding = first.code
    raise error


def app_ending(capture: CaptureResult, status: str) -> str:
    """How the app's run ended, in words for run.json."""
    if any(action.target == "app" for action in capture.watchdog):
        return "killed by the watchdog"
    early, stopped_after = capture.ended_early, capture.app_stopped_after_s
    if early and stopped_after is not None:
        return f"stopped by the agent after {stopped_after:.1f} s, early: {early.reason}"
    if stopped_after is not None and status == "ok":
        return f"stopped by the agent after {stopped_after:.1f} s, as planned"
    if capture.app_pid is None:
        return "never started"
    return "exited by itself"


def classify_capture(capture: CaptureResult, app: AppSpec) -> tuple[str, OrchestratorError | None]:
    """Turn the agent's capture result into a status and, when the run failed, the error to raise."""
    if not capture.with_nsys:
        return classify_without_nsys(capture, app)
    log_hint = "see nsys.log in the run folder"
    if capture.program_not_found:
        return "app_not_found", AppNotFoundError(f"nsys could not start '{app.command[0]}'",
                                                 "check 'command' and 'workdir' in the app spec")
    code = capture.nsys_exit
    early = capture.ended_early
    if early is not None and early.kind == "disk_low":  # the cause, whatever nsys did next
        kept = "its report was kept" if capture.reports else "nsys wrote no report; its logs were kept"
        return "disk_full", DiskFullError(
            f"the capture was ended after {early.after_s:.1f} s: {early.reason}; {kept}",
            "free space on the board or set orchestrate_work_dir to a larger disk")
    # The app ending by itself before the planned end with a failure status is the news, even when
    # nsys then hung (nsys 2022.4 does, now and then, when the app ends soon after starting).
    ended_early = capture.app_gone_after_s is not None and capture.app_stopped_after_s is None
    if ended_early and code != 0 and code not in STOPPED_AT_END:
        after = f" after {capture.app_gone_after_s:.1f} s"
        if capture.watchdog:
            return "app_failed", AppFailedError(
                f"the app exited with status {code}{after}; nsys then hung and was stopped by the watchdog",
                "its output is in app.stdout.log / app.stderr.log in the run folder; " + log_hint)
        return "app_failed", AppFailedError(
            f"the app exited with status {code}{after}",
            "its output is in app.stdout.log / app.stderr.log in the run folder; the report was kept")
    if capture.watchdog and not finished_when_nudged(capture):
        steps = ", ".join(f"{a.signal} to {a.target}" for a in capture.watchdog)
        return "watchdog", WatchdogError(f"watchdog: {capture.watchdog[0].reason} ({steps})",
                                         "the report, if any, was still pulled; " + _watchdog_hint(capture))
    if not capture.reports:
        if capture.app_pid is None:
            return "nsys_failed", ReportError(f"nsys exited with {code} before starting the app", log_hint)
        return "no_report", ReportError("nsys wrote no report", log_hint)
    elapsed = capture.nsys_elapsed_s or 0.0
    ran_full = capture.app_stopped_after_s is not None or elapsed >= app.capture_s - 0.5
    if code != 0 and not (ran_full and code in STOPPED_AT_END):
        return "app_failed", AppFailedError(
            f"the app exited with status {code} after {elapsed:.1f} s",
            "its output is in app.stdout.log / app.stderr.log in the run folder; the report was kept")
    return "ok", None


def classify_without_nsys(capture: CaptureResult, app: AppSpec) -> tuple[str, OrchestratorError | None]:
    """A run without nsys (--no-nsys): the app's own exit status says how it went."""
    hint = "its output is in app.stdout.log / app.stderr.log in the run folder"
    if capture.program_not_found:
        return "app_not_found", AppNotFoundError(f"the board's shell could not start '{app.command[0]}'",
                                                 "check 'command' and 'workdir' in the app spec")
    early = capture.ended_early
    if early is not None and early.kind == "disk_low":
        return "disk_full", DiskFullError(f"the run was ended after {early.after_s:.1f} s: {early.reason}",
                                          "free space on the board or set orchestrate_work_dir to a larger disk")
    if capture.watchdog:
        steps = ", ".join(f"{a.signal} to {a.target}" for a in capture.watchdog)
        return "watchdog", WatchdogError(f"watchdog: the app outlived its run ({steps})",
                                         "give a larger --grace, or look at app.stderr.log")
    code = capture.app_exit
    if code == 0 or (capture.app_stopped_after_s is not None and code in STOPPED_AT_END):
        return "ok", None
    after = capture.app_gone_after_s
    return "app_failed", AppFailedError(
        f"the app exited with status {code} after {capture.app_elapsed_s if after is None else after:.1f} s", hint)


def capture_summary(capture: CaptureResult, status: str) -> str:
    """The capture's line: how long, and how it ended; nsys's exit code only when it tells of a problem (an
    app stopped at its planned end makes nsys exit 143, which is as planned)."""
    if not capture.with_nsys:
        said = "" if status == "ok" else f", app exit {capture.app_exit}"
        return f"{capture.app_elapsed_s or 0.0:.1f} s without nsys{said}, {status}"
    code = capture.nsys_exit
    said = "" if status == "ok" and (code == 0 or code in STOPPED_AT_END) else f", nsys exit {code}"
    return f"{capture.nsys_elapsed_s or 0.0:.1f} s{said}, {status}"


def _watchdog_hint(capture: CaptureResult) -> str:
    """What to do about what the watchdog stopped: the app outliving its capture is the app's or the plan's
    doing; nsys stalling around its report is nsys's, and a capture made again usually ends well."""
    if all(a.target in NSYS_TARGETS for a in capture.watchdog):
        return "nsys stalled around its report: run it again, or let --retries make the capture again"
    return "the app or nsys outlived the capture: give a larger --grace, or look at app.stderr.log"


def finished_when_nudged(capture: CaptureResult) -> bool:
    """The app ended well (as planned, or by itself with success) and nothing was lost: nsys finished
    normally (exit 0, report written) by itself or after one SIGINT when it stalled around its report, or it
    had already said "Generated:" for the report it then hung after. The run is a success (with a warning);
    the watchdog touched nsys alone (and the clean-up of its orphaned daemon and helpers), never the app."""
    if any(a.target == "app" for a in capture.watchdog) or not capture.reports:
        return False
    app_ended_well = capture.app_stopped_after_s is not None or capture.nsys_exit == 0
    report_said_written = bool(capture.generated) and any(a.kind == "hung_after_report" for a in capture.watchdog)
    return app_ended_well and ((capture.nsys_exit == 0 and _nsys_nudges(capture) in ([], [("nsys", "SIGINT")]))
                               or report_said_written)


def nudged_warning(capture: CaptureResult) -> str:
    """What a run that finished_when_nudged says of the watchdog's signals."""
    if capture.nsys_exit != 0:
        return "nsys hung after it had written its report and was stopped; run.json lists the signals"
    if _nsys_nudges(capture):
        return "nsys stalled while writing its report and finished it once interrupted (exit 0); " \
               "run.json lists the signals"
    left = ", ".join(sorted({a.target for a in capture.watchdog}))
    return (f"nsys ended well and wrote its report, but what it left running ({left}) did not end within its "
            "grace and was stopped; run.json lists the signals")


def _nsys_nudges(capture: CaptureResult) -> list[tuple[str, str]]:
    return [(a.target, a.signal) for a in capture.watchdog if a.target == "nsys"]

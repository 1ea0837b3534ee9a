"""After the capture: judge it, bring the report here verified, import and export it, tidy the board,
summarise. Shared by ``profile`` and ``fetch``, which differ only in how they reach the end of a capture."""
from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from remote_agent.commands import REMOVE
from remote_agent.messages import CaptureResult, Facts, RemoveRequest

from ..analysis import AnalysisOptions, analyze_report
from ..documents.run import RunDocument
from ..documents.run_sections import AnalysisOutcome, AppExit, FileDigest, PullFigures, RunExport, RunImport, Validity
from ..documents.summary import write_summary
from ..documents.summary_sections import SummaryVerdict
from ..errors import OrchestratorError, ReportError
from ..figures.board import board_section, energy_section
from ..figures.board_samples import read_board_samples
from ..figures.run_analysis import run_options, with_next_steps
from ..figures.run_metrics import run_metrics
from ..figures.validity import validity_flags
from ..inventory.catalog import AppSpec
from ..nsys.commands import RemoteRunPaths
from ..nsys.host import HostNsys, export_on_host, find_host_nsys, import_on_host
from ..targets.agent import RemoteAgent
from .outcome import app_ending, capture_summary, classify_capture, nudged_warning
from .pull import pull_verified, sha256_file
from .remote_export import export_on_board
from .run_log import RunLog


def collect(agent: RemoteAgent, capture: CaptureResult, app: AppSpec, paths: RemoteRunPaths, log: RunLog,
            keep_remote: bool, symbols: tuple[str, ...] = ()) -> OrchestratorError | None:
    """Returns the error the run ends with (None for success); raises when the report cannot be had."""
    run, progress, run_dir = log.run, log.progress, log.run_dir
    status, failure = classify_capture(capture, app)
    # nsys exits with the app's status; without nsys the app's own is there
    exit_status = capture.nsys_exit if capture.with_nsys else capture.app_exit
    run.app_exit = AppExit(status=exit_status, ended=app_ending(capture, status))
    run.capture = capture
    run.status = status
    if status == "ok" and capture.watchdog:
        progress.note("warning", nudged_warning(capture))
    if capture.import_:
        run.import_ = RunImport(where="target", output=capture.import_.output[-500:])
    progress.finish("capture", capture_summary(capture, status))
    logs = {paths.app_stdout: run_dir / "app.stdout.log", paths.app_stderr: run_dir / "app.stderr.log",
            paths.nsys_log: run_dir / "nsys.log"}
    if capture.board_samples:  # the board's clocks, loads, temperatures and power during the capture
        logs[f"{paths.run_dir}/{capture.board_samples.file}"] = run_dir / "board.jsonl"
    if not capture.with_nsys:
        del logs[paths.nsys_log]
        logs[f"{paths.run_dir}/{LAUNCH_LOG}"] = run_dir / LAUNCH_LOG
        _pull_without_report(agent, logs, paths, log, keep_remote, board_files(capture, paths))
        with log.phase("analyze"):
            _judge_without_report(app, log)
        return failure
    if not capture.reports:
        pulled = pull_verified(agent, logs, known=board_files(capture, paths))
        run.files = {p.local.name: FileDigest(sha256=p.sha256, size=p.size) for p in pulled}
        _tidy_board(agent, paths, log, keep_remote)
        log.stage("failed")
        return failure

    remote_report = _finished_report(capture.reports, run)
    local_report = run_dir / ("report" + Path(remote_report).suffix)
    wanted = {remote_report: local_report, **logs}
    log.stage("on_board")
    with log.phase("pull"):
        pulled = pull_verified(agent, wanted, lambda done, total: progress.update("pull", done, total),
                               board_files(capture, paths))
    files = run.files = {p.local.name: FileDigest(sha256=p.sha256, size=p.size) for p in pulled}
    seconds = log.seconds["pull"] or 1e-9
    size, resumed_bytes = sum(p.size - p.resumed_from for p in pulled), sum(p.resumed_from for p in pulled)
    run.pull = PullFigures(bytes=size, seconds=seconds, mb_per_s=round(size / 2**20 / seconds, 1),
                           resumed_bytes=resumed_bytes)
    resumed = f", resumed after {resumed_bytes / 2**20:.1f} MB" if resumed_bytes else ""
    progress.finish("pull", f"{size / 2**20:.1f} MB verified (sha256 on both sides){resumed}")
    host_nsys = find_host_nsys()
    if local_report.suffix == ".qdstrm":
        local_report = _import_here(host_nsys, local_report, log)
    with log.phase("export"):
        sqlite, where = _export(agent, host_nsys, local_report, remote_report, run)
    files[sqlite.name] = FileDigest(sha256=sha256_file(sqlite), size=sqlite.stat().st_size)
    progress.finish("export", f"{sqlite.name} ({where})")
    _note_importer(run_dir / "nsys.log", run)
    tidied = _tidy_board_meanwhile(agent, paths, log, keep_remote)
    analyzed = False
    try:
        with log.phase("analyze"):  # on this machine only, while the board removes its copy
            _summarize(sqlite, app, log, symbols)
        analyzed = True
    finally:
        removal_failed = tidied()
        if removal_failed is None:  # "pulled" says the board's copy is gone: only once it is
            log.stage("pulled")
        elif not analyzed:  # the analysis's own error goes on; the removal's is said beside it
            progress.note("warning", f"the board's copy was not removed: {removal_failed}")
    if removal_failed is not None:
        raise removal_failed
    return failure


# what the launch wrapper said when the app ran without nsys (an exec that failed, in the shell's words)
LAUNCH_LOG = "launch.log"


def board_files(capture: CaptureResult, paths: RemoteRunPaths) -> dict[str, int] | None:
    """The sizes of the run's files on the board, as its capture's result gave them (None from an agent that
    did not, or for a capture that ended without them: the pull then asks for them)."""
    if capture.sizes is None:
        return None
    return {f"{paths.run_dir}/{name}": size for name, size in capture.sizes.items()}


def _pull_without_report(agent: RemoteAgent, logs: dict[str, Path], paths: RemoteRunPaths, log: RunLog,
                         keep_remote: bool, known: dict[str, int] | None) -> None:
    """A run without nsys (--no-nsys): its app's output and the board's samples are what it has to bring."""
    log.stage("on_board")
    with log.phase("pull"):
        pulled = pull_verified(agent, logs, known=known)
    log.run.files = {p.local.name: FileDigest(sha256=p.sha256, size=p.size) for p in pulled}
    log.progress.finish("pull", f"{len(pulled)} files verified (sha256 on both sides)")
    _tidy_board(agent, paths, log, keep_remote)
    log.stage("pulled")


def _judge_without_report(app: AppSpec, log: RunLog) -> None:
    """The figures of a run without nsys: its app's output parser's, and whether the board was fit to measure."""
    run, progress = log.run, log.progress
    samples = read_board_samples(log.run_dir)
    flags = validity_flags(run, samples)
    run.validity = Validity(flags=flags, samples=len(samples))
    for flag in flags:
        progress.note("warning", f"doubtful figures: {flag.what}")
    figures = run_metrics(log.run_dir, app.parser)
    run.analysis = AnalysisOutcome(without_nsys=True, app_failure=figures.app_failure)
    for note in figures.notes:
        progress.note("warning", note)
    shown = ", ".join(f"{name} {value:.4g} {figures.units[name][0]}" for name, value in figures.values.items())
    progress.finish("analyze", f"without nsys: {shown or 'no figures (the app spec names no parser)'}")


NSYS_IMPORTER_MISSING = "Importer error status"


def _note_importer(nsys_log: Path, run: RunDocument) -> None:
    """nsys.log's "Importer error status: The importer binary and its dependencies were not found" is nsys
    saying it left the raw .qdstrm, which this run then imported (run.json's "import" says where, with what):
    handled, so said in run.json, not as a warning."""
    try:
        lines = nsys_log.read_text(errors="replace").splitlines()
    except OSError:
        return
    said = next((line.strip() for line in lines if line.startswith(NSYS_IMPORTER_MISSING)), None)
    if said and run.import_ is not None:
        run.import_.nsys_said = said
        where = "on the board" if run.import_.where == "target" else "here"
        run.import_.handled = f"nsys could not import its raw capture itself (no QdstrmImporter beside it); " \
                                      f"it was imported {where}"


def _tidy_board(agent: RemoteAgent, paths: RemoteRunPaths, log: RunLog, keep_remote: bool) -> None:
    if not keep_remote:
        agent.call(REMOVE, RemoveRequest(paths=[paths.run_dir], root=agent.work_dir))
    log.run.remote_removed = not keep_remote


def _tidy_board_meanwhile(agent: RemoteAgent, paths: RemoteRunPaths, log: RunLog,
                          keep_remote: bool) -> Callable[[], BaseException | None]:
    """_tidy_board on a thread of its own, its round trip alongside what comes next; the function it returns
    waits for it and returns what it raised (None once the copy is removed or kept as asked)."""
    failed: list[BaseException] = []

    def tidy() -> None:
        try:
            _tidy_board(agent, paths, log, keep_remote)
        except BaseException as exc:  # noqa: BLE001 (raised again on the caller's thread)
            failed.append(exc)

    thread = threading.Thread(target=tidy, name="orchestrate-tidy")
    thread.start()

    def wait() -> BaseException | None:
        thread.join()
        return failed[0] if failed else None
    return wait


def _finished_report(reports: dict[str, str], run: RunDocument) -> str:
    """The imported report when there is one (nsys's own, or the board's importer's), else the raw capture
    for this machine to import."""
    for suffix in (".nsys-rep", ".qdrep"):
        if suffix in reports:
            if run.import_ is None:
                run.import_ = RunImport(where="nsys")
            return reports[suffix]
    return reports[".qdstrm"]


def _import_here(host_nsys: HostNsys | None, raw: Path, log: RunLog) -> Path:
    files = log.run.files or {}
    with log.phase("import"):
        if host_nsys is None:
            raise ReportError("the target left a raw .qdstrm and this machine has no nsys to import it",
                              f"install Nsight Systems here, then run QdstrmImporter -i {raw}")
        report = import_on_host(host_nsys, raw)
    # QdstrmImporter appends to the raw file it reads: keep the pulled checksum, record the new one
    pulled_raw = files[raw.name]
    files[raw.name] = FileDigest(sha256=sha256_file(raw), size=raw.stat().st_size, pulled_sha256=pulled_raw.sha256,
                                 pulled_size=pulled_raw.size)
    files[report.name] = FileDigest(sha256=sha256_file(report), size=report.stat().st_size)
    log.run.import_ = RunImport(where="host", importer=host_nsys.importer)
    log.progress.finish("import", f"imported on this machine to {report.name}")
    return report


def _summarize(sqlite: Path, app: AppSpec, log: RunLog, symbols: tuple[str, ...] = ()) -> None:
    """summary.json beside the report; a report we cannot summarise is still kept, with the reason."""
    run, progress = log.run, log.progress
    try:
        options = run_options(log.run_dir, run, AnalysisOptions(symbols=tuple(Path(s) for s in symbols)))
        summary = analyze_report(sqlite, options)
    except OrchestratorError as exc:
        run.analysis = AnalysisOutcome(error=exc.one_line())
        progress.note("warning", f"the report was kept but could not be summarised: {exc.one_line()}")
        return
    samples = read_board_samples(log.run_dir)
    epoch = summary.capture.utc_epoch_ns
    summary.set(board=board_section(samples, run.board_samples_source, epoch),
                energy=energy_section(samples, summary.frames, epoch))
    flags = validity_flags(run, samples, summary)
    run.validity = Validity(flags=flags, samples=len(samples))
    for flag in flags:
        progress.note("warning", f"doubtful figures: {flag.what}")
    path = write_summary(log.run_dir, with_next_steps(summary, run, log.run_dir))
    if run.files is not None:
        run.files[path.name] = FileDigest(sha256=sha256_file(path), size=path.stat().st_size)
    verdict, frames, steady = summary.verdict or SummaryVerdict(), summary.frames, summary.steady
    run.analysis = AnalysisOutcome(verdict=verdict.kind, frames=frames.count if frames else None)
    timing = f"{steady.mean_ns / 1e6:.2f} ms per frame, " if steady else ""
    progress.finish("analyze", f"{timing}{verdict.kind}: {verdict.summary}")


def _export(agent: RemoteAgent, host_nsys: HostNsys | None, local_report: Path, remote_report: str,
            run: RunDocument) -> tuple[Path, str]:
    """Prefer this machine (boards are slow); fall back to the target's nsys. The export and where it was made."""
    sqlite = local_report.with_suffix(".sqlite")
    host_error = None
    if host_nsys is not None:
        try:
            export_on_host(host_nsys, local_report, sqlite)
            run.export = RunExport(where="host", nsys=host_nsys.path, nsys_version=host_nsys.version)
            return sqlite, "host"
        except ReportError as exc:
            host_error = exc.one_line()
    nsys = (run.facts or Facts()).nsys
    if not remote_report.endswith((".nsys-rep", ".qdrep")):
        raise ReportError(host_error or "cannot export a raw capture on the target", "install Nsight Systems here")
    remote_sqlite = remote_report.rsplit(".", 1)[0] + ".sqlite"
    failed = export_on_board(agent, str(nsys.path), remote_report, remote_sqlite, sqlite)
    if failed is not None:
        raise ReportError(f"exporting to SQLite failed here ({host_error or 'no nsys here'}) and on the target",
                          failed[1] or "see nsys.log")
    run.export = RunExport(where="target", nsys=nsys.path, nsys_version=nsys.version, host_error=host_error)
    return sqlite, "target"

"""A report exported with a board's nsys: for a .nsys-rep newer than the nsys on this machine can read.

The report goes up to the board's work dir (checked by its SHA-256 there), the board's nsys exports it, the
SQLite comes back through the verified pull, and only then are the board's copies removed. The export lands
beside the report, as the host's own export would.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from remote_agent.commands import FACTS, REMOVE
from remote_agent.messages import FactsRequest, RemoveRequest

from ..analysis.export.report_input import REPORT_SUFFIXES, check_report_file
from ..errors import OrchestratorError, ReportError, TransferError, UsageError
from ..inventory.hosts import Host
from ..nsys.commands import export_sqlite_argv
from ..targets.agent import RemoteAgent, deploy_agent
from ..targets.connect import open_transport
from ..targets.settings import ConnectOptions
from ..targets.shell import ShellCommand
from .pull import pull_verified, sha256_file

EXPORT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class RemoteExport:
    sqlite: Path
    target: str
    nsys: str
    nsys_version: str


def export_on_target(report: Path, host: Host, connect: ConnectOptions) -> RemoteExport:
    if report.suffix not in REPORT_SUFFIXES:
        raise UsageError(f"--export-on: {report.name} is not a .nsys-rep or .qdrep",
                         "an export (.sqlite) needs no exporting: leave --export-on out")
    if not report.is_file():
        raise ReportError(f"{report}: no such file", "give the path of a .nsys-rep or .qdrep report")
    check_report_file(report)
    transport = open_transport(host, connect)
    try:
        agent = deploy_agent(transport, host)
        nsys = agent.call(FACTS, FactsRequest(nsys=host.nsys)).nsys
        if not nsys.path:
            raise ReportError(f"{transport.description} has no nsys to export {report.name} with",
                              "install Nsight Systems on the board, or set orchestrate_nsys")
        return _export(agent, report, nsys.path, str(nsys.version), transport.description)
    finally:
        transport.close()


def _export(agent: RemoteAgent, report: Path, nsys: str, version: str, where: str) -> RemoteExport:
    digest = sha256_file(report)
    folder = f"{agent.work_dir}/exports/{digest[:16]}"
    remote_report = f"{folder}/report{report.suffix}"
    remote_sqlite = f"{folder}/report.sqlite"
    sqlite = report.with_suffix(".sqlite")
    try:
        agent.transport.run(f"umask 077 && mkdir -p {shlex.quote(folder)}")
        agent.transport.put(report, remote_report, mode=0o600)
        _check_upload(agent, remote_report, digest)
        failed = export_on_board(agent, nsys, remote_report, remote_sqlite, sqlite)
        if failed is not None:
            status, line = failed
            raise ReportError(f"nsys {version} on {where} could not export {report.name}: "
                              f"{line[:200] if line else f'exit status {status}'}",
                              "a report newer than that nsys needs a board (or host) with a newer Nsight Systems")
    except BaseException:  # an error or Ctrl-C: the board keeps nothing, and what broke the export is told
        _remove_quietly(agent, folder)
        raise
    # the SQLite is here and verified: the board keeps nothing
    agent.call(REMOVE, RemoveRequest(paths=[folder], root=agent.work_dir))
    return RemoteExport(sqlite, where, nsys, version)


def export_on_board(agent: RemoteAgent, nsys: str, remote_report: str, remote_sqlite: str,
                    sqlite: Path) -> tuple[int, str] | None:
    """Export a report already on the board with the board's nsys and pull the SQLite here, verified.
    None when it worked, else nsys's exit status and the last line it printed ("" for none)."""
    done = agent.transport.run(ShellCommand(tuple(export_sqlite_argv(nsys, remote_report, remote_sqlite))),
                               timeout=EXPORT_TIMEOUT_S)
    if done.exit_status != 0:
        lines = (done.stdout + done.stderr).strip().splitlines()
        return done.exit_status, lines[-1] if lines else ""
    pull_verified(agent, {remote_sqlite: sqlite})
    return None


def _remove_quietly(agent: RemoteAgent, folder: str) -> None:
    try:
        agent.call(REMOVE, RemoveRequest(paths=[folder], root=agent.work_dir))
    except OrchestratorError:
        pass  # the connection that broke the export may be gone too


def _check_upload(agent: RemoteAgent, remote: str, digest: str) -> None:
    done = agent.transport.run(f"sha256sum {shlex.quote(remote)}")
    found = done.stdout.split()[0] if done.exit_status == 0 and done.stdout.split() else None
    if found != digest:
        raise TransferError(f"the report uploaded for export does not match ({found or done.stderr.strip()[:120]})",
                            "try again; if it keeps failing, check the board's disk")

"""Any report a user has (.sqlite, .nsys-rep, .qdrep) -> an open, probed SQLite export."""
from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from ...errors import ReportError, UsageError
from ...nsys.host import export_on_host, find_host_nsys
from .schema import Schema, open_export, probe

REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
# How every .nsys-rep and .qdrep begins, from nsys 2019 to 2024: checked before nsys is given the file, so
# that a zip (bomb or not) or any other file named .nsys-rep is refused at once.
REPORT_MAGIC = b"NVIDIA Tegra Profiler Report"
KNOWN_STARTS = {b"PK\x03\x04": "a zip archive", b"SQLite format 3": "an SQLite file", b"\x1f\x8b": "a gzip file",
                b"\x7fELF": "a program"}


def check_report_file(report: Path) -> None:
    with report.open("rb") as handle:
        head = handle.read(len(REPORT_MAGIC))
    if head == REPORT_MAGIC:
        return
    what = next((name for start, name in KNOWN_STARTS.items() if head.startswith(start)), "something else")
    raise ReportError(f"{report} is not an Nsight Systems report (it is {what})",
                      "give the .nsys-rep or .qdrep nsys wrote, or its .sqlite export")


def missing_report(path: Path) -> ReportError:
    """A report path that names no file: a folder, or nothing."""
    if path.is_dir():
        return ReportError(f"{path} is a folder, not a report", "give the report file, or a run folder")
    return ReportError(f"{path}: no such file", "give the path of a .sqlite, .nsys-rep or .qdrep report")


# what a run folder holds of its report: the export, then Nsight Systems' own report (2021.x+, then older)
RUN_REPORT_NAMES = ("report.sqlite", "report.nsys-rep", "report.qdrep")


def report_of(source: Path) -> Path:
    """The report a run folder holds (its SQLite export first: it is read without nsys), or the file given."""
    if source.is_dir():
        for name in RUN_REPORT_NAMES:
            if (source / name).is_file():
                return source / name
        raise ReportError(f"{source} is a folder that holds no report (no report.sqlite, .nsys-rep or .qdrep)",
                          "give a run folder whose capture came back, or a report file")
    return source


def nsys_report_of(source: Path) -> Path:
    """The Nsight Systems report (not its export) a run folder holds, or the file given."""
    if source.is_dir():
        for name in RUN_REPORT_NAMES[1:]:
            if (source / name).is_file():
                return source / name
        raise UsageError(f"{source} holds no report.nsys-rep or report.qdrep",
                         "give a run folder whose report came back, or the report file")
    return source


def sqlite_for(report: Path, nsys_hint: str | None = None) -> Path:
    """The SQLite export of a report: the one beside it when it is newer, else a fresh export."""
    if report.suffix not in REPORT_SUFFIXES:
        return report
    if not report.is_file():
        raise missing_report(report)
    check_report_file(report)
    beside = report.with_suffix(".sqlite")
    if beside.is_file() and beside.stat().st_mtime >= report.stat().st_mtime:
        return beside
    nsys = find_host_nsys(nsys_hint)
    if nsys is None:
        raise ReportError(f"no nsys on this machine to export {report.name} to SQLite",
                          "install Nsight Systems here, or run 'nsys export --type sqlite' where it is and "
                          "give the .sqlite")
    target = beside
    try:
        probe_file = beside.with_name(f".{beside.name}.writable")
        probe_file.touch()
        probe_file.unlink()
    except OSError:  # a read-only folder: export into a private temporary one
        target = Path(tempfile.mkdtemp(prefix="orchestrate-export-")) / beside.name
    return export_on_host(nsys, report, target)


def open_report(path: Path, nsys_hint: str | None = None) -> tuple[sqlite3.Connection, Schema, Path]:
    export = sqlite_for(path, nsys_hint)
    conn = open_export(export)
    return conn, probe(conn, str(export)), export

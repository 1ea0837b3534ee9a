"""nsys on this machine: import a raw .qdstrm and export a report to SQLite."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from remote_agent import nsys_locate

from ..errors import ReportError
from ..files import replacing
from .commands import export_sqlite_argv, import_argv


@dataclass(frozen=True)
class HostNsys:
    path: str
    version: str
    importer: str | None


def find_host_nsys(hint: str | None = None) -> HostNsys | None:
    path, version, _ = nsys_locate.find_nsys(hint)
    if not path or not version:
        return None
    return HostNsys(path=path, version=version, importer=nsys_locate.find_importer(path))


def _run(argv: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ReportError(f"{Path(argv[0]).name} took longer than {timeout_s:g} s", "the report may be huge; "
                          "import it by hand with the nsys GUI") from None


def import_on_host(nsys: HostNsys, qdstrm: Path, timeout_s: float = 1800) -> Path:
    if not nsys.importer:
        raise ReportError(f"no QdstrmImporter beside {nsys.path} on this machine to import {qdstrm.name}",
                          "install the Nsight Systems host package here, then run QdstrmImporter -i on it")
    done = _run(import_argv(nsys.importer, str(qdstrm)), timeout_s)
    for suffix in (".nsys-rep", ".qdrep"):
        report = qdstrm.with_suffix(suffix)
        if report.is_file():
            return report
    tail = done.stdout.strip().splitlines()[-1:] or ["no output"]
    raise ReportError(f"QdstrmImporter could not import {qdstrm.name}: {tail[0]}",
                      "the raw capture may be truncated; keep it and retry with a newer nsys")


def export_on_host(nsys: HostNsys, report: Path, sqlite: Path, timeout_s: float = 1800) -> Path:
    with replacing(sqlite, f".{sqlite.name}.{os.getpid()}.part.sqlite") as partial:
        done = _run(export_sqlite_argv(nsys.path, str(report), str(partial)), timeout_s)
        if done.returncode != 0 or not partial.is_file():
            tail = done.stdout.strip().splitlines()[-1:] or ["no output"]
            raise ReportError(f"nsys {nsys.version} could not export {report.name}: {tail[0]}",
                              _export_hint(done.stdout))
    return sqlite


def _export_hint(output: str) -> str:
    """A report from a newer nsys says so in nsys's words; anything else is a damaged or cut report."""
    if any(word in output.lower() for word in ("version", "newer", "not supported", "unsupported")):
        return ("the report comes from a newer nsys: export it with the board's nsys (--export-on TARGET), or "
                "install that version here")
    return ("the report may be damaged or cut short: copy it again (a run folder's report is verified against "
            "the board's sha256), or export it with the board's nsys (--export-on TARGET)")

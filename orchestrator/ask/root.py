"""The folder the server answers about: run folders, study folders and fleet folders under one root, and bare
reports. A name a client gives is a path relative to the root; it must stay inside it (no '..', no absolute path,
no symbolic link that leads out). Each run opened is kept: its summary, its export's schema and, once a question
needs them, its whole-run rows (a second question about the same run reads nothing again).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..analysis import AnalysisOptions
from ..analysis.analyzers.flows import Flows, flows
from ..analysis.analyzers.run_events import RunEvents
from ..analysis.analyzers.span_stats import SelfCache
from ..analysis.export.report_input import REPORT_SUFFIXES, RUN_REPORT_NAMES, report_of, sqlite_for
from ..analysis.export.schema import Schema, open_export, probe
from ..documents.fleet import FLEET_FILE
from ..documents.run import RunDocument, is_run_folder, read_run_or_none
from ..documents.study import STUDY_FILE
from ..documents.summary import Summary, read_summary
from ..errors import UsageError
from ..figures.run_analysis import analyze_source, run_events_of
from ..report.gpu_parts import software_renderer

REPORTS = (".sqlite", *REPORT_SUFFIXES)  # a report a client may name: an export, or what nsys wrote
MAX_DEPTH = 4  # folders below the root that are looked into for runs (a CI job's studies hold their runs)
MAX_OPEN = 8   # runs kept open at once (their whole-run rows: tens of MB each for a long capture)


@dataclass
class OpenRun:
    """One run (a run folder or a report file) as the server holds it."""
    name: str                     # relative to the root, as clients name it
    source: Path                  # the run folder or report file
    document: RunDocument | None  # run.json's
    summary: Summary              # summary.json's, or the analysis of the report when there is none
    export: Path | None           # the SQLite export every figure's SQL is run on (None: the folder kept no report)
    schema: Schema
    summary_from: str             # "summary.json", or "analysis" (the folder had none)
    _events: RunEvents | None = None
    _links: Flows | None = None
    selves: SelfCache = field(default_factory=SelfCache)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def exported(self) -> Path:
        """The export, or a one-line error for a run folder that kept no report."""
        if self.export is None:
            raise UsageError(f"{self.name} holds no report, only its documents",
                             "ask 'summary' or 'frames' of it, or another run")
        return self.export

    @property
    def events(self) -> RunEvents:
        """Every event of the run, as the page's whole-run timeline holds them (read once)."""
        export = self.exported()
        with self._lock:
            if self._events is None:
                self._events = run_events_of(export, software_renderer(self.summary))
            return self._events

    @property
    def links(self) -> Flows:
        """Which calls queued which GPU work, over the run's rows (found once)."""
        events = self.events
        with self._lock:
            if self._links is None:
                self._links = flows(events.rows)
            return self._links


class Root:
    """The root folder and the runs opened under it."""

    def __init__(self, path: Path) -> None:
        if not path.is_dir():
            raise UsageError(f"{path}: no such folder", "give --root a folder of runs (default: runs/)")
        self.path = path.resolve()
        self._open: dict[Path, tuple[tuple[float, ...], OpenRun]] = {}
        self._lock = threading.Lock()

    def resolve(self, name: str) -> Path:
        """A client's name of a folder or file under the root, as a path; one-line errors for anything that leads
        outside it or names nothing."""
        text = (name or "").strip()
        if not text or text == ".":
            return self.path
        given = PurePosixPath(text.replace("\\", "/"))
        if given.is_absolute() or ".." in given.parts or "\0" in text:
            raise UsageError(f"'{name}' is not a path inside the root",
                             "name a run by its path relative to the root, as 'runs' lists it")
        path = self.path.joinpath(*given.parts)
        real = path.resolve()
        if not self.holds(real):
            raise UsageError(f"'{name}' leads outside the root", "name a run inside the root, as 'runs' lists it")
        if not real.exists():
            raise UsageError(f"'{name}': no such run under the root", "call 'runs' for the runs there")
        return real

    def name_of(self, path: Path) -> str:
        return path.resolve().relative_to(self.path).as_posix() or "."

    def run(self, name: str) -> OpenRun:
        """The run a name gives (a run folder or a report file), opened once and again when its files change."""
        source = self.resolve(name)
        if source.is_dir() and not _is_run(source):
            raise UsageError(f"'{name}' is a folder but not a run", "call 'runs' for the runs there")
        if source.is_file() and source.suffix not in REPORTS:
            raise UsageError(f"'{name}' is not a report", "name a run folder or a .sqlite/.nsys-rep report")
        for file in _files(source):
            if file.exists() and not self.holds(file.resolve()):
                raise UsageError(f"'{name}' holds {file.name}, which leads outside the root",
                                 "name a run whose files are inside the root")
        stamp = _stamp(source)
        with self._lock:
            known = self._open.pop(source, None)
            if known is not None and known[0] == stamp:
                self._open[source] = known  # the newest used last
                return known[1]
        opened = _open_run(self.name_of(source), source)
        with self._lock:
            self._open[source] = (stamp, opened)
            while len(self._open) > MAX_OPEN:  # the run asked of longest ago goes: its rows are the memory
                self._open.pop(next(iter(self._open)))
        return opened

    def holds(self, real: Path) -> bool:
        """Whether a resolved path is the root or inside it."""
        return real == self.path or self.path in real.parents

    def folders(self) -> list[tuple[str, Path]]:
        """(kind, path) of every run folder, study folder, fleet folder and bare report under the root."""
        found: list[tuple[str, Path]] = []
        self._walk(self.path, 0, found)
        return found

    def _walk(self, folder: Path, depth: int, found: list[tuple[str, Path]]) -> None:
        if _is_run(folder):
            found.append(("run", folder))
            return
        if (folder / STUDY_FILE).is_file():
            found.append(("study", folder))
        elif (folder / FLEET_FILE).is_file():
            found.append(("fleet", folder))
        if depth >= MAX_DEPTH:
            return
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink() and not self.holds(entry.resolve()):
                continue  # a link out of the root is not followed
            if entry.is_dir():
                self._walk(entry, depth + 1, found)
            elif depth == 0 and entry.suffix in (".sqlite",) and entry.is_file():
                found.append(("report", entry))


def _has_report(folder: Path) -> bool:
    return any((folder / name).is_file() for name in RUN_REPORT_NAMES)


def _is_run(folder: Path) -> bool:
    """A run folder (its run.json), or a folder that holds a report as a run folder does."""
    return is_run_folder(folder) or _has_report(folder)


def _files(source: Path) -> list[Path]:
    """The files the server reads of a run: the report itself, or a folder's documents and report."""
    return [source] if source.is_file() else [source / n for n in ("run.json", "summary.json", *RUN_REPORT_NAMES,
                                                                    "report.html")]


def _stamp(source: Path) -> tuple[float, ...]:
    return tuple(f.stat().st_mtime if f.exists() else 0.0 for f in _files(source))


def _open_run(name: str, source: Path) -> OpenRun:
    document = read_run_or_none(source) if source.is_dir() else None
    summary = read_summary(source) if source.is_dir() else None
    summary_from = "summary.json"
    if summary is None:
        summary, summary_from = analyze_source(source, AnalysisOptions()), "analysis"
    if source.is_dir() and not _has_report(source):
        return OpenRun(name, source, document, summary, None, Schema(), summary_from)
    export = sqlite_for(report_of(source))
    conn = open_export(export)
    try:
        schema = probe(conn, str(export))
    finally:
        conn.close()
    return OpenRun(name, source, document, summary, export, schema, summary_from)

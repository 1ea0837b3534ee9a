"""study.json: a study's plan, its cells with their runs and statistics, the order the runs took and the
comparisons. ``StudyDocument`` is its only reader and writer; a cell is a ``StudyCell``.

Version: ``study_version`` 1 (a document written before the study kept each round's ``order`` reads with an
empty one). A key this release does not know is kept and written back; a newer version is refused with what
to do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ._json import as_json_fields, from_json_fields, leave_out, read_object, write_object

STUDY_FILE = "study.json"
STUDY_VERSION = 1


@dataclass
class StudyCell:
    """One cell of the matrix: its variables, how it went, its runs (folder names, in the rounds' order) and
    each metric's figures (``metrics``: name -> values, median, ci95, rounds, unit, faster_when)."""

    index: int = 0
    label: str = ""
    variables: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"                  # ok, failed, interrupted
    reason: str | None = None
    runs: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)    # runs linked from an earlier folder of the study
    parser: str | None = None           # the app's output parser
    notes: list[str] = field(default_factory=list)     # what a measured run lacks, and why
    metrics: dict[str, dict[str, Any]] | None = None   # None until the study is finished
    top_function: str | None = None
    verdict: str | None = None
    unknown: dict[str, Any] = field(default_factory=dict)

    def metric(self, name: str) -> dict[str, Any]:
        return (self.metrics or {}).get(name) or {}

    def as_json(self) -> dict[str, Any]:
        found = as_json_fields(self, {})
        if not self.notes:
            leave_out(found, self, "notes")
        if self.metrics is None:  # the study has not finished: no figures yet
            leave_out(found, self, "metrics", "top_function", "verdict")
        return found

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> StudyCell:
        return from_json_fields(cls, value, {})


_DOCUMENT_KEYS = {"name": "study", "version": "study_version"}


@dataclass
class StudyDocument:
    name: str = ""
    version: int = STUDY_VERSION
    orchestrate_version: str = ""
    file: str = ""                       # the study file it ran
    description: str = ""
    target: str = ""
    repeat: int = 0
    variables: list[str] = field(default_factory=list)   # the matrix's variable names
    started: str = ""
    finished: str | None = None
    status: str = "running"              # running, complete, interrupted, failed
    stopped: str | None = None           # why it stopped early
    stopped_in: dict[str, Any] | None = None  # the cell, repeat and run it stopped in
    interval: str = ""                   # how the intervals were made
    target_fingerprint: str | None = None  # the target as far as results depend on it
    agent: dict[str, Any] | None = None
    cells: list[StudyCell] = field(default_factory=list)
    order: list[dict[str, Any]] = field(default_factory=list)         # each round's runs: round, cell, run
    comparisons: list[dict[str, Any]] = field(default_factory=list)   # each cell against the first, per metric
    unknown: dict[str, Any] = field(default_factory=dict)

    @property
    def run_names(self) -> list[str]:
        return [name for cell in self.cells for name in cell.runs]

    @property
    def failed_cells(self) -> list[StudyCell]:
        return [cell for cell in self.cells if cell.status == "failed"]

    def cell_of(self, run_name: str, variables: dict[str, Any] | None = None) -> StudyCell | None:
        """The cell a run belongs to: by its folder name, or (before the study listed it) by its variables."""
        for cell in self.cells:
            if run_name in cell.runs or (variables is not None and cell.variables == variables):
                return cell
        return None

    def as_json(self) -> dict[str, Any]:
        found = as_json_fields(self, _DOCUMENT_KEYS)
        found["cells"] = [cell.as_json() for cell in self.cells]
        leave_out(found, self, *(name for name in ("finished", "stopped", "stopped_in", "target_fingerprint", "agent")
                                 if getattr(self, name) is None))
        return found

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> StudyDocument:
        document = from_json_fields(cls, {k: v for k, v in value.items() if k != "cells"}, _DOCUMENT_KEYS)
        cells = value.get("cells")
        document.cells = [StudyCell.from_json(c) for c in cells if isinstance(c, dict)] if isinstance(cells, list) \
            else []
        return document


def study_file(folder: Path) -> Path:
    return folder / STUDY_FILE


def is_study_folder(folder: Path) -> bool:
    return study_file(folder).is_file()


def study_folders(folder: Path) -> list[Path]:
    """The study folders right inside ``folder`` (a CI job's, a fleet board's), by name."""
    return sorted(path.parent for path in folder.glob(f"*/{STUDY_FILE}"))


def read_study(folder: Path) -> StudyDocument:
    return StudyDocument.from_json(read_object(study_file(folder), "study_version", STUDY_VERSION, "a study",
                                               "give the folder 'orchestrate study' printed"))


def read_study_or_none(folder: Path) -> StudyDocument | None:
    """The folder's study.json, or None when it has none or it cannot be read."""
    try:
        return read_study(folder) if is_study_folder(folder) else None
    except UsageError:
        return None


def write_study(folder: Path, document: StudyDocument) -> Path:
    return write_object(study_file(folder), document.as_json())

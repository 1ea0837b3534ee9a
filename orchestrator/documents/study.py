"""study.json: a study's plan, its cells with their runs and statistics, the order the runs took and the
comparisons. ``StudyDocument`` is its only reader and writer; its cells are the JSON the study wrote, and
what the layers above read of them is a property of ``StudyCell``.

Version: ``study_version`` 1 (a document written before the study kept each round's ``order`` reads with an
empty one). A newer one is refused with what to do.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._json import read_object, write_object

STUDY_FILE = "study.json"
STUDY_VERSION = 1


class StudyCell(dict[str, Any]):
    """One cell of a study: its label, variables, status, runs (folder names) and metrics."""

    @property
    def label(self) -> str:
        return str(self.get("label") or "")

    @property
    def runs(self) -> list[str]:
        return list(self.get("runs") or [])

    @property
    def variables(self) -> dict[str, Any] | None:
        value = self.get("variables")
        return value if isinstance(value, dict) else None

    @property
    def status(self) -> str | None:
        return self.get("status")

    @property
    def parser(self) -> str | None:
        return self.get("parser")

    def metric(self, name: str) -> dict[str, Any]:
        return (self.get("metrics") or {}).get(name) or {}


class StudyDocument(dict[str, Any]):
    """study.json's object, with what the layers above read of it."""

    @property
    def name(self) -> str:
        return str(self.get("study") or "")

    @property
    def cells(self) -> list[StudyCell]:
        """The cells, the same objects the document holds (a study adds runs and figures to them as it goes)."""
        found = self.setdefault("cells", [])
        for i, cell in enumerate(found):
            if not isinstance(cell, StudyCell):
                found[i] = StudyCell(cell)
        return found

    @property
    def run_names(self) -> list[str]:
        return [name for cell in self.cells for name in cell.runs]

    def cell_of(self, run_name: str, variables: Any = None) -> StudyCell | None:
        """The cell a run belongs to: by its folder name, or (before the study listed it) by its variables."""
        for cell in self.cells:
            if run_name in cell.runs or (variables is not None and cell.get("variables") == variables):
                return cell
        return None


def study_file(folder: Path) -> Path:
    return folder / STUDY_FILE


def is_study_folder(folder: Path) -> bool:
    return study_file(folder).is_file()


def study_folders(folder: Path) -> list[Path]:
    """The study folders right inside ``folder`` (a CI job's, a fleet board's), by name."""
    return sorted(path.parent for path in folder.glob(f"*/{STUDY_FILE}"))


def read_study(folder: Path) -> StudyDocument:
    document = StudyDocument(read_object(study_file(folder), "study_version", STUDY_VERSION, "a study",
                                         "give the folder 'orchestrate study' printed"))
    document.setdefault("order", [])
    document.setdefault("comparisons", [])
    return document


def read_study_or_none(folder: Path) -> StudyDocument | None:
    return read_study(folder) if is_study_folder(folder) else None


def write_study(folder: Path, document: StudyDocument) -> Path:
    return write_object(study_file(folder), document)

"""study.json: a study's plan, its cells with their runs and statistics, the order the runs took and the
comparisons. ``StudyDocument`` is its only reader and writer; a cell is a ``StudyCell``.

Version: ``study_version`` 1 (a document written before the study kept each round's ``order`` reads with an
empty one). A key this release does not know is kept and written back; a newer version is refused with what
to do.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from .record import Record, read_record, write_record
from .run_sections import AgentUsed

STUDY_FILE = "study.json"
STUDY_VERSION = 1
STUDY_VERSION_KEY = "study_version"


class MetricFigures(Record):
    """A metric over a cell's runs: each run's value, their median and its 95 % interval, each round's value (None:
    the run shared no round with this folder's), its unit and which way is better (None: neither)."""
    values: list[float] = []
    median: float = 0.0
    ci95: list[float] = []              # low, high
    n: int = 0
    rounds: list[float | None] = []
    unit: str = ""
    faster_when: str | None = None

    def paired_with(self, other: MetricFigures) -> tuple[list[float], list[float]]:
        """This metric's values and another's in the rounds both have (a round either lacks is left out): what
        stats.estimates.compare_rounds compares."""
        pairs = [(x, y) for x, y in zip(self.rounds, other.rounds) if x is not None and y is not None]
        return [x for x, _ in pairs], [y for _, y in pairs]


class StudyComparison(Record):
    """A cell against the first, on one metric (stats.estimates.compare_rounds's verdict)."""
    metric: str = ""
    base: int = 0                       # the cells' indices
    other: int = 0
    verdict: str = ""
    relative: float = 0.0               # other / base - 1
    p_value: float | None = None
    rounds: int = 0
    reason: str = ""


class StudyCell(Record):
    """One cell of the matrix: its variables, how it went, its runs (folder names, in the rounds' order) and
    each metric's figures."""

    index: int = 0
    label: str = ""
    variables: dict[str, Any] = {}
    status: str = "ok"                  # ok, failed, interrupted
    reason: str | None = None
    runs: list[str] = []
    reused: list[str] = []              # runs linked from an earlier folder of the study
    parser: str | None = None           # the app's output parser
    notes: list[str] = []               # what a measured run lacks, and why
    metrics: dict[str, MetricFigures] | None = None   # None until the study is finished
    top_function: str | None = None
    verdict: str | None = None

    def metric(self, name: str) -> MetricFigures | None:
        return (self.metrics or {}).get(name)

    def _left_out(self) -> set[str]:
        """No notes while there are none, no figures while the study has not finished."""
        return ({"notes"} if not self.notes else set()) | (
            {"metrics", "top_function", "verdict"} if self.metrics is None else set())


class RoundRun(Record):
    """One run of a round, in the order the runs took: its round, its cell, its folder (None: the run made none)."""
    round: int = 0
    cell: int = 0
    run: str | None = None


class StoppedIn(Record):
    """Where a study stopped early: the cell, its label, the repeat, the run folder (None: the run made none)."""
    cell: int = 0
    label: str = ""
    repeat: int = 0
    run: str | None = None


class StudyDocument(Record):
    VERSION_KEY, VERSION = STUDY_VERSION_KEY, STUDY_VERSION
    _wire_keys = {"name": "study"}
    name: str = ""
    orchestrate_version: str = ""
    file: str = ""                       # the study file it ran
    description: str = ""
    target: str = ""
    repeat: int = 0
    variables: list[str] = []           # the matrix's variable names
    started: str = ""
    finished: str | None = None
    status: str = "running"              # running, complete, interrupted, failed
    stopped: str | None = None           # why it stopped early
    stopped_in: StoppedIn | None = None  # the cell, repeat and run it stopped in
    interval: str = ""                   # how the intervals were made
    target_fingerprint: str | None = None  # the target as far as results depend on it
    agent: AgentUsed | None = None
    cells: list[StudyCell] = []
    order: list[RoundRun] = []              # each round's runs, in the order they took
    comparisons: list[StudyComparison] = []  # each cell against the first, per metric

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

    def _left_out(self) -> set[str]:
        return {name for name in ("finished", "stopped", "stopped_in", "target_fingerprint", "agent")
                if getattr(self, name) is None}


def study_file(folder: Path) -> Path:
    return folder / STUDY_FILE


def is_study_folder(folder: Path) -> bool:
    return study_file(folder).is_file()


def study_folders(folder: Path) -> list[Path]:
    """The study folders right inside ``folder`` (a CI job's, a fleet board's), by name."""
    return sorted(path.parent for path in folder.glob(f"*/{STUDY_FILE}"))


def read_study(folder: Path) -> StudyDocument:
    return read_record(StudyDocument, study_file(folder), "a study", "give the folder 'orchestrate study' printed")


def read_study_or_none(folder: Path) -> StudyDocument | None:
    """The folder's study.json, or None when it has none or it cannot be read."""
    try:
        return read_study(folder) if is_study_folder(folder) else None
    except UsageError:
        return None


def write_study(folder: Path, document: StudyDocument) -> Path:
    return write_record(study_file(folder), document)

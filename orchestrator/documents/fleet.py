"""fleet.json: a fleet run's plan and every board's result as it ends. ``FleetDocument`` is its only reader
and writer. Version: ``fleet_version`` 1; a key this release does not know is kept, a newer version is refused
with what to do."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._json import as_json_fields, from_json_fields, leave_out, read_object, write_object

FLEET_FILE = "fleet.json"
FLEET_VERSION = 1
_KEYS = {"version": "fleet_version"}


@dataclass
class BoardSummary:
    """The few facts a fleet's recap and page (and doctor's table) show of a board."""
    kind: str = ""                           # "": the board's result says nothing of it
    model: str | None = None
    chip: str | None = None
    l4t: str | None = None
    jetpack: str | None = None
    power_mode: str | None = None
    os: str | None = None
    arch: str | None = None
    python: str | None = None
    nsys: str | None = None
    nsys_path: str | None = None
    fingerprint: dict[str, str] | None = None  # None: the board was never reached
    unknown: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return as_json_fields(self, {})

    @classmethod
    def from_json(cls, value: Any) -> BoardSummary:
        return from_json_fields(cls, value if isinstance(value, dict) else {}, {})


@dataclass
class FleetCell:
    """One app's or study cell's figures on one board."""
    label: str = ""
    status: str | None = None
    reason: str | None = None
    frame_ms: dict[str, Any] | None = None   # median, low, high (and runs, for a study cell)
    interval: str = ""                       # what low-high is
    verdict: str | None = None
    flags: list[dict[str, str]] = field(default_factory=list)
    report: str | None = None                # the page, relative to the fleet folder
    first_frame_ms: float | None = None
    energy_mj: float | None = None
    unknown: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return as_json_fields(self, {})

    @classmethod
    def from_json(cls, value: Any) -> FleetCell:
        found = from_json_fields(cls, value if isinstance(value, dict) else {}, {})
        found.flags = [flag for flag in found.flags if isinstance(flag, dict)]
        return found


@dataclass
class FleetBoard:
    """One board's line of the recap and its row of the page: small, whatever the run measured."""
    target: str = ""
    status: str = "unknown"                  # "ok", "failed", "unreachable" or "skipped" (quarantined)
    reason: str | None = None                # one line: the run's own error, or why a cell failed
    exit_code: int = 0
    folder: str | None = None                # the run (or study) folder, relative to the fleet folder
    seconds: float = 0.0
    board: BoardSummary = field(default_factory=BoardSummary)
    cells: list[FleetCell] = field(default_factory=list)
    unknown: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        found = as_json_fields(self, {})
        found["board"], found["cells"] = self.board.as_json(), [cell.as_json() for cell in self.cells]
        return found

    @classmethod
    def from_json(cls, value: Any) -> FleetBoard:
        value = value if isinstance(value, dict) else {}
        found = from_json_fields(cls, {k: v for k, v in value.items() if k not in ("board", "cells")}, {})
        found.board = BoardSummary.from_json(value.get("board"))
        cells = value.get("cells")
        found.cells = [FleetCell.from_json(cell) for cell in cells] if isinstance(cells, list) else []
        return found


@dataclass
class FleetDocument:
    version: int = FLEET_VERSION
    orchestrate_version: str = ""
    folder: str = ""                     # the fleet folder's name
    kind: str = "app"                    # app or study
    what: str = ""                       # the app's or the study's name
    limit: str = "all"                   # the --limit pattern
    inventory: str = ""
    forks: int = 1
    targets: list[str] = field(default_factory=list)
    started: str = ""
    finished: str | None = None
    status: str = "running"              # running, complete, interrupted
    boards: list[FleetBoard] = field(default_factory=list)   # each board's result, as it ended
    recap: dict[str, int] = field(default_factory=dict)          # boards per status
    unknown: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        found = as_json_fields(self, _KEYS)
        found["boards"] = [board.as_json() for board in self.boards]
        if self.finished is None:  # a fleet still running has no end and no recap yet
            leave_out(found, self, "finished", "recap")
        return found

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> FleetDocument:
        found = from_json_fields(cls, {k: v for k, v in value.items() if k != "boards"}, _KEYS)
        boards = value.get("boards")
        found.boards = [FleetBoard.from_json(board) for board in boards] if isinstance(boards, list) else []
        return found


def read_fleet(folder: Path) -> FleetDocument:
    return FleetDocument.from_json(read_object(folder / FLEET_FILE, "fleet_version", FLEET_VERSION, "a fleet run",
                                               "give the folder 'orchestrate fleet' printed"))


def write_fleet(folder: Path, document: FleetDocument) -> Path:
    return write_object(folder / FLEET_FILE, document.as_json())

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
    boards: list[dict[str, Any]] = field(default_factory=list)   # each board's result (fleet.results.BoardResult)
    recap: dict[str, int] = field(default_factory=dict)          # boards per status
    unknown: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        found = as_json_fields(self, _KEYS)
        if self.finished is None:  # a fleet still running has no end and no recap yet
            leave_out(found, self, "finished", "recap")
        return found

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> FleetDocument:
        return from_json_fields(cls, value, _KEYS)


def read_fleet(folder: Path) -> FleetDocument:
    return FleetDocument.from_json(read_object(folder / FLEET_FILE, "fleet_version", FLEET_VERSION, "a fleet run",
                                               "give the folder 'orchestrate fleet' printed"))


def write_fleet(folder: Path, document: FleetDocument) -> Path:
    return write_object(folder / FLEET_FILE, document.as_json())

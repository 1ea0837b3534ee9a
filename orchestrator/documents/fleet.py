"""fleet.json: a fleet run's plan and every board's result as it ends. ``FleetDocument`` is its only reader
and writer. Version: ``fleet_version`` 1; a newer one is refused with what to do."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._json import read_object, write_object

FLEET_FILE = "fleet.json"
FLEET_VERSION = 1


class FleetDocument(dict[str, Any]):
    @property
    def boards(self) -> list[dict[str, Any]]:
        return list(self.get("boards") or [])


def read_fleet(folder: Path) -> FleetDocument:
    return FleetDocument(read_object(folder / FLEET_FILE, "fleet_version", FLEET_VERSION, "a fleet run",
                                     "give the folder 'orchestrate fleet' printed"))


def write_fleet(folder: Path, document: FleetDocument) -> Path:
    return write_object(folder / FLEET_FILE, document)

"""fleet.json: a fleet run's plan and every board's result as it ends. ``FleetDocument`` is its only reader
and writer. Version: ``fleet_version`` 1; a key this release does not know is kept, a newer version is refused
with what to do."""
from __future__ import annotations

from pathlib import Path

from .record import Record, read_record, write_record
from .run_sections import Flag, Section

FLEET_FILE = "fleet.json"
FLEET_VERSION = 1
FLEET_VERSION_KEY = "fleet_version"


class BoardSummary(Record):
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


class FrameSpread(Section):
    """A cell's frame time (ms): the median with its low and high (a run's 10th and 90th percentiles of the steady
    frames, or a study cell's 95 % interval of the median over its runs), of how many frames or runs."""
    median: float | None = None
    low: float | None = None
    high: float | None = None
    frames: int | None = None    # a run's steady frames
    runs: int | None = None      # a study cell's runs


class FleetCell(Record):
    """One app's or study cell's figures on one board."""
    label: str = ""
    status: str | None = None
    reason: str | None = None
    frame_ms: FrameSpread | None = None
    interval: str = ""                       # what low-high is
    verdict: str | None = None
    flags: list[Flag] = []
    report: str | None = None                # the page, relative to the fleet folder
    first_frame_ms: float | None = None
    energy_mj: float | None = None


class FleetBoard(Record):
    """One board's line of the recap and its row of the page: small, whatever the run measured."""
    target: str = ""
    status: str = "unknown"                  # "ok", "failed", "unreachable" or "skipped" (quarantined)
    reason: str | None = None                # one line: the run's own error, or why a cell failed
    exit_code: int = 0
    folder: str | None = None                # the run (or study) folder, relative to the fleet folder
    seconds: float = 0.0
    board: BoardSummary = BoardSummary()
    cells: list[FleetCell] = []


class FleetDocument(Record):
    VERSION_KEY, VERSION = FLEET_VERSION_KEY, FLEET_VERSION
    orchestrate_version: str = ""
    folder: str = ""                     # the fleet folder's name
    kind: str = "app"                    # app or study
    what: str = ""                       # the app's or the study's name
    limit: str = "all"                   # the --limit pattern
    inventory: str = ""
    forks: int = 1
    targets: list[str] = []
    started: str = ""
    finished: str | None = None
    status: str = "running"              # running, complete, interrupted
    boards: list[FleetBoard] = []         # each board's result, as it ended
    recap: dict[str, int] = {}            # boards per status

    def _left_out(self) -> set[str]:
        """A fleet still running has no end and no recap yet."""
        return {"finished", "recap"} if self.finished is None else set()


def read_fleet(folder: Path) -> FleetDocument:
    return read_record(FleetDocument, folder / FLEET_FILE, "a fleet run", "give the folder 'orchestrate fleet' printed")


def write_fleet(folder: Path, document: FleetDocument) -> Path:
    return write_record(folder / FLEET_FILE, document)

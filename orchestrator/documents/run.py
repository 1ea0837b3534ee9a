"""run.json: what one run did and where it stands, the contract between the layers above the transport.

``RunDocument`` is its only reader and writer, a ``Record`` (record.py) as every document and every message of
host and agent: its fields are run.json's top-level keys, its sections the agent's own messages (``capture``,
``facts``, ``board_state``, ...) where the agent sent them, and what the layers above read of them is a property
here, so a renamed key is one edit that mypy follows.

Versions: 1 says its version (``run_version``); 0 is every run.json written before that, with the same keys
(a key a release did not yet write reads as missing). A key this release does not know is kept as it was and
written back. A newer version than this release knows is refused with what to do.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from remote_agent.messages import BoardState, CaptureResult, ClocksRestored, ClocksUsed, Facts, Finding, PowerMode

from ..errors import UsageError
from .record import read_record, write_record
from .run_sections import (
    AgentUsed,
    AnalysisOutcome,
    AppExit,
    BoardFolders,
    FileDigest,
    Flag,
    PullFigures,
    RunApp,
    RunError,
    RunExport,
    RunFleet,
    RunImport,
    RunRequest,
    RunStudy,
    Section,
    StagedFile,
    Validity,
)

RUN_FILE = "run.json"
RUN_VERSION = 1
RUN_VERSION_KEY = "run_version"

# Where a run stands, as run.json says at every moment:
STAGES = {
    "preparing": "connecting, deploying the agent, preflight",
    "capturing": "the board is capturing (the host follows it, or lost it: see 'lost_contact')",
    "on_board": "the capture ended; the report waits on the board for the pull ('orchestrate fetch')",
    "pulled": "the report is here, verified (the board's copy removed unless --keep-remote)",
    "failed": "the run ended without a report: see 'error'",
}


class BoardStates(Section):
    """The board's state before the capture (preflight's) and after it (the capture's end)."""
    before: BoardState | None = None
    after: BoardState | None = None


class RunTarget(Section):
    name: str = "unknown"
    connection: str = ""
    groups: list[str] = []
    address: str | None = None   # where the run reached it (user@host:port, or this machine)


class RunDocument(Section):
    """One run folder's run.json: its unset fields left out, its inventory said even when there is none."""
    VERSION_KEY, VERSION = RUN_VERSION_KEY, RUN_VERSION

    run_id: str = ""                        # "" only in a run.json this release did not write
    started_at: str = ""
    target: RunTarget = RunTarget()
    orchestrate_version: str = ""
    inventory: str | None = None           # the inventory file the run's target came from
    app: RunApp = RunApp()                  # the app spec as it ran (secrets masked)
    request: RunRequest = RunRequest()      # the run's settings, as asked
    status: str = "started"                 # started, ok, failed, interrupted, partial
    stage: str | None = None                # one of STAGES
    phases: dict[str, float] = {}           # seconds per phase
    finished_at: str | None = None
    study: RunStudy | None = None           # the study and cell the run belongs to
    fleet: RunFleet | None = None           # the fleet run it belongs to
    agent: AgentUsed | None = None
    facts: Facts | None = None              # the board's facts from preflight
    preflight: list[Finding] | None = None
    board_fingerprint: dict[str, str] | None = None
    board_state: BoardStates | None = None  # before and after the capture
    app_files: list[StagedFile] | None = None
    remote: BoardFolders | None = None      # run_dir and work_dir on the board
    remote_command: str | None = None
    recovered_clocks: ClocksRestored | None = None  # an earlier capture's clocks, put back as this one launched
    clocks: ClocksUsed | None = None
    lost_contact: str | None = None
    capture: CaptureResult | None = None    # the agent's capture result
    capture_attempts: list[CaptureResult] | None = None  # the attempts before the one that counted
    app_exit: AppExit | None = None
    import_: RunImport | None = None        # where the raw capture was imported, with what (its key: "import")
    files: dict[str, FileDigest] | None = None   # name -> sha256, size
    pull: PullFigures | None = None
    export: RunExport | None = None
    remote_removed: bool | None = None
    analysis: AnalysisOutcome | None = None
    validity: Validity | None = None
    error: RunError | None = None

    # what the layers above read of the sections
    @property
    def app_name(self) -> str:
        return self.app.name or "app"

    @property
    def parser(self) -> str | None:
        return self.app.parser

    @property
    def error_message(self) -> str | None:
        return self.error.message if self.error else None

    @property
    def exit_code(self) -> int:
        return self.error.exit_code if self.error else 0

    @property
    def study_name(self) -> str | None:
        return self.study.name if self.study else None

    @property
    def study_variables(self) -> dict[str, Any] | None:
        return dict(self.study.variables) if self.study and self.study.variables is not None else None

    @property
    def stored_flags(self) -> list[Flag] | None:
        """The validity flags the run recorded when it came back, or None before it did."""
        return self.validity.flags if self.validity is not None else None

    @property
    def without_nsys(self) -> bool:
        """The app ran as a benchmark, without nsys (--no-nsys): no report, the app's figures and the board's."""
        return self.request.with_nsys is False

    @property
    def keep_remote(self) -> bool:
        return self.request.keep_remote

    @property
    def heartbeat_timeout_s(self) -> float:
        return self.request.heartbeat_timeout_s or 30.0

    @property
    def remote_run_dir(self) -> str | None:
        return self.remote.run_dir if self.remote else None

    @property
    def board_samples_source(self) -> str | None:
        samples = self.capture.board_samples if self.capture else None
        return samples.source if samples else None

    @property
    def app_ending(self) -> str:
        return self.app_exit.ended if self.app_exit else ""

    @property
    def app_exit_status(self) -> int | None:
        return self.app_exit.status if self.app_exit else None

    @property
    def analysis_error(self) -> str | None:
        """Why the report that came back could not be summarised, or None."""
        return self.analysis.error if self.analysis else None

    @property
    def power_modes(self) -> tuple[PowerMode | None, PowerMode | None]:
        """The board's power mode before and after the capture (None where not known)."""
        state = self.board_state or BoardStates()
        return tuple(each.power_mode if each else None for each in (state.before, state.after))  # type: ignore

    @property
    def thermal_trips_c(self) -> dict[str, float]:
        """The board's thermal zones' passive trip points, as its facts said."""
        return (self.facts.board.thermal_trips_c if self.facts else None) or {}

    def as_json(self) -> dict[str, Any]:
        """run.json's object; its inventory said even when there is none, for any release that reads it."""
        return {"inventory": self.inventory, **super().as_json()}

    @classmethod
    def from_json(cls, value: Any) -> RunDocument:
        """A run.json object of any version this release reads (a value of the wrong kind reads as missing)."""
        document: RunDocument = super().from_json(value)
        if not isinstance(value, dict) or not isinstance(value.get("status"), str):
            document.status = "unknown"
        if document.capture is not None:
            kinds_of_old_capture(document.capture)
        return document


# What the watchdog's steps were before the agent said their kind (a run.json of this release's predecessors), by
# the words it said instead: read once here, so that nothing above matches the agent's words.
_OLD_STEP_WORDS = {"nsys stalled while generating the report": "stalled",
                   "nsys hung after writing the report": "hung_after_report",
                   "nsys did not finish after the app was gone": "unfinished", "agent interrupted": "interrupted"}


_OLD_END_WORDS = {"the disk is nearly full": "disk_low", "no heartbeat from the host": "host_gone",
                  "the user interrupted orchestrate on the host": "interrupted",
                  "the fleet's --board-timeout passed": "deadline"}


def kinds_of_old_capture(capture: CaptureResult) -> None:
    """The early end's and the watchdog steps' kinds where an agent of before said only their words (its run.json,
    or the state a board kept for 'orchestrate fetch')."""
    early = capture.ended_early
    if early is not None and not early.kind:
        early.kind = next((kind for words, kind in _OLD_END_WORDS.items() if early.reason.startswith(words)), "")
    for step in capture.watchdog:
        if not step.kind:
            step.kind = _OLD_STEP_WORDS.get(step.reason, "outlived" if step.reason.endswith("outlived the capture")
                                            else "")


def run_file(run_dir: Path) -> Path:
    return run_dir / RUN_FILE


def is_run_folder(folder: Path) -> bool:
    return run_file(folder).is_file()


def read_run(run_dir: Path) -> RunDocument:
    """The folder's run.json; UsageError (one line, with what to do) when it is missing or not one."""
    fix = "give a run folder that orchestrate wrote"
    return read_record(RunDocument, run_file(run_dir), "a run document", fix)


def run_folders_in(folder: Path) -> list[Path]:
    """The run folders two levels down (a job's or a fleet's study folders' runs), by path."""
    return sorted(path.parent for path in folder.glob(f"*/*/{RUN_FILE}"))


def read_run_or_none(run_dir: Path) -> RunDocument | None:
    """The folder's run.json, or None when it is missing or not one (a folder that is not a run's)."""
    if not is_run_folder(run_dir):
        return None
    try:
        return read_run(run_dir)
    except UsageError:
        return None


def write_run(run_dir: Path, document: RunDocument) -> Path:
    """Written whole or not at all (a crash leaves the previous version)."""
    return write_record(run_file(run_dir), document)

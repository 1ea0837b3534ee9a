"""run.json's own sections (what the host wrote of a run, beside the agent's messages): each a Record that leaves
out what is unset, so that a section says what its writer knew and nothing more."""
from __future__ import annotations

from typing import Any

from .record import Record


class Section(Record):
    """A section of run.json, or run.json itself: fields that are None are not written (a reader reads them as
    missing)."""

    def _left_out(self) -> set[str]:
        return {self._key(name) for name in self._fields() if getattr(self, name) is None}


class RunError(Section):
    """Why the run failed: the error's kind, its one line, the exit status orchestrate ended with."""
    type: str = ""
    message: str = ""
    exit_code: int = 0


class AgentUsed(Section):
    """The agent that ran the run's commands on the board."""
    version: str | None = None
    sha256: str | None = None
    reused: bool | None = None     # it was there already, checked
    python: str | None = None      # the board's Python it runs with
    path: str | None = None        # the archive on the board
    shared: bool | None = None     # one deployment for the runs of a study


class BoardFolders(Section):
    """Where the run's files are on the board."""
    run_dir: str | None = None
    work_dir: str | None = None


class StagedFile(Section):
    """A file of the app spec's, put beside the app on the board."""
    name: str = ""
    sha256: str = ""
    size: int = 0
    remote: str = ""
    uploaded: bool = False         # False: the board had it from an earlier run


class AppExit(Section):
    status: int | None = None      # nsys's exit status (the app's, without nsys)
    ended: str = ""                # how the app ended, in words


class RunImport(Section):
    """Where the raw capture (.qdstrm) was imported into a report, and with what."""
    where: str = ""                # target, host, or nsys (nsys imported it itself)
    output: str | None = None      # the importer's last output on the board
    importer: str | None = None    # the importer used here
    nsys_said: str | None = None   # why nsys could not import it itself
    handled: str | None = None     # what was done instead, in words


class FileDigest(Section):
    sha256: str = ""
    size: int = 0
    pulled_sha256: str | None = None   # a raw capture the importer here appended to: as it was pulled
    pulled_size: int | None = None


class PullFigures(Section):
    bytes: int = 0                 # pulled in this run (resumed bytes apart)
    seconds: float = 0.0
    mb_per_s: float = 0.0
    resumed_bytes: int = 0         # kept here from an earlier try


class RunExport(Section):
    """Which nsys exported the report to SQLite, and where."""
    where: str = ""                # host or target
    nsys: str | None = None
    nsys_version: str | None = None
    host_error: str | None = None  # why this machine's nsys could not, when the board's did


class AnalysisOutcome(Section):
    """What the analysis of the run came to: its verdict and frames, or why there is none."""
    verdict: str | None = None
    frames: int | None = None
    error: str | None = None       # the report was kept but could not be summarised
    without_nsys: bool | None = None   # a benchmark run: the app's parser's figures only
    app_failure: str | None = None


class Flag(Record):
    """What makes a run's figures doubtful: its code (clocks_dropped, thermal_limit, power_mode_changed, an empty
    trace's) and what happened, in words."""
    code: str = ""
    what: str = ""


class Validity(Section):
    """Whether the board was fit to measure: the flags that say why not, and how many samples said so."""
    flags: list[Flag] = []
    samples: int = 0


class RunApp(Record):
    """The app spec as it ran (environment values that look like secrets masked). A key a run.json of before did
    not write reads as missing: None, or empty."""
    name: str = ""
    command: list[str] = []
    description: str = ""
    workdir: str | None = None
    env: list[list[str]] = []           # [name, value] pairs
    trace: list[str] = []
    sample: str | None = None
    cpuctxsw: str | None = None
    duration_s: float | None = None
    delay_s: float | None = None
    needs_display: bool = False
    xvfb: str | None = None
    frame_delimiter: str | None = None
    nsys_args: list[str] = []
    gpu_metrics: str | None = None
    parser: str | None = None
    files: list[str] = []
    nsys: bool = True                   # False: run as a benchmark, without nsys
    source: str = ""                    # the spec's file, <built-in>, or the --app-cmd mark

    @property
    def env_pairs(self) -> list[tuple[str, str]]:
        """The environment as (name, value) pairs, what is not a pair left out."""
        return [(pair[0], pair[1]) for pair in self.env if len(pair) == 2]


class RunRequest(Record):
    """The run's settings as it was asked (RunSettings, and whether it ran with nsys). None: a run.json of before
    that did not say."""
    grace_s: float | None = None
    retries: int | None = None
    heartbeat_timeout_s: float | None = None
    wait_lock_s: float | None = None
    keep_remote: bool = False
    lock_clocks: bool = False
    nvpmodel: int | None = None
    with_nsys: bool | None = None


class RunStudy(Record):
    """The study and cell a run belongs to: what a later run of the study matches to reuse it."""
    name: str = ""
    fingerprint: str | None = None      # the board as far as results depend on it
    app_key: str | None = None          # the app as it ran
    variables: dict[str, Any] | None = None  # the cell's
    repeat: int = 0


class RunFleet(Record):
    """The fleet run a run belongs to."""
    folder: str = ""
    target: str = ""

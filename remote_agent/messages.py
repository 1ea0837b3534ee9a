"""The messages host and agent exchange: every request and answer, typed, in one place both sides import.

Standard library only, Python 3.6 syntax (the agent's). Each is a ``Message`` (wire.py): its annotated attributes
are its fields, ``to_wire()`` gives its JSON object (with ``v``, the protocol's version) and ``from_wire()`` reads
one as run folders are read. A machine-readable ``kind`` says what happened wherever the host decides by it: an
early end's, a watchdog step's, a failure's; the words beside it are for people, and the host never matches them.
"""
from typing import Any, Dict, List, Optional

from .board_messages import (
    BoardFacts,
    BoardState,
    CpuClock,
    CurrentClocks,
    Facts,
    GpuClock,
    MemoryFacts,
    NsysFacts,
    PowerMode,
    SystemFacts,
)
from .wire import PROTOCOL, Message

# the host's one way to the agent: what a message is, and the board's facts and state, come with the messages
__all__ = ["PROTOCOL", "Message", "BoardFacts", "BoardState", "CpuClock", "CurrentClocks", "Facts", "GpuClock",
           "MemoryFacts", "NsysFacts", "PowerMode", "SystemFacts"]


# -- what the host asks -------------------------------------------------------------------------------------


class FactsRequest(Message):
    nsys: Optional[str] = None  # orchestrate_nsys: where nsys is, when not where JetPack puts it
    work_dir: Optional[str] = None
    with_nsys: bool = True


class DisplayPlan(Message):
    """How the app gets a display: preflight's choice, the capture's instruction."""
    mode: str = "none"  # none (no display needed) | use (this one) | xvfb (a private one) | missing
    display: Optional[str] = None
    xauthority: Optional[str] = None
    xvfb: Optional[str] = None
    detail: Optional[str] = None  # missing: why
    fix: Optional[str] = None
    no_server: bool = False


class PreflightRequest(Message):
    """What a run will need, for preflight to say what stands in its way."""
    nsys: Optional[str] = None
    with_nsys: bool = True
    argv0: Optional[str] = None
    cwd: Optional[str] = None
    needs_display: bool = False
    display: Optional[str] = None
    xvfb: str = "auto"
    sample: Optional[str] = "cpu"
    gpu_metrics: Optional[str] = None
    capture_s: float = 0.0  # delay + duration: the seconds nsys records, what the disk must hold
    work_dir: Optional[str] = None
    lock_clocks: bool = False
    nvpmodel_mode: Optional[int] = None


class ClockLock(Message):
    nvpmodel: Optional[int] = None  # a power mode for the capture, the board's own after it


class CaptureSettings(Message):
    """How long the capture lasts and how the board keeps it going: the run's settings the board needs. The host
    always sends every field (the user's defaults are RunSettings'); a default here is what a field absent on the
    wire means: what a host that did not send it yet meant."""
    delay_s: float = 0.0  # seconds the app runs before nsys records
    duration_s: float = 0.0  # seconds nsys records after the delay
    grace_s: float = 30.0  # past delay + duration, before the watchdog stops the app
    heartbeat_s: float = 1.0  # how often the capture reports progress
    heartbeat_timeout_s: float = 30.0  # without the host's heartbeat this long, the board ends the capture
    wait_lock_s: float = 0.0  # how long to wait for the board's lock held by another run
    retries: int = 0  # captures made again when nsys leaves no report (stalled, failed to start, ended) (absent: none)
    lock_clocks: Optional[ClockLock] = None  # jetson_clocks for the capture, the board's own clocks after it


class LaunchRequest(Message):
    """A detached capture: the command to run and the run's settings, as the supervisor reads them."""
    argv: List[str] = []
    with_nsys: bool = True
    cwd: Optional[str] = None
    env: Dict[str, str] = {}
    run_dir: str = ""
    work_dir: str = ""
    pid_file: str = ""
    report_base: str = ""
    settings: CaptureSettings = CaptureSettings()
    display: DisplayPlan = DisplayPlan()
    importer: Optional[str] = None
    requested_by: Optional[str] = None


class AttachRequest(Message):
    run_dir: str = ""
    heartbeat_timeout_s: float = 30.0
    planned_s: Optional[float] = None  # seconds of capture still planned from now (None: not known)


class HostLine(Message):
    """One line the host sends while attached: a heartbeat, or a wish to end the capture early."""
    beat: bool = False
    stop: Optional[str] = None  # an EarlyEnd kind: interrupted | deadline
    reason: Optional[str] = None


class SessionCall(Message):
    """One command of a session (``session``: one agent process answering a run's calls in turn, on one
    channel): the command's name and its request, as a call of its own would read it on stdin. ``end`` ends
    the session."""
    command: str = ""
    request: Dict[str, Any] = {}


class NoRequest(Message):
    """What a command that needs nothing reads (version, board_state)."""


class StatusRequest(Message):
    run_dir: str = ""
    work_dir: str = ""  # given: the answer says whether the board's capture lock is held


class RemoveRequest(Message):
    paths: List[str] = []
    root: str = ""


class FileRange(Message):
    path: str = ""
    offset: int = 0
    size: int = 0


class SendRequest(Message):
    files: List[FileRange] = []


# -- what the agent answers ---------------------------------------------------------------------------------


class Failure(Message):
    """An agent command that could not answer: ``kind`` is bad_request (the request could not be read),
    unknown_command, or error (anything else; ``trace`` has the agent's traceback)."""
    kind: str = "error"
    msg: str = ""
    command: Optional[str] = None
    trace: Optional[str] = None


class VersionAnswer(Message):
    version: Optional[str] = None
    sha256: Optional[str] = None
    python: Optional[str] = None
    pid: Optional[int] = None  # the process that answered (a session's answers all come from one)


class Finding(Message):
    level: str = "info"  # error | warning | info
    code: str = ""
    what: str = ""
    why: str = ""
    fix: str = ""


class PreflightAnswer(Message):
    facts: Facts = Facts()
    findings: List[Finding] = []
    display: DisplayPlan = DisplayPlan()
    board_state: BoardState = BoardState()  # the board before the run


class LockHolder(Message):
    run: Optional[str] = None
    host: Optional[str] = None
    since: Optional[float] = None


class LaunchAnswer(Message):
    pid: Optional[int] = None
    run_dir: Optional[str] = None
    busy: Optional[LockHolder] = None  # the board's lock is held by another run
    state: Optional["CaptureState"] = None  # the supervisor's first state
    recovered_clocks: Optional["ClocksRestored"] = None  # an earlier capture's lock, put back at this launch


class EarlyEnd(Message):
    """Why a capture was ended before its planned end: ``kind`` interrupted (the user, on the host), deadline
    (the host's --board-timeout), host_gone (no heartbeat), disk_low (the board's disk nearly full)."""
    kind: str = ""
    reason: str = ""
    after_s: float = 0.0


class WatchdogStep(Message):
    """A signal the watchdog sent. ``kind``: stalled (nsys stalled writing its report), hung_after_report
    (nsys lingered after writing it), unfinished (nsys did not end after the app was gone), outlived (what
    the run started outlived it), interrupted (the agent itself was stopped)."""
    kind: str = ""
    reason: str = ""
    signal: str = ""
    target: str = ""
    at: Optional[float] = None


class ClocksLocked(Message):
    """What jetson_clocks --store kept, and the power modes around the lock."""
    pid: Optional[int] = None
    stored: Optional[str] = None  # the file jetson_clocks --restore reads
    mode_before: Optional[PowerMode] = None
    nvpmodel_mode: Optional[int] = None
    locked_at: Optional[float] = None
    locked: bool = False
    mode_locked: Optional[PowerMode] = None


class RestoreStep(Message):
    """One command of a restore: 'nvpmodel -m' back to the mode before, or 'jetson_clocks --restore'."""
    nvpmodel: Optional[int] = None  # the power mode put back
    jetson_clocks_restore: Optional[str] = None  # the file jetson_clocks restored from
    status: Optional[int] = None  # its exit status (None: it could not run)
    output: str = ""
    refused: Optional[str] = None  # nvpmodel's words when it refused the switch


class ClocksRestored(Message):
    restored: bool = False
    steps: List[RestoreStep] = []  # each command run, its status and output
    mode_now: Optional[PowerMode] = None


class ClocksUsed(Message):
    """--lock-clocks on the board: the lock, and its restore (None: the restore did not run)."""
    locked: Optional[ClocksLocked] = None
    restore: Optional[ClocksRestored] = None


class BoardSamples(Message):
    """The board's samples during the capture: the file in the run folder that holds them, and what read them."""
    file: str = ""
    source: Optional[str] = None   # tegrastats, or /proc and /sys
    samples: int = 0
    interval_ms: Optional[float] = None


class ImportOutcome(Message):
    """The raw capture (.qdstrm) imported on the board: the importer's exit status, the report it wrote (None: none)
    and the end of what it printed."""
    exit: Optional[int] = None
    report: Optional[str] = None
    output: str = ""


class CaptureResult(Message):
    """A capture as it ended on the board (one attempt). Without nsys (--no-nsys) the process was the app:
    app_exit and app_elapsed_s say how it went, nsys_exit is None."""
    with_nsys: bool = True
    nsys_exit: Optional[int] = None
    nsys_elapsed_s: Optional[float] = None
    app_exit: Optional[int] = None
    app_elapsed_s: Optional[float] = None
    elapsed_s: float = 0.0
    watchdog: List[WatchdogStep] = []
    leftover_pids: List[int] = []
    removed_leftovers: List[str] = []
    program_not_found: bool = False
    generated: List[str] = []  # the report files nsys said it wrote ("Generated:")
    reports: Dict[str, str] = {}  # suffix -> path on the board
    display: Optional[str] = None
    env_added: Dict[str, str] = {}
    app_pid: Optional[int] = None
    failed_to_start: bool = False
    stalled: bool = False
    nsys_last_lines: List[str] = []
    app_stopped_after_s: Optional[float] = None
    app_gone_after_s: Optional[float] = None
    stop_signals: int = 0
    ended_early: Optional[EarlyEnd] = None
    started_at: Optional[float] = None
    ended_at: Optional[float] = None
    # added by the supervisor around the attempt
    settings: Optional[CaptureSettings] = None  # the launch's settings as the board read them
    previous_attempts: List["CaptureResult"] = []
    board_samples: Optional[BoardSamples] = None
    board_state_after: Optional[BoardState] = None
    clocks: Optional[ClocksUsed] = None
    sizes: Optional[Dict[str, int]] = None  # the run folder's files as they stay (None: not known)
    import_: Optional[ImportOutcome] = None


class CaptureState(Message):
    """The supervisor's state file: its stage while it runs, the result once it ended."""
    stage: Optional[str] = None
    pid: Optional[int] = None
    started_at: Optional[float] = None
    updated_at: Optional[float] = None
    elapsed_s: Optional[float] = None
    heartbeat_timeout_s: Optional[float] = None
    attempt: int = 1
    capture_elapsed_s: Optional[float] = None
    app_s: Optional[float] = None
    result: Optional[CaptureResult] = None  # once it ended (its raw capture imported)
    error: Optional[str] = None
    trace: Optional[str] = None
    host_gone: bool = False  # the capture ended for the host's silence
    clocks: Optional[ClocksUsed] = None  # --lock-clocks: the lock and its restore, once the capture ended
    free_bytes: Optional[int] = None  # free in the run folder once it ended
    disk_full: bool = False  # a save found the disk full and gave back the reserve
    disk_low: Optional["DiskLow"] = None  # the capture was ended for the disk


class DiskLow(Message):
    free: int = 0  # bytes free in the run folder
    scratch: int = 0  # bytes of nsys's scratch, about what it needs again to write its report


class CaptureProgress(Message):
    """The attached agent's word every second while the capture runs."""
    stage: Optional[str] = None
    elapsed_s: float = 0.0
    app_s: Optional[float] = None
    attempt: int = 1


class StatusAnswer(Message):
    present: bool = False
    state: Optional[CaptureState] = None
    supervisor_alive: bool = False
    capture_lock: Optional[str] = None  # "held", "free" or "unknown" (a lock file it cannot open); None: not asked


class RemoveAnswer(Message):
    removed: List[str] = []


class SentFile(Message):
    """send's answer for one file, a line on stderr: its sha256 up to size and the bytes sent from offset, or why it
    could not be sent (the files after it are not)."""
    path: str = ""
    sha256: Optional[str] = None
    size: Optional[int] = None
    sent: Optional[int] = None
    offset: Optional[int] = None
    failed: bool = False
    msg: Optional[str] = None

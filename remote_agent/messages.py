"""The messages host and agent exchange: every request and answer, typed, in one place both sides import.

Standard library only, Python 3.6 syntax (the agent's). A message is a class whose annotated attributes are its
fields; ``to_wire()`` gives its JSON object (with ``v``, the protocol's version) and ``from_wire()`` reads one
leniently, as run folders are read: keys it does not know are kept (``extra``), a value of the wrong kind
reads as missing (the field's default), a nested message or list of them is read the same way down. A
machine-readable ``kind`` says what happened wherever the host decides by it: an early end's, a watchdog
step's, a failure's; the words beside it are for people, and the host never matches them.
"""
import copy
import typing
from typing import Any, Dict, List, Optional

if typing.TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_):
        return lambda cls: cls

PROTOCOL = 1


@dataclass_transform()
class Message(object):
    """A record of typed fields; subclasses declare them as annotated class attributes with defaults."""
    _field_types = None  # type: Any

    def __init__(self, **values):
        for name, default in self._defaults().items():
            setattr(self, name, values.pop(name) if name in values else copy.copy(default))
        if values:
            raise TypeError("{} has no field {}".format(type(self).__name__, ", ".join(sorted(values))))
        self.extra = {}  # type: Dict[str, Any]
        self.read_keys = None  # type: Optional[frozenset]  # the keys from_wire found (None: made here)

    @classmethod
    def _fields(cls):
        """Each field's name and type, the base classes' first (forward references resolved once)."""
        if "_field_types" not in cls.__dict__:
            cls._field_types = typing.get_type_hints(cls)
        return cls._field_types

    @classmethod
    def _defaults(cls):
        return {name: getattr(cls, name, None) for name in cls._fields()}

    def to_wire(self, version=True):
        """The JSON object; version: with ``v`` (what a side sends). A message read from_wire writes back the
        keys it read, and the others only once they differ from their default: a stored document read and
        written again loses nothing and gains nothing."""
        wire = dict(self.extra)
        defaults = self._defaults()
        for name in self._fields():
            key, value = name.rstrip("_"), getattr(self, name)
            if self.read_keys is None or key in self.read_keys or value != defaults[name]:
                wire[key] = _to_wire(value, version)
        if version:
            wire["v"] = PROTOCOL
        return wire

    @classmethod
    def from_wire(cls, wire, strict=False):
        """The message a JSON object holds (None or not an object: every field at its default). strict: a
        value of the wrong kind is a ValueError, for what a side builds itself rather than reads."""
        if strict and not isinstance(wire, dict):
            raise ValueError("{} needs a JSON object, not {!r}".format(cls.__name__, wire))
        wire = wire if isinstance(wire, dict) else {}
        message = cls()
        known = {"v"}
        for name, kind in cls._fields().items():
            key = name.rstrip("_")  # a field named after a Python keyword (import_) is the keyword on the wire
            known.add(key)
            if key in wire:
                ok, value = _read(kind, wire[key], strict)
                if ok:
                    setattr(message, name, value)
                elif strict:
                    raise ValueError("{}.{} cannot be {!r}".format(cls.__name__, key, wire[key]))
        message.extra = {key: value for key, value in wire.items() if key not in known}
        message.read_keys = frozenset(wire)
        return message

    def __eq__(self, other):
        return type(other) is type(self) and all(getattr(self, n) == getattr(other, n) for n in self._fields()) \
            and self.extra == other.extra

    def __repr__(self):
        shown = ", ".join("{}={!r}".format(name, getattr(self, name)) for name in self._fields())
        return "{}({})".format(type(self).__name__, shown)


def _to_wire(value, version=True):
    if isinstance(value, Message):
        return value.to_wire(version)
    if isinstance(value, (list, tuple)):
        return [_to_wire(item, version) for item in value]
    if isinstance(value, dict):
        return {key: _to_wire(item, version) for key, item in value.items()}
    return value


_PLAIN = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def _read(kind, value, strict=False):
    """(whether value is of kind, the value read as kind): the rules of from_wire, for one field; strict, the
    items of a list or dict of the wrong kind are a ValueError rather than left out."""
    if kind is Any:
        return True, value
    if isinstance(kind, type) and issubclass(kind, Message):
        return isinstance(value, dict), kind.from_wire(value, strict) if isinstance(value, dict) else None
    if kind in _PLAIN:
        fits = isinstance(value, _PLAIN[kind]) and (kind is bool or not isinstance(value, bool))
        return fits, (float(value) if kind is float and fits else value)
    args = getattr(kind, "__args__", None) or ()  # type: Any
    origin = getattr(kind, "__origin__", None)
    if origin is typing.Union:  # Optional[X]
        return (True, None) if value is None else _read(args[0], value, strict)
    if origin in (list, List):
        if not isinstance(value, list):
            return False, None
        return True, [item for item in (_item(args[0], item, strict) for item in value) if item is not _SKIP]
    if origin in (dict, Dict):
        if not isinstance(value, dict):
            return False, None
        items = ((key, _item(args[1], item, strict)) for key, item in value.items())
        return True, {key: item for key, item in items if item is not _SKIP}
    return isinstance(value, kind), value


_SKIP = object()


def _item(kind, value, strict):
    ok, read = _read(kind, value, strict)
    if ok:
        return read
    if strict:
        raise ValueError("{!r} is not a {}".format(value, getattr(kind, "__name__", kind)))
    return _SKIP


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
    """How long the capture lasts and how the board keeps it going: the run's settings the board needs."""
    delay_s: float = 0.0  # seconds the app runs before nsys records
    duration_s: float = 0.0  # seconds nsys records after the delay
    grace_s: float = 30.0  # past delay + duration, before the watchdog stops the app
    heartbeat_s: float = 1.0  # how often the capture reports progress
    heartbeat_timeout_s: float = 30.0  # without the host's heartbeat this long, the board ends the capture
    wait_lock_s: float = 0.0  # how long to wait for the board's lock held by another run
    retries: int = 0  # captures made again when nsys stalls or fails before starting the app
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


class StatusRequest(Message):
    run_dir: str = ""


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


class PowerMode(Message):
    name: Optional[str] = None  # nvpmodel's name for it: MAXN, 10W, ...
    id: Optional[int] = None


class BoardState(Message):
    """What can change between two runs on one board: clocks, power mode, temperatures, load (read at ``at``,
    or ``error`` when it could not be)."""
    at: Optional[str] = None
    clocks: Optional[Dict[str, Any]] = None
    power_mode: Optional[PowerMode] = None
    temperatures_c: Optional[Dict[str, float]] = None
    load_average: Optional[List[float]] = None
    error: Optional[str] = None


class SystemFacts(Message):
    hostname: Optional[str] = None
    uid: Optional[int] = None
    user: Optional[str] = None
    kernel: Optional[str] = None
    arch: Optional[str] = None
    os: Optional[str] = None
    python: Optional[str] = None
    cpu_count: Optional[int] = None
    perf_event_paranoid: Optional[int] = None
    xvfb: Optional[str] = None  # the Xvfb a private display would run, if installed
    display_env: Optional[str] = None
    work_dir_free_mb: Optional[int] = None


class BoardFacts(Message):
    """What the board is and how it runs now (a PC's are mostly None)."""
    model: Optional[str] = None
    chip: Optional[str] = None
    l4t: Optional[str] = None
    jetpack: Optional[str] = None
    is_jetson: Optional[bool] = None  # None: facts from an agent that did not say
    power_mode: Optional[PowerMode] = None
    clocks: Optional[Dict[str, Any]] = None
    temperatures_c: Optional[Dict[str, float]] = None
    thermal_trips_c: Optional[Dict[str, float]] = None  # each zone's lowest passive trip point
    memory: Optional[Dict[str, Any]] = None
    cpus: List[Dict[str, Any]] = []
    online_cores: List[int] = []
    gpu: Optional[Dict[str, Any]] = None
    emc_mhz: Optional[float] = None
    jetson_clocks: Optional[bool] = None  # every online core and the GPU held at one clock


class NsysFacts(Message):
    path: Optional[str] = None
    version: Optional[str] = None
    tried: List[str] = []
    importer: Optional[str] = None
    imports_itself: bool = False
    used: Optional[bool] = None  # False: a run without nsys, which neither looked for it nor started it
    profile_options: Optional[Dict[str, List[str]]] = None  # the values this nsys's profile --help lists
    gpu_metrics_option: Optional[str] = None


class Facts(Message):
    """The facts command's answer, and preflight's facts: the machine, the board, its nsys."""
    system: SystemFacts = SystemFacts()
    board: BoardFacts = BoardFacts()
    nsys: NsysFacts = NsysFacts()
    board_root: Optional[str] = None


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
    board_state: Dict[str, Any] = {}


class LockHolder(Message):
    run: Optional[str] = None
    host: Optional[str] = None
    since: Optional[float] = None


class LaunchAnswer(Message):
    pid: Optional[int] = None
    run_dir: Optional[str] = None
    busy: Optional[LockHolder] = None  # the board's lock is held by another run
    state: Dict[str, Any] = {}
    recovered_clocks: Optional[Dict[str, Any]] = None


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


class ClocksRestored(Message):
    restored: bool = False
    steps: List[Dict[str, Any]] = []  # each command run, its status and output
    mode_now: Optional[PowerMode] = None


class ClocksUsed(Message):
    """--lock-clocks on the board: the lock, and its restore (None: the restore did not run)."""
    locked: Optional[ClocksLocked] = None
    restore: Optional[ClocksRestored] = None


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
    board_samples: Optional[Dict[str, Any]] = None
    board_state_after: Optional[Dict[str, Any]] = None
    clocks: Optional[ClocksUsed] = None
    sizes: Optional[Dict[str, int]] = None  # the run folder's files as they stay (None: not known)
    import_: Optional[Dict[str, Any]] = None


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
    result: Optional[CaptureResult] = None
    error: Optional[str] = None
    trace: Optional[str] = None
    host_gone: bool = False


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


class RemoveAnswer(Message):
    removed: List[str] = []

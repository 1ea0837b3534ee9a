"""``orchestrate doctor``: the preflight of every matching board at once, in one table: whether it is
reachable, what it is (board facts), and what would make a capture fail there, each with its fix.
One result per board, a value or its error (one dead board never hides the others)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from remote_agent.commands import PREFLIGHT
from remote_agent.messages import PreflightRequest
from remote_agent.nsys_locate import version_tuple

from ..documents.fleet import BoardSummary
from ..errors import OrchestratorError
from ..inventory.catalog import AppSpec
from ..inventory.hosts import Inventory
from ..nsys.host import HostNsys, find_host_nsys
from ..runs.profile import preflight_request, with_python
from ..runs.run_settings import RunSettings
from ..targets.agent import deploy_agent
from ..targets.connect import open_transport
from ..targets.facts import board_summary
from ..targets.settings import ConnectOptions
from .board import UNREACHABLE_ERRORS

# what the preflight is asked to check when no app is named: a sampled capture of a typical length
DOCTOR_CAPTURE_S = 10.0


@dataclass(frozen=True)
class BoardCheck:
    target: str
    status: str                 # "ok" (nothing blocks a capture), "problems" or "unreachable"
    address: str | None = None
    board: BoardSummary = field(default_factory=BoardSummary)
    findings: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        """doctor --json's line for the board."""
        return {**asdict(self), "board": self.board.as_json()}

    @property
    def blocking(self) -> bool:
        return self.status != "ok"


def host_reads(board_version: str | None, host: HostNsys | None) -> dict[str, str] | None:
    """Whether this machine's nsys can read the reports the board's nsys writes (a newer nsys reads older
    reports, not the other way round); a warning finding when it cannot, else None."""
    if not board_version:
        return None
    if host is None:
        return {"level": "warning", "code": "host_cannot_read", "what": "this machine has no nsys to read reports",
                "why": "reports are exported and analysed here",
                "fix": f"install Nsight Systems {board_version} or newer here"}
    if version_tuple(host.version)[:2] < version_tuple(board_version)[:2]:
        return {"level": "warning", "code": "host_cannot_read",
                "what": f"the board's nsys {board_version} writes reports this machine's nsys {host.version} cannot "
                        "read", "why": "an nsys reads the reports of its own and older versions only",
                "fix": f"install Nsight Systems {board_version} or newer here, or export on the board (--export-on)"}
    return None


def check_board(inventory: Inventory, target: str, connect: ConnectOptions,
                host_nsys: HostNsys | None = None, app: AppSpec | None = None,
                settings: RunSettings | None = None) -> BoardCheck:
    """The board's preflight as a sampled 10 s capture would need it, or as a run of ``app`` would (a task's
    --check)."""
    try:
        host = inventory.host(target)
        transport = open_transport(host, connect)
    except OrchestratorError as exc:
        return BoardCheck(target, "unreachable" if isinstance(exc, UNREACHABLE_ERRORS) else "problems",
                          error=exc.one_line())
    try:
        agent = deploy_agent(transport, host)
        asked = preflight_request(host, with_python(app, host.python), settings or RunSettings(), agent.work_dir) \
            if app is not None else \
            PreflightRequest(nsys=host.nsys, display=host.display, xvfb=host.xvfb, sample="cpu",
                             capture_s=DOCTOR_CAPTURE_S, work_dir=agent.work_dir)
        checked = agent.call(PREFLIGHT, asked)
    except OrchestratorError as exc:
        return BoardCheck(target, "problems", transport.description, error=exc.one_line())
    finally:
        transport.close()
    findings = [f.to_wire(version=False) for f in checked.findings if f.level in ("error", "warning")]
    readable = host_reads(checked.facts.nsys.version, host_nsys)
    findings += [readable] if readable else []
    status = "problems" if any(f["level"] == "error" for f in findings) else "ok"
    return BoardCheck(target, status, transport.description, board_summary(checked.facts), findings)


def doctor(inventory: Inventory, targets: list[str], connect: ConnectOptions, forks: int = 5) -> list[BoardCheck]:
    host_nsys = find_host_nsys()
    with ThreadPoolExecutor(max_workers=max(1, forks), thread_name_prefix="doctor") as pool:
        return list(pool.map(lambda target: check_board(inventory, target, connect, host_nsys), targets))

"""Asking a board whether the capture a gone holder left still runs: its supervisor holds the board's capture lock
until the capture and its import end, and any login can tell whether that lock is held."""
from __future__ import annotations

from remote_agent.commands import STATUS
from remote_agent.messages import StatusRequest

from ..errors import OrchestratorError
from ..inventory.host import Host
from ..targets.agent import deploy_agent
from ..targets.connect import open_transport
from ..targets.settings import ConnectOptions

RUNNING, ENDED, UNKNOWN = "running", "ended", "unknown"


def capture_state(host: Host, capture: str, connect: ConnectOptions) -> tuple[str, str]:
    """Whether the capture in the board's folder ``capture`` still runs (RUNNING, ENDED, or UNKNOWN when the board
    does not answer or its lock cannot be read), and what the board said."""
    try:
        transport = open_transport(host, connect)
        try:
            agent = deploy_agent(transport, host)
            answer = agent.call(STATUS, StatusRequest(run_dir=capture, work_dir=agent.work_dir))
        finally:
            transport.close()
    except OrchestratorError as exc:
        return UNKNOWN, f"the board did not answer whether its capture still runs ({exc.one_line()})"
    if answer.supervisor_alive or answer.capture_lock == "held":
        return RUNNING, "its capture still runs"
    if answer.capture_lock == "free":
        return ENDED, "its capture ended on the board"
    return UNKNOWN, "the board's capture lock could not be read"

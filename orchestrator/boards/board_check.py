"""Asking a board whether the capture a gone holder left still runs: its supervisor holds the board's capture lock
until the capture and its import end, so the lease ends when it does."""
from __future__ import annotations

from remote_agent.messages import StatusAnswer, StatusRequest

from ..errors import OrchestratorError
from ..inventory.host import Host
from ..targets.agent import deploy_agent
from ..targets.connect import open_transport
from ..targets.settings import ConnectOptions


def capture_running(host: Host, capture: str, connect: ConnectOptions) -> tuple[bool, str]:
    """Whether the capture in the board's folder ``capture`` still runs, and what the board said. A board that does
    not answer frees the lease: whoever takes it next meets the board as it is."""
    try:
        transport = open_transport(host, connect)
        try:
            agent = deploy_agent(transport, host)
            answer = StatusAnswer.from_wire(agent.call("status", StatusRequest(run_dir=capture)))
        finally:
            transport.close()
    except OrchestratorError as exc:
        return False, f"the board did not answer whether its capture still runs ({exc.one_line()})"
    if answer.supervisor_alive:
        return True, "its capture still runs"
    return False, "its capture ended on the board" + ("" if answer.present else " (its folder is gone)")
